package eino_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cloudwego/eino/adk"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"

	"github.com/hybridctx/hybridctx"
	hybrideino "github.com/hybridctx/hybridctx/adapters/eino"
	"github.com/hybridctx/hybridctx/adapters/internal/adapttest"
	"github.com/hybridctx/hybridctx/agent"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

// countTool returns a different 1,000-byte text on each call (inline under
// a 4,096-byte threshold).
type countTool struct{ n *int }

func (t countTool) Info(context.Context) (*schema.ToolInfo, error) {
	return &schema.ToolInfo{Name: "page", Desc: "returns the next page"}, nil
}

func (t countTool) InvokableRun(context.Context, string, ...tool.Option) (string, error) {
	*t.n++
	return pageText(*t.n), nil
}

func pageText(n int) string { return fmt.Sprintf("page %03d ", n) + logText(991) }

// TestAgentHistoryBudget runs an adk.ChatModelAgent under Eino's Runner with
// a history budget of 3,000 bytes: eight 1,000-byte results take it over, the
// middleware masks the oldest before the model call, and the model reads the
// first one back through read_artifact by its mask.
func TestAgentHistoryBudget(t *testing.T) {
	mem := memstore.New()
	bind, _ := hybridctx.NewBinding(artifact.Owner{User: "ada", Workflow: "eino", Session: "s1"}, workspace.New(mem, mem))
	off, err := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: 4096,
		History: hybridctx.HistoryPolicy{Budget: 3000, KeepRecent: 2}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	reh, _ := hybridctx.NewRehydrator(bind, nil)
	rts, _ := agent.NewReadTools(reh, nil)
	mw, err := hybrideino.AgentMiddleware(off, rts, nil)
	if err != nil || mw.BeforeChatModel == nil {
		t.Fatalf("middleware: %v", err)
	}
	var steps []func([]*schema.Message) *schema.Message
	for i := range 8 {
		steps = append(steps, func([]*schema.Message) *schema.Message {
			return schema.AssistantMessage("", []schema.ToolCall{call(fmt.Sprintf("c%d", i), "page", "{}")})
		})
	}
	var mask string
	steps = append(steps, func(in []*schema.Message) *schema.Message {
		for _, m := range in {
			if m.Role == schema.Tool && m.ToolCallID == "c0" {
				mask = m.Content
			}
		}
		st, _ := hybridctx.ParseStoredText(mask)
		args := fmt.Sprintf(`{"reference":%q,"offset":0,"length":%d}`, st.Ref.String(), st.Size)
		return schema.AssistantMessage("", []schema.ToolCall{call("r", "read_artifact", args)})
	}, func([]*schema.Message) *schema.Message { return schema.AssistantMessage("done", nil) })
	chat := &scriptedChat{steps: steps}
	n := 0
	ag, err := adk.NewChatModelAgent(context.Background(), &adk.ChatModelAgentConfig{
		Name: "pager", Description: "pages", Instruction: "Read pages.", Model: chat,
		ToolsConfig: adk.ToolsConfig{ToolsNodeConfig: compose.ToolsNodeConfig{Tools: []tool.BaseTool{countTool{n: &n}}}},
		Middlewares: []adk.AgentMiddleware{mw}, MaxIterations: 20,
	})
	if err != nil {
		t.Fatal(err)
	}
	iter := adk.NewRunner(context.Background(), adk.RunnerConfig{Agent: ag}).Query(context.Background(), "Read every page.")
	for {
		ev, ok := iter.Next()
		if !ok {
			break
		}
		if ev.Err != nil {
			t.Fatal(ev.Err)
		}
	}
	if len(chat.seen) != 10 {
		t.Fatalf("%d model calls", len(chat.seen))
	}
	if st, ok := hybridctx.ParseStoredText(mask); !ok || !st.Masked || len(mask) > hybridctx.MaxMaskLen {
		t.Fatalf("the first page is not masked: %q", mask)
	}
	last := chat.seen[9]
	var tool int
	for i, m := range last {
		if m.Role == schema.Tool && m.ToolCallID != "r" {
			tool += len(m.Content)
		}
		if i > 0 && m.Role == schema.Tool && last[i-1].Role != schema.Assistant && last[i-1].Role != schema.Tool {
			t.Fatalf("message %d: a tool message after a %s message", i, last[i-1].Role)
		}
	}
	if got := last[len(last)-1]; got.ToolCallID != "r" || got.Content != pageText(1) {
		t.Fatalf("the read answered %q", got.Content)
	}
	if tool > 3000 {
		t.Fatalf("tool content %d over the budget", tool)
	}
}

