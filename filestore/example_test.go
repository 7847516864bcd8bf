package filestore_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/filestore"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

func Example() {
	ctx := context.Background()
	mem := memstore.New()
	bind, _ := hybridctx.NewBinding(artifact.Owner{User: "ada", Workflow: "triage", Session: "s1"}, workspace.New(mem, mem))
	files, _ := filestore.New(bind, nil)

	_ = files.Write(ctx, `notes\plan.md`, []byte("1. read the logs"))
	_ = files.Write(ctx, "notes/logs/today.txt", []byte("..."))
	b, _ := files.Read(ctx, "./notes/plan.md")
	fmt.Println(string(b))
	entries, _ := files.List(ctx, "notes")
	for _, e := range entries {
		fmt.Println(e.Path, e.IsDir)
	}
	fmt.Println(errors.Is(files.Write(ctx, "../escape", nil), filestore.ErrInvalidPath))
	fmt.Println(errors.Is(files.Write(ctx, "sha256/abc", nil), filestore.ErrReserved))
	fmt.Println(errors.Is(files.Delete(ctx, "notes/plan.md"), errors.ErrUnsupported))
	// Output:
	// 1. read the logs
	// notes/logs true
	// notes/plan.md false
	// true
	// true
	// true
}
