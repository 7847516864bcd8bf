package workspace

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace/driver"
)

// Retention limits of CollectGarbage.
const (
	// DefaultGrace is the grace period when GCOptions leaves it zero.
	DefaultGrace = 24 * time.Hour
	// MinGrace is the shortest grace period accepted. A body written by
	// an offload is protected by the grace period alone between its commit
	// and its record's (milliseconds), so the grace period must dwarf
	// that.
	MinGrace = time.Minute
	// MinMaxAge is the shortest record max age accepted: a record's
	// last-used time is refreshed at most hourly, so a shorter max age
	// would expire records that are in use.
	MinMaxAge = time.Hour
)

// ErrGCOptions is wrapped by the error CollectGarbage returns for invalid
// options.
var ErrGCOptions = errors.New("invalid garbage collection options")

// ErrDamaged is wrapped by the error CollectGarbage returns, before it
// deletes anything, when the backend's integrity check
// (driver.IntegrityChecker) finds its database damaged: a damaged index
// could hide the records that protect a body. Scrub reports the damage.
// It is in the portable category driver.ErrDamaged.
var ErrDamaged = driver.Wrap(driver.ErrDamaged, errors.New("the workspace database is damaged"))

// GCOptions tune CollectGarbage. nil means the defaults: no record expires,
// and bodies no record references are deleted once older than DefaultGrace.
type GCOptions struct {
	// MaxAge, when > 0, deletes the records last used more than MaxAge
	// ago. It must then be at least MinMaxAge.
	MaxAge time.Duration
	// Grace is how old a body no record references must be before it is
	// deleted; zero means DefaultGrace. It must be at least MinGrace.
	Grace time.Duration
	// DryRun reports what would be deleted and deletes nothing.
	DryRun bool
	// Clock gives the current time; nil means time.Now.
	Clock func() time.Time

	// unlocked is a test-only mutant: bodies are deleted from the first
	// scan's view, without the per-body lock and re-check.
	unlocked bool
}

// GCReport says what CollectGarbage did (or, in a dry run, would do).
type GCReport struct {
	// DryRun is true when nothing was deleted.
	DryRun bool `json:"dry_run"`
	// RecordsDeleted counts the records deleted for being unused longer
	// than the max age.
	RecordsDeleted int64 `json:"records_deleted"`
	// BodiesScanned counts the bodies examined.
	BodiesScanned int64 `json:"bodies_scanned"`
	// BodiesDeleted counts the bodies deleted; BytesDeleted their sizes.
	BodiesDeleted int64 `json:"bodies_deleted"`
	BytesDeleted  int64 `json:"bytes_deleted"`
	// BodiesReferenced counts the bodies kept because a record points at
	// them; BodiesRecent those no record points at, kept because they are
	// younger than the grace period.
	BodiesReferenced int64 `json:"bodies_referenced"`
	BodiesRecent     int64 `json:"bodies_recent"`
}

