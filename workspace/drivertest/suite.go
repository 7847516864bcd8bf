// Package drivertest is the conformance suite every workspace backend runs
// (Run, RunWith, RunBenchmarks), and Instrumented, a driver wrapper that
// counts storage calls and injects faults for other packages' tests.
//
// A backend's tests call it as
//
//	func TestConformance(t *testing.T) {
//		drivertest.Run(t, func(t *testing.T) (driver.Bodies, driver.Records) {
//			s := open(t) // a fresh, empty backend, closed by t.Cleanup
//			return s, s
//		})
//	}
package drivertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/driver"
)

// Harness describes a backend to the suite.
type Harness struct {
	// Open returns a fresh, empty backend; it is called once per subtest
	// and registers its own cleanup on t. The two drivers may be the same
	// value.
	Open func(t *testing.T) (driver.Bodies, driver.Records)
	// Tamper, when non-nil, overwrites the stored bytes of key with data
	// without any check, failing t if it cannot. When nil, the suite uses
	// Overwrite, through the backend's own writer.
	Tamper func(t *testing.T, b driver.Bodies, key string, data []byte)
}

// Run runs the conformance suite over the backends open returns, tampering
// with Overwrite.
func Run(t *testing.T, open func(t *testing.T) (driver.Bodies, driver.Records)) {
	RunWith(t, Harness{Open: open})
}

type subtest struct {
	name string
	f    func(e *env)
}

// subtests lists the suite, in order.
func subtests() []subtest {
	var all []subtest
	all = append(all, bodyTests...)
	all = append(all, repairTests...)
	all = append(all, recordTests...)
	all = append(all, concurrencyTests...)
	all = append(all, attachTests...)
	return all
}

// RunWith runs the conformance suite over h.
func RunWith(t *testing.T, h Harness) {
	t.Helper()
	if h.Open == nil {
		t.Fatal("drivertest: Harness.Open is nil")
	}
	for _, st := range subtests() {
		t.Run(st.name, func(t *testing.T) {
			b, r := h.Open(t)
			if b == nil || r == nil {
				t.Fatal("drivertest: Open returned a nil driver")
			}
			e := &env{t: t, ctx: context.Background(), b: b, r: r, s: workspace.New(b, r)}
			e.tamper = tamperFunc(t, h, b)
			st.f(e)
		})
	}
}

// tamperFunc picks the harness's Tamper, else Overwrite.
func tamperFunc(t *testing.T, h Harness, b driver.Bodies) func(key string, data []byte) {
	if h.Tamper != nil {
		return func(key string, data []byte) { t.Helper(); h.Tamper(t, b, key, data) }
	}
	return func(key string, data []byte) {
		t.Helper()
		if !Overwrite(b, key, data) {
			t.Fatalf("Overwrite(%s): no such body", key[:12])
		}
	}
}

// env is one subtest's backend.
type env struct {
	t      *testing.T
	ctx    context.Context
	b      driver.Bodies
	r      driver.Records
	s      *workspace.Store
	tamper func(key string, data []byte)
}

// needTamper skips the subtest when the backend cannot be tampered with.
func (e *env) needTamper() {
	e.t.Helper()
	if e.tamper == nil {
		e.t.Skip("backend offers no Tamper hook")
	}
}

// instrumented returns a Store over an Instrumented wrapper of the backend.
func (e *env) instrumented() (*workspace.Store, *Instrumented) {
	in := Instrument(e.b, e.r, nil)
	return workspace.New(in, in), in
}

// put stores data through the Store and checks the reference and size.
func (e *env) put(data []byte) artifact.Ref {
	e.t.Helper()
	return putOn(e.t, e.s, data)
}

func putOn(t testing.TB, s *workspace.Store, data []byte) artifact.Ref {
	t.Helper()
	ref, n, _, err := Put(context.Background(), s, bytes.NewReader(data), nil)
	if err != nil {
		t.Fatalf("Put(%d bytes): %v", len(data), err)
	}
	if want := artifact.RefOf(data); ref != want || n != int64(len(data)) {
		t.Fatalf("Put(%d bytes) = %v, %d; want %v, %d", len(data), ref, n, want, len(data))
	}
	return ref
}

