package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/hybridctx/hybridctx"
	hybridanthropic "github.com/hybridctx/hybridctx/adapters/anthropic"
	"github.com/hybridctx/hybridctx/adapters/internal/adaptkit"
	"github.com/hybridctx/hybridctx/adapters/internal/adapttest"
	"github.com/hybridctx/hybridctx/readtools"
)

// run is the host's tool set: the big tool returns body, the failing tool
// fails with a secret in its error.
func run(body string) hybridanthropic.RunFunc {
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
	return sdk.NewClient(option.WithBaseURL(url), option.WithAPIKey("test-key"), option.WithMaxRetries(0))
}

// The whole round trip through the SDK's client: the model calls the big
// tool, sees the bounded notice, pages the body back with read_artifact.
func TestEndToEnd(t *testing.T) {
	env := adapttest.New(t, nil)
	body := adapttest.Body()
	h, err := hybridanthropic.New(env.Off, env.Reh, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &adapttest.Script{ReadTool: hybridctx.DefaultReadToolName, SearchTool: hybridctx.DefaultSearchToolName, Page: 65536}
	v, srv := newVendor(t, s)
	client := newClient(srv.URL)
	ctx := context.Background()
	tools := append([]sdk.ToolUnionParam{{OfTool: &sdk.ToolParam{Name: adapttest.BigTool,
		InputSchema: sdk.ToolInputSchemaParam{Properties: map[string]any{"path": map[string]any{"type": "string"}}}}}}, h.Tools()...)
	msgs := []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("Find the error in the log."))}
	for turn := 0; turn < 40; turn++ {
		msg, err := client.Messages.New(ctx, sdk.MessageNewParams{Model: "scripted", MaxTokens: 1024, Messages: msgs, Tools: tools})
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, msg.ToParam())
		var results []sdk.ContentBlockParamUnion
		for _, b := range msg.Content {
			if tu, ok := b.AsAny().(sdk.ToolUseBlock); ok {
				results = append(results, h.Handle(ctx, tu, run(body)))
			}
		}
		if len(results) == 0 {
			break
		}
		msgs = append(msgs, sdk.NewUserMessage(results...))
	}
	if err := s.Check(body); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(v.offered, hybridctx.DefaultReadToolName) || v.errors != 0 {
		t.Fatalf("tools offered %v, error results %d", v.offered, v.errors)
	}
	if len(v.bigResult) == 0 || len(v.bigResult) > 1024 || !strings.Contains(string(v.bigResult), s.Ref()) {
		t.Fatalf("the model received %d bytes for the 1 MiB result: %.300s", len(v.bigResult), v.bigResult)
	}
	t.Logf("1 MiB result: %d bytes of tool_result reach the model (notice %d bytes), %d pages", len(v.bigResult), len(s.Notice), len(s.Pages))
}

