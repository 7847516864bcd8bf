package sink

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/hybridctx/hybridctx"
)

// WriteText writes the run summary's lines as the command line prints them
// (docs/cli.md, `hybridctx demo`) and the page of `hybridctx ui` shows them:
// the decisions by outcome of each operation, the bytes kept out of the
// context and rehydrated, and, when the history budget stepped, its
// compaction steps. Every line ends in a newline. It is the one definition
// of that text.
func (r SummaryReport) WriteText(w io.Writer) error {
	var b strings.Builder
	for _, op := range []hybridctx.Operation{hybridctx.OpOffload, hybridctx.OpRehydration} {
		var parts []string
		for o := hybridctx.Outcome(1); o.Operation() != 0; o++ {
			if n := r.Outcomes[o]; n > 0 && o.Operation() == op {
				parts = append(parts, fmt.Sprintf("%s %d", o, n))
			}
		}
		fmt.Fprintf(&b, "%-12s %s\n", op, strings.Join(parts, ", "))
	}
	fmt.Fprintf(&b, "bytes        %s kept out of context, %s rehydrated, largest inline result %s\n",
		Thousands(r.BytesKeptOutOfContext), Thousands(r.BytesRehydrated), Thousands(r.LargestInlineBytes))
	if h := r.History; h.Compactions > 0 {
		step := "steps"
		if h.Compactions == 1 {
			step = "step"
		}
		fmt.Fprintf(&b, "compaction   %d %s masked %d tool results to references, %s bytes out of the history (nothing lost)\n",
			h.Compactions, step, h.Masked, Thousands(h.BytesTakenOut))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Thousands formats n with comma separators (1,234,567), the number format
// of the summary text.
func Thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}
