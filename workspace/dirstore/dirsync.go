package dirstore

import (
	"fmt"
	"sync"
)

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

// maxKnownDurable bounds how many bodies a Store remembers as durable.
const maxKnownDurable = 4096

// durability is what a Store knows about the durability of the bodies its
// own Commits published: which are linked but not yet covered by a
// finished fsync of the body directory (pending), and which recent ones
// are (known, a bounded first-in first-out set). A body published by
// another process, or before this Store was opened, is in neither. It is
// safe for concurrent use; the zero value is ready.
type durability struct {
	mu      sync.Mutex
	pending map[string]int
	known   map[string]struct{}
	order   []string // known, oldest first
}

// publishing marks key pending before a Commit links (replace false) or
// renames (replace true) it, so that nobody can see the name without seeing
// it pending. A rename puts a new file under the name, which is not known
// durable until its own fsync; a link never changes an existing name.
func (d *durability) publishing(key string, replace bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pending == nil {
		d.pending = map[string]int{}
	}
	d.pending[key]++
	if replace {
		d.forgetLocked(key)
	}
}

// published ends what publishing began: durable says whether an fsync of
// the body directory that started after the link ended without error.
func (d *durability) published(key string, durable bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pending[key]--; d.pending[key] <= 0 {
		delete(d.pending, key)
	}
	if durable {
		d.knownLocked(key)
	}
}

func (d *durability) isPending(key string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.pending[key] > 0
}

func (d *durability) isKnown(key string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.known[key]
	return ok
}

// markKnown records that an fsync that started after key was published
// ended without error.
func (d *durability) markKnown(key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.knownLocked(key)
}

func (d *durability) knownLocked(key string) {
	if d.known == nil {
		d.known = map[string]struct{}{}
	}
	if _, ok := d.known[key]; ok {
		return
	}
	if len(d.order) >= maxKnownDurable {
		delete(d.known, d.order[0])
		d.order = d.order[1:]
	}
	d.known[key] = struct{}{}
	d.order = append(d.order, key)
}

// forget drops key from the known set (it is being deleted or replaced).
func (d *durability) forget(key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.forgetLocked(key)
}

func (d *durability) forgetLocked(key string) {
	if _, ok := d.known[key]; !ok {
		return
	}
	delete(d.known, key)
	for i, k := range d.order {
		if k == key {
			d.order = append(d.order[:i], d.order[i+1:]...)
			break
		}
	}
}

// syncBodies fsyncs the body directory, sharing the fsync with concurrent
// callers (see syncGroup).
func (s *Store) syncBodies() error {
	if s.noDirSync {
		return nil
	}
	do := func() error { return s.syncDir(bodyDir) }
	var err error
	if s.noGroup {
		err = do()
	} else {
		err = s.bodySync.sync(do)
	}
	if err != nil {
		return fmt.Errorf("dirstore: sync body directory: %w", err)
	}
	return nil
}

// awaitPublished returns once the body key is durable if a Commit of this
// Store has published it and is still waiting for the body directory's
// fsync: so that a caller that finds the body present (to verify it and
// record it for another owner) never acknowledges a body a crash could
// still take away.
func (s *Store) awaitPublished(key string) error {
	if !s.dur.isPending(key) {
		return nil
	}
	if err := s.syncBodies(); err != nil {
		return err
	}
	s.dur.markKnown(key)
	return nil
}

// ensureDurable returns once the body key's name is durable: at once when
// this Store published it and saw the fsync that covers it end; otherwise
// (published by another process, or before this Store was opened, or
// still pending) after an fsync of the body directory, shared with
// concurrent callers. CreateRecord calls it, so that no record is
// committed for a body whose publication a crash could undo.
func (s *Store) ensureDurable(key string) error {
	if s.dur.isKnown(key) {
		return nil
	}
	if err := s.syncBodies(); err != nil {
		return err
	}
	s.dur.markKnown(key)
	return nil
}