func TestCompactMessagesErrors(t *testing.T) {
	mem := memstore.New()
	bind, _ := hybridctx.NewBinding(artifact.Owner{User: "ada", Workflow: "eino", Session: "s1"}, workspace.New(mem, mem))
	off, _ := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: threshold, History: hybridctx.HistoryPolicy{Budget: 10, KeepRecent: -1}}, nil)
	c, _ := hybridctx.NewCompactor(off, nil)
	orphan := []*schema.Message{schema.ToolMessage(strings.Repeat("x", 500), "nobody")}
	before := orphan[0]
	if err := hybrideino.CompactMessages(context.Background(), c, func(string) bool { return false }, orphan); !errors.Is(err, hybridctx.ErrInvalidHistory) || orphan[0] != before {
		t.Fatalf("orphan: %v", err)
	}
	// A tool message before the assistant message that calls it.
	early := []*schema.Message{schema.ToolMessage(strings.Repeat("z", 500), "a"), schema.AssistantMessage("", []schema.ToolCall{call("a", "t", "{}")})}
	if err := hybrideino.CompactMessages(context.Background(), c, func(string) bool { return false }, early); !errors.Is(err, hybridctx.ErrInvalidHistory) {
		t.Fatalf("result before its call: %v", err)
	}
	msgs := []*schema.Message{schema.AssistantMessage("", []schema.ToolCall{call("a", "t", "{}")}), schema.ToolMessage(strings.Repeat("y", 500), "a")}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := hybrideino.CompactMessages(ctx, c, func(string) bool { return false }, msgs); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	orig := msgs[1]
	if err := hybrideino.CompactMessages(context.Background(), c, func(string) bool { return false }, msgs); err != nil || msgs[1] == orig || orig.Content != strings.Repeat("y", 500) {
		t.Fatalf("masking must replace the message, not modify it: %v", err)
	}
}

// TestCompactMessagesInputs: with MaskInputs the content of an answered
// write-file call's Function.Arguments is masked in a new assistant
// message (the one msgs held, which the agent may share, stays), the
// arguments still JSON of the same shape whose mask reads back the content
// byte-exact; the other call of the message stays, and compacting again
// changes nothing.
func TestCompactMessagesInputs(t *testing.T) {
	env := adapttest.New(t, adapttest.InputsPolicy())
	c, err := hybridctx.NewCompactor(env.Off, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	content := adapttest.FileContent()
	args := adapttest.WriteFileArgs(content)
	msgs := []*schema.Message{
		schema.UserMessage("Write the notes."),
		schema.AssistantMessage("", []schema.ToolCall{call("w", adapttest.WriteTool, args), call("s", "stat", `{"path":"notes"}`)}),
		schema.ToolMessage("written", "w"),
		schema.ToolMessage("a directory", "s"),
	}
	orig := msgs[1]
	notRead := func(string) bool { return false }
	if err := hybrideino.CompactMessages(ctx, c, notRead, msgs); err != nil {
		t.Fatal(err)
	}
	if msgs[1] == orig || orig.ToolCalls[0].Function.Arguments != args {
		t.Fatal("masking must replace the assistant message, not modify it")
	}
	got := msgs[1].ToolCalls
	if len(got) != 2 || got[0].ID != "w" || got[1].Function.Arguments != `{"path":"notes"}` {
		t.Fatalf("tool calls %+v", got)
	}
	if err := env.CheckMaskedArgs(ctx, []byte(args), []byte(got[0].Function.Arguments), content); err != nil {
		t.Fatal(err)
	}
	if msgs[2].Content != "written" || msgs[3].Content != "a directory" {
		t.Fatal("a tool message changed")
	}
	masked := msgs[1]
	if err := hybrideino.CompactMessages(ctx, c, notRead, msgs); err != nil || msgs[1] != masked {
		t.Fatalf("compacting again changed the history (%v)", err)
	}
}
