package workspace_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

// ExampleStore_CollectGarbage applies a 30-day retention policy two months
// after one body was offloaded and another stored without a record: the
// stale record goes, then both bodies, since no record references them and
// they are older than the grace period.
func ExampleStore_CollectGarbage() {
	ctx := context.Background()
	m := memstore.New()
	s := workspace.New(m, m)
	defer s.Close()

	stored := time.Now()
	owner := artifact.Owner{User: "ada", Workflow: "triage", Session: "s1"}
	p, err := s.IngestBytes(ctx, []byte("a large tool result"), nil)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := s.Attach(ctx, p, artifact.Record{Owner: owner, CreatedAt: stored, LastUsedAt: stored}); err != nil {
		log.Fatal(err)
	}
	orphan, err := s.IngestBytes(ctx, []byte("an orphan"), nil)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := orphan.Commit(ctx); err != nil {
		log.Fatal(err)
	}

	later := func() time.Time { return stored.Add(60 * 24 * time.Hour) }
	opts := &workspace.GCOptions{MaxAge: 30 * 24 * time.Hour, Clock: later, DryRun: true}
	rep, err := s.CollectGarbage(ctx, opts)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("dry run: %d record, %d bodies, %d bytes\n", rep.RecordsDeleted, rep.BodiesDeleted, rep.BytesDeleted)

	opts.DryRun = false
	rep, err = s.CollectGarbage(ctx, opts)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("deleted: %d record, %d bodies, %d bytes\n", rep.RecordsDeleted, rep.BodiesDeleted, rep.BytesDeleted)
	// Output:
	// dry run: 1 record, 2 bodies, 28 bytes
	// deleted: 1 record, 2 bodies, 28 bytes
}
