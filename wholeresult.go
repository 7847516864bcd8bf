package hybridctx

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/hybridctx/hybridctx/artifact"
)

// The whole-result bound (docs/mcp-proxy.md, "The whole-result bound").
//
// A result of several parts (the content blocks of an MCP tool result, its
// structuredContent and _meta; the parts of an agent's multi-part result)
// is bounded as a whole on the bytes it sends, as encoded for its client:
// first the largest inline parts are stored one by one; when what is sent
// is still over the bound (every stored part leaves a notice, and over MCP
// a link, behind), the parts are folded into one JSON array stored as one
// artifact, and the model sees one notice in their place. BoundResult is
// the one place the rule is written: every path (the proxy's typed, wire
// and streamed results, mcpproxy.Middleware, adapters/mcpgo, the agent
// middleware) holds its result as a BoundForm and calls it.

// ResultSlack is how far past the bound a result may still send: the fold's
// notice and link, and what a path keeps for its protocol. Whatever a result
// holds, at most Policy.ResultBound + ResultSlack bytes of it reach the
// client.
const ResultSlack = 1024

// foldReserve is what BoundResult counts for the fold's notice and link (as
// encoded, with their separators) when it decides which parts outside the
// content a fold takes with it.
const foldReserve = 900

// minReplacement is fewer bytes than the notice (and link) of any part
// stored on its own takes as encoded: BoundResult stores parts one by one
// only when, counting each stored part as this much, that can bring the
// result within the bound.
const minReplacement = 450

// Part types a fold's notice names. Content parts carry their own type
// (PartTypes, else "other"); a result's other members carry one of these.
const (
	// PartStructured is the type of a result's structuredContent.
	PartStructured = "structuredContent"
	// PartMembers is the type of a result's other members (_meta and any
	// key outside the protocol's), weighed and folded together.
	PartMembers = "members"
)

// PartTypes are the content part types a fold's notice names; any other
// content type counts as "other".
var PartTypes = []string{"text", "image", "audio", "resource", "resource_link"}

// ResultPart describes one part of a result as it stands, for BoundResult.
type ResultPart struct {
	// Type is a content part's type ("text", "image", …) or, for a part
	// outside the content, PartStructured or PartMembers.
	Type string
	// Member reports a part outside the content (structuredContent, the
	// other members): a fold takes those only while they keep the result
	// over the bound.
	Member bool
	// Size is the bytes the part adds to what is sent as it stands, as
	// encoded for the client: its own encoding when inline, its notice
	// (and link) when stored.
	Size int64
	// Stored reports that the part was stored on its own: its notice
	// stands in its place.
	Stored bool
	// Fixed reports that the part cannot be stored on its own (a recovered
	// segment); it can still be folded.
	Fixed bool
	// Gone reports that the part's original is no longer held (its payload
	// was streamed into the workspace): its fold entry names its reference
	// instead of holding it.
	Gone bool
}

// foldType is the part's type as a fold's notice counts it: a content
// part never passes for a member.
func (p ResultPart) foldType() string {
	if !p.Member && (p.Type == PartStructured || p.Type == PartMembers) {
		return "other"
	}
	return p.Type
}

// BoundForm is one result being bounded, held in the form its path sends
// it. BoundResult calls its methods on one goroutine.
type BoundForm interface {
	// Parts describes the result's parts as they stand: its content parts
	// in order, then the parts outside the content.
	Parts() []ResultPart
	// Sent returns the bytes the result sends as it stands, as encoded for
	// the client.
	Sent() (int64, error)
	// StorePart stores part i whatever its size (Offloader.Store) and puts
	// its notice in its place. A failed store leaves the categorical notice.
	StorePart(ctx context.Context, i int) error
	// Entry returns part i's entry in the fold, one JSON value: a content
	// part as the client would have received it, or, when it is Gone, the
	// part with its payload's reference ("reference", "size") in the
	// payload's place; a part outside the content as
	// {"type": PartStructured, "structuredContent": …} or
	// {"type": PartMembers, "members": {…}}, or a reference when Gone.
	Entry(i int) (json.RawMessage, error)
	// Fold puts the fold's decision (its notice and link, or the
	// categorical notice alone when it failed) in the place of the parts at
	// the indexes folded, and removes them.
	Fold(out *OffloadResult, folded []int) error
}

