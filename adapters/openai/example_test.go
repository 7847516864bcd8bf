package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/openai/openai-go/v3"

	"github.com/hybridctx/hybridctx"
	hybridopenai "github.com/hybridctx/hybridctx/adapters/openai"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

// Answering the tool calls of a Chat Completions reply: the host's tool
// result is stored and replaced by the notice; the model's search_artifact
// call finds a line in it. In a real loop the calls come from
// client.Chat.Completions.New (message.ToolCalls[i].AsFunction()) and the
// tool messages go into the next request; request tools = your tools +
// h.ChatTools(). HandleResponse does the same for the Responses API.
func ExampleHandler_HandleChat() {
	ctx := context.Background()
	mem := memstore.New()
	bind, _ := hybridctx.NewBinding(artifact.Owner{User: "ada", Workflow: "gpt", Session: "s1"}, workspace.New(mem, mem))
	off, _ := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: 256}, nil)
	reh, _ := hybridctx.NewRehydrator(bind, nil)
	h, _ := hybridopenai.New(off, reh, nil)

	run := func(ctx context.Context, name string, input json.RawMessage) (string, error) {
		var b strings.Builder
		for i := range 1000 {
			fmt.Fprintf(&b, "row %d status=ok\n", i)
		}
		return strings.Replace(b.String(), "row 700 status=ok", "row 700 status=FAILED", 1), nil
	}
	call := func(id, name, args string) sdk.ChatCompletionMessageFunctionToolCall {
		return sdk.ChatCompletionMessageFunctionToolCall{ID: id,
			Function: sdk.ChatCompletionMessageFunctionToolCallFunction{Name: name, Arguments: args}}
	}
	msg := h.HandleChat(ctx, call("call_1", "dump", `{}`), run)
	ref, _, _ := strings.Cut(msg.OfTool.Content.OfString.Value, "\n")

	found := h.HandleChat(ctx, call("call_2", "search_artifact", `{"reference":"`+ref+`","pattern":"FAILED"}`), run)
	fmt.Println(found.OfTool.Content.OfString.Value)
	// Output:
	// 701:row 700 status=FAILED
	// 1 match (showing 1-1)
}
