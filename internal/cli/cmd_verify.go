package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/driver"
)

const verifyLong = `Scrub the whole workspace (an operator command: no owner needed).

Every body is re-hashed against its name. verify reports:
  corrupt             bodies whose bytes do not hash to their reference
  missing             references that some record points at but whose body
                      is absent (each reference once, whatever the owners)
  unsafe_permissions  workspace paths (relative to its root) that grant any
                      permission to group or others; not checked on
                      backends that cannot tell, such as mem://
  orphaned            bodies no record points at: normal, only counted
--repair deletes corrupt bodies; their records then resolve as missing until
the same content is offloaded again, which restores them.

Exit 10 whenever something corrupt, missing or unsafe was found, even if it
was repaired; else 0. A body that cannot be read at all is exit 1.

Text output: one line per damaged item, then a summary line. With --json, one
object in which bodies, orphaned and repaired are counts and the other keys
are lists (references for corrupt and missing, root-relative paths for
unsafe_permissions; empty lists, never null):
  {"bodies": N, "corrupt": [REF...], "missing": [REF...],
   "unsafe_permissions": [PATH...], "orphaned": N, "repaired": N}
`

func (a *app) verifyCommand() *cobra.Command {
	var repair bool
	cmd := &cobra.Command{
		Use:   "verify [--repair]",
		Short: "Re-hash every body and report damage",
		Long:  withExitCodes(verifyLong),
		Args:  cobra.NoArgs,
	}
	cmd.RunE = a.run(func(cmd *cobra.Command, _ []string) error { return a.verify(cmd, repair) })
	cmd.Flags().BoolVar(&repair, "repair", false, "delete corrupt bodies")
	return cmd
}

// verifyReport is the --json shape of verify.
type verifyReport struct {
	Bodies            int      `json:"bodies"`
	Corrupt           []string `json:"corrupt"`
	Missing           []string `json:"missing"`
	UnsafePermissions []string `json:"unsafe_permissions"`
	Orphaned          int      `json:"orphaned"`
	Repaired          int      `json:"repaired"`

	permsChecked bool
	repairedSet  map[string]bool
}

func (r *verifyReport) damaged() bool {
	return len(r.Corrupt)+len(r.Missing)+len(r.UnsafePermissions) > 0
}

func (a *app) verify(cmd *cobra.Command, repair bool) error {
	ctx := cmd.Context()
	store, err := a.openWorkspace(ctx, cmd)
	if err != nil {
		return err
	}
	defer store.Close()
	rep := &verifyReport{Corrupt: []string{}, Missing: []string{}, UnsafePermissions: []string{},
		repairedSet: map[string]bool{}}
	present, err := scanBodies(ctx, store, rep)
	if err != nil {
		return err
	}
	referenced := make(map[artifact.Ref]bool)
	for rec, err := range store.ListRecords(ctx, driver.Query{}) {
		if err != nil {
			return internal("listing records", err)
		}
		if referenced[rec.Ref] {
			continue
		}
		referenced[rec.Ref] = true
		if present[rec.Ref] {
			continue
		}
		// Not seen by the scan: absent, or committed since. Ask again.
		_, err := store.StatBody(ctx, rec.Ref)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			rep.Missing = append(rep.Missing, rec.Ref.String())
		case err != nil:
			return internal("checking a body", err)
		}
	}
	for ref := range present {
		if !referenced[ref] {
			rep.Orphaned++
		}
	}
	perms, err := store.UnsafePermissions(ctx)
	switch {
	case errors.Is(err, errors.ErrUnsupported):
	case err != nil:
		return internal("checking permissions", err)
	default:
		rep.permsChecked = true
		rep.UnsafePermissions = append(rep.UnsafePermissions, perms...)
	}
	if repair {
		for _, s := range rep.Corrupt {
			ref, _ := artifact.ParseRef(s)
			ok, err := repairBody(ctx, store, ref)
			if err != nil {
				return internal("repairing a body", err)
			}
			if ok {
				rep.Repaired++
				rep.repairedSet[s] = true
			}
		}
	}
	if err := a.printVerify(rep); err != nil {
		return err
	}
	if rep.damaged() {
		return &exitError{code: ExitDamage}
	}
	return nil
}

// scanBodies re-hashes every body, counting them in rep and listing the
// corrupt ones; it returns the set of bodies seen.
func scanBodies(ctx context.Context, store *workspace.Store, rep *verifyReport) (map[artifact.Ref]bool, error) {
	present := make(map[artifact.Ref]bool)
	for info, err := range store.ListBodies(ctx) {
		if err != nil {
			return nil, internal("listing bodies", err)
		}
		ref, err := artifact.ParseDigest(info.Key)
		if err != nil {
			continue // not a body name
		}
		err = store.VerifyBody(ctx, ref, -1)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue // deleted since it was listed
		case errors.Is(err, workspace.ErrCorrupt):
			rep.Corrupt = append(rep.Corrupt, ref.String())
		case err != nil:
			return nil, internal("verifying a body", err)
		}
		rep.Bodies++
		present[ref] = true
	}
	return present, nil
}

// repairBody deletes the corrupt body of ref, under the backend's per-body
// lock when it has one and only if it is still corrupt then, so that a body
// a concurrent offload just repaired is kept. It reports whether it deleted.
func repairBody(ctx context.Context, store *workspace.Store, ref artifact.Ref) (bool, error) {
	if l, ok := store.Bodies().(driver.Locker); ok {
		unlock, err := l.Lock(ctx, ref.Hex())
		if err != nil {
			return false, err
		}
		defer func() { _ = unlock() }()
	}
	err := store.VerifyBody(ctx, ref, -1)
	switch {
	case err == nil, errors.Is(err, fs.ErrNotExist):
		return false, nil
	case !errors.Is(err, workspace.ErrCorrupt):
		return false, err
	}
	if err := store.DeleteBody(ctx, ref); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	return true, nil
}

func (a *app) printVerify(rep *verifyReport) error {
	if a.json {
		return a.writeJSON(rep)
	}
	var b strings.Builder
	for _, s := range rep.Corrupt {
		b.WriteString("corrupt ")
		b.WriteString(s)
		if rep.repairedSet[s] {
			b.WriteString(" (deleted)")
		}
		b.WriteByte('\n')
	}
	for _, s := range rep.Missing {
		b.WriteString("missing " + s + "\n")
	}
	for _, p := range rep.UnsafePermissions {
		b.WriteString("unsafe_permissions " + printable(p) + "\n")
	}
	fmt.Fprintf(&b, "%d bodies: %d corrupt, %d missing, %d unsafe permissions, %d orphaned; %d repaired",
		rep.Bodies, len(rep.Corrupt), len(rep.Missing), len(rep.UnsafePermissions), rep.Orphaned, rep.Repaired)
	if !rep.permsChecked {
		b.WriteString(" (permissions not checked: the backend cannot tell)")
	}
	b.WriteByte('\n')
	return a.write([]byte(b.String()))
}
