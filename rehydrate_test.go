package hybridctx_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace/drivertest"
)

func stored(t *testing.T, e *env, body string) artifact.Ref {
	t.Helper()
	out := mustOffload(t, e.off, e.ctx, body)
	if out.Outcome() != hybridctx.Offloaded && out.Outcome() != hybridctx.ExistingReference {
		t.Fatalf("store: %v", out.Outcome())
	}
	return out.Ref
}

func TestRehydrateResolved(t *testing.T) {
	e := newEnv(t, 4)
	body := "exact bytes \x00\xff back out\n"
	ref := stored(t, e, body)
	rh := mustRehydrate(t, e.reh, e.ctx, hybridctx.Request{Reference: ref.String(), Budget: int64(len(body))})
	expect(t, rh.Outcome(), rh.Reason(), hybridctx.Resolved, hybridctx.DigestVerified)
	s := rh.Segment
	if string(s.Bytes()) != body || s.Ref() != ref || s.Offset() != 0 || s.BodySize() != int64(len(body)) || !s.SkipOffload() {
		t.Fatalf("segment %+v", s)
	}
	if s.RehydratedAt().IsZero() || s.RehydratedAt().Location().String() != "UTC" {
		t.Fatal("rehydrated-at time missing or not UTC")
	}
	d := rh.Diagnostics()
	if n, ok := d.ObservedBytes(); !ok || n != int64(len(body)) || d.ConfiguredBytes() != int64(len(body)) {
		t.Fatalf("diagnostics %v", d)
	}
	if in, out, ok := d.Attribution(); in != 82 || !ok || out != int64(len(body)) {
		t.Fatalf("attribution %d %d %v", in, out, ok)
	}
	var buf bytes.Buffer
	rt, err := e.reh.RehydrateTo(e.ctx, hybridctx.Request{Reference: ref.String(), Budget: 1 << 20}, &buf)
	if err != nil || rt.Outcome() != hybridctx.Resolved || buf.String() != body || rt.Written != int64(len(body)) {
		t.Fatalf("RehydrateTo: %v %v %q", err, rt, buf.String())
	}
}

func TestRehydrateRanges(t *testing.T) {
	e := newEnv(t, 4)
	body := "0123456789abcdefghij" // 20 bytes
	ref := stored(t, e, body).String()
	cases := []struct {
		off, length int64
		want        string
	}{
		{0, 0, body},
		{5, 0, body[5:]},
		{5, 3, "567"},
		{18, 10, "ij"},
		{20, 0, ""},
		{25, 4, ""},
		{0, 20, body},
	}
	for _, c := range cases {
		rh := mustRehydrate(t, e.reh, e.ctx, hybridctx.Request{Reference: ref, Budget: 20, Offset: c.off, Length: c.length})
		if rh.Outcome() != hybridctx.Resolved || string(rh.Segment.Bytes()) != c.want {
			t.Errorf("range %d+%d: %v %q", c.off, c.length, rh.Outcome(), rh.Segment.Bytes())
			continue
		}
		if n, _ := rh.Diagnostics().ObservedBytes(); n != int64(len(c.want)) || rh.Length != int64(len(c.want)) {
			t.Errorf("range %d+%d observed %d", c.off, c.length, n)
		}
		var buf bytes.Buffer
		if _, err := e.reh.RehydrateTo(e.ctx, hybridctx.Request{Reference: ref, Budget: 20, Offset: c.off, Length: c.length}, &buf); err != nil || buf.String() != c.want {
			t.Errorf("RehydrateTo range %d+%d: %v %q", c.off, c.length, err, buf.String())
		}
	}
}

func TestRehydrateOverBudgetReadsNothing(t *testing.T) {
	e := newEnv(t, 4)
	body := strings.Repeat("b", 1000)
	ref := stored(t, e, body).String()
	e.inst.Reset()
	rh := mustRehydrate(t, e.reh, e.ctx, hybridctx.Request{Reference: ref, Budget: 999})
	expect(t, rh.Outcome(), rh.Reason(), hybridctx.OverBudget, hybridctx.BudgetExceeded)
	if c := e.inst.Counts(); c.BytesRead != 0 || c.Opens != 0 {
		t.Fatalf("over budget read the body: %+v", c)
	}
	if rh.Segment != nil || rh.BodySize != 1000 {
		t.Fatal("over budget released a segment or lost the size")
	}
	if n, _ := rh.Diagnostics().ObservedBytes(); n != 1000 {
		t.Fatalf("observed %d", n)
	}
	// Exactly equal resolves; a range within budget resolves.
	if rh := mustRehydrate(t, e.reh, e.ctx, hybridctx.Request{Reference: ref, Budget: 1000}); rh.Outcome() != hybridctx.Resolved {
		t.Fatal("budget equal to size must resolve")
	}
	if rh := mustRehydrate(t, e.reh, e.ctx, hybridctx.Request{Reference: ref, Budget: 10, Offset: 990}); rh.Outcome() != hybridctx.Resolved {
		t.Fatal("a range within budget must resolve")
	}
}

