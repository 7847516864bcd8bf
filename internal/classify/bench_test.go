package classify

import (
	"crypto/sha256"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx/internal/cputime"
)

// benchText returns n bytes of UTF-8 prose in lines.
func benchText(n int) []byte {
	words := []string{"the", "tool", "returned", "résumé", "naïve", "日本語", "🙂", "output", "of", "grep", "-rn", "main.go:42:", "error", "ok"}
	r := rand.New(rand.NewPCG(1, 1))
	b := make([]byte, 0, n+64)
	for len(b) < n {
		b = append(b, words[r.IntN(len(words))]...)
		if r.IntN(10) == 0 {
			b = append(b, '\n')
		} else {
			b = append(b, ' ')
		}
	}
	// Trim to n without cutting a rune.
	for len(b) > n || b[len(b)-1]&0xC0 == 0x80 || b[len(b)-1] >= 0xC0 {
		b = b[:len(b)-1]
	}
	return b
}

// benchJSON returns an indented JSON array of about n bytes.
func benchJSON(n int) []byte {
	r := rand.New(rand.NewPCG(2, 2))
	b := make([]byte, 0, n+512)
	b = append(b, "[\n"...)
	for i := 0; len(b) < n-300; i++ {
		if i > 0 {
			b = append(b, ",\n"...)
		}
		b = append(b, "  {\n    \"id\": "...)
		b = strconv.AppendInt(b, int64(r.IntN(1e6)), 10)
		b = append(b, ",\n    \"name\": "...)
		b = strconv.AppendQuote(b, strings.Repeat("file_é", 1+r.IntN(6)))
		b = append(b, ",\n    \"path\": \"/usr/src/project/internal/pkg/file.go\",\n    \"score\": "...)
		b = strconv.AppendFloat(b, r.NormFloat64()*1e3, 'g', -1, 64)
		b = append(b, ",\n    \"ok\": true,\n    \"tags\": [\"a\", \"bb\", null, false],\n    \"note\": \"line\\nwith \\\"escapes\\\" \\u00e9\"\n  }"...)
	}
	return append(b, "\n]\n"...)
}

// benchBinary returns n random bytes.
func benchBinary(n int) []byte {
	r := rand.New(rand.NewPCG(3, 3))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// BenchmarkClassify measures throughput over 1 MiB inputs written in
// 32 KiB chunks, the size io.Copy uses.
func BenchmarkClassify(b *testing.B) {
	const size = 1 << 20
	for _, bc := range []struct {
		name string
		data []byte
		want Kind
	}{
		{"text", benchText(size), Text},
		{"json", benchJSON(size), JSON},
		{"binary", benchBinary(size), Binary},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var c Classifier
			b.SetBytes(int64(len(bc.data)))
			b.ReportAllocs()
			for b.Loop() {
				c.Reset()
				for p := bc.data; len(p) > 0; {
					k := min(len(p), 32<<10)
					c.Write(p[:k])
					p = p[k:]
				}
			}
			if got := c.Kind(); got != bc.want {
				b.Fatalf("Kind = %v, want %v", got, bc.want)
			}
		})
	}
}

