package hybridctx_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace/drivertest"
)

// viewCall runs one view over ref with a budget.
type viewCall struct {
	view hybridctx.View
	run  func(r *hybridctx.Rehydrator, ctx context.Context, ref string, budget int64) (*hybridctx.Rehydration, error)
}

var viewCalls = []viewCall{
	{hybridctx.ViewLines, func(r *hybridctx.Rehydrator, ctx context.Context, ref string, budget int64) (*hybridctx.Rehydration, error) {
		return r.ReadLines(ctx, hybridctx.LinesRequest{Reference: ref, Budget: budget, StartLine: 1})
	}},
	{hybridctx.ViewSearch, func(r *hybridctx.Rehydrator, ctx context.Context, ref string, budget int64) (*hybridctx.Rehydration, error) {
		return r.Search(ctx, hybridctx.SearchRequest{Reference: ref, Budget: budget, Pattern: "v"})
	}},
	{hybridctx.ViewQuery, func(r *hybridctx.Rehydrator, ctx context.Context, ref string, budget int64) (*hybridctx.Rehydration, error) {
		return r.Query(ctx, hybridctx.QueryRequest{Reference: ref, Budget: budget, Filter: ".[]"})
	}},
}

const viewBody = "[\n\"value one\",\n\"value two\"\n]\n"

// eventsOf returns the events reported since n, checking each carries the
// view and the identical diagnostics instance.
func oneEvent(t *testing.T, e *env, before int, rh *hybridctx.Rehydration, v hybridctx.View) {
	t.Helper()
	evs := e.events.all()[before:]
	if len(evs) != 1 || evs[0].Diagnostics != rh.Diagnostics() || evs[0].Diagnostics.View() != v || evs[0].Type != "rehydration_decision" {
		t.Fatalf("%d events after the decision (want exactly one carrying view %v)", len(evs), v)
	}
}

func TestViewsOutcomes(t *testing.T) {
	for _, vc := range viewCalls {
		t.Run(vc.view.String(), func(t *testing.T) {
			e := newEnv(t, 4)
			ref := stored(t, e, viewBody)
			call := func(ref string, budget int64) *hybridctx.Rehydration {
				t.Helper()
				n := len(e.events.all())
				rh, err := vc.run(e.reh, e.ctx, ref, budget)
				if err != nil {
					t.Fatal(err)
				}
				oneEvent(t, e, n, rh, vc.view)
				return rh
			}
			rh := call(ref.String(), 4096)
			expect(t, rh.Outcome(), rh.Reason(), hybridctx.Resolved, hybridctx.DigestVerified)
			if n, _ := rh.Diagnostics().ObservedBytes(); n != int64(len(rh.Segment.Bytes())) || !rh.Segment.SkipOffload() {
				t.Fatalf("observed %d for %d bytes", n, len(rh.Segment.Bytes()))
			}
			rh = call(ref.String(), 1)
			expect(t, rh.Outcome(), rh.Reason(), hybridctx.OverBudget, hybridctx.BudgetExceeded)
			if n, _ := rh.Diagnostics().ObservedBytes(); n <= 1 || rh.Segment != nil {
				t.Fatalf("over budget observed %d", n)
			}
			rh = call("artifact://sha256/nope", 10)
			expect(t, rh.Outcome(), rh.Reason(), hybridctx.InvalidReference, hybridctx.MalformedReference)

			// Foreign and never offloaded: the same digest, byte for byte.
			other := newEnv(t, 4)
			stored(t, other, viewBody) // another workspace: never offloaded here
			offB := e.offloader(t, e.binding(t, ownerB), 4)
			foreignBody := viewBody + " "
			foreign := mustOffload(t, offB, e.ctx, foreignBody).Ref
			e.inst.Reset()
			a := call(foreign.String(), 4096)
			if e.inst.BodyCalls() != 0 {
				t.Fatal("unauthorized touched a body")
			}
			nn := len(other.events.all())
			otherReh := other.rehydrator(t, other.binding(t, ownerA))
			b, err := vc.run(otherReh, other.ctx, foreign.String(), 4096)
			if err != nil {
				t.Fatal(err)
			}
			oneEvent(t, other, nn, b, vc.view)
			ja, _ := a.Diagnostics().MarshalJSON()
			jb, _ := b.Diagnostics().MarshalJSON()
			if a.Outcome() != hybridctx.Unauthorized || !bytes.Equal(ja, jb) || a.BodySize != b.BodySize || a.Page != b.Page || a.Segment != nil || b.Segment != nil {
				t.Fatalf("foreign and never-offloaded differ:\n%s\n%s", ja, jb)
			}

			// Tampered: stale, nothing released.
			if !drivertest.Overwrite(e.mem, ref.Hex(), []byte(strings.ToUpper(viewBody))) {
				t.Fatal("tamper")
			}
			rh = call(ref.String(), 4096)
			expect(t, rh.Outcome(), rh.Reason(), hybridctx.Stale, hybridctx.DigestMismatch)
			if rh.Segment != nil || rh.Page != (hybridctx.Page{}) {
				t.Fatalf("stale released %+v", rh.Page)
			}
			if err := e.store.DeleteBody(context.Background(), ref); err != nil {
				t.Fatal(err)
			}
			rh = call(ref.String(), 4096)
			expect(t, rh.Outcome(), rh.Reason(), hybridctx.Missing, hybridctx.BodyMissing)

			// Cancelled: no decision, no event.
			ctx, cancel := context.WithCancel(e.ctx)
			cancel()
			n := len(e.events.all())
			if _, err := vc.run(e.reh, ctx, ref.String(), 10); !errors.Is(err, context.Canceled) || len(e.events.all()) != n {
				t.Fatalf("cancelled: %v", err)
			}
		})
	}
}

