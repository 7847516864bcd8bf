// Package readtools is the one definition of the tools a model uses to read
// stored tool results back (docs/rehydration.md): read_artifact (a byte range or
// whole lines), search_artifact (grep -n over the lines) and query_artifact
// (a sandboxed jq filter over a JSON body).
//
// For each tool it owns the JSON input schema, the description, the
// argument parsing, the budget clamp — a call's budget is min(max_bytes,
// the host's cap) — and every text the model reads: the answer's
// continuation notes and each categorical refusal. The agent
// package, the MCP proxy, the CLI and the framework adapters all wrap a
// *Set, so a model sees the same tools and the same words everywhere. The
// names are a hybridctx.Policy's, read with NamesOf (see Names).
//
// A Set is SDK-neutral: Tools lists what to register with a framework, Call
// runs one call against the host's *hybridctx.Rehydrator (the model can read
// only its owner's artifacts), and the *Result says what to show: the exact
// answer bytes, or a refusal text to return as a tool error.
package readtools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/hybridctx/hybridctx"
)

// DefaultBudgetCap bounds every call unless the host sets another cap: the
// window the notice suggests. (The tools' default names are the Policy's:
// hybridctx.DefaultReadToolName, DefaultSearchToolName, DefaultQueryToolName.)
const DefaultBudgetCap = 65536

// Kind says which of the three tools a Tool is.
type Kind uint8

// The tools.
const (
	Read Kind = iota + 1
	Search
	Query
)

// Names are the read tools' names. As an override (Options.Names and the
// adapters' options) an empty name keeps the policy's; NamesOf returns
// them resolved, none empty. The names themselves live in a
// hybridctx.Policy (ReadToolName, SearchToolName, QueryToolName), which
// checks them and applies the defaults: an override is applied onto a
// Policy (Over) and read back from it (NamesOf), so every package names
// and recognises the tools alike (docs/rehydration.md, "Tool names").
type Names struct {
	Read, Search, Query string
}

// NamesOf returns the names the read tools go by under p, defaults applied
// (Policy.ToolName): the names p's notices point to.
func NamesOf(p hybridctx.Policy) Names {
	return Names{Read: p.ToolName(hybridctx.ViewRange), Search: p.ToolName(hybridctx.ViewSearch), Query: p.ToolName(hybridctx.ViewQuery)}
}

// Over returns p with each name n sets in place of p's. The result's
// Validate checks the names (the one check, with the rest of p).
func (n Names) Over(p hybridctx.Policy) hybridctx.Policy {
	if n.Read != "" {
		p.ReadToolName = n.Read
	}
	if n.Search != "" {
		p.SearchToolName = n.Search
	}
	if n.Query != "" {
		p.QueryToolName = n.Query
	}
	return p
}

// Has reports whether name is one of n (resolved names, as NamesOf
// returns them): the answers of the read tools are recovered content,
// never bounded or masked again.
func (n Names) Has(name string) bool {
	return name != "" && (name == n.Read || name == n.Search || name == n.Query)
}

// Options tune a Set. A nil *Options means defaults.
type Options struct {
	// BudgetCap bounds every call: the budget is min(max_bytes, BudgetCap),
	// or BudgetCap when the model gives no max_bytes. 0 means
	// DefaultBudgetCap.
	BudgetCap int64
	// Names overrides the tools' names.
	Names Names
}

// Tool describes one tool to a model.
type Tool struct {
	// Kind is which tool it is.
	Kind Kind
	// Name is the name the model calls it by.
	Name string
	// Title is a short human-readable title.
	Title string
	// Description tells the model what the tool does and how to page.
	Description string
	// InputSchema is the JSON schema of the arguments object.
	InputSchema json.RawMessage
}

// Set is the three read tools over one Rehydrator. It is safe for
// concurrent use.
type Set struct {
	reh   *hybridctx.Rehydrator
	cap   int64
	tools [3]Tool
}

// Errors of New and Call.
var (
	// ErrNilRehydrator is returned by New for a nil Rehydrator.
	ErrNilRehydrator = errors.New("readtools: nil rehydrator")
	// ErrUnknownTool is returned by Call for a name that is not one of the
	// Set's tools.
	ErrUnknownTool = errors.New("readtools: unknown tool")
	// ErrReadFailed is the Err of a Result whose call failed without a
	// decision (a storage error); its text is the categorical one the
	// model sees, and errors.Is still reaches the cause.
	ErrReadFailed = errors.New("hybridctx: the workspace could not be read; the call may be retried")
)

