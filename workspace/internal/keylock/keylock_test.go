package keylock

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestLocks: a held key waits until unlocked or the context ends, other
// keys are free meanwhile, and a second unlock is a no-op.
func TestLocks(t *testing.T) {
	ctx := context.Background()
	var l Locks
	unlock, err := l.Lock(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	other, err := l.Lock(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	tctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := l.Lock(tctx, "a"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a held key was taken again: %v", err)
	}
	got := make(chan error)
	go func() {
		u, err := l.Lock(ctx, "a")
		if err == nil {
			err = u()
		}
		got <- err
	}()
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("the waiter: %v", err)
	}
	if err := unlock(); err != nil {
		t.Fatalf("a second unlock: %v", err)
	}
	if err := other(); err != nil {
		t.Fatal(err)
	}
	done, cancelDone := context.WithCancel(ctx)
	cancelDone()
	if _, err := l.Lock(done, "c"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock under an ended context: %v", err)
	}
}

// TestBackoff: the pauses double from PollMin up to PollMax, and a Wait
// under an ended context returns its error.
func TestBackoff(t *testing.T) {
	var b Backoff
	defer b.Stop()
	var pauses []time.Duration
	for range 7 {
		if err := b.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		pauses = append(pauses, b.pause)
	}
	want := []time.Duration{PollMin, 2 * PollMin, 4 * PollMin, 8 * PollMin, 16 * PollMin, PollMax, PollMax}
	for i := range want {
		if pauses[i] != want[i] {
			t.Fatalf("pauses %v, want %v", pauses, want)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait under an ended context: %v", err)
	}
}
