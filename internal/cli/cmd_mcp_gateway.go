package cli

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/mcpproxy"
	"github.com/hybridctx/hybridctx/mcpproxy/gateway"
)

// EnvMCPConfig names the gateway's configuration file when neither
// --config, --url nor a command is given (docs/gateway.md).
const EnvMCPConfig = "HYBRIDCTX_MCP_CONFIG"

// maxConfigBytes bounds the configuration file the gateway reads.
const maxConfigBytes = 4 << 20

// gatewayWorkflow is the gateway's default workflow: one owner for all
// of its servers.
const gatewayWorkflow = "gateway"

const mcpGatewayLong = `
--config FILE (or HYBRIDCTX_MCP_CONFIG) runs a gateway in front of every MCP
server the file names, in the MCP clients' own format ({"mcpServers": {NAME:
{"command", "args", "env", "cwd"} | {"url", "headers"}}}, or VS Code's
"servers"), with one workspace, one owner and one set of read tools. Each
server's tools are named NAME__TOOL (at most 48 characters; longer names are
shortened with a hash, and said on standard error). A server's optional
"hybridctx" object sets threshold, tools, disabledTools, dereference and
prefix; the top-level "hybridctx" object sets threshold, resultThreshold,
budget, dereferenceBudget, maxToolNameLength and startTimeout. See
docs/gateway.md. "hybridctx mcp config import FILE" prints the client
configuration that routes FILE's servers through the gateway.
`

// mcpGateway runs the gateway over the configuration file path.
func (a *app) mcpGateway(cmd *cobra.Command, path string, o mcpFlags) error {
	cfg, err := a.readGatewayConfig(path)
	if err != nil {
		return err
	}
	applyGatewaySettings(cmd, &o, cfg.Settings)
	if o.http.tokensFile != "" {
		// The gateway has one owner; a listener that took the file's tokens
		// for no one would serve every client unauthenticated.
		return usagef("--tokens-file does not apply to --config: the gateway has one owner; use --token-env for its listener")
	}
	if err := o.validate(cmd, []string{"gateway"}); err != nil {
		return err
	}
	policy, err := o.policy()
	if err != nil {
		return err
	}
	owner, err := a.mcpOwner(cmd, gatewayWorkflow)
	if err != nil {
		return err
	}
	token, err := a.mcpToken(o.http)
	if err != nil {
		return err
	}
	ctx, store, rep, done, err := a.mcpHost(cmd)
	if err != nil {
		return err
	}
	defer done()
	// one Rehydrator, so one set of query slots, for every session
	binding, off, reh, err := mcpBind(owner, store, policy, o.retrieval.rehydratorOptions(nil))
	if err != nil {
		return err
	}
	gw, err := gateway.New(cfg, off, reh, &gateway.Options{Budget: o.budget, Reporter: rep, Logger: a.warnLogger(),
		UpstreamStderr: a.env.Stderr, MaxMessageBytes: o.maxMessage, DropEnv: tokenVar(o.http),
		Offloader: func(threshold int64) (*hybridctx.Offloader, error) {
			p := policy
			p.InlineThreshold = threshold
			if p.ResultThreshold != 0 && p.ResultThreshold < threshold {
				p.ResultThreshold = 0
			}
			return hybridctx.NewOffloader(binding, p, nil)
		}})
	if err != nil {
		return usagef("%v", err)
	}
	if err := gw.Start(ctx); err != nil {
		return usagef("%v", err)
	}
	defer gw.Close()
	if o.http.listen != "" {
		return a.gatewayListen(ctx, o.http, o.maxMessage, token, gw)
	}
	client := &mcpproxy.Stream{Reader: a.env.Stdin, Writer: a.env.Stdout, MaxMessageBytes: o.maxMessage}
	if err := gw.Run(ctx, client); err != nil && !errors.Is(err, io.EOF) && ctx.Err() == nil {
		return internal("mcp", err)
	}
	return nil
}

