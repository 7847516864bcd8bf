package bpe_test

import (
	"context"
	"testing"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

type env struct {
	off *hybridctx.Offloader
	ctx context.Context
}

func newEnv(t testing.TB, p hybridctx.Policy) env {
	t.Helper()
	mem := memstore.New()
	b, err := hybridctx.NewBinding(artifact.Owner{User: "u", Workflow: "w", Session: "s"}, workspace.New(mem, mem))
	if err != nil {
		t.Fatal(err)
	}
	off, err := hybridctx.NewOffloader(b, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	return env{off: off, ctx: context.Background()}
}
