// Package ui serves the local, read-only view of a workspace and its runs
// (docs/ui.md): a page of static files embedded in the binary and the JSON
// API under /api/ it reads. Runs come from an events file; artifacts are
// the bound owner's records; every read of a body is a rehydration through
// the Rehydrator, with its checks, budget and event.
package ui

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"net/http"
	"strconv"
	"sync"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/internal/httpguard"
	"github.com/hybridctx/hybridctx/workspace"
)

//go:embed static
var static embed.FS

// DefaultMaxBudget is the largest byte budget of one read unless
// Options.MaxBudget sets another.
const DefaultMaxBudget = 256 << 10

// MinTokenBytes is the shortest bearer token the view accepts.
const MinTokenBytes = 16

// Errors of New.
var (
	// ErrInvalidOptions is wrapped by every error of New.
	ErrInvalidOptions = errors.New("invalid ui options")
)

// Options configure New. Store, Rehydrator and Owner are required.
type Options struct {
	// Store lists the owner's records.
	Store *workspace.Store
	// Owner is whose records the page lists; Rehydrator must be bound to
	// the same owner.
	Owner artifact.Owner
	// Rehydrator answers every read of a body.
	Rehydrator *hybridctx.Rehydrator
	// EventsPath is the events file whose runs the page shows; "" for none.
	EventsPath string
	// Reporter, when set, receives the event of every read the page makes
	// (the command line's writes to EventsPath).
	Reporter hybridctx.Reporter
	// Token, when set, is the bearer token every /api/ request must carry;
	// at least MinTokenBytes.
	Token string
	// MaxBudget bounds one read's budget; 0 means DefaultMaxBudget.
	MaxBudget int64
}

// Handler is the view's http.Handler. It is safe for concurrent use.
type Handler struct {
	o      Options
	mux    *http.ServeMux
	mu     sync.Mutex
	events *eventsView
}

// New returns the view's handler.
func New(o Options) (*Handler, error) {
	switch {
	case o.Store == nil || o.Rehydrator == nil:
		return nil, errors.Join(ErrInvalidOptions, errors.New("a store and a rehydrator are required"))
	case o.Owner.Validate() != nil:
		return nil, errors.Join(ErrInvalidOptions, errors.New("the owner is incomplete"))
	case o.Token != "" && len(o.Token) < MinTokenBytes:
		return nil, errors.Join(ErrInvalidOptions, errors.New("the bearer token is too short"))
	case o.MaxBudget < 0:
		return nil, errors.Join(ErrInvalidOptions, errors.New("the budget must be >= 0"))
	}
	if o.MaxBudget == 0 {
		o.MaxBudget = DefaultMaxBudget
	}
	h := &Handler{o: o, mux: http.NewServeMux()}
	sub, _ := fs.Sub(static, "static")
	h.mux.Handle("GET /", http.FileServerFS(sub))
	h.mux.HandleFunc("GET /api/runs", h.apiRuns)
	h.mux.HandleFunc("GET /api/runs/{id}", h.apiRun)
	h.mux.HandleFunc("GET /api/runs/{id}/decisions", h.apiDecisions)
	h.mux.HandleFunc("GET /api/artifacts", h.apiArtifacts)
	h.mux.HandleFunc("GET /api/artifacts/{hex}/{view}", h.apiRead)
	h.mux.HandleFunc("GET /api/", func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusNotFound, "Not Found: no such API endpoint")
	})
	return h, nil
}

// Categorical refusals: none quotes a header, a path or a body.
const (
	msgBadHost   = "Forbidden: the Host header must name a loopback address"
	msgBadOrigin = "Forbidden: the Origin header names another origin"
	msgNoToken   = "Unauthorized: a valid bearer token is required"
	msgReadOnly  = "Method Not Allowed: the view is read-only (GET only)"
)

// ServeHTTP implements http.Handler: the listener's checks (Host on
// loopback, Origin, the bearer token for /api/), GET only, then the route.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
	loopback, port := httpguard.Local(r)
	if loopback && !httpguard.IsLoopback(r.Host) {
		writeError(w, http.StatusForbidden, msgBadHost)
		return
	}
	if !httpguard.CheckOrigins(r, nil, loopback, port) {
		writeError(w, http.StatusForbidden, msgBadOrigin)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hd.Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, msgReadOnly)
		return
	}
	// The page's files hold no data; every answer with data is under /api/.
	if h.o.Token != "" && isAPI(r.URL.Path) && !httpguard.BearerOK(r, h.o.Token) {
		hd.Set("WWW-Authenticate", `Bearer realm="hybridctx-ui"`)
		writeError(w, http.StatusUnauthorized, msgNoToken)
		return
	}
	if isAPI(r.URL.Path) {
		hd.Set("Cache-Control", "no-store")
	}
	h.mux.ServeHTTP(w, r)
}

