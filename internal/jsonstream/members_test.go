package jsonstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// refMembers is EachMember's specification, from encoding/json: the
// members of a valid object in document order, keys as decoded, values
// compacted.
func refMembers(in []byte) ([]string, error) {
	if !json.Valid(in) {
		return nil, ErrBadJSON
	}
	d := json.NewDecoder(bytes.NewReader(in))
	if tok, _ := d.Token(); tok != json.Delim('{') {
		return nil, ErrNotObject
	}
	var out []string
	for d.More() {
		tok, _ := d.Token()
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, fmt.Sprintf("%q=%s", tok.(string), compact(v)))
	}
	return out, nil
}

func compact(v []byte) string {
	var b bytes.Buffer
	_ = json.Compact(&b, v)
	return b.String()
}

// members runs EachMember and renders what it found as refMembers does.
func members(t *testing.T, in []byte) ([]string, error) {
	var out []string
	err := EachMember(in, func(key, value []byte) {
		var k string
		if json.Unmarshal(key, &k) != nil || !json.Valid(value) {
			t.Fatalf("%q: member %q: %q", in, key, value)
		}
		out = append(out, fmt.Sprintf("%q=%s", k, compact(value)))
	})
	return out, err
}

func TestEachMember(t *testing.T) {
	for in, want := range map[string]string{
		` {"jsonrpc":"2.0", "id" : 7,"params":{"a":[1,{"id":2}]},"x":-1.5e3 ,"n":null} `: `["jsonrpc"="2.0" "id"=7 "params"={"a":[1,{"id":2}]} "x"=-1.5e3 "n"=null]`,
		`{}`:                               `[]`,
		`{"i\u0064":"a\"b","id":1,"id":2}`: `["id"="a\"b" "id"=1 "id"=2]`,
	} {
		got, err := members(t, []byte(in))
		if err != nil || fmt.Sprint(got) != want {
			t.Errorf("%q: %v %v, want %s", in, got, err, want)
		}
	}
	for in, want := range map[string]error{
		`[{"a":1}]`: ErrNotObject, `"x"`: ErrNotObject, `12`: ErrNotObject, `null`: ErrNotObject,
		`{"a":1,}`: ErrBadJSON, `{"a":1} x`: ErrBadJSON, `{"a":1`: ErrBadJSON, ``: ErrBadJSON, `{"a" 1}`: ErrBadJSON,
	} {
		if _, err := members(t, []byte(in)); !errors.Is(err, want) {
			t.Errorf("%q: %v, want %v", in, err, want)
		}
	}
}

// FuzzEachMember: EachMember accepts what json.Valid accepts, says which
// valid texts are not objects, and finds the members encoding/json reads.
func FuzzEachMember(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a":{"b":[1,2]},"c":"d"}`, `[1]`, `{"a":1,}`, `{"a\n":"\u00e9"}`, ` {} `, `{"":0}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		want, werr := refMembers(in)
		got, err := members(t, in)
		if !errors.Is(err, werr) && (err != nil || werr != nil) {
			t.Fatalf("%q: error %v, want %v", in, err, werr)
		}
		if err == nil && fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%q: members\n got %q\nwant %q", in, got, want)
		}
	})
}

// BenchmarkEachMember reads a JSON-RPC message with EachMember, beside
// json.Valid on the same bytes: the proxy checks a short message with
// json.Valid and then walks its members, so json.Valid alone is less than
// what EachMember replaces.
func BenchmarkEachMember(b *testing.B) {
	small := []byte(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"search","arguments":{"query":"error in main.go","limit":20}}}`)
	row := `{"type":"text","text":"line \"quoted\" and\ttab é","n":12345},`
	large := []byte(`{"jsonrpc":"2.0","id":"req-7","result":{"content":[` + strings.Repeat(row, 1000) + `{}],"isError":false}}`)
	for _, m := range []struct {
		name string
		msg  []byte
	}{{"small", small}, {"64KiB", large}} {
		b.Run(m.name+"/EachMember", func(b *testing.B) {
			b.SetBytes(int64(len(m.msg)))
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				if err := EachMember(m.msg, func(_, _ []byte) { n++ }); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(m.name+"/json.Valid", func(b *testing.B) {
			b.SetBytes(int64(len(m.msg)))
			b.ReportAllocs()
			for b.Loop() {
				if !json.Valid(m.msg) {
					b.Fatal("not valid")
				}
			}
		})
	}
}