func TestRehydrateUnauthorizedIsIndistinguishable(t *testing.T) {
	e := newEnv(t, 4)
	offB := e.offloader(t, e.binding(t, ownerB), 4)
	theirs := mustOffload(t, offB, e.ctx, "another session's artifact").Ref
	never := artifact.RefOf([]byte("never offloaded by anyone"))
	var results []*hybridctx.Rehydration
	for _, ref := range []artifact.Ref{theirs, never} {
		e.inst.Reset()
		rh := mustRehydrate(t, e.reh, e.ctx, hybridctx.Request{Reference: ref.String(), Budget: 1 << 20})
		expect(t, rh.Outcome(), rh.Reason(), hybridctx.Unauthorized, hybridctx.OwnerMismatch)
		if e.inst.BodyCalls() != 0 || e.inst.Counts().BytesRead != 0 {
			t.Fatalf("unauthorized touched a body: %+v", e.inst.Counts())
		}
		results = append(results, rh)
	}
	a, b := results[0], results[1]
	ja, _ := a.Diagnostics().MarshalJSON()
	jb, _ := b.Diagnostics().MarshalJSON()
	ja = bytes.ReplaceAll(ja, []byte(theirs.String()), []byte("REF"))
	jb = bytes.ReplaceAll(jb, []byte(never.String()), []byte("REF"))
	if !bytes.Equal(ja, jb) || a.BodySize != b.BodySize || a.Segment != b.Segment {
		t.Fatalf("unauthorized results differ:\n%s\n%s", ja, jb)
	}
}

func TestRehydrateMissingAndStale(t *testing.T) {
	e := newEnv(t, 4)
	ref := stored(t, e, "a body that will be damaged")
	if !drivertest.Overwrite(e.mem, ref.Hex(), []byte("a body that will be DAMAGED")) {
		t.Fatal("tamper")
	}
	e.inst.Reset()
	rh := mustRehydrate(t, e.reh, e.ctx, hybridctx.Request{Reference: ref.String(), Budget: 100})
	expect(t, rh.Outcome(), rh.Reason(), hybridctx.Stale, hybridctx.DigestMismatch)
	if rh.Segment != nil {
		t.Fatal("stale released content")
	}
	var buf bytes.Buffer
	rt, err := e.reh.RehydrateTo(e.ctx, hybridctx.Request{Reference: ref.String(), Budget: 100}, &buf)
	if err != nil || rt.Outcome() != hybridctx.Stale || buf.Len() != 0 {
		t.Fatalf("RehydrateTo stale: %v %v %d bytes written", err, rt, buf.Len())
	}
	// A stored size that differs from the record is stale too, before reading.
	drivertest.Overwrite(e.mem, ref.Hex(), []byte("short"))
	e.inst.Reset()
	rh = mustRehydrate(t, e.reh, e.ctx, hybridctx.Request{Reference: ref.String(), Budget: 100})
	expect(t, rh.Outcome(), rh.Reason(), hybridctx.Stale, hybridctx.DigestMismatch)
	if e.inst.Counts().BytesRead != 0 {
		t.Fatal("size mismatch read body bytes")
	}
	if err := e.store.DeleteBody(context.Background(), ref); err != nil {
		t.Fatal(err)
	}
	rh = mustRehydrate(t, e.reh, e.ctx, hybridctx.Request{Reference: ref.String(), Budget: 100})
	expect(t, rh.Outcome(), rh.Reason(), hybridctx.Missing, hybridctx.BodyMissing)
	if _, ok := rh.Diagnostics().ObservedBytes(); ok {
		t.Fatal("missing must have null observed bytes")
	}
}

func TestRehydrateInvalidReference(t *testing.T) {
	e := newEnv(t, 4)
	for _, in := range []string{"", "garbage", "artifact://sha256/ABC", artifact.RefOf(nil).String() + " "} {
		e.inst.Reset()
		rh := mustRehydrate(t, e.reh, e.ctx, hybridctx.Request{Reference: in, Budget: 10})
		expect(t, rh.Outcome(), rh.Reason(), hybridctx.InvalidReference, hybridctx.MalformedReference)
		d := rh.Diagnostics()
		if !d.Reference().IsZero() || !rh.Ref.IsZero() {
			t.Fatal("invalid reference carries a reference")
		}
		if in2, _, ok := d.Attribution(); in2 != int64(len(in)) || ok {
			t.Fatalf("attribution input %d, want %d", in2, len(in))
		}
		if e.inst.BodyCalls() != 0 || e.inst.Counts().GetRecords != 0 {
			t.Fatal("invalid reference touched the workspace")
		}
	}
	if got := len(e.events.all()); got != 4 {
		t.Fatalf("events = %d, want 4", got)
	}
}