// The same round trip through the SDK's beta tool runner, with the host's
// tool and the read tools wrapped by the Handler.
func TestBetaToolRunner(t *testing.T) {
	env := adapttest.New(t, nil)
	body := adapttest.Body()
	h, err := hybridanthropic.New(env.Off, env.Reh, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &adapttest.Script{ReadTool: hybridctx.DefaultReadToolName, SearchTool: hybridctx.DefaultSearchToolName, Page: 65536}
	v, srv := newVendor(t, s)
	client := newClient(srv.URL)
	big := &textBetaTool{name: adapttest.BigTool, text: body}
	tools := append([]sdk.BetaTool{h.BetaTool(big)}, h.BetaReadTools()...)
	runner := client.Beta.Messages.NewToolRunner(tools, sdk.BetaToolRunnerParams{
		BetaMessageNewParams: sdk.BetaMessageNewParams{Model: "scripted", MaxTokens: 1024,
			Messages: []sdk.BetaMessageParam{sdk.NewBetaUserMessage(sdk.NewBetaTextBlock("Find the error in the log."))}},
		MaxIterations: 40, DisableThread: true})
	for {
		msg, err := runner.NextMessage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if msg == nil {
			break
		}
	}
	if err := s.Check(body); err != nil {
		t.Fatal(err)
	}
	if len(v.bigResult) == 0 || len(v.bigResult) > 1024 || v.errors != 0 {
		t.Fatalf("the model received %d bytes for the 1 MiB result, %d error results", len(v.bigResult), v.errors)
	}
}

// textBetaTool is a beta runner tool returning a fixed text or an error.
type textBetaTool struct {
	name, text string
	err        error
}

func (b *textBetaTool) Name() string        { return b.name }
func (b *textBetaTool) Description() string { return "returns a text" }
func (b *textBetaTool) InputSchema() sdk.BetaToolInputSchemaParam {
	return sdk.BetaToolInputSchemaParam{Properties: map[string]any{}}
}
func (b *textBetaTool) Execute(context.Context, json.RawMessage) ([]sdk.BetaToolResultBlockParamContentUnion, error) {
	if b.err != nil {
		return nil, b.err
	}
	return []sdk.BetaToolResultBlockParamContentUnion{{OfText: &sdk.BetaTextBlockParam{Text: b.text}}}, nil
}

func resultOf(t *testing.T, c sdk.ContentBlockParamUnion) (string, bool) {
	t.Helper()
	tr := c.OfToolResult
	if tr == nil || len(tr.Content) != 1 || tr.Content[0].OfText == nil {
		t.Fatalf("not a one-text tool_result: %#v", c)
	}
	return tr.Content[0].OfText.Text, tr.IsError.Valid() && tr.IsError.Value
}

func toolUse(id, name string, input any) sdk.ToolUseBlock {
	return sdk.ToolUseBlock{ID: id, Name: name, Input: adaptkit.RawArgs(input)}
}

// Another owner's reference is refused exactly like one never stored.
func TestOtherOwnerRefused(t *testing.T) {
	env := adapttest.New(t, nil)
	notice, err := env.Offload(context.Background(), adapttest.Body())
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := adapttest.RefOf(notice)
	hb, err := hybridanthropic.New(env.OffB, env.RehB, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	foreign, fe := resultOf(t, hb.Handle(ctx, toolUse("a", "read_artifact", map[string]any{"reference": ref}), nil))
	never, ne := resultOf(t, hb.Handle(ctx, toolUse("b", "read_artifact", map[string]any{"reference": adapttest.NeverStored}), nil))
	if !fe || !ne || foreign != never {
		t.Fatalf("foreign %v %q, never stored %v %q", fe, foreign, ne, never)
	}
	// The beta runner's read tool refuses with the same text.
	_, err = hb.BetaReadTools()[0].Execute(ctx, adaptkit.RawArgs(map[string]any{"reference": ref}))
	if err == nil || err.Error() != foreign {
		t.Fatalf("beta read tool: %v", err)
	}
}

// A tool error reaches the model as the categorical notice only.
func TestToolErrorHidden(t *testing.T) {
	env := adapttest.New(t, nil)
	h, _ := hybridanthropic.New(env.Off, env.Reh, nil)
	ctx := context.Background()
	for _, c := range []struct {
		name string
		run  hybridanthropic.RunFunc
	}{{adapttest.FailingTool, run("")}, {"no run func", nil}} {
		text, isErr := resultOf(t, h.Handle(ctx, toolUse("c", c.name, nil), c.run))
		if !isErr || text != adaptkit.ToolFailedNotice {
			t.Fatalf("%s: %v %q", c.name, isErr, text)
		}
	}
	bt := h.BetaTool(&textBetaTool{name: "x", err: errors.New(adapttest.Secret)})
	if _, err := bt.Execute(ctx, nil); err == nil || err.Error() != adaptkit.ToolFailedNotice {
		t.Fatalf("beta tool error: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	text, isErr := resultOf(t, h.Handle(cancelled, toolUse("d", adapttest.BigTool, nil), run(adapttest.Body())))
	if !isErr || text != adaptkit.ToolFailedNotice {
		t.Fatalf("cancelled: %v %q", isErr, text)
	}
}

func TestNewErrors(t *testing.T) {
	env := adapttest.New(t, nil)
	if _, err := hybridanthropic.New(nil, env.Reh, nil); !errors.Is(err, hybridanthropic.ErrNilOffloader) {
		t.Fatalf("nil offloader: %v", err)
	}
	if _, err := hybridanthropic.New(env.Off, nil, nil); !errors.Is(err, hybridanthropic.ErrNilRehydrator) {
		t.Fatalf("nil rehydrator: %v", err)
	}
	if _, err := hybridanthropic.New(env.Off, env.Reh, &hybridanthropic.Options{Names: readtools.Names{Search: "no spaces allowed"}}); !errors.Is(err, hybridctx.ErrInvalidPolicy) {
		t.Fatalf("bad name: %v", err)
	}
	h, _ := hybridanthropic.New(env.Off, env.Reh, nil)
	tools := h.Tools()
	raw, err := json.Marshal(tools[0])
	if err != nil || !strings.Contains(string(raw), `"additionalProperties":false`) || !strings.Contains(string(raw), `"required":["reference"]`) {
		t.Fatalf("read tool definition %s (%v)", raw, err)
	}
}

// OnDecision sees every decision of the host's tools, none of the reads.
func TestOnDecision(t *testing.T) {
	env := adapttest.New(t, nil)
	var got []string
	h, _ := hybridanthropic.New(env.Off, env.Reh, &hybridanthropic.Options{OnDecision: func(_ context.Context, tool string, out *hybridctx.OffloadResult) {
		got = append(got, tool+"/"+out.Outcome().String())
	}})
	ctx := context.Background()
	small := func(context.Context, string, json.RawMessage) (string, error) { return "ok", nil }
	if text, isErr := resultOf(t, h.Handle(ctx, toolUse("a", "small", nil), small)); text != "ok" || isErr {
		t.Fatalf("small: %q %v", text, isErr)
	}
	notice, _ := resultOf(t, h.Handle(ctx, toolUse("b", adapttest.BigTool, nil), run(adapttest.Body())))
	ref, _ := adapttest.RefOf(notice)
	page, isErr := resultOf(t, h.Handle(ctx, toolUse("c", "read_artifact", map[string]any{"reference": ref, "length": 6}), nil))
	if page != adapttest.Body()[:6] || isErr {
		t.Fatalf("read: %q %v", page, isErr)
	}
	if strings.Join(got, ",") != "small/inline,fetch_log/offloaded" {
		t.Fatalf("decisions %v", got)
	}
}
