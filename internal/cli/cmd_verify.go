package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
)

const verifyLong = `Scrub the whole workspace (an operator command: no owner needed).

The workspace must exist: verify never creates one. Every body is re-hashed
against its name, and the records database is checked with the backend's own
integrity check where it has one (SQLite's integrity_check on a directory
workspace). verify reports:
  database            problems of the records database: a damaged file or
                      index, or a write-ahead log deleted while in use
                      (restore the database from a backup; stop every
                      process using the workspace first)
  corrupt             bodies whose bytes do not hash to their reference
  missing             references that some record points at but whose body
                      is absent (each reference once, whatever the owners)
  unsafe_permissions  workspace paths (relative to its root) that grant any
                      permission to group or others; not checked on
                      backends that cannot tell, such as mem://
  orphaned            bodies no record points at: normal, only counted
--repair deletes corrupt bodies; their records then resolve as missing until
the same content is offloaded again, which restores them. A corrupt body
that cannot be deleted (a directory planted at its name, say) is listed in
repair_failed and stays reported as corrupt.

Exit 10 whenever something corrupt, missing or unsafe or a damaged database
was found, even if it was repaired; else 0. A workspace that does not exist,
a database that cannot be opened at all (database_damaged), or a body that
cannot be read at all, is exit 1.

Text output: one line per damaged item, then a summary line. With --json, one
object in which bodies, orphaned and repaired are counts and the other keys
are lists (references for corrupt, missing and repair_failed, root-relative
paths for unsafe_permissions, {"part", "problem"} objects for database;
empty lists, never null):
  {"bodies": N, "corrupt": [REF...], "missing": [REF...],
   "unsafe_permissions": [PATH...], "database": [{"part", "problem"}...],
   "orphaned": N, "repaired": N, "repair_failed": [REF...]}
`

func (a *app) verifyCommand() *cobra.Command {
	var repair bool
	cmd := &cobra.Command{
		Use:   "verify [--repair]",
		Short: "Re-hash every body and report damage",
		Long:  verifyLong,
		Args:  cobra.NoArgs,
	}
	cmd.RunE = a.run(func(cmd *cobra.Command, _ []string) error { return a.verify(cmd, repair) })
	cmd.Flags().BoolVar(&repair, "repair", false, "delete corrupt bodies")
	return cmd
}

// verifyReport is the --json shape of verify.
type verifyReport struct {
	Bodies            int64        `json:"bodies"`
	Corrupt           []string     `json:"corrupt"`
	Missing           []string     `json:"missing"`
	UnsafePermissions []string     `json:"unsafe_permissions"`
	Database          []damageJSON `json:"database"`
	Orphaned          int64        `json:"orphaned"`
	Repaired          int          `json:"repaired"`
	RepairFailed      []string     `json:"repair_failed"`
	scrub             *workspace.ScrubReport
}

// damageJSON is one database problem in verify's output.
type damageJSON struct {
	Part    string `json:"part"`
	Problem string `json:"problem"`
}

func (a *app) verify(cmd *cobra.Command, repair bool) error {
	ctx := cmd.Context()
	store, err := a.openWorkspace(ctx, cmd)
	if err != nil {
		return err
	}
	defer store.Close()
	sr, err := store.Scrub(ctx, &workspace.ScrubOptions{Repair: repair})
	if err != nil {
		return internal("verifying the workspace", err)
	}
	rep := &verifyReport{
		Bodies: sr.Bodies, Corrupt: refStrings(sr.Corrupt), Missing: refStrings(sr.Missing),
		UnsafePermissions: sr.UnsafePermissions, Database: []damageJSON{}, Orphaned: sr.Orphaned,
		Repaired: len(sr.Repaired), RepairFailed: refStrings(sr.RepairFailed), scrub: sr,
	}
	for _, d := range sr.Database {
		rep.Database = append(rep.Database, damageJSON{Part: d.Part, Problem: d.Problem})
	}
	if err := a.printVerify(rep); err != nil {
		return err
	}
	if sr.Damaged() {
		return &exitError{code: ExitDamage}
	}
	return nil
}

// refStrings returns the references as strings (an empty list, never nil).
func refStrings(refs []artifact.Ref) []string {
	out := make([]string, 0, len(refs))
	for _, r := range refs {
		out = append(out, r.String())
	}
	return out
}

func (a *app) printVerify(rep *verifyReport) error {
	if a.json {
		return a.writeJSON(rep)
	}
	repaired := make(map[artifact.Ref]string)
	for _, r := range rep.scrub.Repaired {
		repaired[r] = " (deleted)"
	}
	for _, r := range rep.scrub.RepairFailed {
		repaired[r] = " (could not be deleted)"
	}
	var b strings.Builder
	for _, d := range rep.Database {
		b.WriteString("database " + printable(d.Part) + ": " + d.Problem + "\n")
	}
	for _, r := range rep.scrub.Corrupt {
		b.WriteString("corrupt " + r.String() + repaired[r] + "\n")
	}
	for _, s := range rep.Missing {
		b.WriteString("missing " + s + "\n")
	}
	for _, p := range rep.UnsafePermissions {
		b.WriteString("unsafe_permissions " + printable(p) + "\n")
	}
	fmt.Fprintf(&b, "%d bodies: %d corrupt, %d missing, %d unsafe permissions, %d orphaned; %d repaired",
		rep.Bodies, len(rep.Corrupt), len(rep.Missing), len(rep.UnsafePermissions), rep.Orphaned, rep.Repaired)
	if n := len(rep.RepairFailed); n > 0 {
		fmt.Fprintf(&b, ", %d could not be deleted", n)
	}
	if n := len(rep.Database); n > 0 {
		fmt.Fprintf(&b, "; the database is damaged (%d problems)", n)
	}
	if !rep.scrub.PermissionsChecked {
		b.WriteString(" (permissions not checked: the backend cannot tell)")
	}
	if !rep.scrub.DatabaseChecked {
		b.WriteString(" (database not checked: the backend has no check here)")
	}
	b.WriteByte('\n')
	return a.write([]byte(b.String()))
}
