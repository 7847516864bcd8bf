package workload

import (
	"context"
	"strings"
	"testing"
)

func TestAskQuestions(t *testing.T) {
	store, _ := memWorkspace()
	gen := func() Source {
		g, err := Generate(&GenerateOptions{Seed: 3, Count: 150})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	ctx := context.Background()
	if _, err := Run(ctx, gen(), store, &RunOptions{Threshold: 4096}); err != nil {
		t.Fatal(err)
	}
	rep, err := AskQuestions(ctx, gen(), store, QuestionOptions{Threshold: 4096})
	if err != nil {
		t.Fatal(err)
	}
	tools, pages, led := rep.Tools, rep.BytePages, rep.NoticeLed
	if rep.Questions < 30 || tools.Exact != rep.Questions || pages.Exact != rep.Questions || tools.ExactShare != 100 {
		t.Fatalf("report %+v", rep)
	}
	// Led by the notice: as few calls and bytes as the targeted tools, every
	// JSON filter written from the outline.
	if led.Exact != rep.Questions || led.Calls.P95 > 2 || led.Bytes.P95 > 4096 || led.Bytes.Max > 4096 || rep.shapeMisses != 0 {
		t.Fatalf("notice-led %+v, %d filters not from the outline", led, rep.shapeMisses)
	}
	if tools.Calls.P95 > 2 || tools.Bytes.P95 > 4096 || tools.Bytes.Max > 4096 || pages.Bytes.P95 <= tools.Bytes.P95 {
		t.Fatalf("targeted %+v, pages %+v", tools, pages)
	}
	// Asked of another owner, every targeted answer is refused: none is
	// exact, and nothing leaks.
	other, err := AskQuestions(ctx, gen(), store, QuestionOptions{Threshold: 4096, Workflow: "someone-else"})
	if err != nil {
		t.Fatal(err)
	}
	if other.Tools.Exact != 0 || other.NoticeLed.Exact != 0 || other.Questions != rep.Questions {
		t.Fatalf("another owner got %d and %d exact answers", other.Tools.Exact, other.NoticeLed.Exact)
	}
}

func TestQuestionPickers(t *testing.T) {
	body := []byte("alpha one\nbeta two id=7f3a9c\nalpha one\n")
	no, line, tok, ok := textQuestion(body, 1)
	if !ok || no != 2 || string(line) != "beta two id=7f3a9c\n" || tok != "id=7f3a9c" {
		t.Fatalf("%d %q %q %v", no, line, tok, ok)
	}
	if _, _, _, ok := textQuestion([]byte("same\nsame\n"), 0); ok {
		t.Fatal("a body without a unique line got a question")
	}
	path, steps, v, ok := jsonQuestion([]byte(`{"a":[{"b":1},{"b":"x"}],"c":true}`), 5)
	if !ok || !strings.HasPrefix(path, ".[") || v == nil || len(steps) == 0 {
		t.Fatalf("%q %v %v %v", path, steps, v, ok)
	}
}

func TestFilterFromShape(t *testing.T) {
	for _, tc := range []struct {
		shape   string
		steps   []any
		want    string
		settled bool
	}{
		{`array[≥610] of {"id": number, "tags": array[3] of string, "path": string}`, []any{7, "tags", 2}, `.[7]["tags"][2]`, true},
		{`{"items": array[400] of {"id": number, "v": string}, "next": null}`, []any{"items", 3, "v"}, `.["items"][3]["v"]`, true},
		{`{"a\"b": {"c": object}, …}`, []any{"a\"b", "c", "d"}, `.["a\"b"]["c"]["d"]`, false},
		{`{"field_000": {"count": number}, "field_001": {…}}`, []any{"field_002", "count"}, `.["field_002"]["count"]`, false},
		{`{"long…": number}`, []any{"longer"}, `.["longer"]`, false},
		{`string`, nil, `.`, true},
		{`array[2] of …`, []any{1, "x"}, `.[1]["x"]`, false},
	} {
		got, settled := filterFromShape(parseShape(tc.shape), tc.steps)
		if got != tc.want || settled != tc.settled {
			t.Errorf("%s %v: %s %v, want %s %v", tc.shape, tc.steps, got, settled, tc.want, tc.settled)
		}
	}
}