// CollectGarbage applies the retention policy (nil opts = defaults): it
// first deletes the records unused for longer than opts.MaxAge, then the
// bodies that no record references and that are older than the grace
// period. Rehydrating a collected reference then resolves as unauthorized
// (record gone) or missing (body gone), never as other bytes.
//
// It never deletes a body a record points to, even while offloads run in
// other goroutines or processes: each candidate body is deleted under its
// per-body lock (see lockBody) after re-checking, under the lock, that it is
// still older than the grace period and that no record references it. An
// offload that reuses a stored body holds the same lock from finding the
// body to committing its record; an offload that writes a body commits its
// record moments later, well within the grace period. The same design
// carries over to a database-backed workspace with an advisory lock per
// body.
//
// It trusts no damaged index: it first runs the backend's integrity check
// where there is one (driver.IntegrityChecker) and refuses with ErrDamaged
// when it finds damage, and before deleting it confirms that the candidates
// are unreferenced by reading the records themselves where the backend can
// (driver.ReferenceScanner; otherwise by listing every record).
//
// A body's age is its ModTime (the commit time on a directory workspace).
func (s *Store) CollectGarbage(ctx context.Context, opts *GCOptions) (GCReport, error) {
	var o GCOptions
	if opts != nil {
		o = *opts
	}
	if err := o.validate(); err != nil {
		return GCReport{}, err
	}
	if err := ctx.Err(); err != nil {
		return GCReport{}, err
	}
	if s.closed.Load() {
		return GCReport{}, wrap("gc", artifact.Ref{}, ErrClosed)
	}
	if s.locker == nil {
		return GCReport{}, wrap("gc", artifact.Ref{}, fmt.Errorf("the backend has no per-body lock: %w", errors.ErrUnsupported))
	}
	if err := s.refuseDamaged(ctx); err != nil {
		return GCReport{}, wrap("gc", artifact.Ref{}, err)
	}
	now := o.Clock()
	rep := GCReport{DryRun: o.DryRun}
	var recordCutoff time.Time
	if o.MaxAge > 0 {
		recordCutoff = now.Add(-o.MaxAge)
		n, err := s.expireRecords(ctx, recordCutoff, o.DryRun)
		rep.RecordsDeleted = n
		if err != nil {
			return rep, wrap("gc", artifact.Ref{}, err)
		}
	}
	if !o.DryRun {
		// Every record left protects its body.
		recordCutoff = time.Time{}
	}
	bodyCutoff := now.Add(-o.Grace)
	candidates, err := s.gcCandidates(ctx, bodyCutoff, recordCutoff, &rep)
	if err == nil && !o.unlocked {
		candidates, err = s.unreferencedInTable(ctx, candidates, recordCutoff, &rep)
	}
	if err != nil {
		return rep, wrap("gc", artifact.Ref{}, err)
	}
	for _, c := range candidates {
		if o.DryRun {
			rep.BodiesDeleted++
			rep.BytesDeleted += max(c.Size, 0)
			continue
		}
		ref, _ := artifact.ParseDigest(c.Key)
		if err := s.collectBody(ctx, ref, bodyCutoff, o.unlocked, &rep); err != nil {
			return rep, wrap("gc", ref, err)
		}
	}
	return rep, nil
}

