package agent_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/agent"
	"github.com/hybridctx/hybridctx/readtools"
)

func TestReadToolsSearchQueryLines(t *testing.T) {
	e := newEnv(t, 64, 4096)
	tools, err := agent.NewReadTools(e.Reh, &agent.ReadToolOptions{BudgetCap: 4096})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools() {
		names = append(names, tl.Spec.Name)
	}
	if strings.Join(names, ",") != "read_artifact,search_artifact,query_artifact" {
		t.Fatalf("tools %v", names)
	}
	var log strings.Builder
	for i := 0; i < 3000; i++ {
		log.WriteString("GET /health 200\n")
		if i == 2345 {
			log.WriteString("GET /api 500 upstream reset\n")
		}
	}
	stored, err := e.Off.Offload(context.Background(), hybridctx.Call{Tool: "logs", ID: "1"}, log.String())
	if err != nil || stored.Outcome() != hybridctx.Offloaded {
		t.Fatal(err)
	}
	ref := stored.Ref.String()

	// Search: the answer is a recovered segment the middleware inlines.
	_, err = e.MW.Call(context.Background(), hybridctx.Call{Tool: "search_artifact", ID: "2"}, tools.Search().Call, nil)
	if err == nil || !errors.Is(err, agent.ErrToolFailed) || !errors.Is(err, agent.ErrInvalidArguments) {
		t.Fatalf("empty args: %v", err)
	}
	args := []byte(`{"reference":"` + ref + `","pattern":" 500 "}`)
	out, err := e.MW.Call(context.Background(), hybridctx.Call{Tool: "search_artifact", ID: "3"}, tools.Search().Call, args)
	if err != nil || out.Reason() != hybridctx.RecoveredSegmentBypass || out.Text() != "2347:GET /api 500 upstream reset\n1 match (showing 1-1)\n" {
		t.Fatalf("search: %v %v %q", err, out, out.Text())
	}
	// Lines: a page cut by the budget carries the continuation note.
	v, err := tools.Read().Call(context.Background(), []byte(`{"reference":"`+ref+`","start_line":2346,"line_count":10,"max_bytes":50}`))
	if err != nil {
		t.Fatal(err)
	}
	seg := v.(*hybridctx.Segment)
	if !seg.SkipOffload() || string(seg.Bytes()) != "GET /health 200\nGET /api 500 upstream reset\n\n[hybridctx: lines 2346-2347 of 3001 shown (the budget is full); continue with start_line 2348]" {
		t.Fatalf("lines %q", seg.Bytes())
	}
	// Query over text: a categorical refusal the loop shows the model.
	_, err = tools.Query().Call(context.Background(), []byte(`{"reference":"`+ref+`","filter":".[0]"}`))
	var re *agent.ReadError
	if !errors.As(err, &re) || re.Rehydration.Outcome() != hybridctx.ViewFailed || re.Rehydration.View() != hybridctx.ViewQuery ||
		!strings.HasPrefix(re.Error(), "hybridctx: view_failed (not_json): ") {
		t.Fatalf("query: %v", err)
	}
	// A malformed filter is an argument error, no decision.
	if _, err := tools.Query().Read(context.Background(), []byte(`{"reference":"`+ref+`","filter":"input"}`)); !errors.Is(err, agent.ErrInvalidArguments) ||
		!strings.HasPrefix(err.Error(), "query_artifact: invalid arguments: other inputs") {
		t.Fatalf("malformed filter: %v", err)
	}
	if _, err := agent.NewReadTools(e.Reh, &agent.ReadToolOptions{Names: readtools.Names{Search: "read_artifact"}}); !errors.Is(err, hybridctx.ErrInvalidPolicy) {
		t.Fatalf("clashing names: %v", err)
	}
}
