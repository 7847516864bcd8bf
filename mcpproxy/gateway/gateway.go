package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/mcpproxy"
	"github.com/hybridctx/hybridctx/readtools"
)

// ErrInvalidOptions is wrapped by errors about unusable options.
var ErrInvalidOptions = errors.New("invalid gateway options")

// Options tune a Gateway. Nil means defaults.
type Options struct {
	// Budget caps every read of the read tools (mcpproxy.Options.Budget).
	Budget int64
	// Reporter receives the progress events of every decision.
	Reporter hybridctx.Reporter
	// Logger receives one line per upstream that starts, stops or is
	// restarted, and per name the gateway shortened; never a message's
	// content. Nil discards them.
	Logger *slog.Logger
	// UpstreamStderr receives the standard error of command upstreams
	// (nil discards it).
	UpstreamStderr io.Writer
	// MaxMessageBytes bounds one upstream message (0: mcpproxy's default).
	MaxMessageBytes int
	// DropEnv names variables command upstreams must not inherit.
	DropEnv []string
	// After returns a channel that delivers once d has passed: the
	// restart backoff's clock (nil: time.After). Now is the clock that
	// measures how long an upstream stayed up (nil: time.Now).
	After func(d time.Duration) <-chan time.Time
	Now   func() time.Time
	// ReadyWait is how long Start waits for the servers' first starts
	// before it returns (0: 10 s); a server that is still starting joins
	// later, with list_changed.
	ReadyWait time.Duration
	// KeepAlive is the interval of the pings that find an upstream that
	// hangs (0: 30 s; negative: none).
	KeepAlive time.Duration
	// InputTimeout is how long a call that asked a client on protocol
	// 2026-07-28 for input waits for the client's next call
	// (DefaultInputTimeout when 0; docs/gateway.md).
	InputTimeout time.Duration
	// Offloader returns an Offloader on the gateway's binding with the
	// given inline threshold, for a server that sets its own; it is needed
	// only then.
	Offloader func(threshold int64) (*hybridctx.Offloader, error)
	// Transport, when set, makes the transport of a server instead of a
	// command or an HTTP client (tests).
	Transport func(s *Server) (mcp.Transport, error)
}

// Restart backoff of an upstream that fails or ends (docs/gateway.md).
const (
	FirstBackoff = time.Second
	MaxBackoff   = 60 * time.Second
)