// New returns the read tools over reh. Invalid or clashing names and a
// negative cap are errors wrapping hybridctx.ErrInvalidPolicy.
func New(reh *hybridctx.Rehydrator, opts *Options) (*Set, error) {
	if reh == nil {
		return nil, ErrNilRehydrator
	}
	tools, cap, err := describe(opts)
	if err != nil {
		return nil, err
	}
	return &Set{reh: reh, cap: cap, tools: tools}, nil
}

// Describe returns the three tools' definitions under opts without a
// Rehydrator, for documentation and registration ahead of a binding.
func Describe(opts *Options) ([]Tool, error) {
	tools, _, err := describe(opts)
	if err != nil {
		return nil, err
	}
	return tools[:], nil
}

func describe(opts *Options) ([3]Tool, int64, error) {
	cap := int64(DefaultBudgetCap)
	var names Names
	if opts != nil {
		if opts.BudgetCap < 0 {
			return [3]Tool{}, 0, fmt.Errorf("%w: read tool budget cap must be >= 0", hybridctx.ErrInvalidPolicy)
		}
		if opts.BudgetCap > 0 {
			cap = opts.BudgetCap
		}
		names = opts.Names
	}
	p := names.Over(hybridctx.Policy{InlineThreshold: 1})
	if err := p.Validate(); err != nil {
		return [3]Tool{}, 0, err
	}
	n := NamesOf(p)
	read, search, query := n.Read, n.Search, n.Query
	return [3]Tool{
		{Kind: Read, Name: read, Title: "Read a stored tool result", Description: readDescription(cap), InputSchema: readSchema(cap)},
		{Kind: Search, Name: search, Title: "Search a stored tool result", Description: searchDescription(cap, read), InputSchema: searchSchema(cap)},
		{Kind: Query, Name: query, Title: "Query a stored JSON tool result", Description: queryDescription(cap, search), InputSchema: querySchema(cap)},
	}, cap, nil
}

// Tools returns the three tools: read, search, query.
func (s *Set) Tools() []Tool { return append([]Tool(nil), s.tools[:]...) }

// Tool returns the tool of kind k.
func (s *Set) Tool(k Kind) Tool { return s.tools[k-1] }

// Has reports whether name is one of the Set's tools.
func (s *Set) Has(name string) bool { _, ok := s.lookup(name); return ok }

func (s *Set) lookup(name string) (Kind, bool) {
	for _, t := range s.tools {
		if t.Name == name {
			return t.Kind, true
		}
	}
	return 0, false
}

// BudgetCap returns the host's cap on every call.
func (s *Set) BudgetCap() int64 { return s.cap }

// Budget returns the budget of a call whose model-given max_bytes is
// maxBytes (0 for none): min(maxBytes, cap).
func (s *Set) Budget(maxBytes int64) int64 {
	if maxBytes <= 0 {
		return s.cap
	}
	return min(maxBytes, s.cap)
}

// Result is the answer to one call.
type Result struct {
	// Kind is the tool that was called.
	Kind Kind
	// Rehydration is the decision, with its diagnostics, for the host; nil
	// when no decision was made (argument error, storage failure).
	Rehydration *hybridctx.Rehydration
	// Budget is the budget the call ran under (0 for argument errors).
	Budget int64
	// Segment holds the exact answer when resolved: the bytes of a range
	// or of whole lines, or the text of a search or query page. It is a
	// recovered segment, never offloaded again.
	Segment *hybridctx.Segment
	// Note, for a resolved lines read that stopped before the lines asked
	// for, says where to continue; show it after the answer.
	Note string
	// IsError reports a refusal: Text is then the categorical message to
	// return to the model as a tool error.
	IsError bool
	// Text is the refusal's text when IsError.
	Text string
	// Err is the cause of an IsError result made without a decision:
	// wrapping ErrInvalidArguments (a malformed pattern or filter too), or
	// ErrReadFailed and the storage error. Nil otherwise.
	Err error
}

// Bytes returns the answer's exact bytes (nil unless resolved).
func (r *Result) Bytes() []byte {
	if r.Segment == nil {
		return nil
	}
	return r.Segment.Bytes()
}

// UTF8 reports whether the answer is valid UTF-8, so it can be shown as
// text (search and query answers always are; a byte range may not be).
func (r *Result) UTF8() bool { return utf8.Valid(r.Bytes()) }

// ModelText returns what the model reads for a text answer: the answer,
// followed by the note on its own line when there is one; or the refusal.
func (r *Result) ModelText() string {
	if r.IsError {
		return r.Text
	}
	if r.Note == "" {
		return string(r.Bytes())
	}
	return string(r.Bytes()) + "\n" + r.Note
}