// readGatewayConfig reads and checks the file before any server starts.
func (a *app) readGatewayConfig(path string) (*gateway.Config, error) {
	data, err := readLimited(path, maxConfigBytes)
	if err != nil {
		return nil, usagef("--config %s: %v", path, err)
	}
	cfg, err := gateway.Parse(data, &gateway.ParseOptions{Expand: func(s string) (string, error) { return expandVars(s, a.env.Getenv) }})
	if err != nil {
		return nil, usagef("--config %s: %v", path, err)
	}
	// An entry that runs this gateway over this very file (a client
	// configuration pasted back into the file it imports) is left out.
	abs, _ := filepath.Abs(path)
	kept := cfg.Servers[:0]
	for _, s := range cfg.Servers {
		if isGatewayEntry(s, abs) {
			fmt.Fprintf(a.env.Stderr, "hybridctx: server %q runs this gateway over this file; left out\n", s.Name)
			continue
		}
		kept = append(kept, s)
	}
	cfg.Servers = kept
	return cfg, nil
}

func isGatewayEntry(s gateway.Server, abs string) bool {
	if filepath.Base(s.Command) != "hybridctx" {
		return false
	}
	for i, arg := range s.Args {
		if arg == "--config" && i+1 < len(s.Args) {
			if p, err := filepath.Abs(s.Args[i+1]); err == nil && p == abs {
				return true
			}
		}
	}
	return false
}

func readLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, errors.New("cannot open the file")
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, errors.New("cannot read the file")
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("the file is over %d bytes", limit)
	}
	return data, nil
}

// applyGatewaySettings takes the file's top-level settings for every flag
// the command line did not set.
func applyGatewaySettings(cmd *cobra.Command, o *mcpFlags, st gateway.Settings) {
	set := func(flag string, v int64, dst *int64) {
		if v != 0 && !cmd.Flags().Changed(flag) {
			*dst = v
		}
	}
	set("threshold", st.Threshold, &o.threshold)
	set("result-threshold", st.ResultThreshold, &o.resultThreshold)
	set("budget", st.Budget, &o.budget)
}

// gatewayListen serves the gateway over Streamable HTTP: every client
// session shares the one set of upstreams (docs/gateway.md).
func (a *app) gatewayListen(ctx context.Context, f mcpHTTPFlags, maxBody int, token string, gw *gateway.Gateway) error {
	h := http.NewCrossOriginProtection().Handler(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return gw.Server() },
		&mcp.StreamableHTTPOptions{SessionTimeout: f.idleTimeout, MaxRequestBodyBytes: int64(maxBody)}))
	handler := h
	if token != "" {
		want := []byte("Bearer " + token)
		handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			h.ServeHTTP(w, r)
		})
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return usagef("--listen %s: cannot listen there", f.listen)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", handler)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: listenIdleTimeout, ErrorLog: log.New(io.Discard, "", 0)}
	fmt.Fprintf(a.env.Stderr, "hybridctx: serving MCP at http://%s/mcp\n", ln.Addr())
	return serveUntilDone(ctx, "mcp", srv, ln)
}

// mcpConfigImport prints the client configuration that routes every
// server of path through one gateway entry named hx. It never writes.
func (a *app) mcpConfigImport(args []string) error {
	if len(args) != 2 || args[0] != "import" {
		return usagef(`usage: hybridctx mcp config import FILE`)
	}
	path := args[1]
	data, err := readLimited(path, maxConfigBytes)
	if err != nil {
		return usagef("config import %s: %v", path, err)
	}
	// Checked as the gateway will check it, but ${VAR} is kept as written:
	// the values are expanded when the gateway starts.
	cfg, err := gateway.Parse(data, nil)
	if err != nil {
		return usagef("config import %s: %v", path, err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return usagef("config import %s: cannot resolve the path", path)
	}
	out := map[string]any{"mcpServers": map[string]any{"hx": map[string]any{
		"command": "hybridctx", "args": []string{"mcp", "--config", abs}}}}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return internal("mcp", err)
	}
	fmt.Fprintln(a.env.Stdout, string(b))
	var names []string
	for _, s := range cfg.Servers {
		if !isGatewayEntry(s, abs) {
			names = append(names, s.Name)
		}
	}
	fmt.Fprintf(a.env.Stderr, "hybridctx: the entry hx runs %d server(s) from %s: %s.\n"+
		"Replace those servers in your client's configuration with hx; the gateway reads them from %s at each start.\n"+
		"If that file is the client's own configuration, copy it elsewhere first and import the copy.\n",
		len(names), abs, strings.Join(names, ", "), abs)
	return nil
}