func (o *GCOptions) validate() error {
	switch {
	case o.MaxAge < 0 || o.MaxAge > 0 && o.MaxAge < MinMaxAge:
		return fmt.Errorf("%w: max age must be 0 (keep records) or at least %v", ErrGCOptions, MinMaxAge)
	case o.Grace < 0 || o.Grace > 0 && o.Grace < MinGrace:
		return fmt.Errorf("%w: grace period must be at least %v", ErrGCOptions, MinGrace)
	}
	if o.Grace == 0 {
		o.Grace = DefaultGrace
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	return nil
}

// expireRecords deletes (or, in a dry run, counts) the records last used
// before cutoff.
func (s *Store) expireRecords(ctx context.Context, cutoff time.Time, dryRun bool) (int64, error) {
	if e, ok := s.records.(driver.RecordExpirer); ok && !dryRun {
		return e.ExpireRecords(ctx, cutoff)
	}
	var stale []artifact.Record
	for rec, err := range s.ListRecords(ctx, driver.Query{UnusedSince: cutoff}) {
		if err != nil {
			return 0, err
		}
		stale = append(stale, rec)
	}
	if dryRun {
		return int64(len(stale)), nil
	}
	var n int64
	for _, rec := range stale {
		cur, err := s.records.GetRecord(ctx, rec.Owner, rec.Ref)
		if isNotExist(err) {
			continue
		}
		if err != nil {
			return n, err
		}
		if !cur.LastUsedAt.Before(cutoff) {
			continue // used meanwhile
		}
		err = s.records.DeleteRecord(ctx, rec.Owner, rec.Ref)
		if isNotExist(err) {
			continue
		}
		if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// gcCandidates lists the bodies older than bodyCutoff that no record
// references, counting the others in rep. Records last used before
// recordCutoff (zero: none) do not count as references.
func (s *Store) gcCandidates(ctx context.Context, bodyCutoff, recordCutoff time.Time, rep *GCReport) ([]driver.Info, error) {
	var out []driver.Info
	err := s.eachBody(ctx, func(info driver.Info, ref artifact.Ref) error {
		rep.BodiesScanned++
		// References first: a body a record points at is kept for that,
		// whatever its age, and "recent" counts only the bodies that
		// nothing but their age keeps.
		used, err := s.referenced(ctx, ref, recordCutoff)
		switch {
		case err != nil:
			return err
		case used:
			rep.BodiesReferenced++
		case !info.ModTime.Before(bodyCutoff):
			rep.BodiesRecent++
		default:
			out = append(out, info)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// eachBody calls f for every stored body with its reference, passing over
// the names that are not a digest (not a body). It stops at the first
// error of the listing or of f.
func (s *Store) eachBody(ctx context.Context, f func(driver.Info, artifact.Ref) error) error {
	for info, err := range s.ListBodies(ctx) {
		if err != nil {
			return err
		}
		ref, err := artifact.ParseDigest(info.Key)
		if err != nil {
			continue
		}
		if err := f(info, ref); err != nil {
			return err
		}
	}
	return nil
}

// referenced reports whether a record last used at or after cutoff points
// at ref (any record, when cutoff is zero).
func (s *Store) referenced(ctx context.Context, ref artifact.Ref, cutoff time.Time) (bool, error) {
	for rec, err := range s.ListRecords(ctx, driver.Query{Ref: ref}) {
		if err != nil {
			return false, err
		}
		if cutoff.IsZero() || !rec.LastUsedAt.Before(cutoff) {
			return true, nil
		}
	}
	return false, nil
}

// collectBody deletes the body of ref under its lock, if it is still older
// than cutoff and unreferenced then.
func (s *Store) collectBody(ctx context.Context, ref artifact.Ref, cutoff time.Time, unlocked bool, rep *GCReport) error {
	if !unlocked {
		unlock, err := s.lockBody(ctx, ref)
		if err != nil {
			return err
		}
		defer unlock()
	}
	info, err := s.bodies.Stat(ctx, ref.Hex())
	switch {
	case isNotExist(err):
		return nil // deleted meanwhile
	case err != nil:
		return err
	}
	if !unlocked {
		if !info.ModTime.Before(cutoff) {
			rep.BodiesRecent++ // rewritten meanwhile
			return nil
		}
		used, err := s.referenced(ctx, ref, time.Time{})
		if err != nil {
			return err
		}
		if used {
			rep.BodiesReferenced++
			return nil
		}
	}
	err = s.bodies.Delete(ctx, ref.Hex())
	switch {
	case isNotExist(err):
		return nil
	case err != nil:
		return err
	}
	rep.BodiesDeleted++
	rep.BytesDeleted += max(info.Size, 0)
	return nil
}

// refuseDamaged fails, wrapping ErrDamaged, when a driver's integrity check
// finds damage.
func (s *Store) refuseDamaged(ctx context.Context) error {
	damage, _, err := s.checkIntegrity(ctx)
	if err != nil {
		return err
	}
	if len(damage) > 0 {
		return &DamageError{Damage: damage}
	}
	return nil
}

// DamageError is the error CollectGarbage returns when the backend's
// integrity check found damage; it wraps ErrDamaged.
type DamageError struct {
	// Damage is what the check found (categorical, never raw database
	// text).
	Damage []driver.Damage
}

func (e *DamageError) Error() string {
	parts := make([]string, len(e.Damage))
	for i, d := range e.Damage {
		parts[i] = d.Part + ": " + d.Problem
	}
	return ErrDamaged.Error() + " (" + strings.Join(parts, "; ") + ")"
}

// Unwrap returns ErrDamaged.
func (e *DamageError) Unwrap() error { return ErrDamaged }

// unreferencedInTable keeps the candidates that no record references
// (records last used before recordCutoff, when it is not zero, do not
// count), reading every record once rather than trusting the per-body
// lookups that chose the candidates: those may go through an index. The
// kept ones are counted in rep as referenced.
func (s *Store) unreferencedInTable(ctx context.Context, candidates []driver.Info, recordCutoff time.Time, rep *GCReport) ([]driver.Info, error) {
	if len(candidates) == 0 {
		return candidates, nil
	}
	left := make(map[string]bool, len(candidates))
	for _, c := range candidates {
		left[c.Key] = true
	}
	drop := func(key string, used time.Time) {
		if left[key] && (recordCutoff.IsZero() || !used.Before(recordCutoff)) {
			delete(left, key)
			rep.BodiesReferenced++
		}
	}
	if sc, ok := s.records.(driver.ReferenceScanner); ok {
		for ref, err := range sc.ScanReferences(ctx) {
			if err != nil {
				return nil, err
			}
			drop(ref.Key, ref.LastUsedAt)
		}
	} else {
		for rec, err := range s.ListRecords(ctx, driver.Query{}) {
			if err != nil {
				return nil, err
			}
			drop(rec.Ref.Hex(), rec.LastUsedAt)
		}
	}
	out := candidates[:0]
	for _, c := range candidates {
		if left[c.Key] {
			out = append(out, c)
		}
	}
	return out, nil
}
