package cli

import (
	"encoding/json"
	"os/exec"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestReadVersion(t *testing.T) {
	yes := true
	cases := []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"no build information", nil, "hybridctx devel (revision unknown, unknown)"},
		{"a checkout built with -buildvcs=false", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}},
			"hybridctx devel (revision unknown, go1.26.8)"},
		{"stamped", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.4.0"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123abc"}, {Key: "vcs.modified", Value: "true"}}},
			"hybridctx v0.4.0 (revision 0123abc, modified, go1.26.8)"},
	}
	for _, c := range cases {
		v := readVersion(func() (*debug.BuildInfo, bool) { return c.bi, c.bi != nil })
		if got := v.String(); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
		if c.name == "stamped" && (v.Modified == nil || *v.Modified != yes) {
			t.Errorf("%s: modified %v", c.name, v.Modified)
		}
	}
}

// TestVersion: --version and the version command print the same line, and
// --json one object, with what the binary's own build information says
// (as "go version -m" reads it).
func TestVersion(t *testing.T) {
	flag, cmd := run(t, "--version"), run(t, "version")
	wantCode(t, flag, ExitOK)
	if flag.stdout != cmd.stdout || !strings.HasPrefix(flag.stdout, "hybridctx ") || strings.Count(flag.stdout, "\n") != 1 {
		t.Fatalf("--version %q, version %q", flag.stdout, cmd.stdout)
	}
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	out, err := exec.Command("go", "version", "-m", binPath).Output()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"version": "devel", "revision": "unknown", "modified": nil}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 3 && f[0] == "mod" && f[2] != "(devel)":
			want["version"] = f[2]
		case len(f) == 2 && f[0] == "build" && strings.HasPrefix(f[1], "vcs.revision="):
			want["revision"] = strings.TrimPrefix(f[1], "vcs.revision=")
		case len(f) == 2 && f[0] == "build" && strings.HasPrefix(f[1], "vcs.modified="):
			want["modified"] = f[1] == "vcs.modified=true"
		}
	}
	for _, args := range [][]string{{"--json", "--version"}, {"version", "--json"}} {
		r := runBinary(t, t.TempDir(), nil, nil, args...)
		var got map[string]any
		if r.code != 0 || json.Unmarshal(r.stdout, &got) != nil {
			t.Fatalf("%v: exit %d, %q", args, r.code, r.stdout)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%v: %s = %v, want %v (go version -m:\n%s)", args, k, got[k], v, out)
			}
		}
	}
	wantCode(t, run(t, "version", "extra"), ExitUsage)
}

var helpCode = regexp.MustCompile(`(?m)^  ?\s?(\d+)  \S`)

// helpCodes returns the exit codes a help text's table lists, in order.
func helpCodes(t *testing.T, help string) []int {
	t.Helper()
	_, table, ok := strings.Cut(help, "Exit codes")
	if !ok {
		t.Fatalf("no exit-code table in:\n%s", help)
	}
	var codes []int
	for _, m := range helpCode.FindAllStringSubmatch(table, -1) {
		n, _ := strconv.Atoi(m[1])
		codes = append(codes, n)
	}
	return codes
}

// TestHelpExitCodes: the root help has the whole table, once; each
// command's help lists exactly the codes it can return.
func TestHelpExitCodes(t *testing.T) {
	root := run(t, "--help")
	var all []int
	for _, e := range exitTable {
		all = append(all, e.code)
	}
	if got := helpCodes(t, root.stdout); !slices.Equal(got, all) || strings.Count(root.stdout, "Exit codes") != 1 {
		t.Fatalf("root help lists %v, want %v once", got, all)
	}
	if bare := run(t); bare.code != ExitOK || bare.stdout != root.stdout {
		t.Errorf("hybridctx without arguments: exit %d", bare.code)
	}
	a := &app{}
	for _, c := range a.rootCommand().Commands() {
		if c.Name() == "help" {
			continue
		}
		want, ok := commandExits[c.Name()]
		if !ok {
			t.Errorf("%s: no entry in commandExits", c.Name())
			continue
		}
		r := run(t, c.Name(), "--help")
		if got := helpCodes(t, r.stdout); !slices.Equal(got, want) {
			t.Errorf("%s --help lists %v, want %v", c.Name(), got, want)
		}
	}
	// Commands that cannot reach a code do not list it.
	for name, absent := range map[string][]int{"offload": {3, 4, 6, 10, 11}, "search": {8, 9, 10, 11}, "ls": {3, 4, 5, 6, 7}} {
		for _, c := range absent {
			if slices.Contains(commandExits[name], c) {
				t.Errorf("%s lists %d", name, c)
			}
		}
	}
}
