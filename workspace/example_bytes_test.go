package workspace_test

import (
	"context"
	"fmt"
	"log"

	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

// ExampleStore_IngestBytes stores a body that is already in memory: it is
// hashed while it is written, without a copy, then committed.
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

// ExampleDigestBytes hashes a body first, to look it up, and writes it
// later only if needed, without hashing it again.
func ExampleDigestBytes() {
	ctx := context.Background()
	m := memstore.New()
	s := workspace.New(m, m)
	defer s.Close()

	d := workspace.DigestBytes([]byte("hello, workspace"), nil)
	if _, err := s.StatBody(ctx, d.Ref()); err == nil {
		fmt.Println("already stored")
		return
	}
	p, err := s.IngestDigested(ctx, d)
	if err != nil {
		log.Fatal(err)
	}
	res, err := p.Commit(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(d.Ref() == p.Ref(), res)
	// Output:
	// true created
}
