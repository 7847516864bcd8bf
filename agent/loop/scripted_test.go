package loop_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx/agent/loop"
	"github.com/hybridctx/hybridctx/readtools"
)

func TestScriptedModel(t *testing.T) {
	boom := errors.New("step failed")
	m := loop.NewScriptedModel(
		loop.CallTool("a", nil),
		loop.CallTool("b", []byte(`{"x":1}`)),
		loop.CallTool("c", map[string]int{"n": 2}),
		loop.Calls(loop.ToolCall{ID: "mine", Name: "d"}, loop.ToolCall{Name: "e"}),
		func([]loop.Message) (loop.Reply, error) { return loop.Reply{}, boom },
		loop.CallTool("f", make(chan int)),
		loop.ReadLatest("read_artifact", 0, 0, 0),
	)
	ctx := context.Background()
	var ids, args []string
	for range 4 {
		r, err := m.Next(ctx, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range r.ToolCalls {
			ids = append(ids, c.ID)
			args = append(args, string(c.Arguments))
		}
	}
	if strings.Join(ids, ",") != "call_1,call_2,call_3,mine,call_4" || strings.Join(args[:3], " ") != `{} {"x":1} {"n":2}` {
		t.Fatalf("ids %v, args %v", ids, args)
	}
	if _, err := m.Next(ctx, nil, nil); !errors.Is(err, boom) {
		t.Fatalf("step error: %v", err)
	}
	if _, err := m.Next(ctx, nil, nil); err == nil {
		t.Fatal("arguments that cannot be encoded")
	}
	if _, err := m.Next(ctx, []loop.Message{{Role: loop.RoleTool, Content: "no reference here\nat all"}}, nil); !errors.Is(err, loop.ErrNoReference) {
		t.Fatalf("no reference: %v", err)
	}
	if _, err := m.Next(ctx, nil, nil); !errors.Is(err, loop.ErrScriptEnded) || m.Remaining() != 0 {
		t.Fatalf("ended: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := loop.NewScriptedModel(loop.Say("x")).Next(cancelled, nil, nil); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

func TestUnknownFieldNameIsBounded(t *testing.T) {
	long := strings.Repeat("é", 40)
	_, err := readtools.ParseReadArgs([]byte(`{"reference":"x","` + long + `":1}`))
	if !errors.Is(err, readtools.ErrInvalidArguments) || strings.Contains(err.Error(), long) || !strings.Contains(err.Error(), "…") {
		t.Fatalf("err %v", err)
	}
}
