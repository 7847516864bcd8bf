package readtools_test

import (
	"errors"
	"testing"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/readtools"
)

// TestNames: the names come from a Policy (defaults applied), an override
// replaces only what it sets, Has knows exactly the three, and a Set is
// named as NamesOf says.
func TestNames(t *testing.T) {
	def := readtools.NamesOf(hybridctx.Policy{})
	if def != (readtools.Names{Read: hybridctx.DefaultReadToolName, Search: hybridctx.DefaultSearchToolName, Query: hybridctx.DefaultQueryToolName}) {
		t.Fatalf("defaults %+v", def)
	}
	p := hybridctx.Policy{InlineThreshold: 1, ReadToolName: "fetch", SearchToolName: "grep"}
	got := readtools.NamesOf(readtools.Names{Search: "find", Query: "jq"}.Over(p))
	if got != (readtools.Names{Read: "fetch", Search: "find", Query: "jq"}) {
		t.Fatalf("over %+v", got)
	}
	if readtools.NamesOf(readtools.Names{}.Over(p)) != readtools.NamesOf(p) {
		t.Fatal("an empty override changed the names")
	}
	for name, want := range map[string]bool{"fetch": true, "find": true, "jq": true, "grep": false,
		hybridctx.DefaultReadToolName: false, "": false} {
		if got.Has(name) != want {
			t.Errorf("Has(%q) = %v", name, !want)
		}
	}
	if (readtools.Names{}).Has("") {
		t.Error("the empty name is a read tool")
	}
	tools, err := readtools.Describe(&readtools.Options{Names: readtools.Names{Read: "fetch", Search: "find", Query: "jq"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools {
		if !got.Has(tl.Name) {
			t.Errorf("tool %q not among %+v", tl.Name, got)
		}
	}
	for _, bad := range []readtools.Names{{Read: "a b"}, {Search: "x/y"}, {Query: hybridctx.DefaultReadToolName}} {
		if _, err := readtools.Describe(&readtools.Options{Names: bad}); !errors.Is(err, hybridctx.ErrInvalidPolicy) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
}
