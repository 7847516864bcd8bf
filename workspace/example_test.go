package workspace_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

// Example streams a body into a memory-backed workspace, hashing it as it
// is written, commits it, and reads it back verified against its digest.
func Example() {
	ctx := context.Background()
	m := memstore.New()
	s := workspace.New(m, m)
	defer s.Close()

	p, size, err := s.Ingest(ctx, strings.NewReader("hello, workspace"), nil)
	if err != nil {
		log.Fatal(err)
	}
	res, err := p.Commit(ctx)
	if err != nil {
		log.Fatal(err)
	}
	ref := p.Ref()
	fmt.Println(ref)
	fmt.Println(size, res)

	body, err := s.ReadVerified(ctx, ref, size, 0, size)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s\n", body)
	// Output:
	// artifact://sha256/602be29ea3cce0cc7f85ca3e6c130f2e1fb61917b798838ea326d12f8dc25601
	// 16 created
	// hello, workspace
}
