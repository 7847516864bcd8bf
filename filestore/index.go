package filestore

import (
	"context"
	"fmt"
	"io/fs"
	"iter"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/hybridctx/hybridctx/artifact"
)

// Entry is one file: its canonical path and the body holding its bytes.
type Entry struct {
	Path string
	Ref  artifact.Ref
	Size int64
}

// Index keeps the mapping from one owner's canonical file paths to bodies.
// The workspace stores bodies by digest only, so the adapter needs this
// mapping; an Index stores metadata, never content. Implementations must be
// safe for concurrent use and honour ctx.
type Index interface {
	// Get returns owner's entry for path; absent wraps fs.ErrNotExist.
	Get(ctx context.Context, owner artifact.Owner, path string) (Entry, error)
	// Put creates or replaces owner's entry for e.Path.
	Put(ctx context.Context, owner artifact.Owner, e Entry) error
	// List yields owner's entries whose path starts with prefix ("" for
	// all), in no particular order.
	List(ctx context.Context, owner artifact.Owner, prefix string) iter.Seq2[Entry, error]
}

// MemIndex is an Index in memory: the names last as long as the process.
// It is safe for concurrent use.
type MemIndex struct {
	mu sync.RWMutex
	m  map[artifact.Owner]map[string]Entry
}

// NewMemIndex returns an empty MemIndex.
func NewMemIndex() *MemIndex { return &MemIndex{m: map[artifact.Owner]map[string]Entry{}} }

// Get implements Index.
func (x *MemIndex) Get(ctx context.Context, owner artifact.Owner, path string) (Entry, error) {
	if err := ctx.Err(); err != nil {
		return Entry{}, err
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	e, ok := x.m[owner][path]
	if !ok {
		return Entry{}, fmt.Errorf("filestore: no such file: %w", fs.ErrNotExist)
	}
	return e, nil
}

// Put implements Index.
func (x *MemIndex) Put(ctx context.Context, owner artifact.Owner, e Entry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.m[owner] == nil {
		x.m[owner] = map[string]Entry{}
	}
	x.m[owner][e.Path] = e
	return nil
}

// List implements Index. It yields a snapshot taken when iteration starts.
func (x *MemIndex) List(ctx context.Context, owner artifact.Owner, prefix string) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(Entry{}, err)
			return
		}
		x.mu.RLock()
		var snap []Entry
		for _, p := range slices.Sorted(maps.Keys(x.m[owner])) {
			if strings.HasPrefix(p, prefix) {
				snap = append(snap, x.m[owner][p])
			}
		}
		x.mu.RUnlock()
		for _, e := range snap {
			if !yield(e, nil) {
				return
			}
		}
	}
}