// mustRead checks that ref reads back, verified, as want.
func (e *env) mustRead(ref artifact.Ref, want []byte) {
	e.t.Helper()
	got, err := e.s.ReadVerified(e.ctx, ref, int64(len(want)), 0, int64(len(want)))
	if err != nil {
		e.t.Fatalf("ReadVerified: %v", err)
	}
	if !bytes.Equal(got, want) {
		e.t.Fatalf("ReadVerified = %d bytes, not the %d stored", len(got), len(want))
	}
}

// mustBeAbsent checks that ref is not visible through the Store or driver.
func (e *env) mustBeAbsent(ref artifact.Ref) {
	e.t.Helper()
	if _, err := e.s.StatBody(e.ctx, ref); !errors.Is(err, driver.ErrNotFound) {
		e.t.Fatalf("StatBody of an absent body: %v, want driver.ErrNotFound", err)
	}
	if _, err := e.s.ReadVerified(e.ctx, ref, 0, 0, 0); !errors.Is(err, driver.ErrNotFound) {
		e.t.Fatalf("ReadVerified of an absent body: %v, want driver.ErrNotFound", err)
	}
}

// keys lists the committed keys, sorted, via the driver.
func (e *env) keys() []string {
	e.t.Helper()
	var ks []string
	for info, err := range e.b.List(e.ctx) {
		if err != nil {
			e.t.Fatalf("List: %v", err)
		}
		ks = append(ks, info.Key)
	}
	slices.Sort(ks)
	return ks
}

// wantKeys checks that exactly the given bodies are committed.
func (e *env) wantKeys(refs ...artifact.Ref) {
	e.t.Helper()
	want := make([]string, 0, len(refs))
	for _, r := range refs {
		want = append(want, r.Hex())
	}
	slices.Sort(want)
	if got := e.keys(); !slices.Equal(got, want) {
		e.t.Fatalf("List keys = %s, want %s", shortKeys(got), shortKeys(want))
	}
}

func shortKeys(ks []string) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = k
		if len(k) > 12 {
			s[i] = k[:12]
		}
	}
	return fmt.Sprint(s)
}

// wantErr fails unless err wraps target.
func wantErr(t testing.TB, what string, err, target error) {
	t.Helper()
	if slices.Contains(driver.Categories(), target) {
		if !onlyIn(err, target) {
			t.Errorf("%s: error %v in categories %v, want %q alone", what, err, categoriesOf(err), target)
		}
		return
	}
	if !errors.Is(err, target) {
		t.Errorf("%s: error %v, want one wrapping %v", what, err, target)
	}
}

// onlyIn reports whether err is marked with the portable category cat and
// with no other (a driver marking every error with every category would
// otherwise pass).
func onlyIn(err, cat error) bool {
	got := categoriesOf(err)
	return len(got) == 1 && got[0] == cat
}

// categoriesOf lists the portable categories err is marked with.
func categoriesOf(err error) []error {
	var out []error
	for _, c := range driver.Categories() {
		if errors.Is(err, c) {
			out = append(out, c)
		}
	}
	return out
}

// content returns n deterministic pseudo-random bytes for seed.
func content(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	b := make([]byte, n)
	for i := 0; i < n; i += 8 {
		v := r.Uint64()
		for j := 0; j < 8 && i+j < n; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

// writeBody writes data through a fresh driver writer and commits it. It
// may run on any goroutine.
func (e *env) writeBody(data []byte, replace bool) error {
	w, err := e.b.NewWriter(e.ctx)
	if err != nil {
		return fmt.Errorf("NewWriter: %w", err)
	}
	defer w.Abort()
	if _, err := w.Write(data); err != nil {
		return fmt.Errorf("Write: %w", err)
	}
	return w.Commit(e.ctx, artifact.RefOf(data).Hex(), replace)
}

// readDriver opens key through the driver and reads it whole.
func readDriver(ctx context.Context, b driver.Bodies, key string) ([]byte, driver.Info, error) {
	r, err := b.Open(ctx, key)
	if err != nil {
		return nil, driver.Info{}, err
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	return data, r.Info(), err
}

// Owners and times shared by the record subtests.
var (
	ownerA = artifact.Owner{User: "alice", Workflow: "build", Session: "s-1"}
	ownerB = artifact.Owner{User: "bob", Workflow: "build", Session: "s-1"}
	t0     = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
)
