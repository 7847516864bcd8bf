package adaptkit

import (
	"context"
	"encoding/json"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/readtools"
)

// NewReads returns the read tools over reh (package readtools, the one
// definition of their schemas and texts), named by names over the
// defaults, with cap budget (0: the default). A handler passes the names
// its Offloader's policy gives them: readtools.NamesOf(override.Over(off.Policy())).
func NewReads(reh *hybridctx.Rehydrator, names readtools.Names, budget int64) (*readtools.Set, error) {
	return readtools.New(reh, &readtools.Options{BudgetCap: budget, Names: names})
}

// Read answers one read tool call as the text the model sees: the exact
// answer (and its continuation note), or the categorical refusal with
// IsError. A cancelled context or an unknown name is the categorical
// failure. res is the call's result for the host (nil without one).
func Read(ctx context.Context, set *readtools.Set, name string, args json.RawMessage) (r Result, res *readtools.Result) {
	res, err := set.Call(ctx, name, args)
	if err != nil {
		return Failed(), nil
	}
	return Result{Text: res.ModelText(), IsError: res.IsError}, res
}
