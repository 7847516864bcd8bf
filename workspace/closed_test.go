package workspace_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/driver"
	"github.com/hybridctx/hybridctx/workspace/drivertest"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

func TestClosedStoreRefusesEverything(t *testing.T) {
	ctx := context.Background()
	m := memstore.New()
	inst := drivertest.Instrument(m, m, nil)
	s := workspace.New(inst, inst)
	ref, _, _, err := drivertest.Put(ctx, s, bytes.NewReader([]byte("closed")), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	inst.Reset()
	owner := artifact.Owner{User: "u", Workflow: "w", Session: "s"}
	errs := []error{}
	_, _, err = s.Ingest(ctx, bytes.NewReader([]byte("x")), nil)
	errs = append(errs, err)
	_, err = s.StatBody(ctx, ref)
	errs = append(errs, err)
	_, err = s.ReadVerified(ctx, ref, 6, 0, 6)
	errs = append(errs, err)
	_, err = s.GetRecord(ctx, owner, ref)
	errs = append(errs, err)
	_, err = s.CreateRecord(ctx, artifact.Record{Owner: owner, Ref: ref})
	errs = append(errs, err)
	errs = append(errs, s.VerifyBody(ctx, ref, -1), s.DeleteBody(ctx, ref))
	for _, err := range s.ListBodies(ctx) {
		errs = append(errs, err)
	}
	for _, err := range s.ListRecords(ctx, driver.Query{}) {
		errs = append(errs, err)
	}
	_, err = s.UnsafePermissions(ctx)
	errs = append(errs, err)
	for i, err := range errs {
		if !errors.Is(err, workspace.ErrClosed) {
			t.Errorf("call %d after Close: %v", i, err)
		}
	}
	if c := inst.Counts(); c != (drivertest.Counts{}) {
		t.Fatalf("a closed store reached the driver: %+v", c)
	}
}
