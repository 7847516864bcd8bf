package mcpgo_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/adapters/internal/adapttest"
	"github.com/hybridctx/hybridctx/adapters/mcpgo"
	"github.com/hybridctx/hybridctx/internal/boundcases"
)

// boundThrough runs res through the middleware under env's policy and
// returns the result as the client receives it.
func boundThrough(t *testing.T, env *adapttest.Env, res *mcp.CallToolResult) json.RawMessage {
	t.Helper()
	h := mcpgo.Middleware(env.Off, nil)(func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) { return res, nil })
	req := mcp.CallToolRequest{}
	req.Params.Name = "t"
	out, err := h(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// bodyOf reads a reference's whole body through rehydration.
func bodyOf(env *adapttest.Env) func(string) ([]byte, error) {
	return func(ref string) ([]byte, error) {
		got, err := env.Reh.Rehydrate(context.Background(), hybridctx.Request{Reference: ref, Budget: 1 << 30})
		if err != nil {
			return nil, err
		}
		return got.Segment.Bytes(), nil
	}
}

// TestResultBoundTable: the whole-result table, through the middleware:
// within the bound + 1 KiB as encoded, every original byte readable back.
func TestResultBoundTable(t *testing.T) {
	for _, c := range boundcases.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			env := adapttest.New(t, &c.Policy)
			// Blocks mcp-go cannot decode (unknown types) are left out.
			var fields map[string]json.RawMessage
			var blocks, known []json.RawMessage
			_ = json.Unmarshal(c.Result, &fields)
			_ = json.Unmarshal(fields["content"], &blocks)
			for _, b := range blocks {
				if _, err := mcp.UnmarshalContent(b); err == nil {
					known = append(known, b)
				}
			}
			fields["content"], _ = json.Marshal(known)
			in, _ := json.Marshal(fields)
			var res mcp.CallToolResult
			if err := json.Unmarshal(in, &res); err != nil {
				t.Fatal(err)
			}
			orig, _ := json.Marshal(&res)
			out := boundThrough(t, env, &res)
			if err := boundcases.Check(orig, out, c.Bound(), bodyOf(env)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A 200,000-byte _meta at a 1 KiB threshold is stored, not passed.
func TestOversizedMetaBounded(t *testing.T) {
	env := adapttest.New(t, &hybridctx.Policy{InlineThreshold: 1024})
	pad := strings.Repeat("m", 200_000)
	res := &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent("ok")}}
	res.Meta = &mcp.Meta{AdditionalFields: map[string]any{"pad": pad}}
	orig, _ := json.Marshal(res)
	out := boundThrough(t, env, res)
	if strings.Contains(string(out), pad[:2000]) || len(out) > 4*1024+1024 {
		t.Fatalf("%d bytes: %.300s", len(out), out)
	}
	if err := boundcases.Check(orig, out, 4096, bodyOf(env)); err != nil {
		t.Fatal(err)
	}
}
