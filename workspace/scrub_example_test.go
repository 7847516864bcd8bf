package workspace_test

import (
	"context"
	"fmt"
	"log"

	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/drivertest"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

// ExampleStore_Scrub finds a body whose bytes rotted, then repairs the
// workspace by deleting it: offloading the same content again restores it.
func ExampleStore_Scrub() {
	ctx := context.Background()
	m := memstore.New()
	s := workspace.New(m, m)
	defer s.Close()

	p, err := s.IngestBytes(ctx, []byte("a large tool result"), nil)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := p.Commit(ctx); err != nil {
		log.Fatal(err)
	}
	ref := p.Ref()
	drivertest.Overwrite(m, ref.Hex(), []byte("a large tool resulT"))

	rep, err := s.Scrub(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d bodies, %d corrupt, damaged: %v\n", rep.Bodies, len(rep.Corrupt), rep.Damaged())

	rep, err = s.Scrub(ctx, &workspace.ScrubOptions{Repair: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("repaired %d, failed %d\n", len(rep.Repaired), len(rep.RepairFailed))
	// Output:
	// 1 bodies, 1 corrupt, damaged: true
	// repaired 1, failed 0
}
