package mcpproxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/internal/cputime"
	"github.com/hybridctx/hybridctx/internal/jsonstream"
)

// benchServer returns a server whose "cat" tool returns size bytes of text,
// different on every call (the first bytes count the calls), so the proxy
// stores a new body each time.
func benchServer(size int) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	body := []byte(text(size))
	n := 0
	s.AddTool(&mcp.Tool{Name: "cat", InputSchema: objectSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		n++
		b := append([]byte(nil), body...)
		copy(b, fmt.Sprintf("%016d", n))
		if len(b) > size {
			b = b[:size]
		}
		return textResult(string(b)), nil
	})
	return s
}

// BenchmarkCallTool measures one tools/call from a Go SDK client, directly
// to an in-process server and through the proxy (directory workspace,
// threshold 16384), for a small and a 4 MiB text result. client_bytes/op is
// what crossed the client's connection. Run:
//
//	go test -run '^$' -bench CallTool -benchmem ./mcpproxy/
func BenchmarkCallTool(b *testing.B) {
	for _, size := range []int{100, 4 << 20} {
		for _, via := range []string{"direct", "proxy"} {
			b.Run(fmt.Sprintf("%s/%dB", via, size), func(b *testing.B) {
				ctx := context.Background()
				srvT, upT := mcp.NewInMemoryTransports()
				ss, err := benchServer(size).Connect(ctx, srvT, nil)
				if err != nil {
					b.Fatal(err)
				}
				defer ss.Close()
				clientT := mcp.Transport(upT)
				if via == "proxy" {
					store := openStore(b, b.TempDir())
					bind, _ := hybridctx.NewBinding(owner("bench"), store)
					off, _ := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: 16384}, nil)
					reh, _ := hybridctx.NewRehydrator(bind, nil)
					p, err := NewProxy(off, reh, nil)
					if err != nil {
						b.Fatal(err)
					}
					proxyT, cT := mcp.NewInMemoryTransports()
					done := make(chan error, 1)
					go func() { done <- p.Run(ctx, upT, proxyT) }()
					defer func() { <-done }()
					clientT = cT
				}
				w := &wire{countOnly: true}
				cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, capture{clientT, w}, nil)
				if err != nil {
					b.Fatal(err)
				}
				defer cs.Close()
				params := &mcp.CallToolParams{Name: "cat", Arguments: json.RawMessage(`{}`)}
				before := w.size()
				b.ResetTimer()
				for b.Loop() {
					res, err := cs.CallTool(ctx, params)
					if err != nil || len(res.Content) == 0 {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(w.size()-before)/float64(b.N), "client_bytes/op")
			})
		}
	}
}

// BenchmarkStreamPayload measures the proxy's own processing of one large
// streamed payload — JSON unescaping (and base64 decoding), hashing,
// classification and the write into a mem:// workspace — against raw
// SHA-256 of the same decoded bytes, timed in the same iteration so that
// both see the same load. "proxy" streams the encoded string through the
// decoders into OffloadReader; "reader" gives OffloadReader the decoded
// bytes (the library's own stream path, the floor of "proxy"). The metrics
// are the median over iterations of the paired share of the SHA-256 speed
// (%sha-med) and the share of the fastest times (%sha-best); MB/s is of
// the decoded bytes. Run:
//
//	go test -run '^$' -bench StreamPayload -benchtime 8x -count 5 ./mcpproxy/
func BenchmarkStreamPayload(b *testing.B) {
	const size = 32 << 20
	plain := []byte("0000000000000000" + text(size-16)) // each op rewrites the first bytes
	unit := "línea \"cita\"\ttab 😀 fin\n"
	escaped := []byte("0000000000000000" + strings.Repeat(unit, size/len(unit)+1)[:size-16])
	for _, c := range []struct {
		name string
		body []byte
		enc  func([]byte) []byte
		b64  bool
	}{
		{"text", plain, jsonBody, false},
		{"text-escaped", escaped, jsonBody, false},
		{"base64", binary(size), func(p []byte) []byte { return append([]byte(base64.StdEncoding.EncodeToString(p)), '"') }, true}, // base64 digits are overwritten with digits
		{"structured", structuredBody(size), func(p []byte) []byte { return p }, false},
	} {
		enc := c.enc(c.body)
		for _, via := range []string{"proxy", "reader"} {
			b.Run(c.name+"/"+via, func(b *testing.B) {
				bind, _ := hybridctx.NewBinding(owner("bench"), openStore(b, "mem://"))
				off, _ := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: 16384}, nil)
				ctx := context.Background()
				b.SetBytes(int64(len(c.body)))
				var shaT, runT []time.Duration
				var shares []float64
				n := 0
				cpu := cputime.Used()
				for b.Loop() {
					n++
					t0 := time.Now()
					_ = sha256.Sum256(c.body)
					sha := time.Since(t0)
					at := 0
					if c.name == "structured" {
						at = len(`{"n":"`) // inside its first string: the body stays JSON
					}
					var r io.Reader
					switch {
					case via == "reader":
						copy(c.body[at:], fmt.Sprintf("%08d", n)) // a new body each time: every op writes
						r = bytes.NewReader(c.body)
					case c.name == "structured":
						copy(enc[at:], fmt.Sprintf("%08d", n))
						r = rawValue(enc) // checked and copied as written, through a pipe (internal/bound/walk.go)
					default:
						copy(enc, fmt.Sprintf("%08d", n))
						r = jsonstream.NewStringReader(bufio.NewReaderSize(bytes.NewReader(enc), streamBuffer))
						if c.b64 {
							r = jsonstream.NewB64Reader(r, streamBuffer)
						}
					}
					t0 = time.Now()
					out, err := off.OffloadReader(ctx, hybridctx.Call{Tool: "t", ID: "1"}, r)
					d := time.Since(t0)
					if err != nil || out.Outcome() != hybridctx.Offloaded || out.Consumed != int64(len(c.body)) {
						b.Fatal(err, out.Outcome())
					}
					shaT, runT = append(shaT, sha), append(runT, d)
					shares = append(shares, 100*float64(sha)/float64(d))
				}
				reportCPU(b, cpu, len(c.body))
				reportShares(b, shares, shaT, runT, len(c.body))
			})
		}
	}
}