func isAPI(p string) bool { return p == "/api" || len(p) >= 5 && p[:5] == "/api/" }

// view returns the events file's current reading, read again when the file
// changed since.
func (h *Handler) view(ctx context.Context) (*eventsView, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.events != nil && !h.events.stale() {
		return h.events, nil
	}
	v, err := loadEvents(ctx, h.o.EventsPath)
	if err != nil {
		return nil, err
	}
	h.events = v
	return v, nil
}

func (h *Handler) apiRuns(w http.ResponseWriter, r *http.Request) {
	v, err := h.view(r.Context())
	if err != nil {
		writeError(w, http.StatusInternalServerError, "Internal Server Error: cannot read the events file")
		return
	}
	writeJSON(w, v.list())
}

// pathRun returns the run the request's path names, or answers the request
// (500: the events file cannot be read; 404: no such run) and returns false.
func (h *Handler) pathRun(w http.ResponseWriter, r *http.Request) (*run, bool) {
	v, err := h.view(r.Context())
	if err != nil {
		writeError(w, http.StatusInternalServerError, "Internal Server Error: cannot read the events file")
		return nil, false
	}
	run := v.runs[r.PathValue("id")]
	if run == nil {
		writeError(w, http.StatusNotFound, "Not Found: no such run in the events file")
		return nil, false
	}
	return run, true
}

func (h *Handler) apiRun(w http.ResponseWriter, r *http.Request) {
	run, ok := h.pathRun(w, r)
	if !ok {
		return
	}
	writeJSON(w, run.detail())
}

// decisionsJSON answers GET /api/runs/{id}/decisions: one page, and,
// without a filter, the compaction steps (history_compaction events) that
// came after the previous page's last decision and before this page's last
// (on the last page: all that remain), for the timeline.
type decisionsJSON struct {
	Total     int        `json:"total"`
	Offset    int        `json:"offset"`
	Decisions []decision `json:"decisions"`
	Steps     []step     `json:"compaction_steps"`
}

func (h *Handler) apiDecisions(w http.ResponseWriter, r *http.Request) {
	run, ok := h.pathRun(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	offset, limit, ok := paging(q.Get("offset"), q.Get("limit"))
	if !ok {
		writeError(w, http.StatusBadRequest, msgBadPaging)
		return
	}
	outcome, agent := q.Get("outcome"), q.Get("agent")
	rows := run.decisions
	if outcome != "" || agent != "" {
		rows = nil
		for _, d := range run.decisions {
			if (outcome == "" || d.Outcome == outcome) && (agent == "" || d.Agent == agent) {
				rows = append(rows, d)
			}
		}
	}
	out := decisionsJSON{Total: len(rows), Offset: offset, Decisions: []decision{}, Steps: []step{}}
	end := min(len(rows), offset+limit)
	if offset < len(rows) {
		out.Decisions = rows[offset:end]
	}
	if outcome == "" && agent == "" && (offset < len(rows) || offset == 0) {
		lo, hi := uint64(0), uint64(math.MaxUint64)
		if offset > 0 {
			lo = rows[offset-1].Seq
		}
		if end < len(rows) {
			hi = rows[end-1].Seq
		}
		for _, st := range run.steps {
			if st.Seq > lo && st.Seq <= hi {
				out.Steps = append(out.Steps, st)
			}
		}
	}
	writeJSON(w, out)
}

// Paging of the lists.
const (
	DefaultPage = 100
	MaxPage     = 1000
)

const msgBadPaging = "Bad Request: offset must be >= 0 and limit 1 to 1000"

// paging parses offset and limit (defaults 0 and DefaultPage).
func paging(os, ls string) (offset, limit int, ok bool) {
	offset, limit = 0, DefaultPage
	var err error
	if os != "" {
		if offset, err = strconv.Atoi(os); err != nil || offset < 0 {
			return 0, 0, false
		}
	}
	if ls != "" {
		if limit, err = strconv.Atoi(ls); err != nil || limit < 1 || limit > MaxPage {
			return 0, 0, false
		}
	}
	return offset, limit, true
}

// errorJSON is every refusal's body.
type errorJSON struct {
	Error string `json:"error"`
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(errorJSON{Error: msg})
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "Internal Server Error: cannot render the answer")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(b, '\n'))
}
