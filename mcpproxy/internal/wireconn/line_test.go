package wireconn

import (
	"bufio"
	"bytes"
	"encoding/json"
	"testing"

	"github.com/hybridctx/hybridctx/mcpproxy/internal/wiremsg"
)

// FuzzLongLine: a line read as a long one (params or result spooled) gives
// the message, or the refusal with its id, that parsing it whole gives.
func FuzzLongLine(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":[1,2,{"b":null}]}}}`,
		`{"params":{"NAME":"a","name":7,"Uri":"u"},"method":"m","id":"s","jsonrpc":"2.0"}`,
		`{"jsonrpc":"2.0","result":{"x":"\u00e9\ud800"},"id":1.50}`,
		`{"jsonrpc":"2.0","id":2,"error":{"code":-1,"message":"m"},"result":{}}`,
		`{"jsonrpc":"2.0","id":3,"params":[1],"result":{},"method":"x","params":{"b":2}}`,
		`{"jsonrpc":"2.0","id":4,"result":{,}}`, `[{"jsonrpc":"2.0"}]`, `"x"`, `{"id":{"a":1},"jsonrpc":"2.0","result":1}`,
		`{"jsonrpc":"2.0","id":5,"result":1} x`, ` {"jsonrpc" : "2.0" , "id" : 6 , "result" : [ ] } `, `{"jsonrpc":"2.0","id":null,"result":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if bytes.IndexByte(line, '\n') >= 0 || !bytes.Equal(bytes.TrimSpace(line), bytes.Trim(line, " \t\r")) {
			return // a line, and no trimmed space JSON does not know
		}
		want, werr := wiremsg.Parse(line)
		lr := &LineRest{br: bufio.NewReader(bytes.NewReader(append(append([]byte(nil), line...), '\n'))), budget: -1}
		l := wiremsg.NewLongLine(nil, lr, t.TempDir(), 64)
		got, gerr := l.Read(nil)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("whole: %v, long: %v", werr, gerr)
		}
		if werr != nil {
			wb, gb := werr.(*wiremsg.Bad), l.Bad(gerr).(*wiremsg.Bad)
			if wb.Why != gb.Why || wb.Code != gb.Code || string(wb.ID) != string(gb.ID) {
				t.Fatalf("whole: %+v, long: %+v", wb, gb)
			}
			return
		}
		if got.Has("params") && want.Name == "tools/call" {
			var p struct{ Name string }
			_ = json.Unmarshal(want.Params, &p)
			if p.Name != got.Big.Name {
				t.Fatalf("name %q, want %q", got.Big.Name, p.Name)
			}
		}
		if got.Has("params") {
			var p struct{ URI string }
			bad := json.Unmarshal(want.Params, &p) != nil
			if bad != got.Big.URIBad || !bad && p.URI != got.Big.URI {
				t.Fatalf("uri %q %v, want %q %v", got.Big.URI, got.Big.URIBad, p.URI, bad)
			}
		}
		if g, w := got.Encode(), want.Encode(); !bytes.Equal(g, w) {
			t.Fatalf("long %s\nwhole %s", g, w)
		}
	})
}
