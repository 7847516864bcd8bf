package hybridctx

import (
	"reflect"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx/artifact"
)

func TestFoldNoticeBounded(t *testing.T) {
	var types []string
	for _, typ := range append(PartTypes, "x-unknown-and-long-type-name") {
		for range 1234567 / 7 {
			types = append(types, typ)
		}
	}
	types = append(types, PartStructured, PartMembers)
	ref := artifact.RefOf([]byte("x"))
	long := strings.Repeat("q", MaxReadToolNameLen)
	for _, gone := range []bool{false, true} {
		n := foldNotice(ref, 1<<40, types, gone, Policy{ReadToolName: long, QueryToolName: long})
		if len(n) > MaxNoticeLen {
			t.Fatalf("notice of %d bytes: %s", len(n), n)
		}
		if !strings.HasPrefix(n, ref.String()+"\n") || strings.Contains(n, "x-unknown") || !strings.Contains(n, ".[i]") {
			t.Fatalf("notice %s", n)
		}
		t.Logf("%d bytes: %s", len(n), n)
	}
	short := foldNotice(ref, 100, []string{"text", "image", "weird", PartStructured}, false, Policy{})
	if !strings.Contains(short, "3 content blocks (1 text, 1 image, 1 other) then structuredContent, one JSON array of 100 bytes") ||
		!strings.Contains(short, "query_artifact") {
		t.Fatalf("notice %s", short)
	}
	manifest := foldNotice(ref, 100, []string{"text"}, true, Policy{})
	if !strings.Contains(manifest, `a "reference" in a block: read_artifact.`) {
		t.Fatalf("notice %s", manifest)
	}
}

func TestBoundPlans(t *testing.T) {
	parts := func(sizes ...int64) []ResultPart {
		out := make([]ResultPart, len(sizes))
		for i, n := range sizes {
			out[i] = ResultPart{Type: "text", Size: n}
		}
		return out
	}
	for _, c := range []struct {
		parts       []ResultPart
		sent, bound int64
		want        []int
	}{
		{parts(1000, 1000), 2000, 5000, nil},              // fits: nothing to store
		{parts(3000, 1000, 3000), 7000, 5000, []int{0}},   // largest, earlier first
		{parts(200, 200, 200), 600, 100, nil},             // storing small parts does not help: fold
		{parts(4000, 4000, 4000, 4000), 16000, 1500, nil}, // 4 notices still over: fold, no wasted stores
		{[]ResultPart{{Type: "text", Size: 6000, Fixed: true}, {Type: "text", Size: 2000}}, 8000, 7000, []int{1}},
	} {
		if got := storePlan(c.parts, c.sent, c.bound); !reflect.DeepEqual(got, c.want) {
			t.Errorf("storePlan(%v, %d, %d) = %v, want %v", c.parts, c.sent, c.bound, got, c.want)
		}
	}
	// The fold takes every content part, and the members outside the
	// content, largest first, only while they keep the result over.
	ps := []ResultPart{{Type: "text", Size: 500}, {Type: PartStructured, Size: 500}, {Type: PartStructured, Size: 3000, Member: true}, {Type: PartMembers, Size: 700, Member: true}}
	if got := foldPlan(ps, 4700, 5000); !reflect.DeepEqual(got, []int{0, 1}) {
		t.Errorf("foldPlan keeps members that fit: %v", got)
	}
	if got := foldPlan(ps, 4700, 3500); !reflect.DeepEqual(got, []int{0, 1, 2}) {
		t.Errorf("foldPlan takes the largest member: %v", got)
	}
	if got := foldPlan(ps, 4700, 100); !reflect.DeepEqual(got, []int{0, 1, 2, 3}) {
		t.Errorf("foldPlan takes every member: %v", got)
	}
}
