package workspace

import (
	"context"
	"errors"
	"io/fs"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace/driver"
)

// ScrubOptions tune Scrub. nil means a report that changes nothing.
type ScrubOptions struct {
	// Repair deletes the corrupt bodies, each under its per-body lock and
	// only if it is still corrupt then. Their records resolve as missing
	// until the same content is offloaded again, which restores them.
	Repair bool
}

// ScrubReport is what Scrub found, and repaired.
type ScrubReport struct {
	// Bodies counts the bodies examined.
	Bodies int64
	// Corrupt lists the bodies whose bytes do not hash to their name (or
	// that are not plain bodies at all), in the order they were found.
	Corrupt []artifact.Ref
	// Missing lists the references some record points at whose body is
	// absent, each once whatever the owners.
	Missing []artifact.Ref
	// UnsafePermissions lists the stored objects, relative to the
	// workspace root, that grant any permission beyond private. It is
	// only meaningful when PermissionsChecked is true.
	UnsafePermissions  []string
	PermissionsChecked bool
	// Database lists what the backend's own integrity check found wrong
	// with its database (such as an index that no longer matches its
	// table, or a write-ahead log deleted while in use). It is only
	// meaningful when DatabaseChecked is true.
	Database        []driver.Damage
	DatabaseChecked bool
	// Orphaned counts bodies no record points at: normal, only counted.
	Orphaned int64
	// Repaired lists the corrupt bodies deleted by the repair.
	Repaired []artifact.Ref
	// RepairFailed lists the corrupt bodies the repair could not delete
	// (such as a directory planted at a body's name); they stay reported
	// as corrupt.
	RepairFailed []artifact.Ref
}

// Damaged reports whether anything corrupt, missing or unsafe was found,
// repaired or not.
func (r *ScrubReport) Damaged() bool {
	return len(r.Corrupt)+len(r.Missing)+len(r.UnsafePermissions)+len(r.Database) > 0
}

// Scrub examines the whole workspace (nil opts = report only): the
// backend's own integrity check of its database where it has one
// (driver.IntegrityChecker), every body re-hashed against its name, every
// record's body present, and the permissions of stored objects where the
// backend can tell (driver.Checker). With opts.Repair it then deletes the
// corrupt bodies; a body it cannot delete is reported in RepairFailed, not
// as an error.
//
// The error is non-nil only when the scrub could not run to its end: a
// cancelled context, a closed Store, or a storage failure while listing or
// reading.
func (s *Store) Scrub(ctx context.Context, opts *ScrubOptions) (*ScrubReport, error) {
	var o ScrubOptions
	if opts != nil {
		o = *opts
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.closed.Load() {
		return nil, wrap("scrub", artifact.Ref{}, ErrClosed)
	}
	rep := &ScrubReport{Corrupt: []artifact.Ref{}, Missing: []artifact.Ref{}, UnsafePermissions: []string{},
		Database: []driver.Damage{}, Repaired: []artifact.Ref{}, RepairFailed: []artifact.Ref{}}
	damage, checked, err := s.checkIntegrity(ctx)
	if err != nil {
		return nil, wrap("scrub", artifact.Ref{}, err)
	}
	rep.Database, rep.DatabaseChecked = append(rep.Database, damage...), checked
	present, err := s.scrubBodies(ctx, rep)
	if err != nil {
		return nil, wrap("scrub", artifact.Ref{}, err)
	}
	if err := s.scrubRecords(ctx, present, rep); err != nil && (len(rep.Database) == 0 || ctx.Err() != nil) {
		// A database its own check found damaged may fail to list its
		// records; that damage is reported, and Missing is then partial.
		return nil, wrap("scrub", artifact.Ref{}, err)
	}
	perms, err := s.UnsafePermissions(ctx)
	switch {
	case errors.Is(err, errors.ErrUnsupported):
	case err != nil:
		return nil, wrap("scrub", artifact.Ref{}, err)
	default:
		rep.PermissionsChecked = true
		rep.UnsafePermissions = append(rep.UnsafePermissions, perms...)
	}
	if o.Repair {
		for _, ref := range rep.Corrupt {
			deleted, err := s.repairBody(ctx, ref)
			switch {
			case ctx.Err() != nil:
				return nil, wrap("scrub", ref, ctx.Err())
			case err != nil:
				rep.RepairFailed = append(rep.RepairFailed, ref)
			case deleted:
				rep.Repaired = append(rep.Repaired, ref)
			}
		}
	}
	return rep, nil
}

// checkIntegrity runs the integrity check of every driver that has one
// (each once when bodies and records are the same value). checked is false
// when none has.
func (s *Store) checkIntegrity(ctx context.Context) (damage []driver.Damage, checked bool, err error) {
	drivers := []any{s.records}
	if !same(s.records, s.bodies) {
		drivers = append(drivers, s.bodies)
	}
	for _, d := range drivers {
		c, ok := d.(driver.IntegrityChecker)
		if !ok {
			continue
		}
		dmg, err := c.CheckIntegrity(ctx)
		switch {
		case errors.Is(err, errors.ErrUnsupported):
			continue // the backend cannot check here (a missing extension, say)
		case err != nil:
			return nil, true, err
		}
		checked = true
		damage = append(damage, dmg...)
	}
	return damage, checked, nil
}

// scrubBodies re-hashes every body, counting them in rep and listing the
// corrupt ones; it returns the set of bodies seen.
func (s *Store) scrubBodies(ctx context.Context, rep *ScrubReport) (map[artifact.Ref]bool, error) {
	present := make(map[artifact.Ref]bool)
	err := s.eachBody(ctx, func(_ driver.Info, ref artifact.Ref) error {
		err := s.VerifyBody(ctx, ref, -1)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil // deleted since it was listed
		case errors.Is(err, ErrCorrupt):
			rep.Corrupt = append(rep.Corrupt, ref)
		case err != nil:
			return err
		}
		rep.Bodies++
		present[ref] = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	return present, nil
}

// scrubRecords lists the references whose body is absent and counts the
// bodies no record points at.
func (s *Store) scrubRecords(ctx context.Context, present map[artifact.Ref]bool, rep *ScrubReport) error {
	referenced := make(map[artifact.Ref]bool)
	for rec, err := range s.ListRecords(ctx, driver.Query{}) {
		if err != nil {
			return err
		}
		if referenced[rec.Ref] {
			continue
		}
		referenced[rec.Ref] = true
		if present[rec.Ref] {
			continue
		}
		// Not seen by the body scan: absent, or committed since. Ask again.
		_, err := s.StatBody(ctx, rec.Ref)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			rep.Missing = append(rep.Missing, rec.Ref)
		case err != nil:
			return err
		}
	}
	for ref := range present {
		if !referenced[ref] {
			rep.Orphaned++
		}
	}
	return nil
}

// repairBody deletes the corrupt body of ref under its per-body lock, and
// only if it is still corrupt then, so that a body a concurrent offload
// just repaired is kept. It reports whether it deleted.
func (s *Store) repairBody(ctx context.Context, ref artifact.Ref) (bool, error) {
	unlock, err := s.lockBody(ctx, ref)
	if err != nil {
		return false, err
	}
	defer unlock()
	err = s.VerifyBody(ctx, ref, -1)
	switch {
	case err == nil, errors.Is(err, fs.ErrNotExist):
		return false, nil
	case !errors.Is(err, ErrCorrupt):
		return false, err
	}
	if err := s.DeleteBody(ctx, ref); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	return true, nil
}
