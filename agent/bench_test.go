package agent_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"testing"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/agent"
)

// BenchmarkMiddleware measures one tool call through the middleware against
// the bare Offloader, so the difference is the middleware's overhead:
// inline (1 KiB), existing_reference (8 KiB, same content each time) and
// offloaded (8 KiB, new content each time: the memory workspace keeps every
// body, so the size is kept small), without a reporter.
func BenchmarkMiddleware(b *testing.B) {
	small := []byte(text(1024, 1))
	big := []byte(text(8<<10, 2))
	for _, c := range []struct {
		name   string
		result []byte
		fresh  bool
	}{{"inline", small, false}, {"existing", big, false}, {"offloaded", big, true}} {
		for _, via := range []string{"bare", "middleware"} {
			b.Run(c.name+"/"+via, func(b *testing.B) {
				e := newEnv(b, 4096, 0)
				buf := append([]byte(nil), c.result...)
				tool := func(context.Context, json.RawMessage) (any, error) { return buf, nil }
				ctx := context.Background()
				call := hybridctx.Call{Tool: "t", ID: "c"}
				b.SetBytes(int64(len(buf)))
				b.ReportAllocs()
				var n uint64
				for b.Loop() {
					if c.fresh {
						n++
						binary.LittleEndian.PutUint64(buf, n)
					}
					var err error
					if via == "bare" {
						_, err = e.Off.Offload(ctx, call, buf)
					} else {
						_, err = e.MW.Call(ctx, call, tool, nil)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkReadTool measures one 4 KiB read_artifact call: argument parsing,
// the owner, budget and digest checks of a 64 KiB body, and the segment.
func BenchmarkReadTool(b *testing.B) {
	e := newEnv(b, 4096, 65536)
	out, _ := e.Off.Offload(context.Background(), hybridctx.Call{}, text(64<<10, 3))
	args := agent.ReadArguments(out.Ref.String(), 1024, 4096, 0)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Read.Call(context.Background(), args); err != nil {
			b.Fatal(err)
		}
	}
}
