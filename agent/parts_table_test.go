package agent_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/agent"
	"github.com/hybridctx/hybridctx/agent/internal/agenttest"
	"github.com/hybridctx/hybridctx/internal/boundcases"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

// TestDecidePartsTable: the results of the whole-result table, each block's
// payload (and structuredContent, and the other members) one part, reach
// the model within the bound + 1 KiB as JSON strings, and every part reads
// back: inline, through its own reference, or as its entry of the whole.
func TestDecidePartsTable(t *testing.T) {
	ctx := context.Background()
	for _, c := range boundcases.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			mem := memstore.New()
			bind, _ := hybridctx.NewBinding(agenttest.Owner, workspace.New(mem, mem))
			off, err := hybridctx.NewOffloader(bind, c.Policy, nil)
			if err != nil {
				t.Fatal(err)
			}
			reh, _ := hybridctx.NewRehydrator(bind, nil)
			mw, _ := agent.NewMiddleware(off)
			var fields map[string]json.RawMessage
			var blocks []json.RawMessage
			_ = json.Unmarshal(c.Result, &fields)
			_ = json.Unmarshal(fields["content"], &blocks)
			var parts []any
			for _, b := range blocks {
				parts = append(parts, string(boundcases.Payload(b)))
			}
			for k, v := range fields {
				if k != "content" && k != "isError" {
					parts = append(parts, v)
				}
			}
			res, err := mw.DecideParts(ctx, hybridctx.Call{Tool: "t", ID: "1"}, parts)
			if err != nil {
				t.Fatal(err)
			}
			var sent int64
			for _, s := range res.Texts() {
				b, _ := json.Marshal(s)
				sent += int64(len(b)) + 1
			}
			if sent > c.Bound()+hybridctx.ResultSlack {
				t.Fatalf("%d bytes reach the model, bound %d", sent, c.Bound())
			}
			body := func(ref string) []byte {
				got, err := reh.Rehydrate(ctx, hybridctx.Request{Reference: ref, Budget: 1 << 30})
				if err != nil || got.Outcome() != hybridctx.Resolved {
					t.Fatalf("read %s: %v", ref, err)
				}
				return got.Segment.Bytes()
			}
			var whole []struct {
				Type, Text string
				Data       []byte
			}
			if res.Whole != nil {
				if err := json.Unmarshal(body(res.Whole.Ref.String()), &whole); err != nil || len(whole) != len(parts) {
					t.Fatalf("whole: %v, %d entries", err, len(whole))
				}
			}
			for i, p := range parts {
				var want string
				switch v := p.(type) {
				case string:
					want = v
				case json.RawMessage:
					want = string(v)
				}
				switch d := res.Parts[i]; {
				case whole != nil && whole[i].Type == "text" && whole[i].Text == want:
				case whole != nil && whole[i].Type == "binary" && string(whole[i].Data) == want:
				case whole == nil && d.Outcome() == hybridctx.Inline && d.Text() == want:
				case whole == nil && !d.Ref.IsZero() && string(body(d.Ref.String())) == want:
				default:
					t.Fatalf("part %d lost (%v)", i, d.Outcome())
				}
			}
		})
	}
}
