package mcpproxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/internal/boundcases"
	"github.com/hybridctx/hybridctx/internal/longtest"
	"github.com/hybridctx/hybridctx/mcpproxy/internal/bound"
)

// casePair is an offloader under a case's policy and a reader on the same
// binding.
func casePair(t testing.TB, pol hybridctx.Policy) (*hybridctx.Offloader, *reader) {
	t.Helper()
	bind, err := hybridctx.NewBinding(owner("s1"), openStore(t, "mem://"))
	if err != nil {
		t.Fatal(err)
	}
	off, err := hybridctx.NewOffloader(bind, pol, nil)
	if err != nil {
		t.Fatal(err)
	}
	reh, err := hybridctx.NewRehydrator(bind, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewProxy(off, reh, &Options{Budget: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	return off, &p.read
}

// bodyReader reads a reference's whole body through read_artifact.
func bodyReader(r *reader) func(ref string) ([]byte, error) {
	return func(ref string) ([]byte, error) {
		const page = 1 << 20
		var out []byte
		for off := 0; ; off += page {
			args, _ := json.Marshal(map[string]any{"reference": ref, "offset": off, "length": page})
			res, err := r.callTool(context.Background(), "read_artifact", args)
			if err != nil {
				return nil, err
			}
			if res.IsError || len(res.Content) != 1 {
				return nil, fmt.Errorf("read %s at %d: %s", ref, off, dump(res))
			}
			var b []byte
			switch c := res.Content[0].(type) {
			case *mcp.TextContent:
				b = []byte(c.Text)
			case *mcp.EmbeddedResource:
				b = c.Resource.Blob
			}
			out = append(out, b...)
			if len(b) < page {
				return out, nil
			}
		}
	}
}

// typedKnown returns the case's result with the blocks the Go SDK cannot
// decode (unknown types) left out, decoded, and encoded again as the
// Middleware's client would receive it.
func typedKnown(t *testing.T, raw json.RawMessage) (*mcp.CallToolResult, json.RawMessage) {
	t.Helper()
	var fields map[string]json.RawMessage
	var blocks, known []json.RawMessage
	_ = json.Unmarshal(raw, &fields)
	_ = json.Unmarshal(fields["content"], &blocks)
	for _, b := range blocks {
		var c mcp.CallToolResult
		if json.Unmarshal([]byte(`{"content":[`+string(b)+`]}`), &c) == nil {
			known = append(known, b)
		}
	}
	fields["content"], _ = json.Marshal(known)
	in, _ := json.Marshal(fields)
	var res mcp.CallToolResult
	if err := json.Unmarshal(in, &res); err != nil {
		t.Fatal(err)
	}
	enc, err := json.Marshal(&res)
	if err != nil {
		t.Fatal(err)
	}
	return &res, enc
}

// TestResultBoundTable: every result of the table, through the wire, typed
// (Middleware) and streamed paths, reaches the client within the bound +
// 1 KiB as encoded, and every original byte reads back through the read
// tools.
func TestResultBoundTable(t *testing.T) {
	for _, c := range boundcases.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			call := hybridctx.Call{Tool: "t", ID: "1"}
			off, rd := casePair(t, c.Policy)
			b := &bound.Bounder{Off: off}
			out, err := b.Wire(context.Background(), call, c.Result)
			if err != nil {
				t.Fatal(err)
			}
			if err := boundcases.Check(c.Result, out, c.Bound(), bodyReader(rd)); err != nil {
				t.Fatalf("wire: %v", err)
			}
			t.Logf("wire: %d bytes in, %d out", len(c.Result), len(out))

			res, enc := typedKnown(t, c.Result)
			typed, err := b.Typed(context.Background(), call, res)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(typed)
			if err := boundcases.Check(enc, got, c.Bound(), bodyReader(rd)); err != nil {
				t.Fatalf("typed: %v", err)
			}

			// Streamed: read as a long line, payloads past six times the
			// threshold streamed into the workspace.
			r := newRawRigBuf(t, "mem://", 0, 64, func(p *Proxy) {
				p.streamAbove = 256
				off, rd := casePair(t, c.Policy)
				p.bound.Off, p.read = off, *rd
				p.read.mimeOf = p.mimes.get
			})
			r.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{}}}`)
			r.upRecv(t)
			r.answer(t, `{"jsonrpc":"2.0","id":1,"result":`+string(c.Result)+`}`)
			line := r.recv(t)
			if r.proxy.streamed.Load() != 1 {
				t.Fatalf("not bounded as it was read")
			}
			if err := boundcases.Check(c.Result, fields(t, line)["result"], c.Bound(), bodyReader(&r.proxy.read)); err != nil {
				t.Fatalf("streamed: %v", err)
			}
			if c.Streams && !strings.Contains(line, `\"reference\"`) && strings.Contains(line, "one JSON array of") {
				t.Fatalf("a streamed fold is not a manifest: %.400s", line)
			}
		})
	}
}