func TestRehydrateUsageErrors(t *testing.T) {
	e := newEnv(t, 4)
	ref := stored(t, e, "usage errors body").String()
	n := len(e.events.all())
	for _, req := range []hybridctx.Request{
		{Reference: ref, Budget: 0},
		{Reference: ref, Budget: -1},
		{Reference: ref, Budget: 10, Offset: -1},
		{Reference: ref, Budget: 10, Length: -1},
	} {
		if _, err := e.reh.Rehydrate(e.ctx, req); !errors.Is(err, hybridctx.ErrInvalidRequest) {
			t.Errorf("%+v: err = %v", req, err)
		}
	}
	if _, err := e.reh.RehydrateTo(e.ctx, hybridctx.Request{Reference: ref, Budget: 1}, nil); !errors.Is(err, hybridctx.ErrInvalidRequest) {
		t.Errorf("nil writer: %v", err)
	}
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	if _, err := e.reh.Rehydrate(ctx, hybridctx.Request{Reference: ref, Budget: 10}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	if len(e.events.all()) != n {
		t.Fatal("usage errors reported events")
	}
	if _, err := hybridctx.NewRehydrator(nil, nil); !errors.Is(err, hybridctx.ErrNoWorkspace) {
		t.Fatal("nil binding accepted")
	}
	b, _ := hybridctx.NewBinding(ownerA, nil)
	if _, err := hybridctx.NewRehydrator(b, nil); !errors.Is(err, hybridctx.ErrNoWorkspace) {
		t.Fatal("binding without store accepted")
	}
}

func TestRehydrationIsExplicit(t *testing.T) {
	e := newEnv(t, 4)
	e.inst.Reset()
	ref := stored(t, e, "minting touches no read")
	if c := e.inst.Counts(); c.Opens != 0 || c.BytesRead != 0 {
		t.Fatalf("storing new content read bodies: %+v", c)
	}
	e.inst.Reset()
	_ = e.rehydrator(t, e.bind)
	if _, err := artifact.ParseRef(ref.String()); err != nil {
		t.Fatal(err)
	}
	if e.inst.BodyCalls() != 0 {
		t.Fatal("constructing a rehydrator touched a body")
	}
}

func TestStorageErrorsPropagateWithoutEvent(t *testing.T) {
	e := newEnv(t, 4)
	ref := stored(t, e, "propagate this").String()
	n := len(e.events.all())
	e.hooks.GetRecord = func(context.Context, artifact.Owner, artifact.Ref) error { return errors.New("db gone") }
	if _, err := e.reh.Rehydrate(e.ctx, hybridctx.Request{Reference: ref, Budget: 100}); err == nil {
		t.Fatal("record lookup error swallowed")
	}
	e.hooks.GetRecord = nil
	e.hooks.Stat = func(context.Context, string) error { return errors.New("EIO") }
	if _, err := e.reh.Rehydrate(e.ctx, hybridctx.Request{Reference: ref, Budget: 100}); err == nil {
		t.Fatal("stat error swallowed")
	}
	if len(e.events.all()) != n {
		t.Fatal("storage errors reported events")
	}
}

func TestRehydrateRefreshesLastUsedHourly(t *testing.T) {
	e := newEnv(t, 4)
	ref := stored(t, e, "read me back later")
	req := hybridctx.Request{Reference: ref.String(), Budget: 100}
	mustRehydrate(t, e.reh, e.ctx, req)
	if c := e.inst.Counts(); c.TouchRecords != 0 {
		t.Fatalf("touched within the hour: %d", c.TouchRecords)
	}
	e.clock.Advance(2 * time.Hour)
	mustRehydrate(t, e.reh, e.ctx, req)
	rec, err := e.store.GetRecord(context.Background(), ownerA, ref)
	if err != nil || e.inst.Counts().TouchRecords != 1 || rec.LastUsedAt.Sub(rec.CreatedAt) < 2*time.Hour {
		t.Fatalf("last used not refreshed by a read: %v %+v", err, rec)
	}
	// A read that does not resolve is not a use.
	e.clock.Advance(2 * time.Hour)
	mustRehydrate(t, e.reh, e.ctx, hybridctx.Request{Reference: ref.String(), Budget: 1})
	if e.inst.Counts().TouchRecords != 1 {
		t.Fatal("an over-budget read refreshed the record")
	}
}
