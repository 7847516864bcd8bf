package hybridctx_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/tokenizer/bpe"
)

// The BPE tokenizers the notice tests count with.
var (
	o200k, _  = bpe.New(bpe.O200kBase)
	cl100k, _ = bpe.New(bpe.Cl100kBase)
)

var updateNotices = flag.Bool("update-notices", false, "rewrite testdata/notice/*.golden from the notices built now")

// noticeCases are bodies of each kind, and policies with the longest tool
// names, whose notices are kept in testdata/notice.
func noticeCases() []struct {
	name   string
	policy hybridctx.Policy
	body   []byte
} {
	long := func(c string) string { return strings.Repeat(c, hybridctx.MaxReadToolNameLen) }
	longNames := hybridctx.Policy{ReadToolName: long("r"), SearchToolName: long("s"), QueryToolName: long("q")}
	var logText bytes.Buffer
	for i := range 200 {
		fmt.Fprintf(&logText, "2026-11-30T08:00:%02d.000Z INFO  api/server.go:%d request served in %d ms id=%x\n", i%60, 10+i, i*7%300, i*7919)
	}
	var items bytes.Buffer
	items.WriteString(`{"items": [`)
	for i := range 400 {
		if i > 0 {
			items.WriteString(", ")
		}
		fmt.Fprintf(&items, `{"id": %d, "v": "value %d"}`, i, i)
	}
	items.WriteString(`], "next": null}`)
	var records bytes.Buffer // over 64 KiB: classified from its prefix
	records.WriteString("[\n")
	for i := range 3000 {
		if i > 0 {
			records.WriteString(",\n")
		}
		fmt.Fprintf(&records, `{"id":%d,"name":"naïve","score":%d.5,"ok":true,"tags":["a","b\u00e9",null],"path":"/srv/data/%d.json"}`, i, i, i)
	}
	records.WriteString("\n]\n")
	var wide bytes.Buffer
	wide.WriteString("{")
	for i := range 100 {
		fmt.Fprintf(&wide, `"field_%03d": {"count": %d, "labels": ["x"]}, `, i, i)
	}
	wide.WriteString(`"end": true}`)
	binary := bytes.Repeat([]byte{0xff, 0xfe, 0, 1, 2, 3, '\n'}, 1000)
	return []struct {
		name   string
		policy hybridctx.Policy
		body   []byte
	}{
		{"text", hybridctx.Policy{}, logText.Bytes()},
		{"json", hybridctx.Policy{}, items.Bytes()},
		{"json-prefix", hybridctx.Policy{}, records.Bytes()},
		{"json-scalar", hybridctx.Policy{}, []byte(`"` + strings.Repeat("x", 5000) + `"`)},
		{"binary", hybridctx.Policy{}, binary},
		{"text-long-names", longNames, logText.Bytes()},
		{"json-wide", hybridctx.Policy{}, wide.Bytes()},
		{"json-long-names", longNames, wide.Bytes()},
		{"binary-long-names", longNames, binary},
		{"json-preview", hybridctx.Policy{PreviewBytes: 200}, records.Bytes()},
		{"text-tokens", hybridctx.Policy{Tokenizer: hybridctx.EstimateTokens{}}, logText.Bytes()},
		{"json-prefix-tokens", hybridctx.Policy{Tokenizer: o200k}, records.Bytes()},
	}
}

// TestNoticeGolden: each kind's notice exactly, byte-identical for bytes
// and a stream of the same body and at every call, within the bound (plus
// the preview), valid UTF-8.
func TestNoticeGolden(t *testing.T) {
	for _, c := range noticeCases() {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, 1)
			p := c.policy
			p.InlineThreshold = 1024
			off, err := hybridctx.NewOffloader(e.bind, p, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := mustOffload(t, off, e.ctx, c.body).Notice
			again := mustOffload(t, off, e.ctx, c.body).Notice
			streamed, err := off.OffloadReader(e.ctx, hybridctx.Call{Tool: "tool", ID: "call"}, bytes.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			if again != got || streamed.Notice != got {
				t.Fatalf("not byte-identical:\n%s\n%s\n%s", got, again, streamed.Notice)
			}
			if len(got) > hybridctx.MaxNoticeLen+int(p.PreviewBytes) || !utf8.ValidString(got) {
				t.Fatalf("%d bytes, or not UTF-8: %q", len(got), got)
			}
			path := filepath.Join("testdata", "notice", c.name+".golden")
			if *updateNotices {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("notice:\n%s\nwant (%s):\n%s", got, path, want)
			}
		})
	}
}

// TestShapeKeysOnlyInTheNotice: the keys of a JSON body are content. The
// notice the model sees shows them; no event, diagnostics or record does,
// for byte input below and above the size classified beside its hash, and
// for a stream.
func TestShapeKeysOnlyInTheNotice(t *testing.T) {
	const key = "MARKER-KEY"
	small := []byte(`{"` + key + `": [1, 2, 3], "other": "x"}`)
	big := []byte(`{"` + key + `": [` + strings.Repeat(`{"a": 1},`, 40000) + `{}]}`)
	e := newEnv(t, 10)
	for i, body := range [][]byte{small, big} {
		for _, stream := range []bool{false, true} {
			var out *hybridctx.OffloadResult
			var err error
			call := hybridctx.Call{Tool: "tool", ID: fmt.Sprintf("call-%d-%t", i, stream)}
			if stream {
				out, err = e.off.OffloadReader(e.ctx, call, bytes.NewReader(body))
			} else {
				out, err = e.off.Offload(e.ctx, call, body)
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.Notice, `"`+key+`": array[`) {
				t.Fatalf("the notice does not show the key: %q", out.Notice)
			}
			d, err := json.Marshal(out.Diagnostics())
			if err != nil || strings.Contains(string(d), key) {
				t.Errorf("diagnostics: %s, %v", d, err)
			}
			rec, err := e.store.GetRecord(e.ctx, ownerA, out.Ref)
			if err != nil {
				t.Fatal(err)
			}
			if r := fmt.Sprintf("%+v", rec); strings.Contains(r, key) {
				t.Errorf("record: %s", r)
			}
		}
	}
	evs := e.events.all()
	if len(evs) != 4 {
		t.Fatalf("%d events, want 4", len(evs))
	}
	for _, ev := range evs {
		if b, err := json.Marshal(ev); err != nil || strings.Contains(string(b), key) || strings.Contains(fmt.Sprintf("%+v", ev), key) {
			t.Errorf("event: %s, %v", b, err)
		}
	}
}
