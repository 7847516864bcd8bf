package hybridctx

import (
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx/artifact"
)

func TestWholeResultNoticeBounded(t *testing.T) {
	var types []string
	for _, typ := range append(PartTypes, "x-unknown-and-long-type-name") {
		for range 1234567 / 7 {
			types = append(types, typ)
		}
	}
	ref := artifact.RefOf([]byte("x"))
	n := wholeResultNotice(ref, 1<<40, types, strings.Repeat("q", MaxReadToolNameLen))
	if len(n) > MaxNoticeLen {
		t.Fatalf("notice of %d bytes: %s", len(n), n)
	}
	if !strings.HasPrefix(n, ref.String()+"\n") || strings.Contains(n, "x-unknown") || !strings.Contains(n, ".[i]") {
		t.Fatalf("notice %s", n)
	}
	short := wholeResultNotice(ref, 100, []string{"text", "image", "weird"}, "query_artifact")
	if !strings.Contains(short, "3 content blocks (1 text, 1 image, 1 other), one JSON array of 100 bytes") {
		t.Fatalf("notice %s", short)
	}
	t.Logf("%d bytes: %s", len(n), n)
}
