package hybridctx_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace/drivertest"
)

func TestRecoveryCanceledAfterWrite(t *testing.T) {
	e := newEnv(t, 4)
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	e.hooks.AfterCommit = func(context.Context, string, bool) { cancel() }
	body := []byte("written, then the caller gave up")
	out := mustOffload(t, e.off, ctx, body)
	expect(t, out.Outcome(), out.Reason(), hybridctx.RecoveryRequired, hybridctx.CanceledAfterWrite)
	if string(out.Content()) != string(body) || !out.Ref.IsZero() {
		t.Fatal("recovery outcome must keep the content and carry no reference")
	}
	if !strings.HasPrefix(out.Notice, "hybridctx: recovery_required (canceled_after_write), 32 bytes") {
		t.Fatalf("notice %q", out.Notice)
	}
	if len(e.events.all()) != 1 {
		t.Fatalf("events = %d, want 1", len(e.events.all()))
	}
	retryWritesNothing(t, e, body, hybridctx.Offloaded, hybridctx.ThresholdExceeded)
}

func TestRecoveryRecordCommitFailed(t *testing.T) {
	e := newEnv(t, 4)
	e.hooks.CreateRecord = func(context.Context, artifact.Record) error { return errors.New("database locked") }
	body := []byte("written, then the record failed")
	out := mustOffload(t, e.off, e.ctx, body)
	expect(t, out.Outcome(), out.Reason(), hybridctx.RecoveryRequired, hybridctx.RecordCommitFailed)
	e.hooks.CreateRecord = nil
	retryWritesNothing(t, e, body, hybridctx.Offloaded, hybridctx.ThresholdExceeded)
}

// retryWritesNothing retries body and checks that no body write happens.
func retryWritesNothing(t *testing.T, e *env, body []byte, wo hybridctx.Outcome, wr hybridctx.Reason) {
	t.Helper()
	e.hooks.AfterCommit = nil
	before := e.inst.Counts()
	again := mustOffload(t, e.off, e.ctx, body)
	expect(t, again.Outcome(), again.Reason(), wo, wr)
	after := e.inst.Counts()
	if after.NewWriters != before.NewWriters || after.Commits != before.Commits || after.Replaces != before.Replaces {
		t.Fatalf("retry wrote the body again: before %+v after %+v", before, after)
	}
	if again.Ref != artifact.RefOf(body) {
		t.Fatal("retry gave another reference")
	}
	third := mustOffload(t, e.off, e.ctx, body)
	expect(t, third.Outcome(), third.Reason(), hybridctx.ExistingReference, hybridctx.ExistingContentMatch)
}

func TestRecoveredSegmentBypass(t *testing.T) {
	e := newEnv(t, 1<<20)
	big := strings.Repeat("s", 100_000)
	stored := mustOffload(t, e.off, e.ctx, big+big+big+big+big+big+big+big+big+big+big)
	rh := mustRehydrate(t, e.reh, e.ctx, hybridctx.Request{Reference: stored.Ref.String(), Budget: 100_000, Length: 100_000})
	if rh.Outcome() != hybridctx.Resolved || len(rh.Segment.Bytes()) != 100_000 || !rh.Segment.SkipOffload() {
		t.Fatalf("rehydrate: %v", rh.Outcome())
	}
	tiny := e.offloader(t, e.bind, 1)
	e.inst.Reset()
	out := mustOffload(t, tiny, e.ctx, rh.Segment)
	expect(t, out.Outcome(), out.Reason(), hybridctx.Inline, hybridctx.RecoveredSegmentBypass)
	if out.Diagnostics().Content() != hybridctx.RecoveredContext || out.Text() != big {
		t.Fatal("bypass must inline the segment body as recovered_context")
	}
	if out.Segment() != rh.Segment || stored.Segment() != nil {
		t.Fatal("Segment must name the bypassed segment, and only for a bypass")
	}
	if n, _ := out.Diagnostics().ObservedBytes(); n != 100_000 {
		t.Fatalf("observed %d", n)
	}
	if c := e.inst.Counts(); c.NewWriters+c.Commits+c.GetRecords != 0 {
		t.Fatalf("bypass touched the workspace: %+v", c)
	}
	// Without a binding the bypass still holds.
	nob, _ := hybridctx.NewOffloader(nil, hybridctx.Policy{InlineThreshold: 1}, nil)
	if o := mustOffload(t, nob, e.ctx, rh.Segment); o.Reason() != hybridctx.RecoveredSegmentBypass {
		t.Fatal("bypass needs no workspace")
	}
	// A zero Segment made outside a rehydration is not a recovered segment.
	if o := mustOffload(t, tiny, e.ctx, &hybridctx.Segment{}); o.Reason() == hybridctx.RecoveredSegmentBypass {
		t.Fatal("a forged segment bypassed offload")
	}
	// A nil *Segment is decided as nil, by Offload and by Store alike.
	if o := mustOffload(t, e.off, e.ctx, (*hybridctx.Segment)(nil)); o.Outcome() != hybridctx.Inline || o.Text() != "" || o.Segment() != nil {
		t.Fatalf("Offload of a nil segment: %v %q %v", o.Outcome(), o.Text(), o.Segment())
	}
	if o, err := e.off.Store(e.ctx, hybridctx.Call{Tool: "tool", ID: "call"}, (*hybridctx.Segment)(nil)); err != nil || o.Reason() == hybridctx.RecoveredSegmentBypass || !observed(o, 0) {
		t.Fatalf("Store of a nil segment: %v %v", o, err)
	}
}

