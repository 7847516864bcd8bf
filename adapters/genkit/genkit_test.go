package genkit_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/core"
	"github.com/firebase/genkit/go/genkit"

	"github.com/hybridctx/hybridctx"
	hybridgenkit "github.com/hybridctx/hybridctx/adapters/genkit"
	"github.com/hybridctx/hybridctx/adapters/internal/adapttest"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/readtools"
)

// scripted is a Genkit model playing the scripted model: it reads the
// last tool response of the request and answers with the next tool
// request. It records the JSON of every request it received.
type scripted struct {
	t        *testing.T
	script   *adapttest.Script
	mu       sync.Mutex
	n        int
	requests [][]byte
	// tools holds the JSON of the last request's tool definitions.
	tools []byte
}

func (m *scripted) generate(_ context.Context, req *ai.ModelRequest, _ ai.ModelStreamCallback) (*ai.ModelResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	raw, _ := json.Marshal(req.Messages)
	m.requests = append(m.requests, raw)
	m.tools, _ = json.Marshal(req.Tools)
	result := ""
	if last := req.Messages[len(req.Messages)-1]; last.Role == ai.RoleTool {
		for _, p := range last.Content {
			if p.IsToolResponse() {
				s, ok := p.ToolResponse.Output.(string)
				if !ok {
					m.t.Errorf("tool output is %T", p.ToolResponse.Output)
				}
				result = s
			}
		}
	}
	step, done, err := m.script.Next(result)
	if err != nil {
		m.t.Error(err)
		done = true
	}
	if done {
		return &ai.ModelResponse{Message: ai.NewModelTextMessage("done"), FinishReason: ai.FinishReasonStop}, nil
	}
	var input map[string]any
	_ = json.Unmarshal(step.Args, &input)
	m.n++
	return &ai.ModelResponse{Message: ai.NewModelMessage(ai.NewToolRequestPart(&ai.ToolRequest{
		Name: step.Name, Input: input, Ref: fmt.Sprintf("call_%d", m.n)}))}, nil
}

