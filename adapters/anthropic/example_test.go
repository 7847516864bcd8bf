package anthropic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/hybridctx/hybridctx"
	hybridanthropic "github.com/hybridctx/hybridctx/adapters/anthropic"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

// Answering the tool_use blocks of a Messages API reply: the host's tool
// result is stored and replaced by the notice; the model's read_artifact
// call brings a range back. In a real loop the blocks come from
// client.Messages.New and the results go into the next user message;
// request tools = your tools + h.Tools().
func ExampleHandler_Handle() {
	ctx := context.Background()
	mem := memstore.New()
	bind, _ := hybridctx.NewBinding(artifact.Owner{User: "ada", Workflow: "claude", Session: "s1"}, workspace.New(mem, mem))
	off, _ := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: 256}, nil)
	reh, _ := hybridctx.NewRehydrator(bind, nil)
	h, _ := hybridanthropic.New(off, reh, nil)

	run := func(ctx context.Context, name string, input json.RawMessage) (string, error) {
		return strings.Repeat("row\n", 1000), nil // the host's tool
	}
	res := h.Handle(ctx, sdk.ToolUseBlock{ID: "toolu_1", Name: "dump", Input: json.RawMessage(`{}`)}, run)
	notice := res.OfToolResult.Content[0].OfText.Text
	ref, _, _ := strings.Cut(notice, "\n")
	fmt.Println(ref)

	read := h.Handle(ctx, sdk.ToolUseBlock{ID: "toolu_2", Name: "read_artifact",
		Input: json.RawMessage(`{"reference":"` + ref + `","offset":0,"length":8}`)}, run)
	fmt.Printf("%q\n", read.OfToolResult.Content[0].OfText.Text)
	// Output:
	// artifact://sha256/33cbec9d7e23a2b6b79541b3db9899bb381a499cb19fd2649195c5c49d37cda8
	// "row\nrow\n"
}
