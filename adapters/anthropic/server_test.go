package anthropic_test

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

// vendor is a local HTTP server playing the Messages API: its replies are
// the scripted model's tool calls, driven by the tool results each request
// carries.
type vendor struct {
	t      *testing.T
	script *adapttest.Script
	mu     sync.Mutex
	n      int
	// bigResult is the JSON of the tool_result block that answered the
	// big tool, as the model received it.
	bigResult []byte
	bigID     string
	// offered holds the tool names of the last request.
	offered []string
	errors  int
}

type wireBlock struct {
	Type      string          `json:"type"`
	ToolUseID string          `json:"tool_use_id"`
	IsError   bool            `json:"is_error"`
	Content   json.RawMessage `json:"content"`
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
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		http.Error(w, `{"type":"error","error":{"type":"not_found_error","message":"no route"}}`, http.StatusNotFound)
		return
	}
	raw, _ := io.ReadAll(r.Body)
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(raw, &req); err != nil || len(req.Messages) == 0 {
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"bad body"}}`, http.StatusBadRequest)
		return
	}
	v.offered = v.offered[:0]
	for _, t := range req.Tools {
		v.offered = append(v.offered, t.Name)
	}
	result := ""
	last := req.Messages[len(req.Messages)-1]
	var blocks []json.RawMessage
	if json.Unmarshal(last.Content, &blocks) == nil {
		for _, b := range blocks {
			var wb wireBlock
			if json.Unmarshal(b, &wb) != nil || wb.Type != "tool_result" {
				continue
			}
			text, err := textOf(wb.Content)
			if err != nil {
				v.t.Error(err)
			}
			if wb.IsError {
				v.errors++
			}
			if wb.ToolUseID == v.bigID {
				v.bigResult = append([]byte(nil), b...)
			}
			result = text
		}
	}
	step, done, err := v.script.Next(result)
	if err != nil {
		v.t.Error(err)
		done = true
	}
	w.Header().Set("Content-Type", "application/json")
	v.n++
	if done {
		fmt.Fprintf(w, `{"id":"msg_%d","type":"message","role":"assistant","model":"scripted","content":[{"type":"text","text":"done"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`, v.n)
		return
	}
	id := fmt.Sprintf("toolu_%d", v.n)
	if step.Name == adapttest.BigTool {
		v.bigID = id
	}
	fmt.Fprintf(w, `{"id":"msg_%d","type":"message","role":"assistant","model":"scripted","content":[{"type":"tool_use","id":%q,"name":%q,"input":%s}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`,
		v.n, id, step.Name, step.Args)
}

// textOf returns the text of a tool_result's content: a string, or text
// blocks joined.
func textOf(c json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(c, &s) == nil {
		return s, nil
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(c, &blocks); err != nil {
		return "", fmt.Errorf("tool_result content: %w", err)
	}
	out := ""
	for _, b := range blocks {
		if b.Type != "text" {
			return "", fmt.Errorf("tool_result block of type %q", b.Type)
		}
		out += b.Text
	}
	return out, nil
}
