package workload

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"testing"
	"unicode/utf8"
)

func drain(t *testing.T, g *Generator) []Item {
	t.Helper()
	var out []Item
	for {
		it, err := g.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, it)
	}
}

// small are generator options whose sizes keep tests fast.
func small(seed uint64, count int) *GenerateOptions {
	return &GenerateOptions{Seed: seed, Count: count, MedianBytes: 512, MaxBytes: 32 << 10}
}

func digestOf(items []Item) [32]byte {
	h := sha256.New()
	for _, it := range items {
		h.Write([]byte(it.Session + "\x00" + it.Tool + "\x00" + it.CallID + "\x00"))
		h.Write(it.Content)
	}
	return [32]byte(h.Sum(nil))
}

func TestGenerateIsSeeded(t *testing.T) {
	gen := func(seed uint64) [32]byte {
		g, err := Generate(small(seed, 300))
		if err != nil {
			t.Fatal(err)
		}
		return digestOf(drain(t, g))
	}
	if first, again := gen(1), gen(1); first != again {
		t.Fatal("the same seed gave two workloads")
	}
	if gen(1) == gen(2) {
		t.Fatal("two seeds gave the same workload")
	}
}

func TestGenerateShape(t *testing.T) {
	const count = 2000
	g, err := Generate(small(7, count))
	if err != nil {
		t.Fatal(err)
	}
	items := drain(t, g)
	if len(items) != count {
		t.Fatalf("%d items, want %d", len(items), count)
	}
	sessions := map[string]int{}
	kinds := map[string]int{}
	seen := map[[32]byte]bool{}
	dups := 0
	var sizes []int
	for i, it := range items {
		if err := it.Validate(); err != nil {
			t.Fatalf("item %d: %v", i, err)
		}
		sessions[it.Session]++
		sizes = append(sizes, len(it.Content))
		sum := sha256.Sum256(it.Content)
		if seen[sum] {
			dups++
		}
		seen[sum] = true
		switch {
		case json.Valid(it.Content):
			kinds["json"]++
		case utf8.Valid(it.Content):
			kinds["text"]++
		default:
			kinds["binary"]++
		}
		if len(it.Content) > 32<<10 || len(it.Content) == 0 {
			t.Fatalf("item %d has %d bytes, outside [1, 32 KiB]", i, len(it.Content))
		}
	}
	if len(sessions) != 2 || sessions["session-1"] < count/3 || sessions["session-2"] < count/3 {
		t.Errorf("sessions: %v", sessions)
	}
	// About 10% exact duplicates (a few more come from tiny bodies
	// colliding by chance).
	if dups < count*7/100 || dups > count*14/100 {
		t.Errorf("%d duplicates of %d, want about 10%%", dups, count)
	}
	for _, k := range []string{"json", "text", "binary"} {
		if kinds[k] < count/20 {
			t.Errorf("kinds: %v: too few %s", kinds, k)
		}
	}
	slices.Sort(sizes)
	if med := sizes[len(sizes)/2]; med < 400 || med > 650 {
		t.Errorf("median size %d, want about 512", med)
	}
	if sizes[len(sizes)-1] < 16<<10 {
		t.Errorf("largest size %d: no long tail", sizes[len(sizes)-1])
	}
}

func TestGenerateDefaults(t *testing.T) {
	g, err := Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	o := g.Options()
	if o.Count != DefaultCount || o.Sessions != DefaultSessions || o.MedianBytes != DefaultMedianBytes ||
		o.MaxBytes != DefaultMaxBytes || o.Duplicates != DefaultDuplicates {
		t.Fatalf("defaults: %+v", o)
	}
	// The first results of the default workload, which `hybridctx-bench`
	// replays: their sizes follow the default shape.
	for range 20 {
		it, err := g.Next()
		if err != nil || len(it.Content) == 0 || len(it.Content) > DefaultMaxBytes {
			t.Fatalf("default item: %d bytes, %v", len(it.Content), err)
		}
	}
	none, err := Generate(&GenerateOptions{Count: 200, MedianBytes: 64, MaxBytes: 64, Duplicates: -1})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, it := range drain(t, none) {
		if len(it.Content) != 64 {
			t.Fatalf("median = max = 64 gave a %d-byte item", len(it.Content))
		}
		if seen[string(it.Content)] && !bytes.Equal(it.Content, make([]byte, 64)) {
			t.Fatal("Duplicates < 0 still repeated a result")
		}
		seen[string(it.Content)] = true
	}
}

func TestGenerateOptionErrors(t *testing.T) {
	for _, o := range []GenerateOptions{
		{Count: -1}, {Sessions: -1}, {Sessions: 1001}, {MedianBytes: -1}, {MaxBytes: -1},
		{MedianBytes: 10, MaxBytes: 5}, {Duplicates: 1}, {Duplicates: 1.5},
	} {
		if _, err := Generate(&o); !errors.Is(err, ErrOptions) {
			t.Errorf("Generate(%+v) = %v, want ErrOptions", o, err)
		}
	}
}

func TestCutTextKeepsRunesWhole(t *testing.T) {
	for _, s := range []string{"ab日", "a🙂", "aé", "abc"} {
		for n := 1; n <= len(s); n++ {
			got := cutText([]byte(s), n)
			if len(got) != n || !utf8.Valid(got) {
				t.Errorf("cutText(%q, %d) = %q", s, n, got)
			}
		}
	}
}
