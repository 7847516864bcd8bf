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
	tools, pages := rep.Tools, rep.BytePages
	if rep.Questions < 30 || tools.Exact != rep.Questions || pages.Exact != rep.Questions || tools.ExactShare != 100 {
		t.Fatalf("report %+v", rep)
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
	if other.Tools.Exact != 0 || other.Questions != rep.Questions {
		t.Fatalf("another owner got %d exact answers", other.Tools.Exact)
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
	path, v, ok := jsonQuestion([]byte(`{"a":[{"b":1},{"b":"x"}],"c":true}`), 5)
	if !ok || !strings.HasPrefix(path, ".[") || v == nil {
		t.Fatalf("%q %v %v", path, v, ok)
	}
}
