package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/hybridctx/hybridctx/adapters/internal/adaptkit"
)

// The beta tool runner (client.Beta.Messages.NewToolRunner) runs
// sdk.BetaTool values itself and turns an Execute error into an is_error
// result reading "Error: " and the error's text. BetaTool and BetaReadTools
// plug into it: a wrapped tool's text output is bounded, its error replaced
// by the categorical failure notice, and a read tool's refusal returned as
// an error holding the categorical text (so the runner marks it is_error).
//
//	runner := client.Beta.Messages.NewToolRunner(
//		append([]sdk.BetaTool{h.BetaTool(myTool)}, h.BetaReadTools()...), params)

// failedError is the error a wrapped beta tool returns in place of the
// tool's own: its text is the categorical notice, a model-facing sentence.
type failedError struct{}

func (failedError) Error() string { return adaptkit.ToolFailedNotice }

// BetaTool returns t with its output bounded: the text blocks of its
// result are joined and decided as one result (inline, or the bounded
// notice in their place), other blocks pass unchanged. An error from t
// becomes an error whose text is the categorical failure notice.
func (h *Handler) BetaTool(t sdk.BetaTool) sdk.BetaTool { return &betaTool{h: h, t: t} }

type betaTool struct {
	h *Handler
	t sdk.BetaTool
}

func (b *betaTool) Name() string                              { return b.t.Name() }
func (b *betaTool) Description() string                       { return b.t.Description() }
func (b *betaTool) InputSchema() sdk.BetaToolInputSchemaParam { return b.t.InputSchema() }

// Execute runs the wrapped tool and bounds its text.
func (b *betaTool) Execute(ctx context.Context, input json.RawMessage) ([]sdk.BetaToolResultBlockParamContentUnion, error) {
	blocks, err := b.t.Execute(ctx, input)
	if err != nil {
		return nil, failedError{}
	}
	var text strings.Builder
	var rest []sdk.BetaToolResultBlockParamContentUnion
	for _, c := range blocks {
		if c.OfText != nil {
			text.WriteString(c.OfText.Text)
			continue
		}
		rest = append(rest, c)
	}
	r := b.h.handle(ctx, "", b.t.Name(), input, func(context.Context, string, json.RawMessage) (string, error) {
		return text.String(), nil
	})
	if r.IsError {
		return nil, errors.New(r.Text)
	}
	out := []sdk.BetaToolResultBlockParamContentUnion{{OfText: &sdk.BetaTextBlockParam{Text: r.Text}}}
	return append(out, rest...), nil
}

// BetaReadTools returns the read tools as beta runner tools.
func (h *Handler) BetaReadTools() []sdk.BetaTool {
	var out []sdk.BetaTool
	for _, t := range h.tools { // converted and checked once, by New
		d := t.OfTool
		s := d.InputSchema
		out = append(out, &betaReadTool{h: h, name: d.Name, desc: d.Description.Value,
			schema: sdk.BetaToolInputSchemaParam{Properties: s.Properties, Required: s.Required, ExtraFields: s.ExtraFields}})
	}
	return out
}

type betaReadTool struct {
	h          *Handler
	name, desc string
	schema     sdk.BetaToolInputSchemaParam
}

func (b *betaReadTool) Name() string                              { return b.name }
func (b *betaReadTool) Description() string                       { return b.desc }
func (b *betaReadTool) InputSchema() sdk.BetaToolInputSchemaParam { return b.schema }

// Execute answers one read; a refusal is an error holding its categorical
// text.
func (b *betaReadTool) Execute(ctx context.Context, input json.RawMessage) ([]sdk.BetaToolResultBlockParamContentUnion, error) {
	r := b.h.handle(ctx, "", b.name, input, nil)
	if r.IsError {
		return nil, errors.New(r.Text)
	}
	return []sdk.BetaToolResultBlockParamContentUnion{{OfText: &sdk.BetaTextBlockParam{Text: r.Text}}}, nil
}
