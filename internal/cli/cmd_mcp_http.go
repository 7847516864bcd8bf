package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/mcpproxy"
)

// listenIdleTimeout closes a --listen connection idle between requests.
const listenIdleTimeout = 2 * time.Minute

// mcpHTTPFlags are the mcp command's HTTP flags (docs/mcp-proxy.md, "HTTP on both sides").
type mcpHTTPFlags struct {
	listen, url, tokenEnv string
	headers, allowOrigins []string
	maxSessions           int
	idleTimeout           time.Duration
}

func (f *mcpHTTPFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.listen, "listen", "", "serve MCP clients over Streamable HTTP at http://ADDR/mcp instead of standard input and output")
	fs.StringVar(&f.url, "url", "", "connect to an upstream MCP server over HTTP (Streamable HTTP, else HTTP+SSE) instead of starting CMD")
	fs.StringArrayVar(&f.headers, "header", nil, `add a request header to the upstream, "Name: value" (repeatable; ${VAR} is expanded from the environment)`)
	fs.StringVar(&f.tokenEnv, "token-env", "", "environment variable holding the bearer token --listen requires (needed off loopback)")
	fs.StringArrayVar(&f.allowOrigins, "allow-origin", nil, "accept browser requests from this origin, scheme://host[:port], besides the listener's own (repeatable)")
	fs.IntVar(&f.maxSessions, "max-sessions", mcpproxy.DefaultMaxSessions, "most MCP sessions --listen serves at once (> 0); at the limit a new one ends the least recently used idle one")
	fs.DurationVar(&f.idleTimeout, "idle-timeout", mcpproxy.DefaultIdleTimeout, "end a --listen session idle this long (> 0)")
}

// validate checks the flags and the command line before anything starts.
func (o mcpFlags) validate(cmd *cobra.Command, args []string) error {
	f := o.http
	switch {
	case f.url == "" && len(args) == 0:
		return usagef("name the MCP server: --url URL, or its command (CMD ARGS…) after the flags")
	case f.url != "" && len(args) > 0:
		return usagef("give either --url or a command, not both")
	case f.url == "" && len(f.headers) > 0:
		return usagef("--header needs --url")
	case o.threshold <= 0:
		return usagef("--threshold must be > 0")
	case o.resultThreshold < 0:
		return usagef("--result-threshold must be >= 0")
	case o.budget <= 0:
		return usagef("--budget must be > 0")
	case o.maxBytes < 0:
		return usagef("--max-bytes must be >= 0")
	case o.maxMessage <= 0:
		return usagef("--max-message must be > 0")
	case f.maxSessions <= 0:
		return usagef("--max-sessions must be > 0")
	case f.idleTimeout <= 0:
		return usagef("--idle-timeout must be > 0")
	case f.listen == "" && f.tokenEnv != "":
		return usagef("--token-env needs --listen")
	case f.listen == "" && len(f.allowOrigins) > 0:
		return usagef("--allow-origin needs --listen")
	}
	if f.url != "" {
		if u, err := url.Parse(f.url); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usagef("--url must be an absolute http or https URL")
		}
	}
	if f.listen != "" {
		if _, _, err := net.SplitHostPort(f.listen); err != nil {
			return usagef("--listen must be HOST:PORT (for example 127.0.0.1:8931)")
		}
		if !mcpproxy.IsLoopbackAddress(f.listen) && f.tokenEnv == "" {
			return usagef("--listen off loopback needs a bearer token: --token-env NAME")
		}
	}
	return nil
}

// workflowName is the default workflow: the base name of the server
// command, or the host of its URL.
func workflowName(server string) string {
	if u, err := url.Parse(server); err == nil && u.Host != "" && (u.Scheme == "http" || u.Scheme == "https") {
		return u.Hostname()
	}
	return filepath.Base(server)
}

// mcpToken reads the bearer token from the environment variable --token-env
// names ("" without it).
func (a *app) mcpToken(f mcpHTTPFlags) (string, error) {
	if f.tokenEnv == "" {
		return "", nil
	}
	t := a.env.Getenv(f.tokenEnv)
	if t == "" {
		return "", usagef("--token-env %s: the variable is unset or empty", f.tokenEnv)
	}
	if len(t) < mcpproxy.MinTokenBytes {
		return "", usagef("--token-env %s: the token must be at least %d bytes (for example: openssl rand -hex 32)", f.tokenEnv, mcpproxy.MinTokenBytes)
	}
	return t, nil
}

