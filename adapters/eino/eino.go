// Package eino adapts hybridctx to CloudWeGo Eino (github.com/cloudwego/eino):
// a compose.ToolMiddleware that sends every tool result through an
// Offloader, the read tools (read_artifact, search_artifact,
// query_artifact; package readtools' definitions) as Eino tools, and an
// adk.AgentMiddleware that installs them on a ChatModelAgent and keeps its
// conversation within the policy's history budget.
//
// It lives in its own module so that the hybridctx core does not depend on
// Eino. Tool errors pass through unchanged (Eino treats them as failures of
// the tools node); the read tool answers every categorical outcome (over
// budget, unauthorized, stale, ...) and malformed arguments with a result
// text the model can act on, never with an error. Enhanced (multimodal)
// tools are not wrapped.
package eino

import (
	"context"
	"encoding/json"
	"errors"
	"io"

	"github.com/cloudwego/eino/adk"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
	"github.com/eino-contrib/jsonschema"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/adapters/internal/adaptkit"
	"github.com/hybridctx/hybridctx/agent"
)

// Options tune the adapter. The zero value means defaults.
type Options struct {
	// OnDecision, when set, receives every offload decision with the tool
	// call it decided, for the host (the model sees only the decision's
	// Text). It runs on the tool-call goroutine.
	OnDecision func(ctx context.Context, in *compose.ToolInput, out *hybridctx.OffloadResult)
	// Compaction, when set, is told of every compaction step of the
	// policy's history budget (sink.Summary counts them).
	Compaction hybridctx.CompactionObserver
}

// ErrNilOffloader is returned for a nil Offloader.
var ErrNilOffloader = errors.New("eino adapter: nil offloader")

// segmentSlot carries a verified segment from the read tool to the
// middleware that called it, through the call's context.
type segmentSlot struct{ seg *hybridctx.Segment }

type slotKey struct{}

// ToolMiddleware returns the middleware deciding every tool result with
// off. Invokable results are decided as they are; a result the read tool
// produced from a verified segment is inlined whatever its size
// (recovered_segment_bypass). Streamed results are read through
// Offloader.OffloadReader in bounded memory and replaced by a one-chunk
// stream of what the model must see.
func ToolMiddleware(off *hybridctx.Offloader, opts *Options) (compose.ToolMiddleware, error) {
	if off == nil {
		return compose.ToolMiddleware{}, ErrNilOffloader
	}
	var hook func(context.Context, *compose.ToolInput, *hybridctx.OffloadResult)
	if opts != nil {
		hook = opts.OnDecision
	}
	decided := func(ctx context.Context, in *compose.ToolInput, out *hybridctx.OffloadResult) {
		if hook != nil {
			hook(ctx, in, out)
		}
	}
	return compose.ToolMiddleware{
		Invokable: func(next compose.InvokableToolEndpoint) compose.InvokableToolEndpoint {
			return func(ctx context.Context, in *compose.ToolInput) (*compose.ToolOutput, error) {
				slot := &segmentSlot{}
				res, err := next(context.WithValue(ctx, slotKey{}, slot), in)
				if err != nil {
					return nil, err
				}
				var result any = res.Result
				if slot.seg != nil && string(slot.seg.Bytes()) == res.Result {
					result = slot.seg
				}
				out, err := off.Offload(ctx, hybridctx.Call{Tool: in.Name, ID: in.CallID}, result)
				if err != nil {
					return nil, err
				}
				decided(ctx, in, out)
				return &compose.ToolOutput{Result: out.Text()}, nil
			}
		},
		Streamable: func(next compose.StreamableToolEndpoint) compose.StreamableToolEndpoint {
			return func(ctx context.Context, in *compose.ToolInput) (*compose.StreamToolOutput, error) {
				res, err := next(ctx, in)
				if err != nil {
					return nil, err
				}
				defer res.Result.Close()
				out, err := off.OffloadReader(ctx, hybridctx.Call{Tool: in.Name, ID: in.CallID}, &streamReader{sr: res.Result})
				if err != nil {
					return nil, err
				}
				decided(ctx, in, out)
				return &compose.StreamToolOutput{Result: schema.StreamReaderFromArray([]string{out.Text()})}, nil
			}
		},
	}, nil
}

// streamReader reads a string stream as bytes.
type streamReader struct {
	sr  *schema.StreamReader[string]
	buf string
}

