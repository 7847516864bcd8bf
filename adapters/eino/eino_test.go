package eino_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/cloudwego/eino/adk"
	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"

	"github.com/hybridctx/hybridctx"
	hybrideino "github.com/hybridctx/hybridctx/adapters/eino"
	"github.com/hybridctx/hybridctx/agent"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

const threshold = 256

// env is one binding over a memory workspace with its offloader and read
// tool, and a recorder of progress events.
type env struct {
	off    *hybridctx.Offloader
	reh    *hybridctx.Rehydrator
	read   *agent.ReadTool
	mu     sync.Mutex
	events []*hybridctx.Event
	ctx    context.Context
	tools  *agent.ReadTools
}

func newEnv(t *testing.T, budgetCap int64) *env {
	t.Helper()
	mem := memstore.New()
	bind, err := hybridctx.NewBinding(artifact.Owner{User: "ada", Workflow: "eino", Session: "s1"}, workspace.New(mem, mem))
	if err != nil {
		t.Fatal(err)
	}
	e := &env{}
	e.off, _ = hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: threshold}, nil)
	e.reh, _ = hybridctx.NewRehydrator(bind, nil)
	e.tools, err = agent.NewReadTools(e.reh, &agent.ReadToolOptions{BudgetCap: budgetCap})
	if err != nil {
		t.Fatal(err)
	}
	e.read = e.tools.Read()
	rep := hybridctx.NewReporter(hybridctx.ReporterOptions{RunID: "r", AgentID: "eino", Sinks: []hybridctx.Sink{
		hybridctx.SinkFunc(func(_ context.Context, ev *hybridctx.Event) error {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.events = append(e.events, ev)
			return nil
		})}})
	e.ctx = hybridctx.WithReporter(context.Background(), rep)
	return e
}

func (e *env) outcomes() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, ev := range e.events {
		out = append(out, ev.Diagnostics.Outcome().String()+"/"+ev.Diagnostics.Reason().String())
	}
	return out
}

// textTool is an invokable tool returning a fixed text, or an error.
type textTool struct {
	name string
	text string
	err  error
}

func (t textTool) Info(context.Context) (*schema.ToolInfo, error) {
	return &schema.ToolInfo{Name: t.name, Desc: "returns a text"}, nil
}

func (t textTool) InvokableRun(context.Context, string, ...tool.Option) (string, error) {
	return t.text, t.err
}

// streamTool is a streamable tool returning its text in 100-byte chunks.
type streamTool struct {
	name, text string
}

func (t streamTool) Info(context.Context) (*schema.ToolInfo, error) {
	return &schema.ToolInfo{Name: t.name, Desc: "streams a text"}, nil
}

func (t streamTool) StreamableRun(context.Context, string, ...tool.Option) (*schema.StreamReader[string], error) {
	var chunks []string
	for s := t.text; s != ""; {
		n := min(100, len(s))
		chunks = append(chunks, s[:n])
		s = s[n:]
	}
	return schema.StreamReaderFromArray(chunks), nil
}

func logText(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "line %d: GET /api/items/%d 200\n", i, i*7)
	}
	return b.String()[:n]
}

func call(id, name, args string) schema.ToolCall {
	return schema.ToolCall{ID: id, Type: "function", Function: schema.FunctionCall{Name: name, Arguments: args}}
}

