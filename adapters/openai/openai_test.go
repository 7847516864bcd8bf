package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/adapters/internal/adaptkit"
	"github.com/hybridctx/hybridctx/adapters/internal/adapttest"
	hybridopenai "github.com/hybridctx/hybridctx/adapters/openai"
	"github.com/hybridctx/hybridctx/readtools"
)

// run is the host's tool set: the big tool returns body, the failing tool
// fails with a secret in its error.
func run(body string) hybridopenai.RunFunc {
	return func(_ context.Context, name string, _ json.RawMessage) (string, error) {
		switch name {
		case adapttest.BigTool:
			return body, nil
		case adapttest.FailingTool:
			return "", errors.New(adapttest.Secret)
		}
		return "", errors.New("no such tool")
	}
}

func newClient(url string) sdk.Client {
	return sdk.NewClient(option.WithBaseURL(url+"/v1/"), option.WithAPIKey("test-key"), option.WithMaxRetries(0))
}

func newScript() *adapttest.Script {
	return &adapttest.Script{ReadTool: hybridctx.DefaultReadToolName, SearchTool: hybridctx.DefaultSearchToolName, Page: 65536}
}

func checkVendor(t *testing.T, v *vendor, s *adapttest.Script, body string) {
	t.Helper()
	if err := s.Check(body); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(v.offered, hybridctx.DefaultReadToolName) || !slices.Contains(v.offered, hybridctx.DefaultQueryToolName) {
		t.Fatalf("tools offered %v", v.offered)
	}
	if len(v.bigResult) == 0 || len(v.bigResult) > 1024 || !strings.Contains(string(v.bigResult), s.Ref()) {
		t.Fatalf("the model received %d bytes for the 1 MiB result: %.300s", len(v.bigResult), v.bigResult)
	}
	t.Logf("1 MiB result: %d bytes of tool output reach the model (notice %d bytes), %d pages", len(v.bigResult), len(s.Notice), len(s.Pages))
}

// The whole round trip through the SDK's Chat Completions client.
func TestChatEndToEnd(t *testing.T) {
	env := adapttest.New(t, nil)
	body := adapttest.Body()
	h, err := hybridopenai.New(env.Off, env.Reh, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := newScript()
	v, srv := newVendor(t, s)
	client := newClient(srv.URL)
	ctx := context.Background()
	tools := append([]sdk.ChatCompletionToolUnionParam{sdk.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name: adapttest.BigTool, Parameters: shared.FunctionParameters{"type": "object"}})}, h.ChatTools()...)
	msgs := []sdk.ChatCompletionMessageParamUnion{sdk.UserMessage("Find the error in the log.")}
	for turn := 0; turn < 40; turn++ {
		c, err := client.Chat.Completions.New(ctx, sdk.ChatCompletionNewParams{Model: "scripted", Messages: msgs, Tools: tools})
		if err != nil {
			t.Fatal(err)
		}
		m := c.Choices[0].Message
		msgs = append(msgs, m.ToParam())
		if len(m.ToolCalls) == 0 {
			break
		}
		for _, tc := range m.ToolCalls {
			msgs = append(msgs, h.HandleChat(ctx, tc.AsFunction(), run(body)))
		}
	}
	checkVendor(t, v, s, body)
}

// The whole round trip through the SDK's Responses client.
func TestResponsesEndToEnd(t *testing.T) {
	env := adapttest.New(t, nil)
	body := adapttest.Body()
	h, err := hybridopenai.New(env.Off, env.Reh, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := newScript()
	v, srv := newVendor(t, s)
	client := newClient(srv.URL)
	ctx := context.Background()
	tools := append([]responses.ToolUnionParam{responses.ToolParamOfFunction(adapttest.BigTool, map[string]any{"type": "object"}, false)}, h.ResponseTools()...)
	input := responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage("Find the error in the log.", responses.EasyInputMessageRoleUser)}
	for turn := 0; turn < 40; turn++ {
		r, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: "scripted",
			Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input}, Tools: tools})
		if err != nil {
			t.Fatal(err)
		}
		calls := 0
		for _, item := range r.Output {
			if item.Type != "function_call" {
				continue
			}
			fc := item.AsFunctionCall()
			calls++
			input = append(input, responses.ResponseInputItemParamOfFunctionCall(fc.Arguments, fc.CallID, fc.Name),
				h.HandleResponse(ctx, fc, run(body)))
		}
		if calls == 0 {
			break
		}
	}
	checkVendor(t, v, s, body)
}

func chatCall(id, name string, args any) sdk.ChatCompletionMessageFunctionToolCall {
	return sdk.ChatCompletionMessageFunctionToolCall{ID: id,
		Function: sdk.ChatCompletionMessageFunctionToolCallFunction{Name: name, Arguments: string(adaptkit.RawArgs(args))}}
}

func chatText(t *testing.T, m sdk.ChatCompletionMessageParamUnion) string {
	t.Helper()
	if m.OfTool == nil || !m.OfTool.Content.OfString.Valid() {
		t.Fatalf("not a text tool message: %#v", m)
	}
	return m.OfTool.Content.OfString.Value
}