func (r *streamReader) Read(p []byte) (int, error) {
	for r.buf == "" {
		s, err := r.sr.Recv()
		if err != nil {
			return 0, err // io.EOF at the end
		}
		r.buf = s
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

var _ io.Reader = (*streamReader)(nil)

// ReadTool is the Eino form of an agent.ReadTool: read, search or query.
type ReadTool struct {
	rt   *agent.ReadTool
	info *schema.ToolInfo
}

var _ tool.InvokableTool = (*ReadTool)(nil)

// ErrNilReadTool is returned for a nil read tool.
var ErrNilReadTool = errors.New("eino adapter: nil read tool")

// NewReadTool returns rt as an Eino invokable tool.
func NewReadTool(rt *agent.ReadTool) (*ReadTool, error) {
	if rt == nil {
		return nil, ErrNilReadTool
	}
	spec := rt.Spec()
	var js jsonschema.Schema
	if err := json.Unmarshal(spec.Parameters, &js); err != nil {
		return nil, err
	}
	return &ReadTool{rt: rt, info: &schema.ToolInfo{Name: spec.Name, Desc: spec.Description,
		ParamsOneOf: schema.NewParamsOneOfByJSONSchema(&js)}}, nil
}

// Info implements tool.BaseTool.
func (t *ReadTool) Info(context.Context) (*schema.ToolInfo, error) { return t.info, nil }

// InvokableRun implements tool.InvokableTool: a resolved read returns the
// verified bytes (and hands the segment to the ToolMiddleware that called
// it, so it is never re-offloaded); every other outcome, and malformed
// arguments, return the categorical text for the model. The error is
// non-nil only for a cancelled context or a storage failure.
func (t *ReadTool) InvokableRun(ctx context.Context, args string, _ ...tool.Option) (string, error) {
	v, err := t.rt.Call(ctx, json.RawMessage(args))
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return "", ctx.Err()
	case errors.Is(err, agent.ErrReadRefused), errors.Is(err, agent.ErrInvalidArguments):
		return err.Error(), nil
	default:
		return "", err
	}
	seg := v.(*hybridctx.Segment)
	if slot, ok := ctx.Value(slotKey{}).(*segmentSlot); ok {
		slot.seg = seg
	}
	return string(seg.Bytes()), nil
}

// NewReadTools returns the three read tools as Eino tools: read, search,
// query.
func NewReadTools(rts *agent.ReadTools) ([]tool.BaseTool, error) {
	if rts == nil {
		return nil, ErrNilReadTool
	}
	var out []tool.BaseTool
	for _, rt := range []*agent.ReadTool{rts.Read(), rts.Search(), rts.Query()} {
		t, err := NewReadTool(rt)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// AgentMiddleware returns the middleware for an adk.ChatModelAgent: its
// WrapToolCall is ToolMiddleware(off), its AdditionalTools the three read
// tools, and its AdditionalInstruction one sentence telling the model how
// stored results come back. When off's policy has a history budget, its
// BeforeChatModel compacts the conversation before each model call
// (CompactMessages).
func AgentMiddleware(off *hybridctx.Offloader, rts *agent.ReadTools, opts *Options) (adk.AgentMiddleware, error) {
	mw, err := ToolMiddleware(off, opts)
	if err != nil {
		return adk.AgentMiddleware{}, err
	}
	tools, err := NewReadTools(rts)
	if err != nil {
		return adk.AgentMiddleware{}, err
	}
	am := adk.AgentMiddleware{
		AdditionalInstruction: "Large tool results are stored outside the conversation and replaced by a notice " +
			"whose first line is an artifact:// reference; find lines in them with " + rts.Search().Name() +
			", read lines or bytes with " + rts.Read().Name() + ", and query JSON with " + rts.Query().Name() + ".",
		AdditionalTools: tools,
		WrapToolCall:    mw,
	}
	var obs hybridctx.CompactionObserver
	if opts != nil {
		obs = opts.Compaction
	}
	if c := adaptkit.NewCompactor(off, obs); c != nil {
		reads := map[string]bool{rts.Read().Name(): true, rts.Search().Name(): true, rts.Query().Name(): true}
		am.BeforeChatModel = func(ctx context.Context, st *adk.ChatModelAgentState) error {
			return CompactMessages(ctx, c, func(n string) bool { return reads[n] }, st.Messages)
		}
	}
	return am, nil
}

// CompactMessages applies the history budget of c's policy (see
// docs/history.md) to msgs in place, before a model call: the tool
// messages over the budget, newest first below the recent ones, get their mask as Content, in new
// *schema.Message values (the ones msgs held are not modified, as other
// parts of the agent may share them); roles, tool call ids and the order
// stay. A tool message with multimodal content is never masked, nor is the
// answer of a tool isRead names. With the policy's HistoryPolicy.MaskInputs,
// the long strings of each answered call's Function.Arguments are masked
// too (docs/history.md, "Tool inputs"), in a new assistant message with its
// own ToolCalls slice. AgentMiddleware installs it as
// BeforeChatModel when the Offloader's policy has a history budget. The
// error wraps hybridctx.ErrInvalidHistory for a tool message without its
// call or two for one call, or is the context's; msgs is then unchanged.
func CompactMessages(ctx context.Context, c *hybridctx.Compactor, isRead func(string) bool, msgs []*schema.Message) error {
	var calls []adaptkit.ToolCall
	var results []adaptkit.ToolText
	var at []int
	var callAt [][2]int // message and tool call of each call
	for i, m := range msgs {
		if m == nil {
			continue
		}
		switch m.Role {
		case schema.Assistant:
			for j, tc := range m.ToolCalls {
				calls = append(calls, adaptkit.ToolCall{ID: tc.ID, Tool: tc.Function.Name, Args: tc.Function.Arguments})
				callAt = append(callAt, [2]int{i, j})
			}
		case schema.Tool:
			keep := len(m.MultiContent) > 0 || len(m.UserInputMultiContent) > 0
			results = append(results, adaptkit.ToolText{CallsBefore: len(calls), CallID: m.ToolCallID, Text: m.Content, Keep: keep})
			at = append(at, i)
		}
	}
	res, err := adaptkit.CompactTexts(ctx, c, isRead, calls, results)
	if err != nil || res == nil {
		return err
	}
	for k, ch := range res.Changed {
		if ch {
			m := *msgs[at[k]]
			m.Content = res.Texts[k]
			msgs[at[k]] = &m
		}
	}
	copied := map[int]bool{}
	for k, a := range res.Calls {
		if !a.Changed {
			continue
		}
		i, j := callAt[k][0], callAt[k][1]
		if !copied[i] {
			m := *msgs[i]
			m.ToolCalls = append([]schema.ToolCall(nil), m.ToolCalls...)
			msgs[i] = &m
			copied[i] = true
		}
		msgs[i].ToolCalls[j].Function.Arguments = a.Args
	}
	return nil
}
