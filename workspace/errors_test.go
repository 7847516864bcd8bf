package workspace_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/driver"
	"github.com/hybridctx/hybridctx/workspace/drivertest"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

// asError unwraps err to the Store's typed error, failing if there is none.
func asError(t *testing.T, err error) *workspace.Error {
	t.Helper()
	var we *workspace.Error
	if !errors.As(err, &we) {
		t.Fatalf("error %v (%T) is not a *workspace.Error", err, err)
	}
	return we
}

func TestErrorIsTyped(t *testing.T) {
	ctx := context.Background()
	s, _, m := instrumented(nil)
	data := []byte("typed errors")
	ref := mustPut(t, s, data)
	absent := artifact.RefOf([]byte("absent"))
	size := int64(len(data))

	_, statErr := s.StatBody(ctx, absent)
	_, rangeErr := s.ReadVerified(ctx, ref, size, size, 1)
	_, _, _, bigErr := drivertest.Put(ctx, s, bytes.NewReader(bodyOf(1, 100)), &workspace.IngestOptions{MaxBytes: 10})
	drivertest.Overwrite(m, ref.Hex(), bytes.ToUpper(data))
	corruptErr := s.VerifyBody(ctx, ref, size)
	_, readCorruptErr := s.ReadVerified(ctx, ref, size, 0, size)
	_, recErr := s.GetRecord(ctx, validOwner, absent)
	var listErr error
	for _, err := range s.ListRecords(ctx, driver.Query{Owner: &artifact.Owner{}}) {
		listErr = err
	}

	cases := []struct {
		name   string
		err    error
		op     string
		ref    artifact.Ref
		target error
	}{
		{"StatBody of an absent body", statErr, "stat", absent, fs.ErrNotExist},
		{"DeleteBody of an absent body", s.DeleteBody(ctx, absent), "delete", absent, fs.ErrNotExist},
		{"ReadVerified out of range", rangeErr, "read", ref, workspace.ErrRange},
		{"Put over MaxBytes", bigErr, "put", artifact.Ref{}, workspace.ErrTooLarge},
		{"VerifyBody of a corrupt body", corruptErr, "verify", ref, workspace.ErrCorrupt},
		{"ReadVerified of a corrupt body", readCorruptErr, "read", ref, workspace.ErrCorrupt},
		{"Record absent", recErr, "record", absent, fs.ErrNotExist},
		{"TouchRecord absent", s.TouchRecord(ctx, validOwner, absent, time.Now()), "touch", absent, fs.ErrNotExist},
		{"DeleteRecord absent", s.DeleteRecord(ctx, validOwner, absent), "delete record", absent, fs.ErrNotExist},
		{"ListRecords with an invalid owner", listErr, "list records", artifact.Ref{}, artifact.ErrInvalidOwner},
	}
	for _, c := range cases {
		we := asError(t, c.err)
		if we.Op != c.op || we.Ref != c.ref {
			t.Errorf("%s: Op %q Ref %v, want %q %v", c.name, we.Op, we.Ref, c.op, c.ref)
		}
		if !errors.Is(c.err, c.target) || !errors.Is(fmt.Errorf("outer: %w", c.err), c.target) {
			t.Errorf("%s: %v does not wrap %v", c.name, c.err, c.target)
		}
		var inner *workspace.Error
		if errors.As(we.Err, &inner) {
			t.Errorf("%s: a *workspace.Error wraps another: %v", c.name, c.err)
		}
		prefix := "workspace " + c.op + ": "
		if !c.ref.IsZero() {
			prefix = "workspace " + c.op + " " + c.ref.Hex()[:12] + ": "
		}
		if msg := c.err.Error(); !strings.HasPrefix(msg, prefix) {
			t.Errorf("%s: message %q, want prefix %q", c.name, msg, prefix)
		}
	}
	// A dedup hit on a corrupt body that cannot be repaired keeps the
	// verification's typed error without wrapping it twice.
	in := drivertest.Instrument(m, m, &drivertest.Hooks{Commit: func(_ context.Context, _ string, replace bool) error {
		if replace {
			return fs.ErrPermission
		}
		return nil
	}})
	_, _, _, err := drivertest.Put(ctx, workspace.New(in, in), bytes.NewReader(data), nil)
	if we := asError(t, err); we.Op != "repair" || !errors.Is(err, fs.ErrPermission) {
		t.Errorf("failed repair: %v, want op repair wrapping fs.ErrPermission", err)
	}
}

