package driver

import (
	"context"
	"iter"
	"time"
)

// IntegrityChecker is an optional capability of a backend whose records (or
// bodies) live in a database with structures of its own, such as indexes
// and a write-ahead log: checking that those structures are sound. The
// Store's Scrub reports what it finds, and CollectGarbage refuses to delete
// anything while it finds damage, since a damaged index could hide the
// records that protect a body.
type IntegrityChecker interface {
	// CheckIntegrity returns the damage found, empty when the database is
	// sound. The error is reserved for a check that could not run; one
	// wrapping errors.ErrUnsupported means this database cannot be checked
	// (the check is then skipped, not passed).
	CheckIntegrity(ctx context.Context) ([]Damage, error)
}

// Damage is one problem an IntegrityChecker found. Both fields are
// categorical: never a record's content, an owner or raw database text.
type Damage struct {
	// Part names the damaged object, relative to the workspace root when
	// it is a file (such as "records.db" or "records.db-wal").
	Part string `json:"part"`
	// Problem says what is wrong, in a few words.
	Problem string `json:"problem"`
}

// ReferenceScanner is an optional capability of Records: yielding the body
// key and last-used time of every record by reading the records themselves,
// in storage order and never through a secondary index, so that a damaged
// index cannot hide a reference from garbage collection.
type ReferenceScanner interface {
	ScanReferences(ctx context.Context) iter.Seq2[Reference, error]
}

// Reference is one record's pointer to a body, as ReferenceScanner yields it.
type Reference struct {
	// Key is the body's key (its hex digest).
	Key string
	// LastUsedAt is the record's last-used time.
	LastUsedAt time.Time
}
