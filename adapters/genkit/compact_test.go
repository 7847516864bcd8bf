package genkit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"

	"github.com/hybridctx/hybridctx"
	hybridgenkit "github.com/hybridctx/hybridctx/adapters/genkit"
	"github.com/hybridctx/hybridctx/adapters/internal/adapttest"
)

func page(n int) string {
	return fmt.Sprintf("page %03d\n", n) + strings.Repeat(fmt.Sprintf("row %d of page %d\n", n, n), 80)[:991]
}

// TestGenerateHistoryBudget runs genkit.Generate with the middleware under a
// 3,000-byte history budget: eight 1,000-byte tool outputs take the
// conversation over it, the oldest are masked in the request itself, and
// the model reads the first back through read_artifact by its mask.
func TestGenerateHistoryBudget(t *testing.T) {
	env := adapttest.New(t, &hybridctx.Policy{InlineThreshold: 4096, History: hybridctx.HistoryPolicy{Budget: 3000, KeepRecent: 2}})
	ctx := context.Background()
	g := genkit.Init(ctx)
	var last *ai.ModelRequest
	var readBack string
	turn := 0
	model := genkit.DefineModel(g, "test/pager", &ai.ModelOptions{Supports: &ai.ModelSupports{Tools: true, Multiturn: true}},
		func(_ context.Context, req *ai.ModelRequest, _ ai.ModelStreamCallback) (*ai.ModelResponse, error) {
			last = req
			turn++
			switch {
			case turn <= 8:
				return &ai.ModelResponse{Message: ai.NewModelMessage(ai.NewToolRequestPart(&ai.ToolRequest{
					Name: "page", Input: map[string]any{"n": turn}, Ref: fmt.Sprintf("call_%d", turn)}))}, nil
			case turn == 9:
				var mask string
				for _, m := range req.Messages {
					for _, p := range m.Content {
						if p.IsToolResponse() && p.ToolResponse.Ref == "call_1" {
							mask, _ = p.ToolResponse.Output.(string)
						}
					}
				}
				st, ok := hybridctx.ParseStoredText(mask)
				if !ok || !st.Masked {
					return nil, fmt.Errorf("the first page is not masked: %.100q", mask)
				}
				return &ai.ModelResponse{Message: ai.NewModelMessage(ai.NewToolRequestPart(&ai.ToolRequest{Name: hybridctx.DefaultReadToolName,
					Input: map[string]any{"reference": st.Ref.String(), "offset": 0, "length": st.Size}, Ref: "read"}))}, nil
			}
			m := req.Messages[len(req.Messages)-1]
			readBack, _ = m.Content[0].ToolResponse.Output.(string)
			return &ai.ModelResponse{Message: ai.NewModelTextMessage("done"), FinishReason: ai.FinishReasonStop}, nil
		})
	pages := ai.NewTool("page", "returns page n", func(_ *ai.ToolContext, in struct {
		N int `json:"n"`
	}) (string, error) {
		return page(in.N), nil
	})
	reads, err := hybridgenkit.ReadTools(env.Reh, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := genkit.Generate(ctx, g, ai.WithModel(model), ai.WithPrompt("Read every page."),
		ai.WithTools(append([]ai.ToolRef{pages}, reads...)...), ai.WithMiddleware(hybridgenkit.Middleware(env.Off, nil)), ai.WithMaxTurns(20))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text() != "done" || readBack != page(1) {
		t.Fatalf("answer %q, read back %d bytes", resp.Text(), len(readBack))
	}
	tool := 0
	for _, m := range last.Messages {
		for _, p := range m.Content {
			if p.IsToolResponse() && p.ToolResponse.Ref != "read" {
				tool += len(p.ToolResponse.Output.(string))
			}
		}
	}
	if tool > 3000 {
		t.Fatalf("tool content %d over the budget", tool)
	}
}

func TestMiddlewareHistoryErrors(t *testing.T) {
	env := adapttest.New(t, &hybridctx.Policy{InlineThreshold: 4096, History: hybridctx.HistoryPolicy{Budget: 10, KeepRecent: -1}})
	mw := hybridgenkit.Middleware(env.Off, nil)
	next := mw(func(context.Context, *ai.ModelRequest, ai.ModelStreamCallback) (*ai.ModelResponse, error) {
		return &ai.ModelResponse{}, nil
	})
	twice := &ai.ModelRequest{Messages: []*ai.Message{
		{Role: ai.RoleModel, Content: []*ai.Part{ai.NewToolRequestPart(&ai.ToolRequest{Name: "t", Ref: "1"})}},
		{Role: ai.RoleTool, Content: []*ai.Part{
			ai.NewToolResponsePart(&ai.ToolResponse{Name: "t", Ref: "1", Output: strings.Repeat("a", 500)}),
			ai.NewToolResponsePart(&ai.ToolResponse{Name: "t", Ref: "1", Output: strings.Repeat("b", 500)}),
		}}}}
	if _, err := next(context.Background(), twice, nil); !errors.Is(err, hybridctx.ErrInvalidHistory) {
		t.Fatalf("two responses for one request: %v", err)
	}
	early := &ai.ModelRequest{Messages: []*ai.Message{
		{Role: ai.RoleTool, Content: []*ai.Part{ai.NewToolResponsePart(&ai.ToolResponse{Name: "t", Ref: "1", Output: strings.Repeat("a", 500)})}},
		{Role: ai.RoleModel, Content: []*ai.Part{ai.NewToolRequestPart(&ai.ToolRequest{Name: "t", Ref: "1"})}}}}
	if _, err := next(context.Background(), early, nil); !errors.Is(err, hybridctx.ErrInvalidHistory) {
		t.Fatalf("a response before its request: %v", err)
	}
	// Requests and responses without refs pair by name and order.
	norefs := &ai.ModelRequest{Messages: []*ai.Message{
		{Role: ai.RoleModel, Content: []*ai.Part{ai.NewToolRequestPart(&ai.ToolRequest{Name: "t"}), ai.NewToolRequestPart(&ai.ToolRequest{Name: "t"})}},
		{Role: ai.RoleTool, Content: []*ai.Part{
			ai.NewToolResponsePart(&ai.ToolResponse{Name: "t", Output: strings.Repeat("c", 500)}),
			ai.NewToolResponsePart(&ai.ToolResponse{Name: "t", Output: map[string]any{"rows": strings.Repeat("d", 500)}}),
		}}}}
	if _, err := next(context.Background(), norefs, nil); err != nil {
		t.Fatal(err)
	}
	for _, p := range norefs.Messages[1].Content {
		if st, ok := hybridctx.ParseStoredText(p.ToolResponse.Output.(string)); !ok || !st.Masked {
			t.Fatalf("not masked: %.60v", p.ToolResponse.Output)
		}
	}
}

// TestGenerateInputs runs genkit.Generate with the middleware under
// MaskInputs: the model writes a 10 KiB file through a tool (the tool gets
// the whole content), and in the next request that call's Input is a map of
// the same shape whose content is a mask; the model reads it back through
// read_artifact byte-exact, and the request after that holds the same
// input (compacting again changes nothing).
func TestGenerateInputs(t *testing.T) {
	env := adapttest.New(t, adapttest.InputsPolicy())
	ctx := context.Background()
	g := genkit.Init(ctx)
	content := adapttest.FileContent()
	args := adapttest.WriteFileArgs(content)
	var input map[string]any
	if err := json.Unmarshal([]byte(args), &input); err != nil {
		t.Fatal(err)
	}
	var written, readBack string
	var masked []string // the write call's input as each later request holds it
	inputOf := func(req *ai.ModelRequest) string {
		for _, m := range req.Messages {
			for _, p := range m.Content {
				if p.IsToolRequest() && p.ToolRequest.Ref == "w" {
					if _, ok := p.ToolRequest.Input.(map[string]any); !ok {
						return fmt.Sprintf("an input of type %T", p.ToolRequest.Input)
					}
					b, _ := json.Marshal(p.ToolRequest.Input)
					return string(b)
				}
			}
		}
		return ""
	}
	turn := 0
	model := genkit.DefineModel(g, "test/writer", &ai.ModelOptions{Supports: &ai.ModelSupports{Tools: true, Multiturn: true}},
		func(_ context.Context, req *ai.ModelRequest, _ ai.ModelStreamCallback) (*ai.ModelResponse, error) {
			turn++
			switch turn {
			case 1:
				return &ai.ModelResponse{Message: ai.NewModelMessage(ai.NewToolRequestPart(&ai.ToolRequest{
					Name: adapttest.WriteTool, Input: input, Ref: "w"}))}, nil
			case 2:
				in := inputOf(req)
				masked = append(masked, in)
				var args struct{ Content string }
				_ = json.Unmarshal([]byte(in), &args)
				st, ok := hybridctx.ParseStoredText(args.Content)
				if !ok {
					return nil, fmt.Errorf("the write's content is not masked: %.100q", in)
				}
				return &ai.ModelResponse{Message: ai.NewModelMessage(ai.NewToolRequestPart(&ai.ToolRequest{Name: hybridctx.DefaultReadToolName,
					Input: map[string]any{"reference": st.Ref.String(), "offset": 0, "length": st.Size, "max_bytes": st.Size}, Ref: "read"}))}, nil
			}
			masked = append(masked, inputOf(req))
			m := req.Messages[len(req.Messages)-1]
			readBack, _ = m.Content[0].ToolResponse.Output.(string)
			return &ai.ModelResponse{Message: ai.NewModelTextMessage("done"), FinishReason: ai.FinishReasonStop}, nil
		})
	write := ai.NewTool(adapttest.WriteTool, "writes a file", func(_ *ai.ToolContext, in struct {
		Path    string `json:"path"`
		Content string `json:"content"`
		Mode    int    `json:"mode"`
		Opts    struct {
			Append bool     `json:"append"`
			Tags   []string `json:"tags"`
		} `json:"opts"`
	}) (string, error) {
		written = in.Content
		return "written", nil
	})
	reads, err := hybridgenkit.ReadTools(env.Reh, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := genkit.Generate(ctx, g, ai.WithModel(model), ai.WithPrompt("Write the notes."),
		ai.WithTools(append([]ai.ToolRef{write}, reads...)...), ai.WithMiddleware(hybridgenkit.Middleware(env.Off, nil)), ai.WithMaxTurns(5))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text() != "done" || written != content {
		t.Fatalf("answer %q, the tool got %d bytes of %d", resp.Text(), len(written), len(content))
	}
	if readBack != content {
		t.Fatalf("read_artifact gave back %d bytes, want %d", len(readBack), len(content))
	}
	if len(masked) != 2 || masked[0] != masked[1] {
		t.Fatalf("the input changed between requests: %q", masked)
	}
	if err := env.CheckMaskedArgs(ctx, []byte(args), []byte(masked[0]), content); err != nil {
		t.Fatal(err)
	}
}
