package hybridctx_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/internal/cputime"
)

// tokenLogBody returns n bytes of log-like text, the same for the same n.
func tokenLogBody(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "2026-12-01T10:%02d:%02d.%03dZ INFO  svc/handler.go:%d served %s in %d ms (user=%x, naïve=%d)\n",
			i/60%60, i%60, i*37%1000, 100+i%400, []string{"GET /api/items", "POST /api/orders", "GET /healthz"}[i%3], i*13%900, i*7919, i)
	}
	return b.Bytes()[:n]
}

// TestNoticeTokensCount: no tokenizer, no count; a body up to
// NoticeTokenWhole is counted whole, exactly; a larger one from its first
// NoticeTokenPrefix bytes, cut back to a UTF-8 boundary, scaled by its size
// and rounded up, with both built-in BPE encodings; the estimate is
// ceil(bytes/4) at any size.
func TestNoticeTokensCount(t *testing.T) {
	const prefix, whole = hybridctx.NoticeTokenPrefix, hybridctx.NoticeTokenWhole
	if got := hybridctx.NoticeTokensOf(hybridctx.Policy{}, tokenLogBody(100), 100); got != 0 {
		t.Fatalf("no tokenizer: %d", got)
	}
	for _, tk := range []hybridctx.Tokenizer{hybridctx.EstimateTokens{}, o200k, cl100k} {
		_, estimate := tk.(hybridctx.EstimateTokens)
		p := hybridctx.Policy{Tokenizer: tk}
		for _, n := range []int{prefix, 3 * prefix, whole} {
			body := tokenLogBody(n)
			if got, want := hybridctx.NoticeTokensOf(p, body, int64(n)), tk.CountTokens(string(body)); got != want {
				t.Errorf("%s: %d bytes: %d tokens, want the exact %d", tk.Name(), n, got, want)
			}
		}
		big := tokenLogBody(whole + 1)
		c := tk.CountTokens(string(big[:prefix]))
		want := (c*(whole+1) + prefix - 1) / prefix
		if estimate {
			want = (whole + 1 + 3) / 4
		}
		if got := hybridctx.NoticeTokensOf(p, big, int64(len(big))); got != want {
			t.Errorf("%s: one byte over NoticeTokenWhole: %d tokens, want %d", tk.Name(), got, want)
		}
		// A two-byte rune across the prefix's end: counted up to it.
		cut := bytes.Repeat([]byte("a"), prefix-1)
		cut = append(cut, "é"...)
		cut = append(cut, strings.Repeat("b", whole)...)
		n := int64(len(cut))
		c = tk.CountTokens(string(cut[:prefix-1]))
		want = (c*n + prefix - 2) / (prefix - 1)
		if estimate {
			want = (n + 3) / 4
		}
		if got := hybridctx.NoticeTokensOf(p, cut, n); got != want {
			t.Errorf("%s: a rune across the prefix: %d tokens, want %d", tk.Name(), got, want)
		}
		if got := hybridctx.NoticeTokensOf(p, nil, 1<<40); got != 1<<38 {
			t.Errorf("%s: no head: %d, want the estimate", tk.Name(), got)
		}
	}
}

