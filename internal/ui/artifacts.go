package ui

import (
	"cmp"
	"net/http"
	"slices"
	"strings"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
)

// artifactJSON is one of the owner's records in the list: never a body.
type artifactJSON struct {
	Reference string `json:"reference"`
	Digest    string `json:"digest"`
	Size      int64  `json:"size"`
	Kind      string `json:"kind"`
	FirstUse  string `json:"created_at"`
	LastUse   string `json:"last_used_at"`
	Tool      string `json:"tool"`
}

// artifactsJSON answers GET /api/artifacts.
type artifactsJSON struct {
	Total     int            `json:"total"`
	Offset    int            `json:"offset"`
	Artifacts []artifactJSON `json:"artifacts"`
}

// The sort keys of GET /api/artifacts.
var artifactSorts = map[string]func(a, b artifact.Record) int{
	"size":         func(a, b artifact.Record) int { return cmp.Compare(a.Size, b.Size) },
	"kind":         func(a, b artifact.Record) int { return strings.Compare(a.Kind, b.Kind) },
	"created_at":   func(a, b artifact.Record) int { return a.CreatedAt.Compare(b.CreatedAt) },
	"last_used_at": func(a, b artifact.Record) int { return a.LastUsedAt.Compare(b.LastUsedAt) },
	"tool":         func(a, b artifact.Record) int { return strings.Compare(a.Tool, b.Tool) },
}

const msgBadSort = "Bad Request: sort must be size, kind, created_at, last_used_at or tool, order asc or desc"

// apiArtifacts lists the owner's records (only the owner's: the store is
// asked for them by owner), filtered, sorted and paged.
func (h *Handler) apiArtifacts(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	offset, limit, ok := paging(q.Get("offset"), q.Get("limit"))
	if !ok {
		writeError(w, http.StatusBadRequest, msgBadPaging)
		return
	}
	key, order := cmp.Or(q.Get("sort"), "last_used_at"), cmp.Or(q.Get("order"), "desc")
	less, known := artifactSorts[key]
	if !known || (order != "asc" && order != "desc") {
		writeError(w, http.StatusBadRequest, msgBadSort)
		return
	}
	kind, text := q.Get("kind"), strings.ToLower(q.Get("q"))
	owner := h.o.Owner
	var recs []artifact.Record
	for rec, err := range h.o.Store.ListRecords(r.Context(), workspace.Query{Owner: &owner}) {
		if err != nil {
			writeError(w, http.StatusInternalServerError, "Internal Server Error: cannot list the records")
			return
		}
		if rec.Owner != owner { // the store was asked for this owner only
			continue
		}
		if kind != "" && rec.Kind != kind {
			continue
		}
		if text != "" && !strings.Contains(rec.Ref.String(), text) && !strings.Contains(strings.ToLower(rec.Tool), text) {
			continue
		}
		recs = append(recs, rec)
	}
	slices.SortStableFunc(recs, func(a, b artifact.Record) int {
		c := less(a, b)
		if c == 0 {
			c = strings.Compare(a.Ref.String(), b.Ref.String())
		}
		if order == "desc" {
			return -c
		}
		return c
	})
	out := artifactsJSON{Total: len(recs), Offset: offset, Artifacts: []artifactJSON{}}
	if offset < len(recs) {
		for _, rec := range recs[offset:min(len(recs), offset+limit)] {
			ref := rec.Ref.String()
			out.Artifacts = append(out.Artifacts, artifactJSON{Reference: ref, Digest: strings.TrimPrefix(ref, artifact.Prefix),
				Size: rec.Size, Kind: rec.Kind, FirstUse: rec.CreatedAt.UTC().Format(hybridctx.TimeLayout),
				LastUse: rec.LastUsedAt.UTC().Format(hybridctx.TimeLayout), Tool: rec.Tool})
		}
	}
	writeJSON(w, out)
}
