package cli

import (
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestCLIImportsNoDriver checks that the command line's own files import no
// workspace driver: its errors are mapped by the drivers' portable
// categories alone (errors.go).
func TestCLIImportsNoDriver(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	drivers := []string{"memstore", "dirstore", "pgstore", "blobstore"}
	checked := 0
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			for _, d := range drivers {
				if strings.HasPrefix(path, "github.com/hybridctx/hybridctx/workspace/"+d) {
					t.Errorf("%s imports the driver %s", name, path)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no source file checked")
	}
}
