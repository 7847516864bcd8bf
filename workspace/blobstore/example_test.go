package blobstore_test

import (
	"context"
	"fmt"

	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/blobstore"
	"github.com/hybridctx/hybridctx/workspace/pgstore"
)

// Example wires bodies in an S3 bucket to records and locks in PostgreSQL,
// as package backend does for s3://…&index=postgres://… URLs. It needs both
// servers, so it is compiled but not run by go test.
func Example() {
	ctx := context.Background()
	bucket, err := blobstore.OpenBucket(ctx, "s3://agent-artifacts?region=eu-west-1")
	if err != nil {
		fmt.Println(err) // no such bucket, credentials refused, unreachable…
		return
	}
	index, err := pgstore.Open(ctx, "postgres://hybridctx@db/agents", &pgstore.Options{Bodies: pgstore.BodiesElsewhere})
	if err != nil {
		bucket.Close()
		fmt.Println(err)
		return
	}
	bodies, err := blobstore.New(bucket, &blobstore.Options{Locker: index})
	if err != nil {
		fmt.Println(err)
		return
	}
	store := workspace.New(bodies, index)
	defer store.Close()
	n := 0
	for _, err := range store.ListBodies(ctx) {
		if err != nil {
			break
		}
		n++
	}
	fmt.Println(n, "bodies")
}