// benchAPI returns compact JSON of about n bytes shaped like a REST API's
// list response: objects with ids, timestamps, URLs, nested users and
// labels, and long markdown bodies with escaped newlines and quotes.
func benchAPI(n int) []byte {
	r := rand.New(rand.NewPCG(4, 4))
	words := strings.Fields("the tool call failed because a config file was missing from the build; see https://example.com/docs for details and retry with --verbose")
	b := make([]byte, 0, n+1024)
	b = append(b, `{"total_count":`...)
	b = strconv.AppendInt(b, int64(r.IntN(1e4)), 10)
	b = append(b, `,"incomplete_results":false,"items":[`...)
	for i := 0; len(b) < n-700; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		id := r.IntN(1e9)
		b = append(b, `{"id":`...)
		b = strconv.AppendInt(b, int64(id), 10)
		b = append(b, `,"node_id":"I_kwDOAbc`...)
		b = strconv.AppendInt(b, int64(id), 36)
		b = append(b, `","url":"https://api.example.com/repos/acme/widgets/issues/`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `","title":`...)
		b = strconv.AppendQuote(b, strings.Join(words[:3+r.IntN(8)], " "))
		b = append(b, `,"user":{"login":"dev`...)
		b = strconv.AppendInt(b, int64(r.IntN(500)), 10)
		b = append(b, `","id":`...)
		b = strconv.AppendInt(b, int64(r.IntN(1e7)), 10)
		b = append(b, `,"type":"User","site_admin":false},"labels":[{"name":"bug","color":"d73a4a","default":true}],"state":"open","locked":false,"comments":`...)
		b = strconv.AppendInt(b, int64(r.IntN(40)), 10)
		b = append(b, `,"created_at":"2024-05-17T09:12:44Z","updated_at":"2024-06-01T18:03:09Z","closed_at":null,"score":`...)
		b = strconv.AppendFloat(b, r.Float64(), 'f', 6, 64)
		b = append(b, `,"body":`...)
		var body strings.Builder
		for range 10 + r.IntN(40) {
			body.WriteString(words[r.IntN(len(words))])
			switch r.IntN(12) {
			case 0:
				body.WriteString("\n\n")
			case 1:
				body.WriteString(` "quoted" `)
			default:
				body.WriteByte(' ')
			}
		}
		b = strconv.AppendQuote(b, body.String())
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// benchListing returns pretty-printed JSON of about n bytes shaped like a
// directory listing: an array of small objects with paths, sizes, modes
// and times, indented by two spaces, with some non-ASCII names.
func benchListing(n int) []byte {
	r := rand.New(rand.NewPCG(5, 5))
	dirs := []string{"src", "internal", "docs", "测试", "données", "vendor/github.com/acme"}
	exts := []string{".go", ".md", ".json", "_test.go", ".yaml"}
	b := make([]byte, 0, n+512)
	b = append(b, "{\n  \"root\": \"/home/user/project\",\n  \"entries\": [\n"...)
	for i := 0; len(b) < n-300; i++ {
		if i > 0 {
			b = append(b, ",\n"...)
		}
		name := "file" + strconv.Itoa(r.IntN(1000)) + exts[r.IntN(len(exts))]
		b = append(b, "    {\n      \"name\": \""...)
		b = append(b, name...)
		b = append(b, "\",\n      \"path\": \""...)
		b = append(b, dirs[r.IntN(len(dirs))]...)
		b = append(b, '/')
		b = append(b, name...)
		b = append(b, "\",\n      \"type\": \"file\",\n      \"size\": "...)
		b = strconv.AppendInt(b, int64(r.IntN(1<<20)), 10)
		b = append(b, ",\n      \"mode\": \"0644\",\n      \"modified\": \"2024-03-0"...)
		b = strconv.AppendInt(b, int64(1+r.IntN(9)), 10)
		b = append(b, "T12:00:00Z\",\n      \"symlink\": false\n    }"...)
	}
	return append(b, "\n  ]\n}\n"...)
}

// benchLogs returns compact JSON of about n bytes: an array of structured
// log records with levels, messages, durations and nested fields.
func benchLogs(n int) []byte {
	r := rand.New(rand.NewPCG(6, 6))
	msgs := []string{"request served", "cache miss for key user:1234", "retrying upstream after 503", "élément mis à jour", "slow query: SELECT * FROM events WHERE id = $1", "connection reset by peer"}
	levels := []string{"debug", "info", "warn", "error"}
	b := make([]byte, 0, n+512)
	b = append(b, '[')
	for i := 0; len(b) < n-300; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"ts":"2024-06-01T18:03:`...)
		b = strconv.AppendInt(b, int64(10+r.IntN(50)), 10)
		b = append(b, `.`...)
		b = strconv.AppendInt(b, int64(100000+r.IntN(900000)), 10)
		b = append(b, `Z","level":"`...)
		b = append(b, levels[r.IntN(len(levels))]...)
		b = append(b, `","msg":`...)
		b = strconv.AppendQuote(b, msgs[r.IntN(len(msgs))])
		b = append(b, `,"service":"api-gateway","trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","duration_ms":`...)
		b = strconv.AppendFloat(b, r.ExpFloat64()*20, 'f', 3, 64)
		b = append(b, `,"http":{"method":"GET","path":"/v1/items/`...)
		b = strconv.AppendInt(b, int64(r.IntN(1e5)), 10)
		b = append(b, `","status":`...)
		b = strconv.AppendInt(b, int64(200+r.IntN(4)*100), 10)
		b = append(b, `}}`...)
	}
	return append(b, ']')
}

