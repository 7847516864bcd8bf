package genkit_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/firebase/genkit/go/ai"

	"github.com/hybridctx/hybridctx"
	hybridgenkit "github.com/hybridctx/hybridctx/adapters/genkit"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

// The middleware bounds a tool response before the model sees it; the read
// tools bring it back. With Generate:
//
//	reads, _ := hybridgenkit.ReadTools(reh, nil)
//	genkit.Generate(ctx, g, ai.WithModel(m), ai.WithTools(append(myTools, reads...)...),
//		ai.WithMiddleware(hybridgenkit.Middleware(off, nil)))
func ExampleMiddleware() {
	ctx := context.Background()
	mem := memstore.New()
	bind, _ := hybridctx.NewBinding(artifact.Owner{User: "ada", Workflow: "genkit", Session: "s1"}, workspace.New(mem, mem))
	off, _ := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: 256}, nil)
	reh, _ := hybridctx.NewRehydrator(bind, nil)

	model := hybridgenkit.Middleware(off, nil)(func(_ context.Context, req *ai.ModelRequest, _ ai.ModelStreamCallback) (*ai.ModelResponse, error) {
		out := req.Messages[0].Content[0].ToolResponse.Output.(string)
		ref, _, _ := strings.Cut(out, "\n")
		fmt.Println(ref)
		return &ai.ModelResponse{}, nil
	})
	_, _ = model(ctx, &ai.ModelRequest{Messages: []*ai.Message{{Role: ai.RoleTool, Content: []*ai.Part{
		ai.NewToolResponsePart(&ai.ToolResponse{Name: "dump", Output: strings.Repeat("row\n", 1000)})}}}}, nil)

	reads, _ := hybridgenkit.ReadTools(reh, nil)
	page, _ := reads[0].(ai.Tool).RunRaw(ctx, map[string]any{
		"reference": "artifact://sha256/33cbec9d7e23a2b6b79541b3db9899bb381a499cb19fd2649195c5c49d37cda8", "length": 8})
	fmt.Printf("%q\n", page)
	// Output:
	// artifact://sha256/33cbec9d7e23a2b6b79541b3db9899bb381a499cb19fd2649195c5c49d37cda8
	// "row\nrow\n"
}
