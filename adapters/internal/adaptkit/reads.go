package adaptkit

import (
	"context"
	"encoding/json"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/readtools"
)

// NewReads returns the read tools over reh (package readtools, the one
// definition of their names, schemas and texts), with names and cap
// budget (0: the default).
func NewReads(reh *hybridctx.Rehydrator, names readtools.Names, budget int64) (*readtools.Set, error) {
	return readtools.New(reh, &readtools.Options{BudgetCap: budget, Names: names})
}

// NamesFor returns the read tool names off's notices point to, each
// replaced by the one in override when that one is set.
func NamesFor(off *hybridctx.Offloader, override readtools.Names) readtools.Names {
	n := readtools.NamesOf(off.Policy())
	if override.Read != "" {
		n.Read = override.Read
	}
	if override.Search != "" {
		n.Search = override.Search
	}
	if override.Query != "" {
		n.Query = override.Query
	}
	return n
}

// IsReadTool returns whether a tool is one of the read tools named by
// NamesFor(off, override): their answers are never masked.
func IsReadTool(off *hybridctx.Offloader, override readtools.Names) func(tool string) bool {
	n := NamesFor(off, override)
	set := map[string]bool{}
	for _, name := range [][2]string{{n.Read, readtools.DefaultReadName}, {n.Search, readtools.DefaultSearchName}, {n.Query, readtools.DefaultQueryName}} {
		if name[0] == "" {
			name[0] = name[1]
		}
		set[name[0]] = true
	}
	return func(tool string) bool { return set[tool] }
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
