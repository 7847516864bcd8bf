package hybridctx

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// The bounds of the query view as a whole (docs/rehydration.md, "query"):
// one query holds at most DefaultQueryMemoryBytes, counted as its own
// (its body, its decoded document and what its filter produces), and at
// most DefaultQueryConcurrency queries run at once across every
// Rehydrator sharing one QueryLimiter, so the queries of a process hold at
// most DefaultQueryProcessBytes.
const (
	// DefaultQueryConcurrency is how many queries a QueryLimiter runs at
	// once unless told otherwise: a filter is work for one core, and more
	// at once than cores only adds their memory, not speed.
	DefaultQueryConcurrency = 2
	// QueueFactor bounds the queries that wait for a slot: at most this
	// many times the concurrency; one more is refused as view_failed/busy
	// at once (a waiting query holds its compiled filter, about half a
	// megabyte).
	QueueFactor = 16
	// DefaultQueryWait is how long a query waits for a slot before it is
	// refused as view_failed/busy: long enough for a full queue to drain
	// when every query before it runs to its time limit (QueueFactor
	// rounds of DefaultQueryTimeout, less the one running).
	DefaultQueryWait = 30 * time.Second
	// DefaultQueryProcessBytes is what the queries of one process hold at
	// most with the defaults: DefaultQueryConcurrency queries of
	// DefaultQueryMemoryBytes each.
	DefaultQueryProcessBytes = DefaultQueryConcurrency * DefaultQueryMemoryBytes
)

// errBusy is a limiter's refusal: no slot freed within its wait.
var errBusy = errors.New("every query slot is taken")

// QueryLimiter bounds how many query views run at once. A query takes a
// slot once its owner and existence checks passed and holds it while its
// body is read, decoded and filtered; a query that finds every slot taken
// waits up to the limiter's wait (at most QueueFactor × concurrency
// wait), then is refused as view_failed/busy (after its body's digest is
// verified, as every view_failed is). Share
// one limiter among every Rehydrator of a process (RehydratorOptions.
// QueryLimiter) so that their queries together stay within
// concurrency × the per-query memory bound. It is safe for concurrent use.
type QueryLimiter struct {
	slots chan struct{} // the queries running
	queue chan struct{} // the queries running or waiting
	wait  time.Duration
}

// NewQueryLimiter returns a limiter running at most concurrency queries at
// once, each waiting at most wait for a slot; 0 means
// DefaultQueryConcurrency, DefaultQueryWait. A negative value is an error
// wrapping ErrInvalidRequest.
func NewQueryLimiter(concurrency int, wait time.Duration) (*QueryLimiter, error) {
	if concurrency < 0 || wait < 0 {
		return nil, fmt.Errorf("%w: query concurrency and wait must be >= 0", ErrInvalidRequest)
	}
	if concurrency == 0 {
		concurrency = DefaultQueryConcurrency
	}
	if wait == 0 {
		wait = DefaultQueryWait
	}
	return &QueryLimiter{slots: make(chan struct{}, concurrency), queue: make(chan struct{}, QueueFactor*concurrency),
		wait: wait}, nil
}

// Concurrency reports how many queries run at once.
func (l *QueryLimiter) Concurrency() int { return cap(l.slots) }

// acquire takes a slot, waiting at most the limiter's wait: errBusy when
// none freed or too many wait already, ctx's error when the caller gave
// up. release gives the slot back.
func (l *QueryLimiter) acquire(ctx context.Context) (release func(), err error) {
	select {
	case l.queue <- struct{}{}:
	default:
		return nil, errBusy
	}
	release = func() { <-l.slots; <-l.queue }
	select {
	case l.slots <- struct{}{}:
		return release, nil
	default:
	}
	t := time.NewTimer(l.wait)
	defer t.Stop()
	select {
	case l.slots <- struct{}{}:
		return release, nil
	case <-t.C:
		err = errBusy
	case <-ctx.Done():
		err = ctx.Err()
	}
	<-l.queue
	return nil, err
}
