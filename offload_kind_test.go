package hybridctx_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx"
)

// jsonWithBadByte is a JSON document of about n bytes whose string at
// offset at holds a byte that is not valid UTF-8 (none when at < 0).
func jsonWithBadByte(n, at int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"rows":[`)
	for i := 0; b.Len() < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		if at >= 0 && b.Len() >= at {
			b.WriteString("\"bad \xc3\x28 byte\"")
			at = -1
			continue
		}
		b.WriteString(`"row ` + strings.Repeat("r", i%40) + `"`)
	}
	b.WriteString("]}")
	return b.Bytes()
}

// A JSON body with invalid UTF-8 inside a string is binary
// (docs/offload.md), on every classification path: beside the hash (JSON
// from 16 KiB, any body from 256 KiB), past the exactly scanned 64 KiB, and
// streamed.
func TestInvalidUTF8JSONIsBinary(t *testing.T) {
	e := newEnv(t, 1024)
	for _, size := range []int{20 << 10, 100 << 10, 300 << 10} {
		for _, at := range []int{5, size / 2, size - 100} {
			body := jsonWithBadByte(size, at)
			for _, stream := range []bool{false, true} {
				var out *hybridctx.OffloadResult
				var err error
				if stream {
					out, err = e.off.OffloadReader(e.ctx, hybridctx.Call{}, bytes.NewReader(body))
				} else {
					out, err = e.off.Offload(e.ctx, hybridctx.Call{}, body)
				}
				if err != nil {
					t.Fatal(err)
				}
				lines := strings.Split(out.Notice, "\n")
				if len(lines) < 2 || !strings.Contains(lines[1], " bytes, 1 lines, binary;") || strings.Contains(out.Notice, "shape:") {
					t.Errorf("%d bytes, bad byte at %d, streamed %v: %q", size, at, stream, out.Notice)
				}
			}
		}
		// The same document without the bad byte is JSON.
		out, err := e.off.Offload(e.ctx, hybridctx.Call{}, jsonWithBadByte(size, -1))
		if err != nil || !strings.Contains(out.Notice, ", json;") {
			t.Fatalf("%d bytes of valid JSON: %v %q", size, err, out.Notice)
		}
	}
}