// Call runs one call of the tool named name with the model's JSON
// arguments. Every outcome, refusal and argument error is a *Result (a
// refusal has IsError and a categorical Text); the error is non-nil only
// for an unknown name (ErrUnknownTool) or a cancelled context.
func (s *Set) Call(ctx context.Context, name string, args json.RawMessage) (*Result, error) {
	k, ok := s.lookup(name)
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownTool, quoteShort(name))
	}
	return s.CallKind(ctx, k, args)
}

// CallKind is Call by kind rather than name.
func (s *Set) CallKind(ctx context.Context, k Kind, args json.RawMessage) (*Result, error) {
	var (
		res *Result
		err error
	)
	switch k {
	case Read:
		res, err = s.read(ctx, args)
	case Search:
		res, err = s.search(ctx, args)
	case Query:
		res, err = s.query(ctx, args)
	default:
		return nil, fmt.Errorf("%w: kind %d", ErrUnknownTool, k)
	}
	if res != nil {
		res.Kind = k
		if res.Err != nil && errors.Is(res.Err, ErrInvalidArguments) {
			res.Err = named(res.Err, s.tools[k-1].Name)
			res.Text = "hybridctx: " + res.Err.Error()
		}
	}
	return res, err
}

func (s *Set) read(ctx context.Context, raw json.RawMessage) (*Result, error) {
	a, err := ParseReadArgs(raw)
	if err != nil {
		return argsResult(err), nil
	}
	budget := s.Budget(a.MaxBytes)
	var rh *hybridctx.Rehydration
	if a.Lines() {
		rh, err = s.reh.ReadLines(ctx, hybridctx.LinesRequest{Reference: a.Reference, Budget: budget,
			StartLine: a.StartLine, LineCount: a.LineCount})
	} else {
		rh, err = s.reh.Rehydrate(ctx, hybridctx.Request{Reference: a.Reference, Budget: budget,
			Offset: a.Offset, Length: a.Length})
	}
	return s.result(ctx, rh, budget, err)
}

func (s *Set) search(ctx context.Context, raw json.RawMessage) (*Result, error) {
	a, err := ParseSearchArgs(raw)
	if err != nil {
		return argsResult(err), nil
	}
	budget := s.Budget(a.MaxBytes)
	rh, err := s.reh.Search(ctx, hybridctx.SearchRequest{Reference: a.Reference, Budget: budget,
		Pattern: a.Pattern, Regex: a.Regex, IgnoreCase: a.IgnoreCase, ContextLines: a.ContextLines,
		MaxMatches: a.MaxMatches, Skip: a.Skip})
	return s.result(ctx, rh, budget, err)
}

func (s *Set) query(ctx context.Context, raw json.RawMessage) (*Result, error) {
	a, err := ParseQueryArgs(raw)
	if err != nil {
		return argsResult(err), nil
	}
	budget := s.Budget(a.MaxBytes)
	rh, err := s.reh.Query(ctx, hybridctx.QueryRequest{Reference: a.Reference, Budget: budget,
		Filter: a.Filter, Skip: a.Skip})
	return s.result(ctx, rh, budget, err)
}

func argsResult(err error) *Result {
	return &Result{IsError: true, Text: "hybridctx: " + err.Error(), Err: err}
}

// result turns a view's decision (or its failure to decide) into what the
// model sees.
func (s *Set) result(ctx context.Context, rh *hybridctx.Rehydration, budget int64, err error) (*Result, error) {
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.Is(err, hybridctx.ErrInvalidRequest):
		// A malformed pattern or filter: its text names the rule, never
		// the argument.
		e := &argsErr{msg: requestDetail(err)} // named by CallKind
		return &Result{IsError: true, Text: "hybridctx: " + e.Error(), Err: e}, nil
	default:
		return &Result{IsError: true, Text: ErrReadFailed.Error(), Err: readFailed{cause: err}}, nil
	}
	res := &Result{Rehydration: rh, Budget: budget}
	if rh.Outcome() != hybridctx.Resolved {
		res.IsError, res.Text = true, s.Refusal(rh, budget)
		return res, nil
	}
	res.Segment = rh.Segment
	if rh.View() == hybridctx.ViewLines {
		res.Note = s.linesNote(rh)
	}
	return res, nil
}

type readFailed struct{ cause error }

func (e readFailed) Error() string   { return ErrReadFailed.Error() }
func (e readFailed) Unwrap() []error { return []error{ErrReadFailed, e.cause} }
