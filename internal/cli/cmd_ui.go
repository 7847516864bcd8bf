package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os/exec"
	"time"

	"github.com/spf13/cobra"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/internal/httpguard"
	"github.com/hybridctx/hybridctx/internal/ui"
)

const uiLong = `Serve a local, read-only web page of the owner's workspace and of the runs
in the events file (docs/ui.md): each run's decisions, agents, history mask
steps, the bytes kept out of the context and the run summary; the owner's
artifacts, sortable and filterable; an artifact opened with the read tools
(lines, search, jq). Every read the page makes is a rehydration with its
owner, digest and budget checks, and its event is appended to the events
file. The page and its JSON API under /api/ answer GET only.

--events FILE names the events file (the one other commands append to);
"-" is refused. Without it the page shows artifacts only.

The listener is on loopback by default (--listen 127.0.0.1:0 picks a port);
its URL is printed on standard output. Host and Origin are checked. Any
other address needs --token-env NAME, the environment variable holding the
bearer token every /api/ request must carry; open the page as URL#token=TOKEN.
--open starts a browser (xdg-open) where one exists; without one the command
goes on. It serves until interrupted (SIGINT or SIGTERM end it with code 0).
`

type uiFlags struct {
	listen   string
	tokenEnv string
	open     bool
	budget   int64
}

func (a *app) uiCommand() *cobra.Command {
	var f uiFlags
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Serve a local, read-only web page of the workspace and its runs",
		Long:  uiLong,
		Args:  cobra.NoArgs,
	}
	fs := cmd.Flags()
	fs.StringVar(&f.listen, "listen", "127.0.0.1:0", "address to serve the page at")
	fs.StringVar(&f.tokenEnv, "token-env", "", "environment variable holding the bearer token (needed off loopback)")
	fs.BoolVar(&f.open, "open", false, "open the page in a browser (xdg-open) where one exists")
	fs.Int64Var(&f.budget, "budget", ui.DefaultMaxBudget, "largest byte budget of one read the page makes")
	cmd.RunE = a.run(func(cmd *cobra.Command, _ []string) error { return a.ui(cmd, f) })
	return cmd
}

func (a *app) ui(cmd *cobra.Command, f uiFlags) error {
	if cmd.Flags().Changed("events") && a.events == "-" {
		return usagef("--events - is refused for ui: name the events file")
	}
	if f.budget <= 0 {
		return usagef("--budget must be > 0")
	}
	token := ""
	if f.tokenEnv != "" {
		token = a.env.Getenv(f.tokenEnv)
		switch {
		case token == "":
			return usagef("--token-env %s: the variable is unset or empty", f.tokenEnv)
		case len(token) < ui.MinTokenBytes:
			return usagef("--token-env %s: the token must be at least %d bytes (for example: openssl rand -hex 32)", f.tokenEnv, ui.MinTokenBytes)
		}
	}
	if !httpguard.IsLoopbackAddress(f.listen) && token == "" {
		return usagef("--listen off loopback needs a bearer token: --token-env NAME")
	}
	owner, err := a.requireOwner(cmd)
	if err != nil {
		return err
	}
	// The events file's reporter appends the page's reads; its run id is
	// this process's.
	r, _, releaseEvents, err := a.eventsReporter(cmd)
	if err != nil {
		return err
	}
	defer releaseEvents()
	store, err := a.openWorkspace(cmd.Context(), cmd)
	if err != nil {
		return err
	}
	defer store.Close()
	binding, err := hybridctx.NewBinding(owner, store)
	if err != nil {
		return usagef("%v", err)
	}
	reh, err := hybridctx.NewRehydrator(binding, nil)
	if err != nil {
		return internal("ui", err)
	}
	o := ui.Options{Store: store, Owner: owner, Rehydrator: reh, Token: token, MaxBudget: f.budget}
	if cmd.Flags().Changed("events") {
		o.EventsPath = a.events
	}
	if r != nil {
		o.Reporter = r
	}
	h, err := ui.New(o)
	if err != nil {
		return usagef("%v", err)
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return usagef("--listen %s: cannot listen there", f.listen)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: listenIdleTimeout,
		ErrorLog: log.New(io.Discard, "", 0)}
	url := "http://" + ln.Addr().String() + "/"
	if _, err := fmt.Fprintln(a.env.Stdout, url); err != nil {
		_ = ln.Close()
		return internal("writing the output", err)
	}
	if f.open {
		openBrowser(url)
	}
	return serveUntilDone(cmd.Context(), "ui", srv, ln)
}

// serveUntilDone serves until ctx ends, then shuts down within a second;
// command names the command in an error.
func serveUntilDone(ctx context.Context, command string, srv *http.Server, ln net.Listener) error {
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-served:
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	if srv.Shutdown(sctx) != nil {
		_ = srv.Close()
	}
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return internal(command, serveErr)
	}
	return nil
}

// openBrowser starts xdg-open where it exists; it never fails the command.
func openBrowser(url string) {
	p, err := exec.LookPath("xdg-open")
	if err != nil {
		return
	}
	c := exec.Command(p, url)
	if c.Start() == nil {
		go func() { _ = c.Wait() }()
	}
}
