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
