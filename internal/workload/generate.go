package workload

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
)

// Defaults of GenerateOptions.
const (
	DefaultCount       = 1000
	DefaultSessions    = 2
	DefaultMedianBytes = 8 << 10
	DefaultMaxBytes    = 8 << 20
	// DefaultDuplicates is the share of results that repeat an earlier
	// result's content exactly.
	DefaultDuplicates = 0.10
)

// z999 is the 99.9th percentile of the standard normal distribution: the
// default spread puts the 99.9th percentile of sizes at MaxBytes.
const z999 = 3.090232

// GenerateOptions shape a generated workload. The zero value means the
// defaults: 1,000 results in two sessions, log-normal sizes with a median
// of 8 KiB whose 99.9th percentile is 8 MiB (sizes are clamped to
// [1, 8 MiB]), 10% exact duplicates.
type GenerateOptions struct {
	// Seed selects the workload; the same options give the same items.
	Seed uint64
	// Count is the number of results; 0 means DefaultCount.
	Count int
	// Sessions is the number of sessions; 0 means DefaultSessions.
	Sessions int
	// MedianBytes and MaxBytes shape the sizes; 0 means the defaults.
	MedianBytes, MaxBytes int
	// Duplicates is the share of exact duplicates, in [0, 1); a negative
	// value means none, 0 means DefaultDuplicates.
	Duplicates float64
}

// ErrOptions wraps invalid generator options.
var ErrOptions = errors.New("workload: invalid options")

// Generator is a Source of seeded, synthetic tool results: logs and test
// output (text, now and then with non-ASCII runes), API and database
// answers (JSON) and file downloads (binary). Each result's content is a
// function of the seed and its index only, so duplicates are regenerated
// instead of kept in memory: a Generator holds one int per result.
type Generator struct {
	o      GenerateOptions
	sigma  float64
	seq    *rand.Rand
	next   int
	source []int32 // source[i] is the index whose content item i repeats
}