func TestZeroRefMakesNoDriverCalls(t *testing.T) {
	ctx := context.Background()
	s, in, _ := instrumented(nil)
	var zero artifact.Ref
	var buf bytes.Buffer
	calls := map[string]func() error{
		"StatBody":     func() error { _, err := s.StatBody(ctx, zero); return err },
		"DeleteBody":   func() error { return s.DeleteBody(ctx, zero) },
		"VerifyBody":   func() error { return s.VerifyBody(ctx, zero, 0) },
		"ReadVerified": func() error { _, err := s.ReadVerified(ctx, zero, 0, 0, 0); return err },
		"CopyVerified": func() error { _, err := s.CopyVerified(ctx, zero, 0, 0, 0, &buf); return err },
		"CreateRecord": func() error {
			_, err := s.CreateRecord(ctx, artifact.Record{Owner: validOwner})
			return err
		},
		"GetRecord":    func() error { _, err := s.GetRecord(ctx, validOwner, zero); return err },
		"TouchRecord":  func() error { return s.TouchRecord(ctx, validOwner, zero, time.Now()) },
		"DeleteRecord": func() error { return s.DeleteRecord(ctx, validOwner, zero) },
	}
	for name, call := range calls {
		err := call()
		if !errors.Is(err, workspace.ErrInvalidRef) {
			t.Errorf("%s(zero ref): %v, want ErrInvalidRef", name, err)
		}
		asError(t, err)
		if c := in.Counts(); c != (drivertest.Counts{}) {
			t.Fatalf("%s(zero ref) reached the driver: %+v", name, c)
		}
	}
}

func TestInvalidOwnerMakesNoDriverCalls(t *testing.T) {
	ctx := context.Background()
	s, in, _ := instrumented(nil)
	ref := artifact.RefOf([]byte("body"))
	in.Reset()
	long := strings.Repeat("x", artifact.MaxOwnerFieldLen+1)
	owners := map[string]artifact.Owner{
		"zero":             {},
		"no user":          {Workflow: "w", Session: "s"},
		"blank workflow":   {User: "u", Workflow: " \t", Session: "s"},
		"no session":       {User: "u", Workflow: "w"},
		"long user":        {User: long, Workflow: "w", Session: "s"},
		"invalid UTF-8":    {User: "u", Workflow: "w\xff", Session: "s"},
		"NUL in a session": {User: "u", Workflow: "w", Session: "s\x00"},
	}
	for name, o := range owners {
		calls := map[string]func() error{
			"CreateRecord": func() error {
				_, err := s.CreateRecord(ctx, artifact.Record{Owner: o, Ref: ref})
				return err
			},
			"GetRecord":    func() error { _, err := s.GetRecord(ctx, o, ref); return err },
			"TouchRecord":  func() error { return s.TouchRecord(ctx, o, ref, time.Now()) },
			"DeleteRecord": func() error { return s.DeleteRecord(ctx, o, ref) },
			"ListRecords": func() error {
				for _, err := range s.ListRecords(ctx, driver.Query{Owner: &o}) {
					return err
				}
				return nil
			},
		}
		for op, call := range calls {
			err := call()
			if !errors.Is(err, artifact.ErrInvalidOwner) {
				t.Errorf("%s with owner %s: %v, want ErrInvalidOwner", op, name, err)
			}
			if c := in.Counts(); c != (drivertest.Counts{}) {
				t.Fatalf("%s with owner %s reached the driver: %+v", op, name, c)
			}
		}
	}
}

// closer counts Close calls on a memstore.
type closer struct {
	*memstore.Store
	n   *atomic.Int32
	err error
}

func (c closer) Close() error { c.n.Add(1); return c.err }

func TestCloseIsIdempotent(t *testing.T) {
	boom := errors.New("close failed")
	var n1, n2 atomic.Int32
	m := memstore.New()
	one := closer{m, &n1, boom}
	s := workspace.New(one, one)
	for i := range 3 {
		if err := s.Close(); !errors.Is(err, boom) {
			t.Fatalf("Close #%d: %v, want %v", i+1, err, boom)
		}
	}
	if n1.Load() != 1 {
		t.Fatalf("one driver used for both roles was closed %d times, want 1", n1.Load())
	}
	n1.Store(0)
	s = workspace.New(closer{m, &n1, nil}, closer{m, &n2, boom})
	s.Close()
	if err := s.Close(); !errors.Is(err, boom) {
		t.Fatalf("second Close: %v, want %v", err, boom)
	}
	if n1.Load() != 1 || n2.Load() != 1 {
		t.Fatalf("two drivers closed %d and %d times, want 1 and 1", n1.Load(), n2.Load())
	}
	if err := workspace.New(m, m).Close(); err != nil {
		t.Fatalf("Close of drivers without Close: %v", err)
	}
}
