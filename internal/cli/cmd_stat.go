package cli

import (
	"errors"
	"io/fs"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hybridctx/hybridctx/artifact"
)

const statLong = `Show the owner's record of one reference: reference, size, kind,
created_at, last_used_at, tool and call_id, as "key: value" lines, or one
JSON object with --json. Never the body. No progress event is reported.

A malformed REF is exit 3. A reference this owner has no record of is exit 4
(unauthorized), whether or not another owner stored the same content.
`

func (a *app) statCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "stat REF",
		Short: "Show the owner's record of one reference",
		Long:  statLong,
		Args:  cobra.ExactArgs(1),
	}
	cmd.RunE = a.run(a.stat)
	return cmd
}

func (a *app) stat(cmd *cobra.Command, args []string) error {
	owner, err := a.requireOwner(cmd)
	if err != nil {
		return err
	}
	ref, err := artifact.ParseRef(args[0])
	if err != nil {
		return &exitError{code: ExitInvalidReference,
			msg: "invalid_reference (malformed_reference): " + detailInvalidReference}
	}
	ctx, store, closeSession, err := a.hostSession(cmd, false)
	if err != nil {
		return err
	}
	defer closeSession()
	rec, err := store.GetRecord(ctx, owner, ref)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &exitError{code: ExitUnauthorized,
			msg: "unauthorized (owner_mismatch): " + detailUnauthorized}
	case err != nil:
		return internal("reading the record", err)
	}
	r := toRecordJSON(rec)
	if a.json {
		return a.writeJSON(r)
	}
	var b strings.Builder
	for i, v := range r.fields() {
		b.WriteString(recordKeys[i])
		b.WriteString(": ")
		b.WriteString(v)
		b.WriteByte('\n')
	}
	return a.write([]byte(b.String()))
}
