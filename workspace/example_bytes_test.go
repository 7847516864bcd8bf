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

// ExampleStore_IngestBytes stores a body that is already in memory: it is
// hashed at once, without a copy, and written when committed.
func ExampleStore_IngestBytes() {
	ctx := context.Background()
	m := memstore.New()
	s := workspace.New(m, m)
	defer s.Close()

	p, err := s.IngestBytes(ctx, []byte("hello, workspace"), nil)
	if err != nil {
		log.Fatal(err)
	}
	res, err := p.Commit(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p.Ref(), p.Size(), res)
	// Output:
	// artifact://sha256/602be29ea3cce0cc7f85ca3e6c130f2e1fb61917b798838ea326d12f8dc25601 16 created
}

// ExampleStore_Attach binds a body to its owner: the first time it stores
// the body and creates the owner's record; the same bytes again find both
// and write nothing.
func ExampleStore_Attach() {
	ctx := context.Background()
	m := memstore.New()
	s := workspace.New(m, m)
	defer s.Close()

	owner := artifact.Owner{User: "ada", Workflow: "triage", Session: "s1"}
	now := time.Now()
	for range 2 {
		p, err := s.IngestBytes(ctx, []byte("a large tool result"), nil)
		if err != nil {
			log.Fatal(err)
		}
		c, err := s.Attach(ctx, p, artifact.Record{Owner: owner, CreatedAt: now, LastUsedAt: now})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(c)
	}
	// Output:
	// created
	// existing
}
