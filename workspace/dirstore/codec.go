package dirstore

import (
	"errors"
	"fmt"
	"time"

	"github.com/hybridctx/hybridctx/artifact"
)

// ErrBadRecord is wrapped by the error for a record that cannot be stored
// faithfully, or a stored row that is not a valid record (a damaged or
// hand-edited database). It never carries the row's values.
var ErrBadRecord = errors.New("dirstore: malformed record")

// MaxTextLen bounds the free-text columns of a record (kind, tool, call
// id, description), in bytes: a record with a longer one is refused with
// ErrBadRecord.
const MaxTextLen = artifact.MaxCallFieldLen

const maxTextLen = MaxTextLen

// row is one records row, in recordCols order. Times are unix nanoseconds;
// 0 is the zero time.
type row struct {
	user, workflow, session, digest string
	size                            int64
	kind, tool, callID, description string
	created, lastUsed               int64
}

// args returns the row's values in recordCols order.
func (r row) args() []any {
	return []any{r.user, r.workflow, r.session, r.digest, r.size, r.kind, r.tool, r.callID,
		r.description, r.created, r.lastUsed}
}

// dest returns pointers to the row's fields in recordCols order, for Scan.
func (r *row) dest() []any {
	return []any{&r.user, &r.workflow, &r.session, &r.digest, &r.size, &r.kind, &r.tool, &r.callID,
		&r.description, &r.created, &r.lastUsed}
}

// The times a row can hold: those whose unix nanoseconds fit an int64.
var (
	minTime = time.Unix(0, -1<<63)
	maxTime = time.Unix(0, 1<<63-1)
)

// encodeRecord converts rec to a row. It refuses, with ErrBadRecord, what
// decodeRecord would refuse, so that every stored record reads back equal.
func encodeRecord(rec artifact.Record) (row, error) {
	if rec.Ref.IsZero() {
		return row{}, fmt.Errorf("%w: zero reference", ErrBadRecord)
	}
	created, err := encodeTime(rec.CreatedAt)
	if err != nil {
		return row{}, err
	}
	lastUsed, err := encodeTime(rec.LastUsedAt)
	if err != nil {
		return row{}, err
	}
	r := row{
		user: rec.Owner.User, workflow: rec.Owner.Workflow, session: rec.Owner.Session,
		digest: rec.Ref.Hex(), size: rec.Size,
		kind: rec.Kind, tool: rec.Tool, callID: rec.CallID, description: rec.Description,
		created: created, lastUsed: lastUsed,
	}
	if err := r.check(); err != nil {
		return row{}, err
	}
	return r, nil
}

func encodeTime(t time.Time) (int64, error) {
	if t.IsZero() {
		return 0, nil
	}
	if t.Before(minTime) || t.After(maxTime) {
		return 0, fmt.Errorf("%w: time out of range", ErrBadRecord)
	}
	if n := t.UnixNano(); n != 0 {
		return n, nil
	}
	// The epoch itself would read back as the zero time.
	return 0, fmt.Errorf("%w: time at the unix epoch", ErrBadRecord)
}

// check validates what both directions require.
func (r row) check() error {
	o := artifact.Owner{User: r.user, Workflow: r.workflow, Session: r.session}
	if err := o.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrBadRecord, err)
	}
	if r.size < 0 {
		return fmt.Errorf("%w: negative size", ErrBadRecord)
	}
	for _, f := range [...]struct{ name, v string }{
		{"kind", r.kind}, {"tool", r.tool}, {"call id", r.callID}, {"description", r.description},
	} {
		if len(f.v) > maxTextLen {
			return fmt.Errorf("%w: %s longer than %d bytes", ErrBadRecord, f.name, maxTextLen)
		}
	}
	return nil
}

// decodeRecord converts a stored row to a record, refusing with
// ErrBadRecord a row no Store could have written: a digest that is not 64
// lowercase hex digits, an invalid owner, a negative size, overlong text.
func decodeRecord(r row) (artifact.Record, error) {
	ref, err := artifact.ParseDigest(r.digest)
	if err != nil {
		return artifact.Record{}, fmt.Errorf("%w: stored digest: %w", ErrBadRecord, err)
	}
	if err := r.check(); err != nil {
		return artifact.Record{}, err
	}
	return artifact.Record{
		Owner: artifact.Owner{User: r.user, Workflow: r.workflow, Session: r.session},
		Ref:   ref, Size: r.size,
		Kind: r.kind, Tool: r.tool, CallID: r.callID, Description: r.description,
		CreatedAt: fromNanos(r.created), LastUsedAt: fromNanos(r.lastUsed),
	}, nil
}