// Generate returns a Generator for opts (nil means defaults).
func Generate(opts *GenerateOptions) (*Generator, error) {
	var o GenerateOptions
	if opts != nil {
		o = *opts
	}
	if o.Count == 0 {
		o.Count = DefaultCount
	}
	if o.Sessions == 0 {
		o.Sessions = DefaultSessions
	}
	if o.MedianBytes == 0 {
		o.MedianBytes = DefaultMedianBytes
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	switch {
	case o.Duplicates == 0:
		o.Duplicates = DefaultDuplicates
	case o.Duplicates < 0:
		o.Duplicates = 0
	}
	switch {
	case o.Count < 0 || o.Count > math.MaxInt32:
		return nil, fmt.Errorf("%w: count must be in [1, %d]", ErrOptions, math.MaxInt32)
	case o.Sessions < 0 || o.Sessions > 1000:
		return nil, fmt.Errorf("%w: sessions must be in [1, 1000]", ErrOptions)
	case o.MedianBytes < 0 || o.MaxBytes < 0 || o.MedianBytes > o.MaxBytes:
		return nil, fmt.Errorf("%w: need 0 < median bytes <= max bytes", ErrOptions)
	case !(o.Duplicates < 1):
		return nil, fmt.Errorf("%w: duplicates must be below 1", ErrOptions)
	}
	sigma := 0.0
	if o.MaxBytes > o.MedianBytes {
		sigma = math.Log(float64(o.MaxBytes)/float64(o.MedianBytes)) / z999
	}
	return &Generator{o: o, sigma: sigma, seq: rand.New(rand.NewPCG(o.Seed, 0x6f6b)), source: make([]int32, 0, o.Count)}, nil
}

// Options returns the options in effect, defaults filled in.
func (g *Generator) Options() GenerateOptions { return g.o }

// Next implements Source.
func (g *Generator) Next() (Item, error) {
	i := g.next
	if i >= g.o.Count {
		return Item{}, io.EOF
	}
	g.next++
	src := int32(i)
	if i > 0 && g.seq.Float64() < g.o.Duplicates {
		src = g.source[g.seq.IntN(i)]
	}
	g.source = append(g.source, src)
	session := "session-" + strconv.Itoa(1+g.seq.IntN(g.o.Sessions))
	kind, content := g.content(int(src))
	return Item{
		Session: session,
		Tool:    toolNames[kind][g.seq.IntN(len(toolNames[kind]))],
		CallID:  "call_" + strconv.Itoa(i),
		Content: content,
	}, nil
}

// The kinds of generated content.
const (
	kindText = iota
	kindJSON
	kindBinary
)

var toolNames = [...][]string{
	kindText:   {"run_tests", "grep", "read_file", "shell"},
	kindJSON:   {"http_get", "sql_query", "list_issues"},
	kindBinary: {"download", "read_file"},
}

// content returns the kind and bytes of item i's own content.
func (g *Generator) content(i int) (int, []byte) {
	r := rand.New(rand.NewPCG(g.o.Seed, uint64(i)+1))
	size := float64(g.o.MedianBytes) * math.Exp(g.sigma*r.NormFloat64())
	n := int(min(max(size, 1), float64(g.o.MaxBytes)))
	switch k := r.IntN(20); {
	case k < 11:
		return kindText, textOf(r, n)
	case k < 18:
		return kindJSON, jsonOf(r, n)
	default:
		b := make([]byte, n)
		for j := 0; j < n; j += 8 {
			v := r.Uint64()
			for k := j; k < min(j+8, n); k++ {
				b[k] = byte(v)
				v >>= 8
			}
		}
		return kindBinary, b
	}
}

const alnum = "abcdefghijklmnopqrstuvwxyz0123456789"

var (
	levels  = []string{"INFO ", "INFO ", "INFO ", "DEBUG", "WARN ", "ERROR"}
	modules = []string{"api/server.go", "store/dir.go", "agent/loop.go", "cmd/main.go", "internal/cache.go"}
	words   = []string{"request", "served", "in", "ms", "cache", "miss", "retry", "connection", "reset",
		"by", "peer", "ok", "user", "query", "rows", "scanned", "flush", "wrote", "bytes", "to", "disk",
		"PASS", "FAIL", "--- test", "timeout", "résumé", "naïve", "✓", "→", "日本語"}
)

// textOf returns n bytes of log-like text: valid UTF-8 (the last line is
// padded with spaces rather than cut inside a rune).
func textOf(r *rand.Rand, n int) []byte {
	b := make([]byte, 0, n+96)
	for len(b) < n {
		b = append(b, "2026-11-30T08:"...)
		b = appendPadded(b, r.IntN(60))
		b = append(b, ':')
		b = appendPadded(b, r.IntN(60))
		b = append(b, '.')
		b = strconv.AppendInt(b, 100+int64(r.IntN(900)), 10)
		b = append(b, "Z "...)
		b = append(b, levels[r.IntN(len(levels))]...)
		b = append(b, ' ')
		b = append(b, modules[r.IntN(len(modules))]...)
		b = append(b, ':')
		b = strconv.AppendInt(b, int64(1+r.IntN(900)), 10)
		for k := 3 + r.IntN(10); k > 0; k-- {
			b = append(b, ' ')
			b = append(b, words[r.IntN(len(words))]...)
		}
		b = append(b, " id="...)
		b = strconv.AppendUint(b, r.Uint64()>>20, 16)
		b = append(b, '\n')
	}
	return cutText(b, n)
}

func appendPadded(b []byte, v int) []byte {
	if v < 10 {
		b = append(b, '0')
	}
	return strconv.AppendInt(b, int64(v), 10)
}

// cutText cuts b to exactly n bytes without splitting a rune: bytes of a
// rune that would be cut become spaces.
func cutText(b []byte, n int) []byte {
	b = b[:n]
	for i := n - 1; i >= 0 && i >= n-3; i-- {
		if c := b[i]; c < 0x80 {
			break
		} else if c >= 0xC0 {
			// A leading byte: keep the rune only if it is complete.
			need := 2
			if c >= 0xE0 {
				need = 3
			}
			if c >= 0xF0 {
				need = 4
			}
			if n-i < need {
				for j := i; j < n; j++ {
					b[j] = ' '
				}
			}
			break
		}
	}
	return b
}

// jsonOf returns n bytes of JSON: an array of records padded with
// trailing whitespace, or, when not even one record fits, a string (a
// digit for n = 1).
func jsonOf(r *rand.Rand, n int) []byte {
	b := make([]byte, 0, n+256)
	if n < 160 {
		if n == 1 {
			return append(b, byte('0'+r.IntN(10)))
		}
		b = append(b, '"')
		for len(b) < n-1 {
			b = append(b, alnum[r.IntN(len(alnum))])
		}
		return append(b, '"')
	}
	b = append(b, '[')
	var rec []byte
	for i := 0; ; i++ {
		rec = rec[:0]
		if i > 0 {
			rec = append(rec, ",\n"...)
		}
		rec = append(rec, `{"id":`...)
		rec = strconv.AppendInt(rec, int64(r.IntN(1_000_000)), 10)
		rec = append(rec, `,"name":"`...)
		rec = append(rec, words[r.IntN(len(words))]...)
		rec = append(rec, `","score":`...)
		rec = strconv.AppendFloat(rec, r.NormFloat64()*100, 'g', 6, 64)
		rec = append(rec, `,"ok":`...)
		rec = strconv.AppendBool(rec, r.IntN(4) != 0)
		rec = append(rec, `,"tags":["a","b\u00e9",null],"path":"/srv/data/`...)
		rec = strconv.AppendUint(rec, r.Uint64()>>24, 36)
		rec = append(rec, `.json"}`...)
		if len(b)+len(rec)+1 > n {
			break
		}
		b = append(b, rec...)
	}
	b = append(b, ']')
	for len(b) < n {
		b = append(b, '\n')
	}
	return b
}
