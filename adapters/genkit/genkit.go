// Package genkit adapts hybridctx to Firebase Genkit for Go
// (github.com/firebase/genkit/go): Middleware is an ai.ModelMiddleware
// that bounds every tool response before the model sees it, and ReadTools
// are the read tools as Genkit tools.
//
// Genkit runs tools itself and hands their outputs to the model in the
// next request, so the bound sits at the model's input: each tool
// response's output is decided once with the Offloader, and a stored one is
// replaced, in the conversation itself, by the bounded notice (the part is
// marked so later turns do not decide it again). A tool's error ends
// Generate with an error for the host; Genkit never sends it to the model.
// The extra content parts of a multipart tool response are bounded too,
// each with a decision of its own: text and JSON data parts by their text,
// inline media (a base64 data: URL) by its decoded bytes.
//
// It lives in its own module so that the hybridctx core does not depend on
// Genkit.
package genkit

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/core"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/adapters/internal/adaptkit"
	"github.com/hybridctx/hybridctx/readtools"
)

// MetadataKey marks, in a tool response part's metadata, a response the
// middleware has decided; its value is the reference when stored, else "".
const MetadataKey = "hybridctx"

// Options tune the middleware and the read tools. A nil *Options means
// defaults.
type Options struct {
	// Budget caps every read; 0 means the read tools' default.
	Budget int64
	// Names overrides the read tools' names; empty names keep those of the
	// Offloader's policy (Middleware) or the defaults (ReadTools). ReadTools
	// needs readtools.NamesOf(off.Policy()), the names the notices point to.
	Names readtools.Names
	// OnDecision, when set, receives every offload decision with the tool
	// name it decided, for the host (the model sees only the notice).
	OnDecision func(ctx context.Context, tool string, out *hybridctx.OffloadResult)
	// Compaction, when set (Middleware), is told of every compaction step of the
	// policy's history budget (sink.Summary counts them).
	Compaction hybridctx.CompactionObserver
}

// ErrNilRehydrator is returned by ReadTools for a nil Rehydrator.
var ErrNilRehydrator = adaptkit.ErrNilRehydrator

// Middleware returns a model middleware bounding tool responses:
//
//	genkit.Generate(ctx, g, ai.WithTools(tools...), ai.WithMiddleware(hybridgenkit.Middleware(off, nil)), ...)
//
// Every tool response in the request not yet decided (and not from a read
// tool) is decided with off: kept when inline, its output replaced by the
// bounded notice (a string) when stored, by the categorical notice when
// the decision failed. When off's policy has a history budget, the
// request's tool responses are then compacted (see docs/history.md): the
// older ones over the budget get their mask as output, in the conversation
// itself, so later turns keep the same prefix. A request whose tool
// responses do not pair with its requests then fails with an error
// wrapping hybridctx.ErrInvalidHistory. off must not be nil.
func Middleware(off *hybridctx.Offloader, opts *Options) ai.ModelMiddleware {
	if off == nil {
		panic("genkit.Middleware: nil Offloader")
	}
	var names readtools.Names
	var hook func(context.Context, string, *hybridctx.OffloadResult)
	var obs hybridctx.CompactionObserver
	if opts != nil {
		names, hook, obs = opts.Names, opts.OnDecision, opts.Compaction
	}
	isRead := readtools.NamesOf(names.Over(off.Policy())).Has
	history := adaptkit.NewCompactor(off, obs)
	return func(next core.StreamingFunc[*ai.ModelRequest, *ai.ModelResponse, *ai.ModelResponseChunk]) core.StreamingFunc[*ai.ModelRequest, *ai.ModelResponse, *ai.ModelResponseChunk] {
		return func(ctx context.Context, req *ai.ModelRequest, cb ai.ModelStreamCallback) (*ai.ModelResponse, error) {
			for _, m := range req.Messages {
				if m == nil {
					continue
				}
				for i, p := range m.Content {
					if p == nil || !p.IsToolResponse() || p.ToolResponse == nil || isRead(p.ToolResponse.Name) {
						continue
					}
					if _, done := p.Metadata[MetadataKey]; done {
						continue
					}
					np, err := decide(ctx, off, hook, p)
					if err != nil {
						return nil, err
					}
					m.Content[i] = np
				}
			}
			if history != nil {
				if err := compact(ctx, history, isRead, req.Messages); err != nil {
					return nil, err
				}
			}
			return next(ctx, req, cb)
		}
	}
}