// BoundResult applies the whole-result bound to r: when r sends more than
// the policy's ResultBound, the largest inline parts are stored one by one
// while that can bring it within the bound; when it is still over, every
// content part (and, largest first, the parts outside the content while
// they keep it over) is folded into one JSON array of their entries, in
// order, stored as one artifact whatever its size, and the fold's notice
// says how many parts of which types it holds and how to read part i with
// the query tool. It returns the fold's decision, or nil when r was not
// folded. Every part stays recoverable: stored on its own, or in the fold.
// The error is non-nil only when no decision could be made (a cancelled
// context, a form that cannot encode itself); decisions made before it were
// reported.
func (o *Offloader) BoundResult(ctx context.Context, call Call, r BoundForm) (*OffloadResult, error) {
	if err := start(ctx, call); err != nil {
		return nil, err
	}
	bound := o.policy.ResultBound()
	sent, err := r.Sent()
	if err != nil || sent <= bound {
		return nil, err
	}
	parts := r.Parts()
	if plan := storePlan(parts, sent, bound); plan != nil {
		for _, i := range plan {
			if err := r.StorePart(ctx, i); err != nil {
				return nil, err
			}
		}
		if sent, err = r.Sent(); err != nil || sent <= bound {
			return nil, err
		}
		parts = r.Parts()
	}
	folded := foldPlan(parts, sent, bound)
	if len(folded) == 0 {
		return nil, nil
	}
	types := make([]string, len(folded))
	gone := false
	for k, i := range folded {
		types[k] = parts[i].foldType()
		gone = gone || parts[i].Gone
	}
	out, err := o.storeFold(ctx, call, &entryReader{form: r, idx: folded}, types, gone)
	if err != nil {
		return nil, err
	}
	if err := r.Fold(out, folded); err != nil {
		return nil, err
	}
	return out, nil
}

// storePlan returns the inline parts to store one by one, largest first
// (the earlier among equal sizes), so that the result, counting each stored
// part as minReplacement bytes, sends at most bound; nil when that is not
// enough (the result is folded instead) or not needed.
func storePlan(parts []ResultPart, sent, bound int64) []int {
	order := make([]int, 0, len(parts))
	for i, p := range parts {
		if !p.Stored && !p.Fixed && p.Size > minReplacement {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return parts[order[a]].Size > parts[order[b]].Size })
	var plan []int
	for _, i := range order {
		if sent <= bound {
			break
		}
		plan = append(plan, i)
		sent -= parts[i].Size - minReplacement
	}
	if sent > bound {
		return nil
	}
	return plan
}

// foldPlan returns the parts a fold takes, in order: every content part,
// then the parts outside the content, largest first, while the result
// would otherwise stay over bound with the fold's notice and link; nil when
// those parts send no more than that notice and link would (a single stored
// part's notice is already the smallest form).
func foldPlan(parts []ResultPart, sent, bound int64) []int {
	var folded, rest []int
	for i, p := range parts {
		if !p.Member {
			folded = append(folded, i)
			sent -= p.Size
		} else {
			rest = append(rest, i)
		}
	}
	sent += foldReserve
	sort.SliceStable(rest, func(a, b int) bool { return parts[rest[a]].Size > parts[rest[b]].Size })
	for _, i := range rest {
		if sent <= bound {
			break
		}
		folded = append(folded, i)
		sent -= parts[i].Size
	}
	var size int64
	for _, i := range folded {
		size += parts[i].Size
	}
	if size <= foldReserve {
		return nil // no smaller than the fold's own notice and link
	}
	sort.Ints(folded)
	return folded
}

// entryReader reads a fold's body, "[" entry "," entry … "]", asking the
// form for one entry at a time.
type entryReader struct {
	form BoundForm
	idx  []int
	next int
	buf  bytes.Reader
	done bool
}