func TestViewArgumentErrors(t *testing.T) {
	e := newEnv(t, 4)
	ref := stored(t, e, viewBody).String()
	bad := []func() error{
		func() error {
			_, err := e.reh.ReadLines(e.ctx, hybridctx.LinesRequest{Reference: ref, Budget: 0, StartLine: 1})
			return err
		},
		func() error {
			_, err := e.reh.ReadLines(e.ctx, hybridctx.LinesRequest{Reference: ref, Budget: 9, StartLine: 0})
			return err
		},
		func() error {
			_, err := e.reh.ReadLines(e.ctx, hybridctx.LinesRequest{Reference: ref, Budget: 9, StartLine: 1, LineCount: -1})
			return err
		},
		func() error {
			_, err := e.reh.Search(e.ctx, hybridctx.SearchRequest{Reference: ref, Budget: 9})
			return err
		},
		func() error {
			_, err := e.reh.Search(e.ctx, hybridctx.SearchRequest{Reference: ref, Budget: 9, Pattern: "(", Regex: true})
			return err
		},
		func() error {
			_, err := e.reh.Search(e.ctx, hybridctx.SearchRequest{Reference: ref, Budget: 9, Pattern: strings.Repeat("a", 1001)})
			return err
		},
		func() error {
			_, err := e.reh.Search(e.ctx, hybridctx.SearchRequest{Reference: ref, Budget: 9, Pattern: "a", ContextLines: 11})
			return err
		},
		func() error {
			_, err := e.reh.Search(e.ctx, hybridctx.SearchRequest{Reference: ref, Budget: 9, Pattern: "a", Skip: -1})
			return err
		},
		func() error {
			_, err := e.reh.Query(e.ctx, hybridctx.QueryRequest{Reference: ref, Budget: 9, Filter: " "})
			return err
		},
		func() error {
			_, err := e.reh.Query(e.ctx, hybridctx.QueryRequest{Reference: ref, Budget: 9, Filter: "." + strings.Repeat(" ", 1000)})
			return err
		},
		func() error {
			_, err := e.reh.Query(e.ctx, hybridctx.QueryRequest{Reference: ref, Budget: 9, Filter: "nosuchfn"})
			return err
		},
	}
	e.inst.Reset()
	n := len(e.events.all())
	for i, f := range bad {
		if err := f(); !errors.Is(err, hybridctx.ErrInvalidRequest) || strings.Contains(err.Error(), "aaaa") {
			t.Errorf("case %d: %v", i, err)
		}
	}
	if len(e.events.all()) != n || e.inst.Counts().GetRecords != 0 {
		t.Fatal("an argument error reported an event or touched storage")
	}
}

func TestSearchPagingAndBudget(t *testing.T) {
	e := newEnv(t, 4)
	body := logBody(1000) // "line N ok\n", line 500 holds ERROR
	ref := stored(t, e, body).String()
	// Every answer is at most the budget; the matches that do not fit are
	// counted, and the summary says how to continue.
	for _, budget := range []int64{64, 100, 333, 1000} {
		rh := mustView(t)(e.reh.Search(e.ctx, hybridctx.SearchRequest{Reference: ref, Budget: budget, Pattern: "ok"}))
		expect(t, rh.Outcome(), rh.Reason(), hybridctx.Resolved, hybridctx.DigestVerified)
		got := rh.Segment.Bytes()
		if int64(len(got)) > budget || rh.Page.Total != 999 || rh.Page.Next != rh.Page.Count || !bytes.Contains(got, []byte("continue with skip")) {
			t.Fatalf("budget %d: %d bytes, page %+v\n%s", budget, len(got), rh.Page, got)
		}
	}
	// The next page starts where the last stopped.
	rh := mustView(t)(e.reh.Search(e.ctx, hybridctx.SearchRequest{Reference: ref, Budget: 4096, Pattern: "ok", Skip: 990}))
	if !strings.HasPrefix(string(rh.Segment.Bytes()), "992:line 992 ok\n") || rh.Page.Count != 9 || rh.Page.Next != 0 {
		t.Fatalf("last page %+v %q", rh.Page, rh.Segment.Bytes())
	}
	rh = mustView(t)(e.reh.Search(e.ctx, hybridctx.SearchRequest{Reference: ref, Budget: 4096, Pattern: "ok", Skip: 5000}))
	if string(rh.Segment.Bytes()) != "999 matches (showing none)\n" {
		t.Fatalf("skip past the end %q", rh.Segment.Bytes())
	}
	// Too small for the summary alone.
	rh = mustView(t)(e.reh.Search(e.ctx, hybridctx.SearchRequest{Reference: ref, Budget: 5, Pattern: "absent"}))
	expect(t, rh.Outcome(), rh.Reason(), hybridctx.OverBudget, hybridctx.BudgetExceeded)
}