// tokenVar lists the variable holding the listener's token (none without
// --token-env): an upstream process never gets it.
func tokenVar(f mcpHTTPFlags) []string {
	if f.tokenEnv == "" {
		return nil
	}
	return []string{f.tokenEnv}
}

// mcpHeaders parses the --header values, expanding ${VAR} from the
// environment. Errors name the header and variable, never a value.
func (a *app) mcpHeaders(values []string) (http.Header, error) {
	h := http.Header{}
	for _, v := range values {
		name, value, ok := strings.Cut(v, ":")
		name = strings.TrimSpace(name)
		if !ok || !validHeaderName(name) {
			return nil, usagef(`--header must be "Name: value" with a valid header name`)
		}
		expanded, err := expandVars(strings.TrimSpace(value), a.env.Getenv)
		if err != nil {
			return nil, usagef("--header %s: %v", name, err)
		}
		if strings.ContainsAny(expanded, "\r\n\x00") {
			return nil, usagef("--header %s: the value may not hold line breaks", name)
		}
		h.Add(name, expanded)
	}
	return h, nil
}

// validHeaderName reports whether s is an HTTP token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// errUnsetVar is wrapped when a ${VAR} names an unset variable.
var errUnsetVar = errors.New("environment variable is unset")

// expandVars replaces every ${NAME} in s by the variable's value; any other
// "$" stays as it is. An unset or empty variable is an error.
func expandVars(s string, getenv func(string) string) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return "", errors.New(`unclosed "${"`)
		}
		name := s[i+2 : i+j]
		if !validVarName(name) {
			return "", errors.New(`"${…}" must hold a variable name`)
		}
		v := getenv(name)
		if v == "" {
			return "", fmt.Errorf("%w: %s", errUnsetVar, name)
		}
		b.WriteString(s[:i])
		b.WriteString(v)
		s = s[i+j+1:]
	}
}

func validVarName(s string) bool {
	if s == "" || '0' <= s[0] && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// mcpListen serves MCP clients over Streamable HTTP until ctx ends: each
// MCP session gets its own owner session (unless --session pins one) and its
// own upstream.
func (a *app) mcpListen(ctx context.Context, cmd *cobra.Command, f mcpHTTPFlags, maxBody int, token string, owner artifact.Owner,
	newProxy func(artifact.Owner) (*mcpproxy.Proxy, error), upstream func() mcp.Transport) error {
	given := a.setting(cmd, "session", a.session, EnvSession)
	pinned := given != "" && given != NewMCPSession
	h, err := mcpproxy.NewHTTPHandler(func(context.Context, string) (*mcpproxy.Proxy, mcp.Transport, error) {
		o := owner
		if !pinned {
			o.Session = randomID()
		}
		p, err := newProxy(o)
		if err != nil {
			return nil, nil, err
		}
		return p, upstream(), nil
	}, &mcpproxy.HTTPOptions{MaxSessions: f.maxSessions, IdleTimeout: f.idleTimeout, Token: token, MaxRequestBytes: int64(maxBody),
		AllowOrigins: f.allowOrigins})
	if errors.Is(err, mcpproxy.ErrInvalidOrigin) {
		return usagef("--allow-origin: each must be scheme://host[:port], for example http://localhost:5173")
	} else if err != nil {
		return usagef("%v", err)
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return usagef("--listen %s: cannot listen there", f.listen)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	// Bodies have their own deadline (mcpproxy.HTTPOptions.BodyTimeout);
	// a connection idle between requests is closed.
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: listenIdleTimeout, ErrorLog: log.New(io.Discard, "", 0)}
	fmt.Fprintf(a.env.Stderr, "hybridctx: serving MCP at http://%s/mcp\n", ln.Addr())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-served:
	}
	// Within two seconds: the listener closes at once, every session ends
	// (releasing its streams; an upstream process gets its stdin closed,
	// SIGTERM after 1 s, SIGKILL after 2 s), and connections still open
	// after a second are closed.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(sctx) }()
	_ = h.Close()
	if <-shut != nil {
		_ = srv.Close()
	}
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return internal("mcp", serveErr)
	}
	return nil
}
