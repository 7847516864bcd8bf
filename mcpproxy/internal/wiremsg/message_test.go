package wiremsg

import (
	"errors"
	"testing"
)

// TestParse: a line is read in one pass: its fields by their exact
// (unescaped) keys, the last of duplicates kept; anything else is a *Bad
// saying why, with the id of an invalid line when it has one.
func TestParse(t *testing.T) {
	m, err := Parse([]byte(` {"jsonrpc":"2.0","\u0069d":7,"method":"tools/call","params":{"a":[1,"}"]},"ID":9,"method":"ping"} `))
	if err != nil {
		t.Fatal(err)
	}
	if string(m.ID) != "7" || string(m.Method) != `"ping"` || string(m.Params) != `{"a":[1,"}"]}` || !m.IsRequest() {
		t.Fatalf("fields: id %s method %s params %s", m.ID, m.Method, m.Params)
	}
	for line, want := range map[string]struct {
		why string
		id  string
	}{
		``:                                        {WhyParse, ""},
		`{"jsonrpc":"2.0","id":3,"method":`:       {WhyParse, "3"},
		`{"jsonrpc":"2.0","id":"x",}`:             {WhyParse, `"x"`},
		`[{"jsonrpc":"2.0","id":1}]`:              {WhyBatch, ""},
		`"a string"`:                              {WhyObject, ""},
		`{"id":1,"method":"ping"}`:                {WhyVersion, "1"},
		`{"jsonrpc":"2.0","id":1,"method":2}`:     {WhyMethod, "1"},
		`{"jsonrpc":"2.0","id":null,"result":{}}`: {WhyID, ""},
	} {
		_, err := Parse([]byte(line))
		var bad *Bad
		if !errors.As(err, &bad) || bad.Why != want.why || string(bad.ID) != want.id || !errors.Is(err, ErrMalformed) {
			t.Errorf("%q: %v (id %q), want %q (id %q)", line, err, idOf(bad), want.why, want.id)
		}
	}
}

func idOf(b *Bad) string {
	if b == nil {
		return ""
	}
	return string(b.ID)
}