func respText(t *testing.T, it responses.ResponseInputItemUnionParam) string {
	t.Helper()
	if it.OfFunctionCallOutput == nil || !it.OfFunctionCallOutput.Output.OfString.Valid() {
		t.Fatalf("not a text function_call_output: %#v", it)
	}
	return it.OfFunctionCallOutput.Output.OfString.Value
}

// Another owner's reference is refused exactly like one never stored, in
// both APIs.
func TestOtherOwnerRefused(t *testing.T) {
	env := adapttest.New(t, nil)
	notice, err := env.Offload(context.Background(), adapttest.Body())
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := adapttest.RefOf(notice)
	hb, err := hybridopenai.New(env.OffB, env.RehB, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tool := range []string{hybridctx.DefaultReadToolName, hybridctx.DefaultSearchToolName} {
		args := func(r string) map[string]any { return map[string]any{"reference": r, "pattern": "x"} }
		if tool == hybridctx.DefaultReadToolName {
			args = func(r string) map[string]any { return map[string]any{"reference": r} }
		}
		foreign := chatText(t, hb.HandleChat(ctx, chatCall("a", tool, args(ref)), nil))
		never := chatText(t, hb.HandleChat(ctx, chatCall("b", tool, args(adapttest.NeverStored)), nil))
		resp := respText(t, hb.HandleResponse(ctx, responses.ResponseFunctionToolCall{CallID: "c", Name: tool,
			Arguments: string(adaptkit.RawArgs(args(ref)))}, nil))
		if foreign != never || resp != never || !strings.HasPrefix(never, "hybridctx: unauthorized") {
			t.Fatalf("%s: foreign %q, never stored %q, responses %q", tool, foreign, never, resp)
		}
	}
}

// A tool error reaches the model as the categorical notice only.
func TestToolErrorHidden(t *testing.T) {
	env := adapttest.New(t, nil)
	h, _ := hybridopenai.New(env.Off, env.Reh, nil)
	ctx := context.Background()
	if got := chatText(t, h.HandleChat(ctx, chatCall("a", adapttest.FailingTool, nil), run(""))); got != adaptkit.ToolFailedNotice {
		t.Fatalf("chat: %q", got)
	}
	if got := respText(t, h.HandleResponse(ctx, responses.ResponseFunctionToolCall{CallID: "b", Name: adapttest.FailingTool}, run(""))); got != adaptkit.ToolFailedNotice {
		t.Fatalf("responses: %q", got)
	}
	if got := chatText(t, h.HandleChat(ctx, chatCall("c", "anything", nil), nil)); got != adaptkit.ToolFailedNotice {
		t.Fatalf("nil run: %q", got)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if got := chatText(t, h.HandleChat(cancelled, chatCall("d", adapttest.BigTool, nil), run(adapttest.Body()))); got != adaptkit.ToolFailedNotice {
		t.Fatalf("cancelled: %q", got)
	}
}

func TestNewErrors(t *testing.T) {
	env := adapttest.New(t, nil)
	if _, err := hybridopenai.New(nil, env.Reh, nil); !errors.Is(err, hybridopenai.ErrNilOffloader) {
		t.Fatalf("nil offloader: %v", err)
	}
	if _, err := hybridopenai.New(env.Off, nil, nil); !errors.Is(err, hybridopenai.ErrNilRehydrator) {
		t.Fatalf("nil rehydrator: %v", err)
	}
	if _, err := hybridopenai.New(env.Off, env.Reh, &hybridopenai.Options{Names: readtools.Names{Query: "bad name"}}); !errors.Is(err, hybridctx.ErrInvalidPolicy) {
		t.Fatalf("bad name: %v", err)
	}
}

// OnDecision sees every decision of the host's tools, none of the reads.
func TestOnDecision(t *testing.T) {
	env := adapttest.New(t, nil)
	var got []string
	h, _ := hybridopenai.New(env.Off, env.Reh, &hybridopenai.Options{OnDecision: func(_ context.Context, tool string, out *hybridctx.OffloadResult) {
		got = append(got, tool+"/"+out.Outcome().String())
	}})
	ctx := context.Background()
	small := func(context.Context, string, json.RawMessage) (string, error) { return "ok", nil }
	if text := chatText(t, h.HandleChat(ctx, chatCall("a", "small", nil), small)); text != "ok" {
		t.Fatalf("small: %q", text)
	}
	notice := respText(t, h.HandleResponse(ctx, responses.ResponseFunctionToolCall{CallID: "b", Name: adapttest.BigTool}, run(adapttest.Body())))
	ref, _ := adapttest.RefOf(notice)
	if page := chatText(t, h.HandleChat(ctx, chatCall("c", "read_artifact", map[string]any{"reference": ref, "start_line": 1, "line_count": 1}), nil)); page != strings.SplitAfter(adapttest.Body(), "\n")[0] {
		t.Fatalf("read: %q", page)
	}
	if strings.Join(got, ",") != "small/inline,fetch_log/offloaded" {
		t.Fatalf("decisions %v", got)
	}
}
