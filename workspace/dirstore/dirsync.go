package dirstore

import "sync"

// syncGroup joins concurrent fsyncs of one directory (group commit): a
// caller that has just linked a name into the directory needs one fsync
// of it that starts after the link. Callers arriving while an fsync runs
// wait for it to end and share the next one, which the first of them to
// get the turn runs; one fsync then makes every name linked before it
// durable. Alone, a caller runs its own fsync at once, as without the
// group.
//
// A failed fsync fails every caller that waited for it, and every caller
// still waiting whose wait covered it (its generation or a later one): a
// later fsync succeeding does not prove that an earlier name reached the
// disk. The zero value is ready for use.
type syncGroup struct {
	mu       sync.Mutex
	cond     *sync.Cond
	started  uint64 // generations of fsync started
	finished uint64 // generations finished; finished == started unless running
	running  bool
	failed   uint64 // the latest generation whose fsync failed (0: none)
	failErr  error
	waiters  int // callers waiting for a run to end (for tests)
}

// sync returns once a run of do (an fsync of the directory) that started
// after the call has ended, with that run's error or a later one's.
func (g *syncGroup) sync(do func() error) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cond == nil {
		g.cond = sync.NewCond(&g.mu)
	}
	want := g.started + 1 // the first run that starts after now
	for g.finished < want {
		if g.running {
			g.waiters++
			g.cond.Wait()
			g.waiters--
			continue
		}
		g.running = true
		g.started++
		gen := g.started
		g.mu.Unlock()
		err := do()
		g.mu.Lock()
		g.running = false
		g.finished = gen
		if err != nil {
			g.failed, g.failErr = gen, err
		}
		g.cond.Broadcast()
	}
	if g.failed >= want {
		return g.failErr
	}
	return nil
}
