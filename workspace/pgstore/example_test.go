package pgstore_test

import (
	"context"
	"fmt"
	"os"

	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/pgstore"
)

// Example opens a PostgreSQL workspace (creating its tables on first use)
// and stores a body; every worker that opens the same URL shares it. It
// needs a server, so it is compiled but not run by go test.
func Example() {
	ctx := context.Background()
	pg, err := pgstore.Open(ctx, os.Getenv("DATABASE_URL"), nil) // e.g. postgres://u:p@db/agents
	if err != nil {
		fmt.Println(err) // names the database, never the password
		return
	}
	store := workspace.New(pg, pg) // bodies and records in one database
	defer store.Close()
	p, err := store.IngestBytes(ctx, []byte("a large tool result"), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := p.Commit(ctx)
	fmt.Println(p.Ref(), p.Size(), res, err)
}
