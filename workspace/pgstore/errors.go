package pgstore

import (
	"errors"
	"iter"

	"github.com/hybridctx/hybridctx/workspace/driver"
	"github.com/jackc/pgx/v5/pgconn"
)

// sqlstateCategories maps SQLSTATE codes, or their two-character classes,
// to portable categories (docs/workspace.md, "Error categories").
var sqlstateCategories = map[string]error{
	"08":    driver.ErrUnavailable, // connection exception
	"28":    driver.ErrUnavailable, // invalid authorization (user, password)
	"3D":    driver.ErrUnavailable, // no such database
	"57P01": driver.ErrUnavailable, // the server is shutting down
	"57P02": driver.ErrUnavailable, // crash shutdown
	"57P03": driver.ErrUnavailable, // the server does not accept connections yet
	"53300": driver.ErrUnavailable, // too many connections
	"42501": driver.ErrPermission,  // insufficient privilege
	"53100": driver.ErrNoSpace,     // disk full
	"53200": driver.ErrNoSpace,     // out of memory
	"25006": driver.ErrReadOnly,    // read-only transaction (a standby, or default_transaction_read_only)
	"55P03": driver.ErrBusy,        // lock not available
	"XX001": driver.ErrDamaged,     // data corrupted
	"XX002": driver.ErrDamaged,     // index corrupted
	"58030": driver.ErrIO,          // I/O error
}

// classify marks err with the portable category of its cause: the
// server's SQLSTATE, a connection that could not be made (ErrUnavailable),
// or an operating-system error (driver.FromOS). An error already marked,
// or of none of these causes, is returned as it is.
func classify(err error) error {
	if err == nil || driver.Category(err) != nil {
		return err
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		if c, ok := sqlstateCategories[pe.Code]; ok {
			return driver.Wrap(c, err)
		}
		if len(pe.Code) == 5 {
			if c, ok := sqlstateCategories[pe.Code[:2]]; ok {
				return driver.Wrap(c, err)
			}
		}
		return err
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return driver.Wrap(driver.ErrUnavailable, err)
	}
	if c := driver.Category(driver.FromOS(err)); c != nil {
		return driver.Wrap(c, err)
	}
	return err
}

// markErr classifies the error *p in place; the exported methods defer it.
func markErr(p *error) { *p = classify(*p) }

// markSeq classifies the errors seq yields.
func markSeq[T any](seq iter.Seq2[T, error]) iter.Seq2[T, error] {
	return driver.ClassifySeq(seq, classify)
}
