// Command tenlines is the README's "Library in ten lines" as a program:
// TestDirectoryProgramDeps counts the packages it links.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/backend"
)

func main() {
	ctx := context.Background()
	store, err := backend.Open(ctx, os.Args[1], nil) // a directory, or "mem://"
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer store.Close()
	bind, _ := hybridctx.NewBinding(artifact.Owner{User: "ada", Workflow: "triage", Session: "s1"}, store)
	off, _ := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: 4096}, nil)
	reh, _ := hybridctx.NewRehydrator(bind, nil)

	out, _ := off.Offload(ctx, hybridctx.Call{Tool: "grep", ID: "c1"}, strings.Repeat("line\n", 2000))
	fmt.Println(out.Text())

	ref := out.Diagnostics().Reference().String()
	got, _ := reh.Rehydrate(ctx, hybridctx.Request{Reference: ref, Budget: 65536, Offset: 0, Length: 4096})
	if got.Outcome() == hybridctx.Resolved {
		fmt.Println(len(got.Segment.Bytes()))
	}
}