func (e *entryReader) Read(p []byte) (int, error) {
	for e.buf.Len() == 0 {
		if e.done {
			return 0, io.EOF
		}
		var b []byte
		switch {
		case e.next == len(e.idx):
			b, e.done = []byte("]"), true
			if e.next == 0 {
				b = []byte("[]")
			}
		default:
			raw, err := e.form.Entry(e.idx[e.next])
			if err != nil {
				return 0, err
			}
			if !json.Valid(raw) {
				return 0, errBadEntry
			}
			sep := byte(',')
			if e.next == 0 {
				sep = '['
			}
			b = append([]byte{sep}, raw...)
			e.next++
		}
		e.buf.Reset(b)
	}
	return e.buf.Read(p)
}

// errBadEntry means a form gave a fold entry that is not one JSON value.
var errBadEntry = errors.New("hybridctx: a fold entry is not JSON")

// storeFold stores a fold's body, read from r, as one artifact whatever its
// size (a large one streamed, as OffloadReader does), and returns the
// decision with, for offloaded and existing_reference, the fold's notice in
// place of the usual one. Failures keep the categorical notice.
func (o *Offloader) storeFold(ctx context.Context, call Call, r io.Reader, types []string, gone bool) (*OffloadResult, error) {
	limit := o.forTool(call.Tool).policy.InlineThreshold
	var head bytes.Buffer
	_, err := io.CopyN(&head, r, min(limit, 1<<30)+1) // nil: more than that, streamed
	var out *OffloadResult
	switch {
	case err == io.EOF:
		out, err = o.Store(ctx, call, head.Bytes())
	case errors.Is(err, errBadEntry):
		return nil, err
	case err != nil:
		return nil, sourceError(err)
	default:
		out, err = o.OffloadReader(ctx, call, io.MultiReader(&head, r))
	}
	if err != nil {
		return nil, err
	}
	if oc := out.Outcome(); oc == Offloaded || oc == ExistingReference {
		size, _ := out.Diagnostics().ObservedBytes()
		out.Notice = foldNotice(out.Ref, size, types, gone, o.policy)
	}
	return out, nil
}

// foldNotice renders the notice of a fold. Like the stored notice it names
// the reference first, depends only on the body and the policy, and carries
// no content. Past MaxNoticeLen (long tool names, many types) the per-type
// counts and the members' names are left out.
func foldNotice(ref artifact.Ref, size int64, types []string, gone bool, p Policy) string {
	counts := map[string]int{}
	blocks := 0
	var members []string
	for _, t := range types {
		switch {
		case t == PartStructured || t == PartMembers:
			members = append(members, t)
			continue
		case !isPartType(t):
			t = "other"
		}
		counts[t]++
		blocks++
	}
	var byType strings.Builder
	for _, t := range append(PartTypes[:len(PartTypes):len(PartTypes)], "other") {
		if counts[t] > 0 {
			if byType.Len() > 0 {
				byType.WriteString(", ")
			}
			byType.WriteString(strconv.Itoa(counts[t]) + " " + t)
		}
	}
	render := func(byType string, members []string) string {
		var b strings.Builder
		b.WriteString(ref.String())
		b.WriteString("\n")
		b.WriteString(strconv.Itoa(blocks))
		b.WriteString(" content blocks")
		if byType != "" {
			b.WriteString(" (" + byType + ")")
		}
		if len(members) > 0 {
			b.WriteString(" then " + strings.Join(members, ", "))
		}
		b.WriteString(", one JSON array of ")
		b.WriteString(strconv.FormatInt(size, 10))
		b.WriteString(" bytes; stored outside this conversation.\nBlock i: ")
		b.WriteString(p.ToolName(ViewQuery))
		b.WriteString(` {"reference": "`)
		b.WriteString(ref.String())
		b.WriteString(`", "filter": ".[i]"}; `)
		if gone {
			b.WriteString(`a "reference" in a block: ` + p.ToolName(ViewRange) + ".")
		} else {
			b.WriteString(`every text: ".[] | select(.type == \"text\") | .text".`)
		}
		return b.String()
	}
	if n := render(byType.String(), members); len(n) <= MaxNoticeLen {
		return n
	}
	return render("", nil)
}

func isPartType(t string) bool {
	for _, p := range PartTypes {
		if t == p {
			return true
		}
	}
	return false
}
