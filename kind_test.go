package hybridctx_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx"
)

// TestLongJSONKindRule: a body over 64 KiB is labelled json from its first
// 64 KiB (a valid JSON prefix opening with '{' or '[') and its last
// non-space byte ('}' or ']'), whatever lies between, and every input form
// reaches the same label; the whole body is still checked for UTF-8.
func TestLongJSONKindRule(t *testing.T) {
	const big = 200 << 10
	valid := jsonBody(big)
	if !json.Valid(valid) {
		t.Fatal("jsonBody is not JSON")
	}
	brokenMiddle := bytes.Clone(valid)
	copy(brokenMiddle[100<<10:], "}}}not json{{{")
	for _, tc := range []struct {
		name string
		body []byte
		kind string
	}{
		{"valid", valid, "json"},
		{"broken after 64 KiB", brokenMiddle, "json"},
		{"trailing text", append(bytes.Clone(valid), "\nend"...), "text"},
		{"trailing spaces", append(bytes.Clone(valid), " \t\r\n"...), "json"},
		{"error in the first 64 KiB", append([]byte("[1,,"), valid[4:]...), "text"},
		{"invalid UTF-8 after a text head", append([]byte("x"), append(bytes.Clone(valid[1:len(valid)-1]), 0xff, ']')...), "binary"},
		{"scalar head", append([]byte(`"`+strings.Repeat("a", 70<<10)+`"`), ' ', ']'), "text"},
	} {
		e := newEnv(t, 1024)
		for _, form := range []string{"bytes", "string", "raw", "reader"} {
			var in any = tc.body
			switch form {
			case "string":
				in = string(tc.body)
			case "raw":
				in = json.RawMessage(tc.body)
			}
			var notice string
			if form == "reader" {
				out, err := e.off.OffloadReader(e.ctx, hybridctx.Call{Tool: "tool", ID: "call"}, bytes.NewReader(tc.body))
				if err != nil {
					t.Fatalf("%s, %s: %v", tc.name, form, err)
				}
				notice = out.Notice
			} else {
				notice = mustOffload(t, e.off, e.ctx, in).Notice
			}
			if want := " lines, " + tc.kind + ";"; !strings.Contains(notice, want) {
				t.Errorf("%s, %s: notice %q, want kind %s", tc.name, form, notice, tc.kind)
			}
		}
	}
}
