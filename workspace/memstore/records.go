package memstore

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io/fs"
	"iter"
	"slices"
	"time"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace/driver"
)

// errNoRecord is the error of every absent record, the same value each time.
var errNoRecord = driver.Wrap(driver.ErrNotFound, fmt.Errorf("memstore: record: %w", fs.ErrNotExist))

// CreateRecord implements driver.Records.
func (s *Store) CreateRecord(ctx context.Context, rec artifact.Record) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	k := keyOf(rec.Owner, rec.Ref)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.records[k]; ok {
		return false, nil
	}
	s.records[k] = rec
	return true, nil
}

// GetRecord implements driver.Records.
func (s *Store) GetRecord(ctx context.Context, owner artifact.Owner, ref artifact.Ref) (artifact.Record, error) {
	if err := ctx.Err(); err != nil {
		return artifact.Record{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.records[keyOf(owner, ref)]
	if !ok {
		return artifact.Record{}, errNoRecord
	}
	return rec, nil
}

// TouchRecord implements driver.Records.
func (s *Store) TouchRecord(ctx context.Context, owner artifact.Owner, ref artifact.Ref, at time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	k := keyOf(owner, ref)
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.records[k]
	if !ok {
		return errNoRecord
	}
	rec.LastUsedAt = at
	s.records[k] = rec
	return nil
}

// DeleteRecord implements driver.Records.
func (s *Store) DeleteRecord(ctx context.Context, owner artifact.Owner, ref artifact.Ref) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	k := keyOf(owner, ref)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.records[k]; !ok {
		return errNoRecord
	}
	delete(s.records, k)
	return nil
}

// ListRecords implements driver.Records.
func (s *Store) ListRecords(ctx context.Context, q driver.Query) iter.Seq2[artifact.Record, error] {
	return func(yield func(artifact.Record, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(artifact.Record{}, err)
			return
		}
		s.mu.Lock()
		var out []artifact.Record
		for k, rec := range s.records {
			if q.Owner != nil && k.owner != *q.Owner {
				continue
			}
			if !q.Ref.IsZero() && k.sum != q.Ref.Sum() {
				continue
			}
			if !q.UnusedSince.IsZero() && !rec.LastUsedAt.Before(q.UnusedSince) {
				continue
			}
			out = append(out, rec)
		}
		s.mu.Unlock()
		slices.SortFunc(out, func(a, b artifact.Record) int {
			if c := a.LastUsedAt.Compare(b.LastUsedAt); c != 0 {
				return c
			}
			as, bs := a.Ref.Sum(), b.Ref.Sum()
			if c := bytes.Compare(as[:], bs[:]); c != 0 { // hex order
				return c
			}
			return cmp.Or(cmp.Compare(a.Owner.User, b.Owner.User), cmp.Compare(a.Owner.Workflow, b.Owner.Workflow),
				cmp.Compare(a.Owner.Session, b.Owner.Session))
		})
		for _, rec := range out {
			if !yield(rec, nil) {
				return
			}
		}
	}
}