// decide returns p decided: a copy marked with MetadataKey, its output
// replaced unless inline.
func decide(ctx context.Context, off *hybridctx.Offloader, hook func(context.Context, string, *hybridctx.OffloadResult), p *ai.Part) (*ai.Part, error) {
	tr := *p.ToolResponse
	text, ref, inline, err := decideOne(ctx, off, hook, tr, tr.Output)
	if err != nil {
		return nil, err
	}
	if !inline {
		tr.Output = text
	}
	if tr.Content, err = decideParts(ctx, off, hook, tr, tr.Content); err != nil {
		return nil, err
	}
	np := *p
	np.ToolResponse = &tr
	np.Metadata = make(map[string]any, len(p.Metadata)+1)
	for k, v := range p.Metadata {
		np.Metadata[k] = v
	}
	np.Metadata[MetadataKey] = ref
	return &np, nil
}

// decideParts decides the extra parts of a multipart tool response that
// carry content, one decision each: a part not kept inline becomes a text
// part holding its notice, marked like a decided response. Other parts
// stay; the slice is copied only when a part changes.
func decideParts(ctx context.Context, off *hybridctx.Offloader, hook func(context.Context, string, *hybridctx.OffloadResult), tr ai.ToolResponse, parts []*ai.Part) ([]*ai.Part, error) {
	out, copied := parts, false
	for i, p := range parts {
		payload, ok := partPayload(p)
		if !ok {
			continue
		}
		text, ref, inline, err := decideOne(ctx, off, hook, tr, payload)
		if err != nil {
			return nil, err
		}
		if inline {
			continue
		}
		if !copied {
			out, copied = slices.Clone(parts), true
		}
		np := ai.NewTextPart(text)
		np.Metadata = map[string]any{MetadataKey: ref}
		out[i] = np
	}
	return out, nil
}

// decideOne decides one payload of the tool response tr and reports it to
// hook: the text the model sees in its place unless inline, and the
// reference when stored.
func decideOne(ctx context.Context, off *hybridctx.Offloader, hook func(context.Context, string, *hybridctx.OffloadResult), tr ai.ToolResponse, payload any) (text, ref string, inline bool, err error) {
	r, err := adaptkit.Decide(ctx, off, hybridctx.Call{Tool: tr.Name, ID: tr.Ref}, payload)
	if err != nil {
		return "", "", false, err
	}
	if o := r.Offload; o != nil {
		if hook != nil {
			hook(ctx, tr.Name, o)
		}
		if !o.Ref.IsZero() {
			ref = o.Ref.String()
		}
		inline = o.Outcome() == hybridctx.Inline
	}
	return r.Text, ref, inline, nil
}

// partPayload returns the content of an extra part to decide: the text of
// a text or JSON data part, the bytes of inline base64 media. Media behind
// a URL, a malformed data: URL and every other kind of part have none.
func partPayload(p *ai.Part) (any, bool) {
	switch {
	case p == nil:
		return nil, false
	case p.IsText(), p.IsData():
		return p.Text, true
	case p.IsMedia():
		head, data, ok := strings.Cut(p.Text, ",")
		if !ok || !strings.HasPrefix(head, "data:") || !strings.HasSuffix(head, ";base64") {
			return nil, false
		}
		b, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			return nil, false
		}
		return b, true
	}
	return nil, false
}

// ReadTools returns the read tools over reh (read_artifact,
// search_artifact, query_artifact) as Genkit tools, to pass with
// ai.WithTools. Each returns the exact answer, or the categorical refusal
// text, as its string output; its error is non-nil only for a cancelled
// context. Invalid names are an error wrapping hybridctx.ErrInvalidPolicy.
func ReadTools(reh *hybridctx.Rehydrator, opts *Options) ([]ai.ToolRef, error) {
	set, err := opts.reads(reh)
	if err != nil {
		return nil, err
	}
	var out []ai.ToolRef
	for _, d := range set.Tools() {
		var schema map[string]any
		if err := json.Unmarshal(d.InputSchema, &schema); err != nil {
			return nil, err
		}
		name := d.Name
		out = append(out, ai.NewTool(name, strings.TrimSpace(d.Description),
			func(tc *ai.ToolContext, input any) (string, error) {
				r, _ := adaptkit.Read(tc, set, name, adaptkit.RawArgs(input))
				if err := tc.Err(); err != nil {
					return "", err
				}
				return r.Text, nil
			}, ai.WithInputSchema(schema)))
	}
	return out, nil
}

// reads returns the read tools' set over reh under o (nil: defaults).
func (o *Options) reads(reh *hybridctx.Rehydrator) (*readtools.Set, error) {
	if o == nil {
		return adaptkit.NewReads(reh, readtools.Names{}, 0)
	}
	return adaptkit.NewReads(reh, o.Names, o.Budget)
}
