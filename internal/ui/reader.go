package ui

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
)

// ShapeFilter is the jq filter whose answer the reader shows as a JSON
// body's shape: every value replaced by its type, objects by their keys'
// shapes, arrays by their first element's, three levels deep.
const ShapeFilter = `def s(d): if type == "object" then (if d == 0 then "object" else with_entries(.value |= s(d-1)) end) ` +
	`elif type == "array" then (if d == 0 or length == 0 then "array" else [(.[0] | s(d-1))] end) else type end; s(3)`

// readJSON answers GET /api/artifacts/{hex}/{view}: the decision and, when
// resolved, the answer's text. Outcome and reason are categorical; a
// missing or stale body is an answer, not an HTTP error.
type readJSON struct {
	Reference string `json:"reference"`
	View      string `json:"view"`
	Outcome   string `json:"outcome"`
	Reason    string `json:"reason"`
	BodySize  int64  `json:"body_size"`
	Budget    int64  `json:"budget"`
	// Text is the answer's items (lines with their numbers for lines;
	// grep -n style lines for search; one JSON result per line for query).
	Text    string `json:"text"`
	Summary string `json:"summary"`
	Total   int64  `json:"total"`
	First   int64  `json:"first"`
	Count   int64  `json:"count"`
	Next    int64  `json:"next"`
}

const (
	msgBadRead   = "Bad Request: the read's arguments are not valid (see docs/ui.md)"
	msgReadError = "Internal Server Error: the read could not be decided"
)

// apiRead runs one view through the Rehydrator: lines, search, query, or
// shape (query with ShapeFilter).
func (h *Handler) apiRead(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	ref := artifact.Prefix + r.PathValue("hex")
	budget, ok := intArg(q.Get("budget"), h.o.MaxBudget)
	if !ok || budget < 1 || budget > h.o.MaxBudget {
		writeError(w, http.StatusBadRequest, "Bad Request: budget must be 1 to "+strconv.FormatInt(h.o.MaxBudget, 10))
		return
	}
	ctx := r.Context()
	if h.o.Reporter != nil {
		ctx = hybridctx.WithReporter(ctx, h.o.Reporter)
	}
	var res *hybridctx.Rehydration
	var err error
	view := r.PathValue("view")
	switch view {
	case "lines":
		start, ok1 := intArg(q.Get("start"), 1)
		count, ok2 := intArg(q.Get("count"), hybridctx.DefaultLineCount)
		if !ok1 || !ok2 {
			writeError(w, http.StatusBadRequest, msgBadRead)
			return
		}
		res, err = h.o.Rehydrator.ReadLines(ctx, hybridctx.LinesRequest{Reference: ref, Budget: budget, StartLine: start, LineCount: count})
	case "search":
		ctxLines, ok1 := intArg(q.Get("context"), 0)
		maxM, ok2 := intArg(q.Get("max"), 0)
		skip, ok3 := intArg(q.Get("skip"), 0)
		if !ok1 || !ok2 || !ok3 {
			writeError(w, http.StatusBadRequest, msgBadRead)
			return
		}
		res, err = h.o.Rehydrator.Search(ctx, hybridctx.SearchRequest{Reference: ref, Budget: budget, Pattern: q.Get("pattern"),
			Regex: q.Get("regex") == "1", IgnoreCase: q.Get("ignore_case") == "1", ContextLines: ctxLines, MaxMatches: maxM, Skip: skip})
	case "query", "shape":
		skip, ok1 := intArg(q.Get("skip"), 0)
		if !ok1 {
			writeError(w, http.StatusBadRequest, msgBadRead)
			return
		}
		filter := q.Get("filter")
		if view == "shape" {
			filter, skip = ShapeFilter, 0
		}
		res, err = h.o.Rehydrator.Query(ctx, hybridctx.QueryRequest{Reference: ref, Budget: budget, Filter: filter, Skip: skip})
	default:
		writeError(w, http.StatusNotFound, "Not Found: the views are lines, search, query and shape")
		return
	}
	switch {
	case errors.Is(err, hybridctx.ErrInvalidRequest):
		writeError(w, http.StatusBadRequest, msgBadRead)
		return
	case err != nil:
		writeError(w, http.StatusInternalServerError, msgReadError)
		return
	}
	out := readJSON{Reference: ref, View: view, Outcome: res.Outcome().String(), Reason: res.Reason().String(),
		BodySize: res.BodySize, Budget: budget, Summary: res.Page.Summary, Total: res.Page.Total,
		First: res.Page.First, Count: res.Page.Count, Next: res.Page.Next}
	if res.Outcome() == hybridctx.Resolved && res.Segment != nil {
		b := res.Segment.Bytes()
		if view != "lines" && res.Page.ItemBytes > 0 && res.Page.ItemBytes <= int64(len(b)) {
			b = b[:res.Page.ItemBytes]
		} else if view != "lines" {
			b = nil
		}
		out.Text = string(b)
	}
	writeJSON(w, out)
}

// intArg parses a decimal argument, def when absent.
func intArg(s string, def int64) (int64, bool) {
	if s == "" {
		return def, true
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && n >= 0
}
