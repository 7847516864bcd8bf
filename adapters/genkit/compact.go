package genkit

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/firebase/genkit/go/ai"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/adapters/internal/adaptkit"
)

// compact applies the history budget of c's policy (see docs/history.md)
// to the request's tool responses, after they were decided and before the
// model call: older ones over the budget get their mask as output (a
// string), in new parts marked like decided ones; requests, refs, roles and
// the order stay. With the policy's HistoryPolicy.MaskInputs, the long
// strings of each answered request's Input are masked too (docs/history.md,
// "Tool inputs"), in a new part, the Input keeping its Go type and JSON
// shape. A response with extra content parts is never masked, nor
// is a read tool's. Calls without a ref are paired by tool name and order.
func compact(ctx context.Context, c *hybridctx.Compactor, isRead func(string) bool, msgs []*ai.Message) error {
	var calls []adaptkit.ToolCall
	var results []adaptkit.ToolText
	type at struct{ m, p int }
	var where, callAt []at
	reqs, resps := map[string]int{}, map[string]int{}
	for i, m := range msgs {
		if m == nil {
			continue
		}
		for j, p := range m.Content {
			switch {
			case p == nil:
			case p.IsToolRequest() && p.ToolRequest != nil:
				calls = append(calls, adaptkit.ToolCall{ID: callID(p.ToolRequest.Ref, p.ToolRequest.Name, reqs), Tool: p.ToolRequest.Name, Value: p.ToolRequest.Input})
				callAt = append(callAt, at{i, j})
			case p.IsToolResponse() && p.ToolResponse != nil:
				tr := p.ToolResponse
				text, ok := outputText(tr.Output)
				results = append(results, adaptkit.ToolText{CallsBefore: len(calls), CallID: callID(tr.Ref, tr.Name, resps), Text: text, Keep: !ok || len(tr.Content) > 0})
				where = append(where, at{i, j})
			}
		}
	}
	res, err := adaptkit.CompactTexts(ctx, c, isRead, calls, results)
	if err != nil || res == nil {
		return err
	}
	for k, a := range res.Calls {
		if a.Changed {
			p := msgs[callAt[k].m].Content[callAt[k].p]
			tr := *p.ToolRequest
			tr.Input = a.Value
			np := *p
			np.ToolRequest = &tr
			msgs[callAt[k].m].Content[callAt[k].p] = &np
		}
	}
	for k, ch := range res.Changed {
		if !ch {
			continue
		}
		p := msgs[where[k].m].Content[where[k].p]
		tr := *p.ToolResponse
		tr.Output = res.Texts[k]
		np := *p
		np.ToolResponse = &tr
		np.Metadata = make(map[string]any, len(p.Metadata)+1)
		for key, v := range p.Metadata {
			np.Metadata[key] = v
		}
		if st, ok := hybridctx.ParseStoredText(res.Texts[k]); ok {
			np.Metadata[MetadataKey] = st.Ref.String()
		}
		msgs[where[k].m].Content[where[k].p] = &np
	}
	return nil
}

// callID is the id a tool request or response pairs by: its ref, or for
// one without, its tool name and its position among those of that name.
func callID(ref, name string, seen map[string]int) string {
	if ref != "" {
		return ref
	}
	n := seen[name]
	seen[name] = n + 1
	return "\x00" + name + "\x00" + strconv.Itoa(n)
}

// outputText is the text the model sees of a tool response's output: a
// string as it is, anything else as JSON.
func outputText(v any) (string, bool) {
	if s, ok := v.(string); ok {
		return s, true
	}
	b, err := json.Marshal(v)
	return string(b), err == nil
}