func setup(t *testing.T, env *adapttest.Env, s *adapttest.Script, body string, toolErr error) (context.Context, *genkit.Genkit, *scripted, []ai.GenerateOption) {
	t.Helper()
	ctx := context.Background()
	g := genkit.Init(ctx)
	m := &scripted{t: t, script: s}
	model := genkit.DefineModel(g, "test/scripted", &ai.ModelOptions{Supports: &ai.ModelSupports{Tools: true, Multiturn: true}}, m.generate)
	big := ai.NewTool(adapttest.BigTool, "returns the log", func(*ai.ToolContext, struct {
		Path string `json:"path"`
	}) (string, error) {
		return body, toolErr
	})
	reads, err := hybridgenkit.ReadTools(env.Reh, nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := []ai.GenerateOption{ai.WithModel(model), ai.WithPrompt("Find the error in the log."),
		ai.WithTools(append([]ai.ToolRef{big}, reads...)...), ai.WithMiddleware(hybridgenkit.Middleware(env.Off, nil)), ai.WithMaxTurns(40)}
	return ctx, g, m, opts
}

// The whole round trip through genkit.Generate: the model calls the big
// tool, sees the bounded notice, pages the body back and finds the needle.
func TestGenerateEndToEnd(t *testing.T) {
	env := adapttest.New(t, nil)
	body := adapttest.Body()
	s := &adapttest.Script{ReadTool: hybridctx.DefaultReadToolName, SearchTool: hybridctx.DefaultSearchToolName, Page: 65536}
	ctx, g, m, opts := setup(t, env, s, body, nil)
	resp, err := genkit.Generate(ctx, g, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text() != "done" {
		t.Fatalf("answer %q", resp.Text())
	}
	if err := s.Check(body); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(m.tools), `"name":"search_artifact"`) || !strings.Contains(string(m.tools), `"pattern"`) {
		t.Fatalf("tool definitions sent to the model: %.400s", m.tools)
	}
	grown := len(m.requests[1]) - len(m.requests[0])
	if grown > 1024 {
		t.Fatalf("the request grew by %d bytes for the 1 MiB result", grown)
	}
	for i, r := range m.requests {
		if len(r) > len(body)+len(body)/2 {
			t.Fatalf("request %d is %d bytes: the body reached the model beyond the pages read", i, len(r))
		}
	}
	t.Logf("1 MiB result: the request grew by %d bytes (notice %d bytes), %d pages", grown, len(s.Notice), len(s.Pages))
}

// A tool's error ends Generate for the host; the model never sees it.
func TestToolErrorHidden(t *testing.T) {
	env := adapttest.New(t, nil)
	s := &adapttest.Script{ReadTool: hybridctx.DefaultReadToolName, Page: 65536}
	ctx, g, m, opts := setup(t, env, s, "", errors.New(adapttest.Secret))
	if _, err := genkit.Generate(ctx, g, opts...); err == nil {
		t.Fatal("a failing tool did not fail Generate")
	}
	for _, r := range m.requests {
		if strings.Contains(string(r), "10.9.8.7") {
			t.Fatalf("the model saw the error: %s", r)
		}
	}
}

// Another owner's reference is refused exactly like one never stored.
func TestOtherOwnerRefused(t *testing.T) {
	env := adapttest.New(t, nil)
	notice, err := env.Offload(context.Background(), adapttest.Body())
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := adapttest.RefOf(notice)
	reads, err := hybridgenkit.ReadTools(env.RehB, nil)
	if err != nil {
		t.Fatal(err)
	}
	read := reads[0].(ai.Tool)
	foreign, err1 := read.RunRaw(context.Background(), map[string]any{"reference": ref})
	never, err2 := read.RunRaw(context.Background(), map[string]any{"reference": adapttest.NeverStored})
	if err1 != nil || err2 != nil || foreign != never || !strings.HasPrefix(never.(string), "hybridctx: unauthorized") {
		t.Fatalf("foreign %q (%v), never stored %q (%v)", foreign, err1, never, err2)
	}
}

// capture returns the middleware over a model that keeps the request it
// gets in *seen, counting decisions in *decisions.
func capture(t *testing.T, decisions *int, seen **ai.ModelRequest) core.StreamingFunc[*ai.ModelRequest, *ai.ModelResponse, *ai.ModelResponseChunk] {
	env := adapttest.New(t, nil)
	mw := hybridgenkit.Middleware(env.Off, &hybridgenkit.Options{OnDecision: func(context.Context, string, *hybridctx.OffloadResult) { *decisions++ }})
	return mw(func(_ context.Context, req *ai.ModelRequest, _ ai.ModelStreamCallback) (*ai.ModelResponse, error) {
		*seen = req
		return &ai.ModelResponse{}, nil
	})
}

// Decided parts are marked and never decided again; inline outputs and
// read tool responses stay as they are; a cancelled context is an error.
func TestMiddlewareParts(t *testing.T) {
	var decisions int
	var seen *ai.ModelRequest
	next := capture(t, &decisions, &seen)
	big := map[string]any{"rows": strings.Repeat("r,", 5000)}
	req := &ai.ModelRequest{Messages: []*ai.Message{{Role: ai.RoleTool, Content: []*ai.Part{
		ai.NewToolResponsePart(&ai.ToolResponse{Name: "small", Ref: "1", Output: "ok"}),
		ai.NewToolResponsePart(&ai.ToolResponse{Name: "big", Ref: "2", Output: big}),
		ai.NewToolResponsePart(&ai.ToolResponse{Name: hybridctx.DefaultReadToolName, Ref: "3", Output: strings.Repeat("x", 9000)}),
	}}}}
	for range 2 {
		if _, err := next(context.Background(), req, nil); err != nil {
			t.Fatal(err)
		}
	}
	parts := seen.Messages[0].Content
	if decisions != 2 || parts[0].ToolResponse.Output != "ok" || len(parts[2].ToolResponse.Output.(string)) != 9000 {
		t.Fatalf("decisions %d, parts %v / %.40v", decisions, parts[0].ToolResponse.Output, parts[2].ToolResponse.Output)
	}
	notice, ok := parts[1].ToolResponse.Output.(string)
	if !ok || len(notice) > adapttest.MaxNotice || parts[1].Metadata[hybridgenkit.MetadataKey] == "" {
		t.Fatalf("big output %.80v, metadata %v", parts[1].ToolResponse.Output, parts[1].Metadata)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	fresh := &ai.ModelRequest{Messages: []*ai.Message{{Role: ai.RoleTool, Content: []*ai.Part{
		ai.NewToolResponsePart(&ai.ToolResponse{Name: "big", Output: big})}}}}
	if _, err := next(ctx, fresh, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

func TestBadInput(t *testing.T) {
	env := adapttest.New(t, nil)
	if _, err := hybridgenkit.ReadTools(nil, nil); !errors.Is(err, hybridgenkit.ErrNilRehydrator) {
		t.Fatalf("nil rehydrator: %v", err)
	}
	if _, err := hybridgenkit.ReadTools(env.Reh, &hybridgenkit.Options{Names: readtools.Names{Search: "a b"}}); !errors.Is(err, hybridctx.ErrInvalidPolicy) {
		t.Fatalf("bad name: %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Middleware(nil) did not panic")
		}
	}()
	hybridgenkit.Middleware(nil, nil)
}

// The extra parts of a multipart tool response are decided one by one: a
// large text part and large inline media become notices of their own
// (the media stored as its decoded bytes), small ones and media behind a
// URL stay, and the caller's request is not changed.
func TestMultipartPartsBounded(t *testing.T) {
	var decisions int
	var seen *ai.ModelRequest
	next := capture(t, &decisions, &seen)
	image := bytes.Repeat([]byte{0x89, 'P', 'N', 'G', 0, 1, 2, 0xff}, 2000)
	bigText := strings.Repeat("log line\n", 2000)
	extra := []*ai.Part{
		ai.NewTextPart(bigText),
		ai.NewTextPart("small"),
		ai.NewMediaPart("image/png", "data:image/png;base64,"+base64.StdEncoding.EncodeToString(image)),
		ai.NewMediaPart("image/png", "https://example.invalid/a.png"),
		ai.NewMediaPart("image/png", "data:image/png;base64,@@not base64@@"),
	}
	orig := slices.Clone(extra)
	req := &ai.ModelRequest{Messages: []*ai.Message{{Role: ai.RoleTool, Content: []*ai.Part{
		ai.NewToolResponsePart(&ai.ToolResponse{Name: "shot", Ref: "1", Output: "ok", Content: extra}),
	}}}}
	if _, err := next(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	got := seen.Messages[0].Content[0].ToolResponse.Content
	// The output and the three parts with content are decided.
	if decisions != 4 || len(got) != len(extra) {
		t.Fatalf("decisions %d, %d parts", decisions, len(got))
	}
	for i, want := range []string{artifact.RefOf([]byte(bigText)).String(), "", artifact.RefOf(image).String(), "", ""} {
		p := got[i]
		if want == "" {
			if p != orig[i] {
				t.Errorf("part %d changed: %+v", i, p)
			}
			continue
		}
		if !p.IsText() || !strings.HasPrefix(p.Text, want+"\n") || len(p.Text) > adapttest.MaxNotice || p.Metadata[hybridgenkit.MetadataKey] != want {
			t.Errorf("part %d: %.90q, metadata %v; want the notice of %s", i, p.Text, p.Metadata, want)
		}
	}
	if !slices.Equal(extra, orig) {
		t.Error("the caller's parts were changed")
	}
}
