package hybridctx

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/internal/classify"
)

// noticePolicies are the default tool names and the longest ones.
func noticePolicies() []Policy {
	long := func(c string) string { return strings.Repeat(c, MaxReadToolNameLen) }
	return []Policy{{}, {ReadToolName: long("r"), SearchToolName: long("s"), QueryToolName: long("q")},
		{ReadToolName: long("r")}, {SearchToolName: long("s")}}
}

// TestNoticeBoundAtTheExtremes: at the largest sizes and line counts and
// with the longest tool names, every kind's notice stays within
// MaxNoticeLen, shows the policy's tool names, and a JSON body's outline
// is cut to the room left (never dropped while there is room for one),
// with and without the largest token count on line 2.
func TestNoticeBoundAtTheExtremes(t *testing.T) {
	var wide strings.Builder
	wide.WriteString("{")
	for i := range 10000 {
		fmt.Fprintf(&wide, `"%s%d":[{"a":1}],`, strings.Repeat("é", 30), i)
	}
	wide.WriteString(`"z":0}`)
	var sh classify.Shape
	sh.Write([]byte(wide.String()))
	ref := artifact.RefOf([]byte("x"))
	for _, p := range noticePolicies() {
		for _, n := range []int64{0, 1, 65536, 1 << 30, math.MaxInt64} {
			for _, tk := range []int64{0, math.MaxInt64} {
				for _, kind := range []string{"text", "json", "binary"} {
					f := &stored{ref: ref, size: n, lines: n, kind: kind, tokens: tk}
					var sb [classify.MaxShapeLen]byte
					if kind == "json" {
						f.shape = sh.Append(sb[:0], shapeRoom(f, p))
					}
					got := storedNotice(f, p)
					if len(got) > MaxNoticeLen || !utf8.ValidString(got) {
						t.Fatalf("%s, %d bytes, %+v: %d bytes: %q", kind, n, p, len(got), got)
					}
					lines := strings.Split(got, "\n")
					line2 := fmt.Sprintf("%d bytes, %d lines, %s;", n, n, kind)
					if tk > 0 && strings.Contains(got, "≈") {
						line2 = fmt.Sprintf("%d bytes, ≈%d tokens, %d lines, %s;", n, tk, n, kind)
					} else if tk > 0 && !(n == math.MaxInt64 && kind == "text" && p.SearchToolName != "") {
						t.Errorf("%s, %d bytes: the tokens left out where they fit: %q", kind, n, got)
					}
					if lines[0] != ref.String() || !strings.HasPrefix(lines[1], line2) {
						t.Fatalf("lines 1-2: %q", got)
					}
					tools := map[string][]View{"text": {ViewSearch, ViewLines}, "json": {ViewQuery}, "binary": {ViewRange}}[kind]
					for _, v := range tools {
						if !strings.Contains(lines[2], " "+p.ToolName(v)) {
							t.Errorf("%s: line 3 does not name %s: %q", kind, p.ToolName(v), lines[2])
						}
					}
					if kind == "json" {
						if len(lines) != 4 || !strings.HasPrefix(lines[3], shapePrefix+"{") || len(lines[3]) > classify.MaxShapeLen || !strings.Contains(lines[3], "…") {
							t.Errorf("line 4: %q", got)
						}
					} else if len(lines) != 3 {
						t.Errorf("%s: %d lines: %q", kind, len(lines), got)
					}
				}
			}
		}
	}
}