// structuredBody is about n bytes of structuredContent: rows of short
// fields after a counter each op rewrites.
func structuredBody(n int) []byte {
	row := `{"i":12345,"name":"row \u00e9 \"q\"","text":"` + strings.Repeat("structured row text ", 20) + `","ok":true,"v":[1.5,-2e3,null]},`
	b := []byte(`{"n":"00000000","rows":[`)
	b = append(b, strings.Repeat(row, n/len(row))...)
	return append(b, "{}]}"...)
}

// rawValue streams the JSON value in p as the walker streams
// structuredContent.
func rawValue(p []byte) io.Reader {
	j := jsonstream.NewReader(bufio.NewReaderSize(bytes.NewReader(p), streamBuffer), 0)
	pr, pw := io.Pipe()
	go func() {
		bw := bufio.NewWriterSize(pw, streamBuffer)
		err := j.Value(bw)
		if err == nil {
			err = bw.Flush()
		}
		_ = pw.CloseWithError(err)
	}()
	return pr
}

// jsonBody is p as a JSON string's body and closing quote, as encoding/json
// writes it.
func jsonBody(p []byte) []byte {
	q, _ := json.Marshal(string(p))
	return q[1:]
}

// reportCPU reports the CPU time's throughput since start as cpu-MB/s.
func reportCPU(b *testing.B, start time.Duration, size int) {
	if d := cputime.Used() - start; d > 0 {
		b.ReportMetric(float64(size)*float64(b.N)/d.Seconds()/1e6, "cpu-MB/s")
	}
}

// BenchmarkDecoders measures the streamed payload's decoders alone: the
// same 32 MiB strings as BenchmarkStreamPayload, read in the offload
// pipeline's 256 KiB chunks and dropped. MB/s is of the decoded bytes.
func BenchmarkDecoders(b *testing.B) {
	const size = 32 << 20
	unit := "línea \"cita\"\ttab 😀 fin\n"
	for _, c := range []struct {
		name string
		enc  []byte
		b64  bool
		n    int
	}{
		{"text", jsonBody([]byte(text(size))), false, size},
		{"text-escaped", jsonBody([]byte(strings.Repeat(unit, size/len(unit)))), false, size / len(unit) * len(unit)},
		{"base64", append([]byte(base64.StdEncoding.EncodeToString(binary(size))), '"'), true, size},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(c.n))
			buf := make([]byte, 256<<10)
			br := bufio.NewReaderSize(nil, streamBuffer)
			var shaT, runT []time.Duration
			var shares []float64
			for b.Loop() {
				t0 := time.Now()
				_ = sha256.Sum256(c.enc[:c.n])
				sha := time.Since(t0)
				t0 = time.Now()
				br.Reset(bytes.NewReader(c.enc))
				var r io.Reader = jsonstream.NewStringReader(br)
				if c.b64 {
					r = jsonstream.NewB64Reader(r, streamBuffer)
				}
				n := 0
				for {
					k, err := r.Read(buf)
					n += k
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				d := time.Since(t0)
				if n != c.n {
					b.Fatal(n)
				}
				shaT, runT = append(shaT, sha), append(runT, d)
				shares = append(shares, 100*float64(sha)/float64(d))
			}
			reportShares(b, shares, shaT, runT, c.n)
		})
	}
}

// reportShares reports the paired shares of the SHA-256 speed: their
// median, the share of the fastest times, and the fastest SHA-256 speed
// (of n bytes).
func reportShares(b *testing.B, shares []float64, shaT, runT []time.Duration, n int) {
	slices.Sort(shares)
	b.ReportMetric(shares[len(shares)/2], "%sha-med")
	b.ReportMetric(100*float64(slices.Min(shaT))/float64(slices.Min(runT)), "%sha-best")
	b.ReportMetric(float64(n)/slices.Min(shaT).Seconds()/1e6, "sha-MB/s-best")
}