// streamedThrough sends result as the upstream's answer through a proxy
// under pol (the real streaming length) and returns the result the client
// receives, and the proxy's reader.
func streamedThrough(t *testing.T, pol hybridctx.Policy, result string) (json.RawMessage, *reader) {
	t.Helper()
	r := newRawRigOn(t, "mem://", 0, func(p *Proxy) {
		off, rd := casePair(t, pol)
		p.bound.Off, p.read = off, *rd
		p.read.mimeOf = p.mimes.get
	})
	r.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{}}}`)
	r.upRecv(t)
	go func() { _, _ = io.WriteString(r.upOut, `{"jsonrpc":"2.0","id":1,"result":`+result+"}\n") }()
	line, _ := r.fromProxy.ReadString('\n') // no deadline: slow under -race; a hang fails by the test timeout
	if r.proxy.streamed.Load() != 1 {
		t.Fatalf("not streamed: %.300s", line)
	}
	return fields(t, line)["result"], &r.proxy.read
}

// TestResultBoundFigures: results that passed the whole-result bound
// before it was weighed on every path as encoded: streamed blocks each
// keeping their notice (400 of 100 KB reached the client as 294,848 bytes
// under a 25,000-token bound; 200 of 7 KB as 143,248 at a 4,000-byte
// bound), and one block of 1,000 control bytes sent as 6,079 bytes where
// the bound + 1 KiB is 5,024.
func TestResultBoundFigures(t *testing.T) {
	many := func(n, size int) string {
		var b strings.Builder
		b.WriteString(`{"content":[`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			p := fmt.Sprintf("block %04d ", i)
			b.WriteString(`{"type":"text","text":"` + p + strings.Repeat("x", size-len(p)) + `"}`)
		}
		b.WriteString(`]}`)
		return b.String()
	}
	for _, c := range []struct {
		name   string
		pol    hybridctx.Policy
		result func() string
		long   bool // 40 MB through the proxy: a long test (internal/longtest)
	}{
		{"400 streamed blocks of 100 KB, 25,000 tokens", hybridctx.Policy{InlineThreshold: 16384, ResultThreshold: 1 << 20, ResultThresholdTokens: 25000, Tokenizer: hybridctx.EstimateTokens{}}, func() string { return many(400, 100_000) }, true},
		{"200 streamed blocks of 7 KB", hybridctx.Policy{InlineThreshold: 1000, ResultThreshold: 4000}, func() string { return many(200, 7000) }, false},
	} {
		if c.long && !longtest.Enabled() {
			t.Logf("%s: a long case (%s=1 runs it)", c.name, longtest.Env)
			continue
		}
		result := c.result()
		out, rd := streamedThrough(t, c.pol, result)
		bound := c.pol.ResultBound()
		if err := boundcases.Check(json.RawMessage(result), out, bound, bodyReader(rd)); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		t.Logf("%s: %d bytes reach the client (bound %d)", c.name, len(out), bound)
	}
	// One block of 1,000 bytes of \x01: 6,000 bytes of escapes, on the wire
	// and typed paths.
	pol := hybridctx.Policy{InlineThreshold: 1000}
	off, rd := casePair(t, pol)
	b := &bound.Bounder{Off: off}
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("\x01", 1000)}}}
	raw, _ := json.Marshal(res)
	out, err := b.Wire(context.Background(), hybridctx.Call{Tool: "t", ID: "1"}, raw)
	if err == nil {
		err = boundcases.Check(raw, out, 4000, bodyReader(rd))
	}
	if err != nil {
		t.Fatalf("wire: %v", err)
	}
	typed, err := b.Typed(context.Background(), hybridctx.Call{Tool: "t", ID: "2"}, res)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(typed)
	if err := boundcases.Check(raw, got, 4000, bodyReader(rd)); err != nil {
		t.Fatalf("typed: %v", err)
	}
	t.Logf("one block of 1,000 bytes of \\x01: %d bytes reach the client on the wire path, %d on the typed path (bound 4000)", len(out), len(got))
}
