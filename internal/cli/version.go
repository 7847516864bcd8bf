package cli

import (
	"runtime/debug"
	"strconv"

	"github.com/spf13/cobra"
)

// versionInfo is what a build knows about itself, from the build
// information the Go toolchain embeds (runtime/debug.ReadBuildInfo).
type versionInfo struct {
	// Version is the main module's version: a release tag or a
	// pseudo-version when the toolchain could stamp one, else "devel".
	Version string `json:"version"`
	// Revision is the VCS revision built, "unknown" when it was not
	// stamped (a build with -buildvcs=false or outside a checkout).
	Revision string `json:"revision"`
	// Modified reports uncommitted changes in the checkout built; null
	// when not known.
	Modified *bool `json:"modified"`
	// Go is the toolchain's version.
	Go string `json:"go"`
}

const versionLong = `Print the version of this build: the module version ("devel" for a build
from a checkout the toolchain did not stamp) and the VCS revision
("unknown" when the build recorded none, as with -buildvcs=false), then
"modified" when the checkout had uncommitted changes, and the Go version.
"hybridctx --version" prints the same. With --json, one object:
  {"version", "revision", "modified", "go"}
`

func (a *app) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version and VCS revision of this build",
		Long:  versionLong,
		Args:  cobra.NoArgs,
		RunE:  a.run(func(*cobra.Command, []string) error { return a.printVersion() }),
	}
}

// printVersion prints this build's version.
func (a *app) printVersion() error {
	v := readVersion(debug.ReadBuildInfo)
	if a.json {
		return a.writeJSON(v)
	}
	return a.write([]byte(v.String() + "\n"))
}

// String renders v as one line: hybridctx VERSION (revision REV[, modified], GO).
func (v versionInfo) String() string {
	s := "hybridctx " + v.Version + " (revision " + v.Revision
	if v.Modified != nil && *v.Modified {
		s += ", modified"
	}
	return s + ", " + v.Go + ")"
}

// readVersion extracts versionInfo from the build information read
// returns, with "devel", "unknown" and null for what it does not say.
func readVersion(read func() (*debug.BuildInfo, bool)) versionInfo {
	v := versionInfo{Version: "devel", Revision: "unknown", Go: "unknown"}
	bi, ok := read()
	if !ok || bi == nil {
		return v
	}
	if bi.GoVersion != "" {
		v.Go = bi.GoVersion
	}
	if m := bi.Main.Version; m != "" && m != "(devel)" {
		v.Version = m
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			if s.Value != "" {
				v.Revision = s.Value
			}
		case "vcs.modified":
			if b, err := strconv.ParseBool(s.Value); err == nil {
				v.Modified = &b
			}
		}
	}
	return v
}