func TestSearchLongLinesAndInvalidUTF8(t *testing.T) {
	e := newEnv(t, 4)
	long := strings.Repeat("x", 3000) + "NEEDLE" + strings.Repeat("y", 3000)
	huge := strings.Repeat("z", 3<<20) + "NEEDLE" + "\xff\xfe tail"
	body := "first\n" + long + "\n" + "bad \xff\xfe NEEDLE\n" + huge + "\nlast\n"
	ref := stored(t, e, body).String()
	for _, regex := range []bool{false, true} {
		rh := mustView(t)(e.reh.Search(e.ctx, hybridctx.SearchRequest{Reference: ref, Budget: 8192, Pattern: "NEEDLE", Regex: regex}))
		got := string(rh.Segment.Bytes())
		lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
		if len(lines) != 4 || lines[3] != "3 matches (showing 1-3)" {
			t.Fatalf("regex %v: %q", regex, got)
		}
		if !strings.HasPrefix(lines[0], "2:[line of 6006 bytes cut to 512 bytes at offset ") || !strings.Contains(lines[0], "NEEDLE") {
			t.Fatalf("long line %q", lines[0][:80])
		}
		if lines[1] != "3:bad \uFFFD NEEDLE" {
			t.Fatalf("invalid UTF-8 %q", lines[1])
		}
		if !strings.HasPrefix(lines[2], "4:[line of 3145741 bytes cut to 512 bytes at offset ") || !strings.Contains(lines[2], "NEEDLE") {
			t.Fatalf("huge line %q", lines[2][:80])
		}
		if !utf8.ValidString(got) {
			t.Fatal("invalid UTF-8 in the answer")
		}
	}
}

func TestQueryLimits(t *testing.T) {
	e := newEnv(t, 4)
	reh, err := hybridctx.NewRehydrator(e.bind, &hybridctx.RehydratorOptions{QueryTimeout: 200 * time.Millisecond, QueryMaxBytes: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	small := stored(t, e, `{"a":[1,2,3]}`).String()
	for _, f := range []string{"def f: f; f", "[range(1e12)]", "last(range(1e12))", `"x" * 1e9`, "[limit(1e8; repeat(\"abcdefgh\"))] | length"} {
		rh := mustView(t)(reh.Query(e.ctx, hybridctx.QueryRequest{Reference: small, Budget: 100, Filter: f}))
		expect(t, rh.Outcome(), rh.Reason(), hybridctx.ViewFailed, hybridctx.LimitExceeded)
	}
	big := stored(t, e, `{"a":"`+strings.Repeat("b", 2000)+`"}`).String()
	rh := mustView(t)(reh.Query(e.ctx, hybridctx.QueryRequest{Reference: big, Budget: 100, Filter: ".a | length"}))
	expect(t, rh.Outcome(), rh.Reason(), hybridctx.ViewFailed, hybridctx.LimitExceeded)
	// One result larger than the budget: over_budget, and the huge value is
	// never encoded whole. The default time limit, so that a loaded machine
	// cannot turn it into limit_exceeded.
	roomy, err := hybridctx.NewRehydrator(e.bind, &hybridctx.RehydratorOptions{QueryMaxBytes: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	rh = mustView(t)(roomy.Query(e.ctx, hybridctx.QueryRequest{Reference: small, Budget: 10, Filter: `[range(3000)]`}))
	expect(t, rh.Outcome(), rh.Reason(), hybridctx.OverBudget, hybridctx.BudgetExceeded)
	if _, err := hybridctx.NewRehydrator(e.bind, &hybridctx.RehydratorOptions{QueryTimeout: -1}); !errors.Is(err, hybridctx.ErrInvalidRequest) {
		t.Fatal("negative limit accepted")
	}
	_ = artifact.RefLen
}