func TestConcurrentSameContent(t *testing.T) {
	e := newEnv(t, 16)
	offB := e.offloader(t, e.binding(t, ownerB), 16)
	body := strings.Repeat("concurrent body ", 4096)
	const n = 32
	var wg sync.WaitGroup
	outs := make([]*hybridctx.OffloadResult, 2*n)
	for i := range 2 * n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			off := e.off
			if i%2 == 1 {
				off = offB
			}
			out, err := off.Offload(e.ctx, hybridctx.Call{Tool: "t", ID: "c"}, body)
			if err != nil {
				t.Error(err)
				return
			}
			outs[i] = out
		}()
	}
	wg.Wait()
	offloaded := 0
	for _, o := range outs {
		if o == nil {
			t.FailNow()
		}
		if o.Ref != artifact.RefOf([]byte(body)) {
			t.Fatal("different references for the same content")
		}
		switch o.Outcome() {
		case hybridctx.Offloaded:
			offloaded++
		case hybridctx.ExistingReference:
		default:
			t.Fatalf("outcome %v", o.Outcome())
		}
	}
	c := e.inst.Counts()
	if c.Commits != 1 || c.Replaces != 0 || c.RecordsCreated != 2 || offloaded != 2 {
		t.Fatalf("commits %d replaces %d records %d offloaded %d; want 1, 0, 2, 2", c.Commits, c.Replaces, c.RecordsCreated, offloaded)
	}
}

func TestReplacedCorruptBody(t *testing.T) {
	e := newEnv(t, 4)
	body := strings.Repeat("heal me ", 10)
	first := mustOffload(t, e.off, e.ctx, body)
	if !drivertest.Overwrite(e.mem, first.Ref.Hex(), []byte(strings.Repeat("X", len(body)))) {
		t.Fatal("tamper failed")
	}
	// A new owner repairing it only sees threshold_exceeded.
	offB := e.offloader(t, e.binding(t, ownerB), 4)
	outB := mustOffload(t, offB, e.ctx, body)
	expect(t, outB.Outcome(), outB.Reason(), hybridctx.Offloaded, hybridctx.ThresholdExceeded)
	if c := e.inst.Counts(); c.Replaces != 1 {
		t.Fatalf("replaces = %d", c.Replaces)
	}
	// The owner's own record with a corrupt body: exactly one of several
	// concurrent calls reports replaced_corrupt_body.
	drivertest.Overwrite(e.mem, first.Ref.Hex(), []byte("short"))
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[hybridctx.Reason]int{}
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := mustOffload(t, e.off, e.ctx, body)
			mu.Lock()
			got[out.Reason()]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if got[hybridctx.ReplacedCorruptBody] != 1 || got[hybridctx.ExistingContentMatch] != 7 {
		t.Fatalf("reasons %v", got)
	}
	// An absent body is rewritten too.
	if err := e.store.DeleteBody(context.Background(), first.Ref); err != nil {
		t.Fatal(err)
	}
	out := mustOffload(t, e.off, e.ctx, body)
	expect(t, out.Outcome(), out.Reason(), hybridctx.Offloaded, hybridctx.ReplacedCorruptBody)
	rh := mustRehydrate(t, e.reh, e.ctx, hybridctx.Request{Reference: out.Ref.String(), Budget: 1 << 20})
	if rh.Outcome() != hybridctx.Resolved || string(rh.Segment.Bytes()) != body {
		t.Fatal("repaired body does not resolve")
	}
}

// observed reports whether a decision observed n bytes.
func observed(o *hybridctx.OffloadResult, n int64) bool {
	got, ok := o.Diagnostics().ObservedBytes()
	return ok && got == n
}
