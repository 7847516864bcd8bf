package releasetest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// EnvTestRelease turns the test on. It compiles the core, the adapter and
// the vendor SDK in a module of its own: about 100 s with a cold build
// cache, 4 s once the adapter's own tests have compiled the same packages
// (about 40 s added to .ci/run, which sets it; a developer's go test does
// not pay it).
const EnvTestRelease = "HYBRIDCTX_TEST_RELEASE"

const (
	coreModule    = "github.com/hybridctx/hybridctx"
	adapterModule = coreModule + "/adapters/anthropic"
)

// userMain is the program a user writes: the anthropic adapter answering
// one tool_use block whose result is over the threshold.
const userMain = `package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/hybridctx/hybridctx"
	hybridanthropic "github.com/hybridctx/hybridctx/adapters/anthropic"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

func main() {
	mem := memstore.New()
	bind, err := hybridctx.NewBinding(artifact.Owner{User: "u", Workflow: "w", Session: "s"}, workspace.New(mem, mem))
	if err != nil {
		panic(err)
	}
	off, err := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: 256}, nil)
	if err != nil {
		panic(err)
	}
	reh, err := hybridctx.NewRehydrator(bind, nil)
	if err != nil {
		panic(err)
	}
	h, err := hybridanthropic.New(off, reh, nil)
	if err != nil {
		panic(err)
	}
	run := func(context.Context, string, json.RawMessage) (string, error) {
		return strings.Repeat("row\n", 1000), nil
	}
	res := h.Handle(context.Background(), sdk.ToolUseBlock{ID: "toolu_1", Name: "dump", Input: json.RawMessage("{}")}, run)
	ref, _, _ := strings.Cut(res.OfToolResult.Content[0].OfText.Text, "\n")
	fmt.Println(ref)
}
`

// TestUserModuleBuildsAgainstAdapter creates a module in a temporary
// directory outside the repository that requires the anthropic adapter
// and the core at the versions the adapter's go.mod names, as a user's
// module does after go get. Neither is published from this checkout, so
// two replace directives point exactly those versions at it; every other
// module comes from the module cache or the proxy (GOPROXY as set),
// checked against the checksum database. GOWORK=off keeps the repository's
// go.work out of it, and -mod=mod lets the go command fill in go.mod and
// go.sum as go get would.
func TestUserModuleBuildsAgainstAdapter(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module outside the repository against the module proxy; skipped with -short")
	}
	if os.Getenv(EnvTestRelease) == "" {
		t.Skip("set " + EnvTestRelease + "=1 to build a module outside the repository against an adapter (.ci/run does)")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command in PATH")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	adapterDir := filepath.Join(root, "adapters", "anthropic")
	coreVersion := requiredVersion(t, goBin, filepath.Join(adapterDir, "go.mod"), coreModule)
	if coreVersion == "v0.0.0" || strings.Contains(coreVersion, "-00010101000000-") {
		t.Fatalf("adapters/anthropic requires the core at %s, a version no one can download", coreVersion)
	}

	dir := t.TempDir()
	const adapterVersion = "v0.1.0"
	goMod := "module example.com/user\n\ngo 1.26.0\n\n" +
		"require (\n" +
		"\t" + coreModule + " " + coreVersion + "\n" +
		"\t" + adapterModule + " " + adapterVersion + "\n" +
		")\n\n" +
		"replace " + coreModule + " " + coreVersion + " => " + root + "\n\n" +
		"replace " + adapterModule + " " + adapterVersion + " => " + adapterDir + "\n"
	write(t, filepath.Join(dir, "go.mod"), goMod)
	write(t, filepath.Join(dir, "main.go"), userMain)

	ctx := t.Context()
	if d, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-10*time.Second))
		defer cancel()
	}
	bin := filepath.Join(dir, "user")
	goCmd(ctx, t, goBin, dir, append(append([]string{"build"}, raceFlags...), "-o", bin, ".")...)
	out, err := exec.CommandContext(ctx, bin).CombinedOutput()
	if err != nil {
		t.Fatalf("the user's program: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); !strings.HasPrefix(got, "artifact://sha256/") || len(got) != 82 {
		t.Fatalf("the user's program printed %q, want a reference", got)
	}
	// The go command completed go.sum from the checksum database as it
	// would for a user; the core is replaced, so it needs no line for it.
	sum, err := os.ReadFile(filepath.Join(dir, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(sum, []byte("github.com/anthropics/anthropic-sdk-go/v2 ")) {
		t.Fatalf("go.sum holds no line for the vendor SDK:\n%s", sum)
	}
}

// requiredVersion reads the version of module that the go.mod at path
// requires.
func requiredVersion(t *testing.T, goBin, path, module string) string {
	t.Helper()
	out, err := exec.Command(goBin, "mod", "edit", "-json", path).Output()
	if err != nil {
		t.Fatalf("go mod edit -json %s: %v", path, err)
	}
	var mod struct {
		Require []struct{ Path, Version string }
		Replace []struct{ Old struct{ Path string } }
	}
	if err := json.Unmarshal(out, &mod); err != nil {
		t.Fatal(err)
	}
	for _, r := range mod.Replace {
		if r.Old.Path == module {
			t.Fatalf("%s replaces %s: a user of it could not build", path, module)
		}
	}
	for _, r := range mod.Require {
		if r.Path == module {
			return r.Version
		}
	}
	t.Fatalf("%s does not require %s", path, module)
	return ""
}

// goCmd runs the go command in dir as a user's shell would, outside any
// workspace, and fails the test with its output on error.
func goCmd(ctx context.Context, t *testing.T, goBin, dir string, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, goBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}