// Gateway serves one MCP server (the SDK's) whose tools, prompts and
// resources are those of every configured upstream, plus the read tools.
type Gateway struct {
	cfg      *Config
	off      *hybridctx.Offloader
	reh      *hybridctx.Rehydrator
	opts     Options
	server   *mcp.Server
	tools    *namer
	prompts  *namer
	ups      []*upstream
	derefMax int64
	timeout  time.Duration

	mu        sync.Mutex
	routes    map[string]*route      // exposed tool name → its upstream
	promptsTo map[string]*route      // exposed prompt name → its upstream
	resources map[string][]*upstream // resource URI → servers listing it, config order
	templates map[string][]*upstream // URI template → servers listing it
	progress  map[string]progressRoute
	subs      map[string]int // resource URI → client sessions subscribed
	nextToken uint64
	inputs    *inputs
	lastSess  *mcp.ServerSession

	life   context.Context // Start's, cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// route is where an exposed name goes.
type route struct {
	up    *upstream
	name  string // the upstream's own name
	deref bool
	tool  *mcp.Tool // the upstream's definition (its input schema)
}

// New returns a Gateway over cfg's servers. off and reh must share one
// binding: the one owner of everything the gateway stores and reads.
// off's policy sets the threshold of servers that set none.
func New(cfg *Config, off *hybridctx.Offloader, reh *hybridctx.Rehydrator, opts *Options) (*Gateway, error) {
	if cfg == nil || off == nil || reh == nil {
		return nil, fmt.Errorf("%w: a Config, an Offloader and a Rehydrator are required", ErrInvalidOptions)
	}
	g := &Gateway{cfg: cfg, off: off, reh: reh, routes: map[string]*route{}, promptsTo: map[string]*route{},
		resources: map[string][]*upstream{}, templates: map[string][]*upstream{}, progress: map[string]progressRoute{}, subs: map[string]int{}}
	if opts != nil {
		g.opts = *opts
	}
	if g.opts.After == nil {
		g.opts.After = time.After
	}
	if g.opts.Now == nil {
		g.opts.Now = time.Now
	}
	if g.opts.KeepAlive == 0 {
		g.opts.KeepAlive = 30 * time.Second
	}
	g.inputs = newInputs(g.opts.InputTimeout)
	g.derefMax = cfg.Settings.DereferenceBudget
	if g.derefMax == 0 {
		g.derefMax = DefaultDereferenceBudget
	}
	g.timeout = cfg.Settings.StartTimeout
	if g.timeout == 0 {
		g.timeout = DefaultStartTimeout
	}
	max := cfg.Settings.MaxToolNameLength
	if max == 0 {
		max = DefaultMaxToolNameLength
	}
	names := readtools.NamesOf(off.Policy())
	g.tools = newNamer(max, names.Read, names.Search, names.Query)
	g.prompts = newNamer(max)
	g.server = mcp.NewServer(&mcp.Implementation{Name: "hybridctx-gateway", Version: "1"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{
			Tools:     &mcp.ToolCapabilities{ListChanged: true},
			Prompts:   &mcp.PromptCapabilities{ListChanged: true},
			Resources: &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
			Logging:   &mcp.LoggingCapabilities{}, //lint:ignore SA1019 upstreams of the versions before 2026-07-28 still log

		},
		InitializedHandler: func(ctx context.Context, r *mcp.InitializedRequest) { g.syncRoots(ctx, r.Session) },
		//lint:ignore SA1019 clients of the versions before 2026-07-28 still send roots
		RootsListChangedHandler: func(ctx context.Context, r *mcp.RootsListChangedRequest) { g.syncRoots(ctx, r.Session) },
		CompletionHandler:       g.complete,
		SubscribeHandler:        g.subscribe,
		UnsubscribeHandler:      g.unsubscribe,
	})
	if err := mcpproxy.AddReadTools(g.server, reh, &mcpproxy.Options{Budget: g.opts.Budget, Reporter: g.opts.Reporter,
		Names: names}); err != nil {
		return nil, err
	}
	g.server.AddReceivingMiddleware(g.downCalls)
	for i := range cfg.Servers {
		s := &cfg.Servers[i]
		u, err := newUpstream(g, i, s)
		if err != nil {
			return nil, err
		}
		g.ups = append(g.ups, u)
	}
	return g, nil
}

// Server returns the MCP server the gateway serves: run it on a client's
// transport (Run) or behind mcp.NewStreamableHTTPHandler. Every client
// session shares the one set of upstreams.
func (g *Gateway) Server() *mcp.Server { return g.server }

// Start starts every upstream in parallel and returns once each has
// started or failed its first start, or after Options.ReadyWait. An
// upstream that failed is retried in the background with backoff; Start
// fails only for a configuration the upstreams' own lists make unusable:
// names of servers with "prefix": "" that collide (ErrNameCollision).
func (g *Gateway) Start(ctx context.Context) error {
	ctx, g.cancel = context.WithCancel(context.WithoutCancel(ctx))
	g.life = ctx
	first := make(chan error, len(g.ups))
	for _, u := range g.ups {
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			u.run(ctx, first)
		}()
	}
	wait := g.opts.ReadyWait
	if wait <= 0 {
		wait = 10 * time.Second
	}
	ready := time.NewTimer(wait)
	defer ready.Stop()
	var errs []error
wait:
	for range g.ups {
		select {
		case err := <-first:
			if errors.Is(err, ErrNameCollision) {
				errs = append(errs, err)
			}
		case <-ready.C:
			break wait
		}
	}
	if err := errors.Join(errs...); err != nil {
		g.Close()
		return err
	}
	return nil
}

// Run serves one client on t until it leaves or ctx ends.
func (g *Gateway) Run(ctx context.Context, t mcp.Transport) error {
	return g.server.Run(ctx, t)
}

// Close stops every upstream (command upstreams get their stdin closed,
// then signals) and waits for them.
func (g *Gateway) Close() error {
	if g.cancel != nil {
		g.cancel()
	}
	g.wg.Wait()
	return nil
}

// Renamed returns every tool name shortened or made unique so far (the
// logger says each as it happens).
func (g *Gateway) Renamed() []Renamed { return g.tools.all() }

// Up reports, by server name, which servers are connected.
func (g *Gateway) Up() map[string]bool {
	out := map[string]bool{}
	for _, u := range g.ups {
		out[u.cfg.Name] = u.session() != nil
	}
	return out
}

func (g *Gateway) logf(level slog.Level, msg string, args ...any) {
	if g.opts.Logger != nil {
		g.opts.Logger.Log(context.Background(), level, msg, args...)
	}
}

// downCalls answers a call to a tool whose server is down at once, with a
// categorical tool error, instead of the SDK's "unknown tool".
func (g *Gateway) downCalls(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		p, ok := req.GetParams().(*mcp.CallToolParamsRaw)
		if !ok || p == nil {
			return next(ctx, method, req)
		}
		g.mu.Lock()
		r := g.routes[p.Name]
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
			g.lastSess = ss
		}
		g.mu.Unlock()
		if r != nil && r.up.session() == nil {
			return toolError(fmt.Sprintf("hybridctx: the MCP server %q is not running; it is being restarted. Try again later.", r.up.cfg.Name)), nil
		}
		return next(ctx, method, req)
	}
}

// toolError is a categorical tool error.
func toolError(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// session returns the client session the gateway last served, for the
// requests an upstream sends outside a call (sampling, elicitation).
func (g *Gateway) session() *mcp.ServerSession {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.lastSess
}