func TestToolsNode(t *testing.T) {
	e := newEnv(t, 1<<20)
	big, small := logText(5000), "tiny result"
	var decided []string
	mw, err := hybrideino.ToolMiddleware(e.off, &hybrideino.Options{OnDecision: func(_ context.Context, in *compose.ToolInput, out *hybridctx.OffloadResult) {
		decided = append(decided, in.Name+":"+out.Outcome().String())
	}})
	if err != nil {
		t.Fatal(err)
	}
	read, _ := hybrideino.NewReadTool(e.read)
	node, err := compose.NewToolNode(context.Background(), &compose.ToolsNodeConfig{
		Tools:               []tool.BaseTool{textTool{name: "big", text: big}, textTool{name: "small", text: small}, streamTool{name: "stream", text: big + "x"}, read},
		ToolCallMiddlewares: []compose.ToolMiddleware{mw},
		ExecuteSequentially: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := node.Invoke(e.ctx, schema.AssistantMessage("", []schema.ToolCall{
		call("c1", "big", "{}"), call("c2", "small", "{}"), call("c3", "stream", "{}")}))
	if err != nil {
		t.Fatal(err)
	}
	ref := artifact.RefOf([]byte(big)).String()
	if len(msgs) != 3 || !strings.HasPrefix(msgs[0].Content, ref+"\n5000 bytes, ") || msgs[1].Content != small ||
		!strings.HasPrefix(msgs[2].Content, artifact.RefOf([]byte(big+"x")).String()+"\n5001 bytes, ") {
		t.Fatalf("tool messages %q", []string{msgs[0].Content, msgs[1].Content, msgs[2].Content})
	}
	// Reading the whole body back returns it, inline, whatever its size.
	msgs, err = node.Invoke(e.ctx, schema.AssistantMessage("", []schema.ToolCall{call("c4", "read_artifact", `{"reference":"`+ref+`"}`)}))
	if err != nil || msgs[0].Content != big {
		t.Fatalf("read back: %v, %d bytes", err, len(msgs[0].Content))
	}
	want := []string{"offloaded/threshold_exceeded", "inline/below_threshold", "offloaded/threshold_exceeded",
		"resolved/digest_verified", "inline/recovered_segment_bypass"}
	if got := e.outcomes(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	if fmt.Sprint(decided) != "[big:offloaded small:inline stream:offloaded read_artifact:inline]" {
		t.Fatalf("decisions %v", decided)
	}
	// Streaming the node: the same decisions, one chunk each.
	sr, err := node.Stream(e.ctx, schema.AssistantMessage("", []schema.ToolCall{call("c5", "stream", "{}"), call("c6", "small", "{}")}))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		chunk, err := sr.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range chunk {
			if m != nil && m.Content != "" {
				got = append(got, m.Content)
			}
		}
	}
	if len(got) != 2 || !strings.Contains(strings.Join(got, "|"), "5001 bytes") || !strings.Contains(strings.Join(got, "|"), small) {
		t.Fatalf("stream %q", got)
	}
}

func TestToolErrorsPassThrough(t *testing.T) {
	e := newEnv(t, 1<<20)
	mw, _ := hybrideino.ToolMiddleware(e.off, nil)
	boom := errors.New("upstream timeout")
	node, _ := compose.NewToolNode(context.Background(), &compose.ToolsNodeConfig{
		Tools: []tool.BaseTool{textTool{name: "fail", err: boom}}, ToolCallMiddlewares: []compose.ToolMiddleware{mw}})
	if _, err := node.Invoke(e.ctx, schema.AssistantMessage("", []schema.ToolCall{call("c1", "fail", "{}")})); !errors.Is(err, boom) {
		t.Fatalf("err %v", err)
	}
	if len(e.outcomes()) != 0 {
		t.Fatal("a tool error was decided")
	}
	if _, err := hybrideino.ToolMiddleware(nil, nil); !errors.Is(err, hybrideino.ErrNilOffloader) {
		t.Fatal(err)
	}
	if _, err := hybrideino.NewReadTool(nil); !errors.Is(err, hybrideino.ErrNilReadTool) {
		t.Fatal(err)
	}
	if _, err := hybrideino.AgentMiddleware(e.off, nil, nil); !errors.Is(err, hybrideino.ErrNilReadTool) {
		t.Fatal(err)
	}
}

func TestReadToolAnswersInText(t *testing.T) {
	e := newEnv(t, 100)
	out, _ := e.off.Offload(e.ctx, hybridctx.Call{}, logText(1000))
	read, _ := hybrideino.NewReadTool(e.read)
	info, _ := read.Info(context.Background())
	if info.Name != "read_artifact" || info.ParamsOneOf == nil {
		t.Fatalf("info %+v", info)
	}
	for args, want := range map[string]string{
		`{"reference":"` + out.Ref.String() + `"}`:             "hybridctx: over_budget (budget_exceeded): the range is 1000 bytes, the budget 100",
		`{"reference":"` + artifact.RefOf(nil).String() + `"}`: "hybridctx: unauthorized (owner_mismatch)",
		`{"reference":"nope"}`:                                 "hybridctx: invalid_reference (malformed_reference)",
		`{"reference":"` + out.Ref.String() + `","offset":-1}`: "read_artifact: invalid arguments: offset must be >= 0",
		`not json`: "read_artifact: invalid arguments: the arguments must be a JSON object",
		`{"reference":"` + out.Ref.String() + `","offset":10,"length":5}`: logText(1000)[10:15],
	} {
		got, err := read.InvokableRun(e.ctx, args)
		if err != nil || !strings.HasPrefix(got, want) {
			t.Errorf("%s: %q, %v; want %q", args, got, err, want)
		}
	}
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	if _, err := read.InvokableRun(ctx, `{"reference":"`+out.Ref.String()+`"}`); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

// TestSearchAndQueryTools: the middleware adds all three read tools, and
// search and query answer in text through Eino's tool interface.
func TestSearchAndQueryTools(t *testing.T) {
	e := newEnv(t, 4096)
	mw, err := hybrideino.AgentMiddleware(e.off, e.tools, nil)
	if err != nil || len(mw.AdditionalTools) != 3 {
		t.Fatalf("%v %d", err, len(mw.AdditionalTools))
	}
	var names []string
	for _, bt := range mw.AdditionalTools {
		info, _ := bt.Info(context.Background())
		names = append(names, info.Name)
	}
	if strings.Join(names, ",") != "read_artifact,search_artifact,query_artifact" || !strings.Contains(mw.AdditionalInstruction, "search_artifact") {
		t.Fatalf("tools %v, instruction %q", names, mw.AdditionalInstruction)
	}
	out, _ := e.off.Offload(e.ctx, hybridctx.Call{}, logText(5000))
	search := mw.AdditionalTools[1].(tool.InvokableTool)
	got, err := search.InvokableRun(e.ctx, `{"reference":"`+out.Ref.String()+`","pattern":"/api/items/77 "}`)
	if err != nil || got != "12:line 11: GET /api/items/77 200\n1 match (showing 1-1)\n" {
		t.Fatalf("search %q %v", got, err)
	}
	js, _ := e.off.Offload(e.ctx, hybridctx.Call{}, `{"items":[`+strings.Repeat(`{"v":1},`, 100)+`{"v":2}]}`)
	query := mw.AdditionalTools[2].(tool.InvokableTool)
	got, err = query.InvokableRun(e.ctx, `{"reference":"`+js.Ref.String()+`","filter":"[.items[].v] | add"}`)
	if err != nil || got != "102\n1 result (showing 1-1)\n" {
		t.Fatalf("query %q %v", got, err)
	}
	got, err = query.InvokableRun(e.ctx, `{"reference":"`+out.Ref.String()+`","filter":"."}`)
	if err != nil || !strings.HasPrefix(got, "hybridctx: view_failed (not_json)") {
		t.Fatalf("query text %q %v", got, err)
	}
}

// scriptedChat is a ToolCallingChatModel playing one step per call.
type scriptedChat struct {
	mu    sync.Mutex
	steps []func(in []*schema.Message) *schema.Message
	seen  [][]*schema.Message
	tools []*schema.ToolInfo
}

func (m *scriptedChat) Generate(_ context.Context, in []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.seen) >= len(m.steps) {
		return nil, errors.New("script ended")
	}
	step := m.steps[len(m.seen)]
	m.seen = append(m.seen, append([]*schema.Message(nil), in...))
	return step(in), nil
}

func (m *scriptedChat) Stream(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	msg, err := m.Generate(ctx, in, opts...)
	if err != nil {
		return nil, err
	}
	return schema.StreamReaderFromArray([]*schema.Message{msg}), nil
}

func (m *scriptedChat) WithTools(tools []*schema.ToolInfo) (model.ToolCallingChatModel, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tools = tools
	return m, nil
}

// latestRef is what a model does with a notice: take its first line.
func latestRef(in []*schema.Message) string {
	for i := len(in) - 1; i >= 0; i-- {
		if in[i].Role == schema.Tool {
			if first, _, _ := strings.Cut(in[i].Content, "\n"); strings.HasPrefix(first, artifact.Prefix) {
				return first
			}
		}
	}
	return ""
}

// TestAgentEndToEnd runs an adk.ChatModelAgent under Eino's own Runner with
// the agent middleware: the model calls a tool whose 8,000-byte result is
// offloaded, reads 1,000 bytes of it back (over the threshold, still
// inline), then asks for too much, and answers.
func TestAgentEndToEnd(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		t.Run(fmt.Sprintf("streaming=%v", streaming), func(t *testing.T) {
			e := newEnv(t, 2000)
			big := logText(8000)
			mw, err := hybrideino.AgentMiddleware(e.off, e.tools, nil)
			if err != nil {
				t.Fatal(err)
			}
			chat := &scriptedChat{steps: []func([]*schema.Message) *schema.Message{
				func([]*schema.Message) *schema.Message {
					return schema.AssistantMessage("", []schema.ToolCall{call("c1", "access_log", "{}")})
				},
				func(in []*schema.Message) *schema.Message {
					return schema.AssistantMessage("", []schema.ToolCall{call("c2", "read_artifact", `{"reference":"`+latestRef(in)+`","offset":0,"length":1000}`)})
				},
				func(in []*schema.Message) *schema.Message {
					return schema.AssistantMessage("", []schema.ToolCall{call("c3", "read_artifact", `{"reference":"`+latestRef(in)+`"}`)})
				},
				func([]*schema.Message) *schema.Message {
					return schema.AssistantMessage("All requests returned 200.", nil)
				},
			}}
			ag, err := adk.NewChatModelAgent(context.Background(), &adk.ChatModelAgentConfig{
				Name: "analyst", Description: "reads logs", Instruction: "You analyse access logs.", Model: chat,
				ToolsConfig: adk.ToolsConfig{ToolsNodeConfig: compose.ToolsNodeConfig{Tools: []tool.BaseTool{textTool{name: "access_log", text: big}}}},
				Middlewares: []adk.AgentMiddleware{mw},
			})
			if err != nil {
				t.Fatal(err)
			}
			runner := adk.NewRunner(context.Background(), adk.RunnerConfig{Agent: ag, EnableStreaming: streaming})
			iter := runner.Query(e.ctx, "Did any request fail?")
			var final string
			for {
				ev, ok := iter.Next()
				if !ok {
					break
				}
				if ev.Err != nil {
					t.Fatal(ev.Err)
				}
				if ev.Output != nil && ev.Output.MessageOutput != nil && ev.Output.MessageOutput.Role == schema.Assistant {
					m, err := ev.Output.MessageOutput.GetMessage()
					if err != nil {
						t.Fatal(err)
					}
					final = m.Content
				}
			}
			if final != "All requests returned 200." || len(chat.seen) != 4 {
				t.Fatalf("final %q after %d model calls", final, len(chat.seen))
			}
			// The read tool was offered, and the instruction explains it.
			names := []string{}
			for _, ti := range chat.tools {
				names = append(names, ti.Name)
			}
			if !strings.Contains(fmt.Sprint(names), "read_artifact") || !strings.Contains(chat.seen[0][0].Content, "artifact:// reference") {
				t.Fatalf("tools %v, system %q", names, chat.seen[0][0].Content)
			}
			// What the model saw: never the 8,000-byte body.
			last := chat.seen[3]
			var tools []string
			for _, m := range last {
				if m.Role == schema.Tool {
					tools = append(tools, m.Content)
				}
				if strings.Contains(m.Content, big) {
					t.Fatal("the body reached the model")
				}
			}
			ref := artifact.RefOf([]byte(big)).String()
			if len(tools) != 3 || !strings.HasPrefix(tools[0], ref+"\n8000 bytes") || tools[1] != big[:1000] ||
				!strings.HasPrefix(tools[2], "hybridctx: over_budget (budget_exceeded): the range is 8000 bytes, the budget 2000") {
				t.Fatalf("tool messages %.120q", tools)
			}
			want := "[offloaded/threshold_exceeded resolved/digest_verified inline/recovered_segment_bypass over_budget/budget_exceeded inline/below_threshold]"
			if got := fmt.Sprint(e.outcomes()); got != want {
				t.Fatalf("events %s\nwant %s", got, want)
			}
		})
	}
}
