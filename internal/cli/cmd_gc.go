package cli

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hybridctx/hybridctx/workspace"
)

const gcLong = `Apply the retention policy to the whole workspace (an operator command: no
owner needed).

gc first deletes the records last used longer than --max-age ago (a record is
used when it is created and whenever its owner offloads the same content
again; the time is refreshed at most hourly), then the bodies that no record
references and that are older than --grace (default 24h). A reference whose record was deleted then
rehydrates as unauthorized; one whose record is kept never loses its body.

It is safe to run while offloads go on, in this or other processes: each body
is deleted under its lock after checking again that no record references it,
and an offload that reuses a stored body holds the same lock until its record
is committed; a body an offload has just written is younger than the grace
period.

Durations are Go durations (90m, 36h, 1h30m) plus d for days (30d, 1d12h).
--max-age is required and at least 1h (records are refreshed at most hourly);
--grace is at least 1m. --dry-run deletes nothing and reports what a real run
would delete now.

Output: one summary line; with --json one object of counts:
  {"dry_run": B, "records_deleted": N, "bodies_scanned": N,
   "bodies_deleted": N, "bytes_deleted": N, "bodies_referenced": N,
   "bodies_recent": N}
(bodies_referenced counts the bodies a record keeps, bodies_recent those
nothing but their age within --grace keeps).
`

func (a *app) gcCommand() *cobra.Command {
	var maxAge, grace string
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "gc --max-age D [--grace D] [--dry-run]",
		Short: "Delete records unused for too long, then unreferenced old bodies",
		Long:  gcLong,
		Args:  cobra.NoArgs,
	}
	cmd.RunE = a.run(func(cmd *cobra.Command, _ []string) error { return a.gc(cmd, maxAge, grace, dryRun) })
	cmd.Flags().StringVar(&maxAge, "max-age", "", "delete records unused for longer than this (required; e.g. 30d)")
	cmd.Flags().StringVar(&grace, "grace", "24h", "keep unreferenced bodies younger than this")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "report what would be deleted, delete nothing")
	return cmd
}

func (a *app) gc(cmd *cobra.Command, maxAge, grace string, dryRun bool) error {
	if !cmd.Flags().Changed("max-age") {
		return usagef("gc needs --max-age (for example --max-age 30d)")
	}
	opts := &workspace.GCOptions{DryRun: dryRun}
	var err error
	if opts.MaxAge, err = parseDuration(maxAge); err != nil {
		return usagef("--max-age: %v", err)
	}
	if opts.Grace, err = parseDuration(grace); err != nil {
		return usagef("--grace: %v", err)
	}
	if opts.MaxAge < workspace.MinMaxAge {
		return usagef("--max-age must be at least %v", workspace.MinMaxAge)
	}
	if opts.Grace < workspace.MinGrace {
		return usagef("--grace must be at least %v", workspace.MinGrace)
	}
	ctx := cmd.Context()
	store, err := a.openWorkspace(ctx, cmd)
	if err != nil {
		return err
	}
	defer store.Close()
	rep, err := store.CollectGarbage(ctx, opts)
	var damaged *workspace.DamageError
	switch {
	case errors.Is(err, errors.ErrUnsupported):
		return &exitError{code: ExitInternal, err: err, category: &catUnsupported,
			msg: "cannot collect garbage: this workspace has no per-body lock"}
	case errors.As(err, &damaged):
		return &exitError{code: ExitInternal, err: err, category: &catDamaged,
			msg: "refusing to collect garbage: " + damaged.Error() + "; run hybridctx verify, and restore the database from a backup"}
	case err != nil:
		return internal("collecting garbage", err)
	}
	if a.json {
		return a.writeJSON(rep)
	}
	verb := "deleted"
	if rep.DryRun {
		verb = "would delete"
	}
	return a.write(fmt.Appendf(nil, "%s %d records and %d bodies (%d bytes); kept %d referenced and %d recent of %d bodies\n",
		verb, rep.RecordsDeleted, rep.BodiesDeleted, rep.BytesDeleted, rep.BodiesReferenced, rep.BodiesRecent, rep.BodiesScanned))
}

// parseDuration parses a non-negative Go duration that may also use d for
// days (24h), alone or among other units: 30d, 1.5d, 1d12h, 36h.
func parseDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, errors.New("empty duration")
	}
	var total time.Duration
	var rest strings.Builder
	for i := 0; i < len(s); {
		j := i
		for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.') {
			j++
		}
		if j == i {
			return 0, fmt.Errorf("invalid duration %q: expected a number", s)
		}
		k := j
		for k < len(s) && !(s[k] >= '0' && s[k] <= '9' || s[k] == '.') {
			k++
		}
		if s[j:k] != "d" {
			rest.WriteString(s[i:k])
			i = k
			continue
		}
		days, err := strconv.ParseFloat(s[i:j], 64)
		if err != nil {
			return 0, fmt.Errorf("invalid duration %q", s)
		}
		d := days * float64(24*time.Hour)
		if d >= math.MaxInt64 || math.MaxInt64-total < time.Duration(d) {
			return 0, fmt.Errorf("duration %q is too long", s)
		}
		total += time.Duration(d)
		i = k
	}
	if rest.Len() > 0 {
		d, err := time.ParseDuration(rest.String())
		if err != nil {
			return 0, fmt.Errorf("invalid duration %q", s)
		}
		if math.MaxInt64-total < d {
			return 0, fmt.Errorf("duration %q is too long", s)
		}
		total += d
	}
	return total, nil
}
