package cli

import (
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
)

const lsLong = `List the owner's own records, least recently used first: reference, size
(bytes), kind (text, json or binary), created_at, last_used_at (RFC 3339 UTC
with nanoseconds), tool and call_id. Never a body, never another owner's
record. No progress event is reported.

Text output is aligned columns under a header; with --json, one object per
record and line:
  {"reference", "size", "kind", "created_at", "last_used_at", "tool", "call_id"}
`

func (a *app) lsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List the owner's records",
		Long:  lsLong,
		Args:  cobra.NoArgs,
	}
	cmd.RunE = a.run(a.ls)
	return cmd
}

// recordJSON is the --json shape of one record (ls and stat).
type recordJSON struct {
	Reference  string `json:"reference"`
	Size       int64  `json:"size"`
	Kind       string `json:"kind"`
	CreatedAt  string `json:"created_at"`
	LastUsedAt string `json:"last_used_at"`
	Tool       string `json:"tool"`
	CallID     string `json:"call_id"`
}

func toRecordJSON(r artifact.Record) recordJSON {
	return recordJSON{
		Reference:  r.Ref.String(),
		Size:       r.Size,
		Kind:       r.Kind,
		CreatedAt:  r.CreatedAt.UTC().Format(hybridctx.TimeLayout),
		LastUsedAt: r.LastUsedAt.UTC().Format(hybridctx.TimeLayout),
		Tool:       r.Tool,
		CallID:     r.CallID,
	}
}

// fields returns the record's values in column order, made printable.
func (r recordJSON) fields() []string {
	return []string{r.Reference, strconv.FormatInt(r.Size, 10), printable(r.Kind),
		r.CreatedAt, r.LastUsedAt, printable(r.Tool), printable(r.CallID)}
}

// recordKeys are the column headers and stat keys, in order.
var recordKeys = []string{"reference", "size", "kind", "created_at", "last_used_at", "tool", "call_id"}

func (a *app) ls(cmd *cobra.Command, _ []string) error {
	owner, err := a.requireOwner(cmd)
	if err != nil {
		return err
	}
	ctx, store, closeSession, err := a.hostSession(cmd, false)
	if err != nil {
		return err
	}
	defer closeSession()
	var tw *tabwriter.Writer
	if !a.json {
		tw = tabwriter.NewWriter(a.env.Stdout, 0, 0, 2, ' ', 0)
		_, _ = tw.Write([]byte(strings.Join(recordKeys, "\t") + "\n"))
	}
	for rec, err := range store.ListRecords(ctx, workspace.Query{Owner: &owner}) {
		if err != nil {
			return internal("listing records", err)
		}
		r := toRecordJSON(rec)
		if a.json {
			if err := a.writeJSON(r); err != nil {
				return err
			}
			continue
		}
		if _, err := tw.Write([]byte(strings.Join(r.fields(), "\t") + "\n")); err != nil {
			return internal("writing the output", err)
		}
	}
	if tw != nil {
		if err := tw.Flush(); err != nil {
			return internal("writing the output", err)
		}
	}
	return nil
}

// printable makes a recorded value safe for one text column: control
// characters become "?", and an empty value is "-".
func printable(s string) string {
	if s == "" {
		return "-"
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return '?'
		}
		return r
	}, s)
}
