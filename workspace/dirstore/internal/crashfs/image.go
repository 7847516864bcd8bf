package crashfs

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"time"
)

// Image is the state of a file system frozen at a crash: current and durable
// state together, from which Clone builds what a reboot may find.
type Image struct {
	root *node
}

// Policy says which unsynced state survives a crash.
type Policy uint8

const (
	// Lose keeps only what was synced.
	Lose Policy = iota
	// Keep keeps everything, as if the crash had waited for the disk.
	Keep
	// Random picks, per directory, a prefix of its unsynced entry changes,
	// and per file one of: its synced bytes, its current bytes, its synced
	// bytes followed by part of the bytes appended since, or by zeros in
	// their place (size persisted before data). Mode and time are each
	// kept or lost.
	Random
)

// CloneConfig selects one possible state after the crash.
type CloneConfig struct {
	// Entries governs directories' unsynced entry changes.
	Entries Policy
	// Data governs files' unsynced bytes, mode and time.
	Data Policy
	// Rand drives Random; it must be set when either policy is Random.
	Rand *rand.Rand
	// Clock is the new file system's clock; nil means time.Now.
	Clock func() time.Time
}

// Clone builds a file system as it could be after a reboot: everything in
// it is durable, no file is open and no lock is held.
func (im *Image) Clone(cfg CloneConfig) *FS {
	clock := cfg.Clock
	if clock == nil {
		clock = time.Now
	}
	f := &FS{clock: clock}
	memo := map[*node]*node{}
	f.root = cfg.build(im.root, memo)
	for _, n := range memo {
		f.ino = max(f.ino, n.ino)
	}
	return f
}

func (cfg CloneConfig) coin(p Policy) bool {
	switch p {
	case Keep:
		return true
	case Random:
		return cfg.Rand.IntN(2) == 0
	}
	return false
}

// build returns the surviving copy of n; nodes reached twice (hard links)
// are built once.
func (cfg CloneConfig) build(n *node, memo map[*node]*node) *node {
	if c, ok := memo[n]; ok {
		return c
	}
	c := &node{ino: n.ino, isDir: n.isDir}
	memo[n] = c
	c.mode, c.mtime = n.syncedMode, n.syncedMtime
	if cfg.coin(cfg.Data) {
		c.mode = n.mode
	}
	if cfg.coin(cfg.Data) {
		c.mtime = n.mtime
	}
	c.syncedMode, c.syncedMtime = c.mode, c.mtime
	if !n.isDir {
		// The clone's bytes may share the image's: a write copies them
		// first.
		c.data = cfg.bytes(n)
		c.synced = c.data
		c.shared = true
		return c
	}
	k := 0
	switch cfg.Entries {
	case Keep:
		k = len(n.pending)
	case Random:
		k = cfg.Rand.IntN(len(n.pending) + 1)
	}
	entries := maps(n.durable)
	for _, d := range n.pending[:k] {
		d.apply(entries)
	}
	c.entries = make(map[string]*node, len(entries))
	for name, child := range entries {
		c.entries[name] = cfg.build(child, memo)
	}
	c.durable = maps(c.entries)
	return c
}

// bytes picks the surviving content of a file.
func (cfg CloneConfig) bytes(n *node) []byte {
	switch cfg.Data {
	case Lose:
		return n.synced
	case Keep:
		return n.data
	}
	appended := len(n.data) >= len(n.synced) && bytes.Equal(n.data[:len(n.synced)], n.synced)
	if !appended || len(n.data) == len(n.synced) {
		if cfg.Rand.IntN(2) == 0 {
			return n.synced
		}
		return n.data
	}
	extra := len(n.data) - len(n.synced)
	switch cfg.Rand.IntN(4) {
	case 0:
		return n.synced
	case 1:
		return n.data
	case 2:
		return n.data[:len(n.synced)+cfg.Rand.IntN(extra+1)]
	}
	out := slices.Clone(n.synced)
	return append(out, make([]byte, extra)...)
}

// deepCopy copies the graph reachable from n (current entries, durable
// entries and pending changes), preserving sharing.
func deepCopy(n *node, memo map[*node]*node) *node {
	if n == nil {
		return nil
	}
	if c, ok := memo[n]; ok {
		return c
	}
	c := &node{ino: n.ino, isDir: n.isDir, mode: n.mode, syncedMode: n.syncedMode,
		mtime: n.mtime, syncedMtime: n.syncedMtime,
		data: slices.Clone(n.data), synced: slices.Clone(n.synced)}
	memo[n] = c
	if !n.isDir {
		return c
	}
	c.entries = make(map[string]*node, len(n.entries))
	for k, v := range n.entries {
		c.entries[k] = deepCopy(v, memo)
	}
	c.durable = make(map[string]*node, len(n.durable))
	for k, v := range n.durable {
		c.durable[k] = deepCopy(v, memo)
	}
	for _, d := range n.pending {
		c.pending = append(c.pending, dirOp{name: d.name, to: d.to, n: deepCopy(d.n, memo)})
	}
	return c
}
