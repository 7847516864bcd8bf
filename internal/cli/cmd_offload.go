package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
)

const offloadLong = `Decide one tool result: keep it inline, or store it in the workspace and
print its reference notice.

The result is read from FILE, or from standard input when FILE is "-" or
absent, and streamed: memory stays bounded whatever its size (at most
--threshold bytes are held before the decision). Standard output gets exactly
what the model would see:
  inline                        the content itself, byte for byte
  offloaded, existing_reference the three-line reference notice and "\n"
  failed, recovery_required     the categorical notice and "\n"

--threshold N is the largest result that stays inline (required; > 0, at
most 64 MiB and at most the largest storable result). --max-bytes N is the
largest result that is stored (>= 0; 0 = 1 GiB); a larger one fails (exit 8).
--tool (default "cli") and --call-id (default random) go into the record
only; each is at most %d bytes (exit 2 before anything is read).

With --json, standard output gets one object:
  {"outcome", "reason", "reference", "notice", "diagnostics"}
reference is null unless offloaded or existing_reference; notice is null
only for inline. An unreadable FILE is exit 2 before anything is decided.
`

// maxThreshold bounds --threshold: the decision holds up to threshold+1
// bytes in memory, and no conversation can take an inline result this large.
const maxThreshold = 64 << 20

type offloadFlags struct {
	threshold int64
	maxBytes  int64
	tool      string
	callID    string
	retrieval retrievalFlags
}

func (a *app) offloadCommand() *cobra.Command {
	var o offloadFlags
	cmd := &cobra.Command{
		Use:   "offload [FILE|-] --threshold N [--max-bytes N] [--tool NAME] [--call-id ID]",
		Short: "Keep a tool result inline or store it and print its reference notice",
		Long:  fmt.Sprintf(offloadLong, artifact.MaxCallFieldLen),
		Args:  cobra.MaximumNArgs(1),
	}
	cmd.RunE = a.run(func(cmd *cobra.Command, args []string) error { return a.offload(cmd, args, o) })
	f := cmd.Flags()
	f.Int64Var(&o.threshold, "threshold", 0, "largest result, in bytes, that stays inline (required, > 0)")
	f.Int64Var(&o.maxBytes, "max-bytes", 0, "largest result, in bytes, that is stored (0 = 1 GiB)")
	f.StringVar(&o.tool, "tool", "cli", "tool name recorded with the result")
	f.StringVar(&o.callID, "call-id", "", "call id recorded with the result (default: random)")
	o.retrieval.register(f, false)
	return cmd
}

// offloadJSON is the --json shape of offload.
type offloadJSON struct {
	Outcome     hybridctx.Outcome      `json:"outcome"`
	Reason      hybridctx.Reason       `json:"reason"`
	Reference   *string                `json:"reference"`
	Notice      *string                `json:"notice"`
	Diagnostics *hybridctx.Diagnostics `json:"diagnostics"`
}

func (a *app) offload(cmd *cobra.Command, args []string, o offloadFlags) error {
	if !cmd.Flags().Changed("threshold") {
		return usagef("offload needs --threshold N (> 0)")
	}
	if o.threshold <= 0 {
		return usagef("--threshold must be > 0")
	}
	if o.maxBytes < 0 {
		return usagef("--max-bytes must be >= 0")
	}
	if o.threshold > maxThreshold {
		return usagef("--threshold must be at most %d bytes (64 MiB)", int64(maxThreshold))
	}
	policy := hybridctx.Policy{InlineThreshold: o.threshold, MaxArtifactBytes: o.maxBytes}
	if err := o.retrieval.apply(&policy); err != nil {
		return err
	}
	if err := policy.Validate(); err != nil {
		return usagef("--threshold/--max-bytes: %v", err)
	}
	call := hybridctx.Call{Tool: o.tool, ID: o.callID}
	if call.ID == "" {
		call.ID = randomID()
	}
	if err := call.Validate(); err != nil {
		return usagef("--tool/--call-id: %v", err)
	}
	owner, err := a.requireOwner(cmd)
	if err != nil {
		return err
	}
	in, closeIn, err := a.openInput(cmd.Context(), args)
	if err != nil {
		return err
	}
	defer closeIn()
	ctx, binding, closeSession, err := a.hostBinding(cmd, owner)
	if err != nil {
		return err
	}
	defer closeSession()
	off, err := hybridctx.NewOffloader(binding, policy, nil)
	if err != nil {
		return usagef("%v", err)
	}
	out, err := off.OffloadReader(ctx, call, in)
	switch {
	case errors.Is(err, hybridctx.ErrSource):
		return usagef("cannot read the input: %v", err)
	case err != nil:
		return internal("offload", err)
	}
	if a.json {
		v := offloadJSON{Outcome: out.Outcome(), Reason: out.Reason(), Diagnostics: out.Diagnostics()}
		if !out.Ref.IsZero() {
			s := out.Ref.String()
			v.Reference = &s
		}
		if out.Outcome() != hybridctx.Inline {
			v.Notice = &out.Notice
		}
		if err := a.writeJSON(v); err != nil {
			return err
		}
	} else {
		text := out.Content()
		if out.Outcome() != hybridctx.Inline {
			text = append([]byte(out.Notice), '\n')
		}
		if err := a.write(text); err != nil {
			return err
		}
	}
	return outcomeExit(out.Outcome(), "")
}

// openInput opens the result to offload: FILE, or standard input for "-"
// and no argument. A file that cannot be opened for reading is a usage error.
// Anything but a regular file (standard input, a pipe, a terminal, a FIFO)
// is read so that a signal's cancellation of ctx ends a blocked open or read.
func (a *app) openInput(ctx context.Context, args []string) (io.Reader, func(), error) {
	if len(args) == 0 || args[0] == "-" {
		if f, ok := a.env.Stdin.(*os.File); ok && isRegular(f) {
			return f, func() {}, nil
		}
		c := newCancelableReader(ctx, a.env.Stdin, a.env.Signals.Sync)
		return c, c.close, nil
	}
	var f *os.File
	fi, err := os.Stat(args[0])
	switch {
	case err == nil && fi.Mode()&os.ModeNamedPipe != 0:
		f, err = openFIFO(ctx, args[0])
		if err != nil && ctx.Err() != nil {
			return nil, nil, internal("offload", err)
		}
	case err == nil:
		f, err = os.Open(args[0])
	}
	if err != nil {
		return nil, nil, usagef("cannot read the input: %v", err)
	}
	fi, err = f.Stat()
	if err == nil && fi.IsDir() {
		err = errors.New("is a directory")
	}
	if err != nil {
		_ = f.Close()
		return nil, nil, usagef("cannot read the input %s: %v", args[0], err)
	}
	if fi.Mode().IsRegular() {
		return f, func() { _ = f.Close() }, nil
	}
	c := newCancelableReader(ctx, f, a.env.Signals.Sync)
	return c, func() { _ = f.Close(); c.close() }, nil
}

// isRegular reports whether f is a regular file.
func isRegular(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode().IsRegular()
}