// TestNoticeTokensLine: an offloaded result's notice shows its count on
// line 2, the same for bytes and a stream of it, within MaxNoticeLen:
// exact ("<T> tokens") for a body up to NoticeTokenWhole under a BPE
// encoding, "≈<T> tokens" for a larger one and under the estimate; a
// policy without a tokenizer shows none.
func TestNoticeTokensLine(t *testing.T) {
	for _, size := range []int{hybridctx.NoticeTokenPrefix, hybridctx.NoticeTokenWhole, hybridctx.NoticeTokenWhole + 1} {
		body := tokenLogBody(size)
		for _, p := range []hybridctx.Policy{{Tokenizer: o200k}, {Tokenizer: hybridctx.EstimateTokens{}}, {}} {
			e := newEnv(t, 1)
			p.InlineThreshold = 1024
			off, err := hybridctx.NewOffloader(e.bind, p, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := mustOffload(t, off, e.ctx, body).Notice
			streamed, err := off.OffloadReader(e.ctx, hybridctx.Call{Tool: "tool", ID: "call"}, bytes.NewReader(body))
			if err != nil || streamed.Notice != got || len(got) > hybridctx.MaxNoticeLen {
				t.Fatalf("%v; %d bytes, streamed %q, bytes %q", err, len(got), streamed.Notice, got)
			}
			line2 := strings.Split(got, "\n")[1]
			var want string
			switch p.Tokenizer {
			case nil:
				want = fmt.Sprintf("%d bytes, ", size)
				if strings.Contains(got, "tokens") {
					t.Errorf("tokens without a tokenizer: %q", line2)
				}
			case o200k:
				if size <= hybridctx.NoticeTokenWhole {
					want = fmt.Sprintf("%d bytes, %d tokens, ", size, o200k.CountTokens(string(body)))
				} else {
					want = fmt.Sprintf("%d bytes, ≈%d tokens, ", size, hybridctx.NoticeTokensOf(p, body, int64(size)))
				}
			default:
				want = fmt.Sprintf("%d bytes, ≈%d tokens, ", size, (size+3)/4)
			}
			if !strings.HasPrefix(line2, want) {
				t.Errorf("line 2 %q, want it to begin %q", line2, want)
			}
			if st, ok := hybridctx.ParseStoredText(got); !ok || st.Size != int64(size) {
				t.Errorf("%q: %+v %v", line2, st, ok)
			}
		}
	}
}

// BenchmarkNoticeTokens is what the token count adds to the decision of
// one offloaded body: the notice's count ("notice": the whole body up to
// NoticeTokenWhole, then NoticeTokenPrefix bytes), against counting the
// whole body ("whole").
func BenchmarkNoticeTokens(b *testing.B) {
	for _, tk := range []hybridctx.Tokenizer{hybridctx.EstimateTokens{}, o200k} {
		for _, sz := range []struct {
			name string
			n    int
		}{{"64KiB", 64 << 10}, {"1MiB", 1 << 20}, {"64MiB", 64 << 20}} {
			body := tokenLogBody(sz.n)
			p := hybridctx.Policy{Tokenizer: tk}
			tk.CountTokens("warm up") // the vocabulary loads once
			b.Run(tk.Name()+"/notice/"+sz.name, func(b *testing.B) {
				b.ReportAllocs()
				cpu := cputime.Used()
				for b.Loop() {
					hybridctx.NoticeTokensOf(p, body, int64(len(body)))
				}
				b.ReportMetric(float64(cputime.Used()-cpu)/float64(b.N), "cpu-ns/op")
			})
			if sz.n <= 1<<20 {
				b.Run(tk.Name()+"/whole/"+sz.name, func(b *testing.B) {
					b.ReportAllocs()
					s := string(body)
					for b.Loop() {
						tk.CountTokens(s)
					}
				})
			}
		}
	}
}

// BenchmarkOffloadTokens offloads a fresh text body as bytes with no
// tokenizer, the estimate and o200k_base: the notice's count against the
// whole decision (hash, classification, store).
func BenchmarkOffloadTokens(b *testing.B) {
	for _, sz := range []struct {
		name string
		n    int
	}{{"64KiB", 64 << 10}, {"1MiB", 1 << 20}, {"64MiB", 64 << 20}} {
		body := tokenLogBody(sz.n)
		for _, tk := range []hybridctx.Tokenizer{nil, hybridctx.EstimateTokens{}, o200k} {
			name := "none"
			if tk != nil {
				name = tk.Name()
			}
			b.Run(sz.name+"/"+name, func(b *testing.B) {
				e := newEnv(b, 1)
				off, err := hybridctx.NewOffloader(e.bind, hybridctx.Policy{InlineThreshold: 4096, Tokenizer: tk}, nil)
				if err != nil {
					b.Fatal(err)
				}
				call := hybridctx.Call{Tool: "t", ID: "c"}
				b.SetBytes(int64(sz.n))
				b.ReportAllocs()
				i := 0
				cpu := cputime.Used()
				for b.Loop() {
					i++
					copy(body, fmt.Sprintf("%016d", i)) // a fresh digest each time
					out, err := off.Offload(e.ctx, call, body)
					if err != nil || out.Outcome() != hybridctx.Offloaded {
						b.Fatal(err, out.Outcome())
					}
					_ = e.store.DeleteBody(e.ctx, out.Ref)
				}
				b.ReportMetric(float64(cputime.Used()-cpu)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// TestNoticeTokensParse: every golden notice, with and without ≈tokens,
// is a notice of a stored result to ParseStoredText (which the history
// compactor and the adapters rely on); a malformed token count is not.
func TestNoticeTokensParse(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "notice", "*.golden"))
	if err != nil || len(files) < 12 {
		t.Fatalf("%d golden notices, %v", len(files), err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		st, ok := hybridctx.ParseStoredText(string(b))
		if !ok || st.Masked || st.Size <= 0 || st.Lines <= 0 || st.Kind == "" {
			t.Errorf("%s: %+v, %v", f, st, ok)
		}
	}
	b, _ := os.ReadFile(filepath.Join("testdata", "notice", "text-tokens.golden"))
	for _, bad := range []string{"≈x tokens, ", "≈12 token, ", "≈ tokens, ", "≈12 tokens ", "12 token, ", "12 tokens "} {
		text := strings.Replace(string(b), "≈4122 tokens, ", bad, 1)
		if _, ok := hybridctx.ParseStoredText(text); ok || text == string(b) {
			t.Errorf("%q parsed", bad)
		}
	}
}

// FuzzNoticeTokens: for any body, the notice under o200k_base is the same
// for bytes and a stream, within MaxNoticeLen, shows a token count, and
// reads back through ParseStoredText with the body's size.
func FuzzNoticeTokens(f *testing.F) {
	f.Add([]byte("hello, world\n"), uint16(0))
	f.Add([]byte("é"), uint16(hybridctx.NoticeTokenPrefix-1))
	f.Add([]byte{0xff, 0xfe, 0}, uint16(5000))
	f.Add([]byte(`{"a": [1, 2, 3]}`), uint16(100))
	e := newEnv(f, 1)
	off, err := hybridctx.NewOffloader(e.bind, hybridctx.Policy{InlineThreshold: 1, Tokenizer: o200k}, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, seed []byte, pad uint16) {
		// pad bytes of filler before the seed put it anywhere around the
		// counted prefix's end.
		body := append(bytes.Repeat([]byte("a"), int(pad)), seed...)
		if len(body) < 2 {
			return
		}
		got := mustOffload(t, off, e.ctx, body).Notice
		streamed, err := off.OffloadReader(e.ctx, hybridctx.Call{Tool: "tool", ID: "call"}, bytes.NewReader(body))
		if err != nil || streamed.Notice != got {
			t.Fatalf("%v: bytes %q, stream %q", err, got, streamed.Notice)
		}
		st, ok := hybridctx.ParseStoredText(got)
		if len(got) > hybridctx.MaxNoticeLen || !ok || st.Size != int64(len(body)) || !strings.Contains(got, " tokens, ") {
			t.Fatalf("%d bytes, parsed %+v %v: %q", len(got), st, ok, got)
		}
	})
}
