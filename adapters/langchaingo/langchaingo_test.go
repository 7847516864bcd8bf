package langchaingo_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/tools"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/adapters/internal/adaptkit"
	"github.com/hybridctx/hybridctx/adapters/internal/adapttest"
	hybridlc "github.com/hybridctx/hybridctx/adapters/langchaingo"
	"github.com/hybridctx/hybridctx/readtools"
)

// textTool returns a fixed text, or an error.
type textTool struct {
	name, text string
	err        error
}

func (t textTool) Name() string        { return t.name }
func (t textTool) Description() string { return "returns the log" }
func (t textTool) Call(context.Context, string) (string, error) {
	return t.text, t.err
}

// scriptedLLM is an llms.Model playing the scripted model over the MRKL
// prompt: it reads the last observation from the prompt and answers with
// the next Action and Action Input.
type scriptedLLM struct {
	t      *testing.T
	script *adapttest.Script
	mu     sync.Mutex
	// prompts holds each prompt's size.
	prompts []int
}

func (m *scriptedLLM) GenerateContent(ctx context.Context, msgs []llms.MessageContent, _ ...llms.CallOption) (*llms.ContentResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var prompt strings.Builder
	for _, msg := range msgs {
		for _, p := range msg.Parts {
			if tp, ok := p.(llms.TextContent); ok {
				prompt.WriteString(tp.Text)
			}
		}
	}
	p := prompt.String()
	m.prompts = append(m.prompts, len(p))
	result := ""
	if i := strings.LastIndex(p, "\nObservation: "); i >= 0 {
		result = strings.TrimSuffix(p[i+len("\nObservation: "):], "\n")
	}
	step, done, err := m.script.Next(result)
	if err != nil {
		m.t.Error(err)
		done = true
	}
	out := "Final Answer: done"
	if !done {
		out = fmt.Sprintf("Thought: next step\nAction: %s\nAction Input: %s", step.Name, step.Args)
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: out}}}, nil
}

func (m *scriptedLLM) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, opts...)
}

// The whole round trip through a LangChainGo MRKL agent executor: the
// model calls the wrapped big tool, sees the bounded notice, pages the body
// back with read_artifact and finds the needle with search_artifact.
func TestAgentEndToEnd(t *testing.T) {
	env := adapttest.New(t, nil)
	body := adapttest.Body()
	s := &adapttest.Script{ReadTool: hybridctx.DefaultReadToolName, SearchTool: hybridctx.DefaultSearchToolName, Page: 65536}
	llm := &scriptedLLM{t: t, script: s}
	ts := append([]tools.Tool{hybridlc.Wrap(textTool{name: adapttest.BigTool, text: body}, env.Off)}, hybridlc.ReadTools(env.Reh, nil)...)
	ex := agents.NewExecutor(agents.NewOneShotAgent(llm, ts), agents.WithMaxIterations(40))
	out, err := chains.Run(context.Background(), ex, "Find the error in the log.")
	if err != nil {
		t.Fatal(err)
	}
	if out != "done" {
		t.Fatalf("agent answered %q", out)
	}
	if err := s.Check(body); err != nil {
		t.Fatal(err)
	}
	grown := llm.prompts[1] - llm.prompts[0]
	if grown > 1024 {
		t.Fatalf("the prompt grew by %d bytes for the 1 MiB result", grown)
	}
	t.Logf("1 MiB result: the prompt grew by %d bytes (notice %d bytes), %d pages", grown, len(s.Notice), len(s.Pages))
}

// Another owner's reference is refused exactly like one never stored.
func TestOtherOwnerRefused(t *testing.T) {
	env := adapttest.New(t, nil)
	notice, err := env.Offload(context.Background(), adapttest.Body())
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := adapttest.RefOf(notice)
	ctx := context.Background()
	for _, tool := range hybridlc.ReadTools(env.RehB, nil) {
		args := func(r string) string {
			switch tool.Name() {
			case hybridctx.DefaultSearchToolName:
				return `{"reference":"` + r + `","pattern":"x"}`
			case hybridctx.DefaultQueryToolName:
				return `{"reference":"` + r + `","filter":"."}`
			}
			return `{"reference":"` + r + `"}`
		}
		foreign, err1 := tool.Call(ctx, args(ref))
		never, err2 := tool.Call(ctx, args(adapttest.NeverStored))
		if err1 != nil || err2 != nil || foreign != never || !strings.HasPrefix(never, "hybridctx: unauthorized") {
			t.Fatalf("%s: foreign %q (%v), never stored %q (%v)", tool.Name(), foreign, err1, never, err2)
		}
	}
}

// A tool error becomes the categorical notice; a cancelled context stays
// an error.
func TestToolErrorHidden(t *testing.T) {
	env := adapttest.New(t, nil)
	w := hybridlc.Wrap(textTool{name: adapttest.FailingTool, err: errors.New(adapttest.Secret)}, env.Off)
	out, err := w.Call(context.Background(), "{}")
	if err != nil || out != adaptkit.ToolFailedNotice {
		t.Fatalf("failing tool: %q, %v", out, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := w.Call(ctx, "{}"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled failing tool: %v", err)
	}
	big := hybridlc.Wrap(textTool{name: adapttest.BigTool, text: adapttest.Body()}, env.Off)
	if _, err := big.Call(ctx, "{}"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled big tool: %v", err)
	}
	read := hybridlc.ReadTools(env.Reh, nil)[0]
	if _, err := read.Call(ctx, `{"reference":"`+adapttest.NeverStored+`"}`); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled read: %v", err)
	}
}

// Small outputs pass unchanged; names and descriptions are kept; malformed
// read arguments are answered with the shared argument error.
func TestWrapAndReadTools(t *testing.T) {
	env := adapttest.New(t, nil)
	w := hybridlc.Wrap(textTool{name: "small", text: "ok"}, env.Off)
	if out, err := w.Call(context.Background(), ""); err != nil || out != "ok" || w.Name() != "small" || w.Description() != "returns the log" {
		t.Fatalf("small tool: %q, %v", out, err)
	}
	rts := hybridlc.ReadTools(env.Reh, nil)
	if len(rts) != 3 || hybridlc.Wrap(rts[0], env.Off) != rts[0] {
		t.Fatalf("read tools: %d, wrapping one must return it", len(rts))
	}
	if !strings.Contains(rts[0].Description(), `"reference"`) {
		t.Fatalf("description lacks the schema: %s", rts[0].Description())
	}
	out, err := rts[0].Call(context.Background(), "not json")
	if err != nil || !strings.HasPrefix(out, "hybridctx: read_artifact: invalid arguments") {
		t.Fatalf("malformed arguments: %q, %v", out, err)
	}
}

func TestBadInput(t *testing.T) {
	env := adapttest.New(t, nil)
	if _, err := hybridlc.NewReadTools(nil, nil); !errors.Is(err, hybridlc.ErrNilRehydrator) {
		t.Fatalf("nil rehydrator: %v", err)
	}
	if _, err := hybridlc.NewReadTools(env.Reh, &hybridlc.Options{Names: readtools.Names{Read: "a b"}}); !errors.Is(err, hybridctx.ErrInvalidPolicy) {
		t.Fatalf("bad name: %v", err)
	}
	for name, f := range map[string]func(){
		"ReadTools(nil)": func() { hybridlc.ReadTools(nil, nil) },
		"Wrap(nil, off)": func() { hybridlc.Wrap(nil, env.Off) },
		"Wrap(t, nil)":   func() { hybridlc.Wrap(textTool{}, nil) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s did not panic", name)
				}
			}()
			f()
		}()
	}
}