type benchCase struct {
	name string
	data []byte
	want Kind
}

// wholeCases are bodies up to JSONScanLimit, each classified by one Write
// (how an offload hands a body held in memory to the classifier).
func wholeCases() []benchCase {
	var cs []benchCase
	for _, size := range []struct {
		name string
		n    int
	}{{"4KiB", 4 << 10}, {"32KiB", 32 << 10}, {"64KiB", 64 << 10}} {
		cs = append(cs,
			benchCase{"api/" + size.name, benchAPI(size.n), JSON},
			benchCase{"listing/" + size.name, benchListing(size.n), JSON},
			benchCase{"logs/" + size.name, benchLogs(size.n), JSON},
			benchCase{"indented/" + size.name, benchJSON(size.n), JSON},
			benchCase{"text/" + size.name, benchText(size.n), Text},
		)
	}
	return cs
}

// BenchmarkClassifyWhole classifies bodies of 4–64 KiB given in one Write.
// BenchmarkSHA256 hashes the same bodies: the yardstick.
func BenchmarkClassifyWhole(b *testing.B) {
	for _, bc := range wholeCases() {
		if len(bc.data) > JSONScanLimit {
			b.Fatalf("%s: %d bytes", bc.name, len(bc.data))
		}
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.data)))
			b.ReportAllocs()
			var k Kind
			var best bestTime
			cpu := cputime.Used()
			for b.Loop() {
				t0 := time.Now()
				k, _ = Of(bc.data)
				best.add(time.Since(t0))
			}
			reportCPU(b, cpu, len(bc.data))
			best.report(b, len(bc.data))
			if k != bc.want {
				b.Fatalf("Kind = %v, want %v", k, bc.want)
			}
		})
	}
}

// BenchmarkSHA256 hashes the bodies of BenchmarkClassifyWhole.
func BenchmarkSHA256(b *testing.B) {
	for _, bc := range wholeCases() {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.data)))
			var best bestTime
			cpu := cputime.Used()
			for b.Loop() {
				t0 := time.Now()
				sha256.Sum256(bc.data)
				best.add(time.Since(t0))
			}
			reportCPU(b, cpu, len(bc.data))
			best.report(b, len(bc.data))
		})
	}
}

// reportCPU reports the process's CPU time per iteration since start, and
// the throughput over n bytes per iteration it implies (cpu-MB/s): on a
// loaded machine these move less than ns/op and MB/s, which also count
// the time spent waiting for a core.
func reportCPU(b *testing.B, start time.Duration, n int) {
	ns := float64(cputime.Used()-start) / float64(b.N)
	b.ReportMetric(ns, "cpu-ns/op")
	if ns > 0 {
		b.ReportMetric(float64(n)/ns*1e3, "cpu-MB/s")
	}
}

// bestTime keeps the fastest iteration: the one least disturbed by other
// work on a shared machine, so the closest to what the code costs.
type bestTime struct{ d time.Duration }

func (t *bestTime) add(d time.Duration) {
	if t.d == 0 || d < t.d {
		t.d = d
	}
}

// report gives the throughput of the fastest iteration over n bytes
// (best-MB/s).
func (t *bestTime) report(b *testing.B, n int) {
	if t.d > 0 {
		b.ReportMetric(float64(n)/t.d.Seconds()/1e6, "best-MB/s")
	}
}
