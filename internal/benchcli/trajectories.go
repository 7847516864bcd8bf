package benchcli

import (
	"errors"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hybridctx/hybridctx/internal/cli"
	"github.com/hybridctx/hybridctx/internal/workload"
)

// benchTrajectories runs bench --history --trajectories: the recorded runs
// of every file in list, in order.
func (a *app) benchTrajectories(cmd *cobra.Command, h historyFlags, opts workload.HistoryOptions) error {
	list := h.trajs
	var files []string
	for _, name := range strings.Split(list, ",") {
		if name == "" || name == "-" {
			return cli.Usagef("--trajectories takes file names separated by commas (not standard input)")
		}
		files = append(files, name)
	}
	src := &trajectoryFiles{names: files}
	defer src.close()
	ctx, store, info, release, err := a.benchWorkspace(cmd)
	if err != nil {
		return err
	}
	defer release()
	ctx, done, err := a.WithReporter(ctx, cmd)
	if err != nil {
		return err
	}
	defer done()
	rep, err := workload.RunTrajectories(ctx, src, store, opts)
	var le *workload.LineError
	switch {
	case errors.As(err, &le) || errors.Is(err, workload.ErrSyntax):
		return cli.Usagef("--trajectories: %s: %v", src.current(), err)
	case errors.Is(err, errOpenTrajectories):
		return cli.Usagef("--trajectories: %v", err)
	case errors.Is(err, workload.ErrEmptySession):
		return cli.Usagef("--trajectories: no recorded run in %s", list)
	case err != nil:
		return cli.Internal("bench --history --trajectories", err)
	}
	if h.markdown {
		err = workload.WriteRealRunsMarkdown(a.Stdout(), rep)
	} else {
		err = a.WriteJSON(benchHistoryJSON{Workload: benchWorkload{Source: "trajectories"}, Workspace: info.out, RealRuns: rep})
	}
	if err != nil {
		return cli.Internal("writing the output", err)
	}
	for _, s := range rep.Strategies {
		if err := readBackCheck(s.Name, s.Lossless, s.Masked, s.ReadBackExact); err != nil {
			return err
		}
	}
	return nil
}

var errOpenTrajectories = errors.New("cannot read the file")

// trajectoryFiles reads the trajectories of several files one after the
// other, each opened when the one before it ends.
type trajectoryFiles struct {
	names []string
	i     int
	file  *os.File
	r     *workload.TrajectoryReader
}

func (t *trajectoryFiles) current() string {
	if t.i < len(t.names) {
		return t.names[t.i]
	}
	return t.names[len(t.names)-1]
}

// Next implements workload.TrajectorySource.
func (t *trajectoryFiles) Next() (*workload.Trajectory, error) {
	for t.i < len(t.names) {
		if t.r == nil {
			f, err := os.Open(t.names[t.i])
			if err != nil {
				return nil, &pathError{name: t.names[t.i], err: err}
			}
			r, err := workload.NewTrajectoryReader(f, nil)
			if err != nil {
				_ = f.Close()
				return nil, err
			}
			t.file, t.r = f, r
		}
		tr, err := t.r.Next()
		if err != io.EOF {
			return tr, err
		}
		t.close()
		t.i++
	}
	return nil, io.EOF
}

func (t *trajectoryFiles) close() {
	if t.file != nil {
		_ = t.file.Close()
		t.file, t.r = nil, nil
	}
}

// pathError names a file that cannot be opened, with the system's reason
// but not the path twice.
type pathError struct {
	name string
	err  error
}

func (e *pathError) Error() string {
	var pe *os.PathError
	if errors.As(e.err, &pe) {
		return e.name + ": " + errOpenTrajectories.Error() + ": " + pe.Err.Error()
	}
	return e.name + ": " + errOpenTrajectories.Error()
}

func (e *pathError) Unwrap() error { return errOpenTrajectories }
