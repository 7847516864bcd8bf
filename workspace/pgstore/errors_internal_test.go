package pgstore

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"

	"github.com/hybridctx/hybridctx/workspace/driver"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestClassify checks the SQLSTATE codes and classes the Store maps, that
// the server's error stays in the chain, and that an unmapped code stays
// in no category. It needs no server.
func TestClassify(t *testing.T) {
	cases := []struct {
		code string
		want error
	}{
		{"08006", driver.ErrUnavailable},
		{"28P01", driver.ErrUnavailable},
		{"3D000", driver.ErrUnavailable},
		{"57P03", driver.ErrUnavailable},
		{"53300", driver.ErrUnavailable},
		{"42501", driver.ErrPermission},
		{"53100", driver.ErrNoSpace},
		{"25006", driver.ErrReadOnly},
		{"55P03", driver.ErrBusy},
		{"XX001", driver.ErrDamaged},
		{"XX002", driver.ErrDamaged},
		{"58030", driver.ErrIO},
		{"23505", nil},
		{"42P01", nil},
	}
	for _, c := range cases {
		pe := &pgconn.PgError{Code: c.code, Message: "m"}
		err := classify(fmt.Errorf("pgstore: op: %w", pe))
		if got := driver.Category(err); got != c.want {
			t.Errorf("SQLSTATE %s: category %v, want %v", c.code, got, c.want)
		}
		var back *pgconn.PgError
		if !errors.As(err, &back) || back != pe {
			t.Errorf("SQLSTATE %s: the server's error is lost", c.code)
		}
	}
	refused := &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}
	if got := driver.Category(classify(fmt.Errorf("dial: %w", refused))); got != driver.ErrUnavailable {
		t.Errorf("refused connection: %v, want driver.ErrUnavailable", got)
	}
	if classify(nil) != nil {
		t.Error("classify(nil) is not nil")
	}
	marked := driver.Wrap(driver.ErrNotFound, &pgconn.PgError{Code: "42501"})
	if classify(marked) != marked {
		t.Error("classify re-marked an error already in a category")
	}
}
