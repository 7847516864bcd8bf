package openai_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/hybridctx/hybridctx/adapters/internal/adapttest"
)

// vendor is a local HTTP server playing the Chat Completions and Responses
// APIs: its replies are the scripted model's tool calls, driven by the tool
// outputs each request carries.
type vendor struct {
	t      *testing.T
	script *adapttest.Script
	mu     sync.Mutex
	n      int
	// bigResult is the JSON of the tool message or function_call_output
	// item that answered the big tool, as the model received it.
	bigResult []byte
	bigID     string
	offered   []string
}

func newVendor(t *testing.T, s *adapttest.Script) (*vendor, *httptest.Server) {
	v := &vendor{t: t, script: s}
	srv := httptest.NewServer(v)
	t.Cleanup(srv.Close)
	return v, srv
}

func (v *vendor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	v.mu.Lock()
	defer v.mu.Unlock()
	raw, _ := io.ReadAll(r.Body)
	var req struct {
		Messages []json.RawMessage `json:"messages"`
		Input    []json.RawMessage `json:"input"`
		Tools    []struct {
			Name     string `json:"name"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if r.Method != http.MethodPost || json.Unmarshal(raw, &req) != nil {
		http.Error(w, `{"error":{"message":"bad request","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	v.offered = v.offered[:0]
	for _, t := range req.Tools {
		v.offered = append(v.offered, t.Name+t.Function.Name)
	}
	chat := r.URL.Path == "/v1/chat/completions"
	if !chat && r.URL.Path != "/v1/responses" {
		http.Error(w, `{"error":{"message":"no route","type":"invalid_request_error"}}`, http.StatusNotFound)
		return
	}
	items := req.Input
	if chat {
		items = req.Messages
	}
	result := ""
	if len(items) > 0 {
		last := items[len(items)-1]
		var item struct {
			Role       string `json:"role"`
			Type       string `json:"type"`
			ToolCallID string `json:"tool_call_id"`
			CallID     string `json:"call_id"`
			Content    string `json:"content"`
			Output     string `json:"output"`
		}
		if err := json.Unmarshal(last, &item); err == nil && (item.Role == "tool" || item.Type == "function_call_output") {
			result = item.Content + item.Output
			if item.ToolCallID+item.CallID == v.bigID {
				v.bigResult = append([]byte(nil), last...)
			}
		}
	}
	step, done, err := v.script.Next(result)
	if err != nil {
		v.t.Error(err)
		done = true
	}
	v.n++
	id := fmt.Sprintf("call_%d", v.n)
	if !done && step.Name == adapttest.BigTool {
		v.bigID = id
	}
	w.Header().Set("Content-Type", "application/json")
	switch {
	case chat && done:
		fmt.Fprintf(w, `{"id":"c%d","object":"chat.completion","created":1,"model":"scripted","choices":[{"index":0,"finish_reason":"stop","logprobs":null,"message":{"role":"assistant","content":"done","refusal":null}}]}`, v.n)
	case chat:
		fmt.Fprintf(w, `{"id":"c%d","object":"chat.completion","created":1,"model":"scripted","choices":[{"index":0,"finish_reason":"tool_calls","logprobs":null,"message":{"role":"assistant","content":null,"refusal":null,"tool_calls":[{"id":%q,"type":"function","function":{"name":%q,"arguments":%q}}]}}]}`,
			v.n, id, step.Name, step.Args)
	case done:
		fmt.Fprintf(w, `{"id":"resp_%d","object":"response","created_at":1,"model":"scripted","status":"completed","output":[{"type":"message","id":"msg_%d","role":"assistant","status":"completed","content":[{"type":"output_text","text":"done","annotations":[]}]}]}`, v.n, v.n)
	default:
		fmt.Fprintf(w, `{"id":"resp_%d","object":"response","created_at":1,"model":"scripted","status":"completed","output":[{"type":"function_call","id":"fc_%d","call_id":%q,"name":%q,"arguments":%q,"status":"completed"}]}`,
			v.n, v.n, id, step.Name, step.Args)
	}
}
