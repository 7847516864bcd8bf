package keylock

import (
	"context"
	"time"
)

// The pauses of a Backoff: a first short one, doubled up to a ceiling, so
// that a waiter notices both a released lock and an ended context quickly.
const (
	PollMin = time.Millisecond
	PollMax = 20 * time.Millisecond
)

// Backoff paces the attempts at a lock held by another process (a flock,
// an advisory lock in a database), which no channel announces. The zero
// value is ready to use; call Stop when done.
type Backoff struct {
	pause time.Duration
	timer *time.Timer
}

// Wait pauses before the next attempt, each pause twice the one before up
// to PollMax. It returns ctx's error if ctx ends first.
func (b *Backoff) Wait(ctx context.Context) error {
	b.pause = min(max(2*b.pause, PollMin), PollMax)
	if b.timer == nil {
		b.timer = time.NewTimer(b.pause)
	} else {
		b.timer.Reset(b.pause)
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-b.timer.C:
		return nil
	}
}

// Stop releases the timer.
func (b *Backoff) Stop() {
	if b.timer != nil {
		b.timer.Stop()
	}
}
