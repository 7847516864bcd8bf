package cli

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"math"
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
	"github.com/hybridctx/hybridctx/internal/httpguard"
	"github.com/hybridctx/hybridctx/mcpproxy"
)

// listenIdleTimeout closes a --listen connection idle between requests.
const listenIdleTimeout = 2 * time.Minute

// mcpHTTPFlags are the mcp command's HTTP flags (docs/mcp-proxy.md, "HTTP on both sides").
type mcpHTTPFlags struct {
	listen, url, tokenEnv, tokensFile string
	headers, allowOrigins             []string
	maxSessions, sessionBurst         int
	sessionRate                       float64
	idleTimeout                       time.Duration
}

func (f *mcpHTTPFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.listen, "listen", "", "serve MCP clients over Streamable HTTP at http://ADDR/mcp instead of standard input and output")
	fs.StringVar(&f.url, "url", "", "connect to an upstream MCP server over HTTP (Streamable HTTP, else HTTP+SSE) instead of starting CMD")
	fs.StringArrayVar(&f.headers, "header", nil, `add a request header to the upstream, "Name: value" (repeatable; ${VAR} is expanded from the environment)`)
	fs.StringVar(&f.tokenEnv, "token-env", "", "environment variable holding the bearer token --listen requires (needed off loopback)")
	fs.StringVar(&f.tokensFile, "tokens-file", "", `file of "SESSION TOKEN" lines: --listen accepts each token, and each SESSION owns what its clients store`)
	fs.StringArrayVar(&f.allowOrigins, "allow-origin", nil, "accept browser requests from this origin, scheme://host[:port], besides the listener's own (repeatable)")
	fs.IntVar(&f.maxSessions, "max-sessions", mcpproxy.DefaultMaxSessions, "most MCP sessions --listen serves at once per credential (> 0); at the limit a new one ends that credential's least recently used idle one")
	fs.IntVar(&f.sessionBurst, "session-burst", mcpproxy.DefaultSessionBurst, "MCP sessions one credential may open at once before --session-rate applies (> 0)")
	fs.Float64Var(&f.sessionRate, "session-rate", mcpproxy.DefaultSessionRate, "MCP sessions per second one credential may open after its burst (> 0); more get HTTP 429")
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
	case f.sessionBurst <= 0:
		return usagef("--session-burst must be > 0")
	case !(f.sessionRate > 0) || math.IsInf(f.sessionRate, 0):
		return usagef("--session-rate must be a number > 0")
	case f.listen == "" && f.tokenEnv != "":
		return usagef("--token-env needs --listen")
	case f.listen == "" && f.tokensFile != "":
		return usagef("--tokens-file needs --listen")
	case f.tokenEnv != "" && f.tokensFile != "":
		return usagef("give either --token-env or --tokens-file, not both")
	case f.tokensFile != "" && cmd.Flags().Changed("session") && cmd.Flags().Lookup("session").Value.String() != NewMCPSession:
		return usagef("--tokens-file names each token's session; --session NAME cannot pin one too (--session new can)")
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
		if !mcpproxy.IsLoopbackAddress(f.listen) && f.tokenEnv == "" && f.tokensFile == "" {
			return usagef("--listen off loopback needs bearer tokens: --token-env NAME or --tokens-file FILE")
		}
	}
	return nil
}

// maxWorkflowBase bounds the name part of a default workflow, so that the
// whole stays within artifact.MaxOwnerFieldLen.
const maxWorkflowBase = 200

// workflowName is the default workflow (docs/mcp-proxy.md, "The owner and
// its session"): the base name of the server command, or the host of its
// URL, then "-" and the first 8 hex digits of the SHA-256 of the whole
// command line (each argument length-prefixed) or URL (without user
// information), so that two servers run by one launcher (python3, npx,
// uvx) are two owners.
func workflowName(serverURL string, args []string) string {
	h := sha256.New()
	var base string
	if serverURL != "" {
		base = serverURL
		hashed := serverURL
		if u, err := url.Parse(serverURL); err == nil && u.Hostname() != "" {
			base = u.Hostname()
			u.User = nil // a password is no part of which server it is
			hashed = u.String()
		}
		h.Write([]byte(hashed))
	} else {
		base = filepath.Base(args[0])
		for _, a := range args {
			h.Write(binary.AppendUvarint(nil, uint64(len(a))))
			h.Write([]byte(a))
		}
	}
	if len(base) > maxWorkflowBase {
		base = strings.ToValidUTF8(base[:maxWorkflowBase], "")
	}
	return base + "-" + hex.EncodeToString(h.Sum(nil)[:4])
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
		if !ok || !httpguard.HeaderName(name) {
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
// MCP session gets its own upstream; the owner follows the client's
// credential (docs/mcp-proxy.md, "Who owns what a listener stores"): the
// proxy's own owner without tokens or with --token-env, the file's session
// name with --tokens-file, a fresh random session per MCP session with
// --session new.
func (a *app) mcpListen(ctx context.Context, cmd *cobra.Command, f mcpHTTPFlags, maxBody int, creds []mcpproxy.Credential, owner artifact.Owner,
	newProxy func(artifact.Owner) (*mcpproxy.Proxy, error), upstream func() mcp.Transport) error {
	perSession := a.setting(cmd, "session", a.session, EnvSession) == NewMCPSession
	h, err := mcpproxy.NewHTTPHandler(func(_ context.Context, _, credential string) (*mcpproxy.Proxy, mcp.Transport, error) {
		o := owner
		switch {
		case perSession:
			o.Session = randomID()
		case credential != "": // a --tokens-file session name
			o.Session = credential
		}
		p, err := newProxy(o)
		if err != nil {
			return nil, nil, err
		}
		return p, upstream(), nil
	}, &mcpproxy.HTTPOptions{MaxSessions: f.maxSessions, IdleTimeout: f.idleTimeout, Credentials: creds, MaxRequestBytes: int64(maxBody),
		AllowOrigins: f.allowOrigins, SessionBurst: f.sessionBurst, SessionRate: f.sessionRate})
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
	// Stopped by SIGINT or SIGTERM: the exit code says so (130, 143), as
	// for every command (exit.go).
	var sig *SignalError
	if errors.As(context.Cause(ctx), &sig) {
		return internal("mcp", ctx.Err())
	}
	return nil
}
