package hybridctx_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx"
)

func TestNoticePreview(t *testing.T) {
	e := newEnv(t, 16)
	off, err := hybridctx.NewOffloader(e.bind, hybridctx.Policy{InlineThreshold: 16, PreviewBytes: 40}, nil)
	if err != nil {
		t.Fatal(err)
	}
	body := "first line\nsecond line\nthird line is longer than the rest\n"
	a := mustOffload(t, off, e.ctx, body)
	b, err := off.OffloadReader(e.ctx, hybridctx.Call{Tool: "t", ID: "2"}, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	want := "\nIt begins:\nfirst line\nsecond line"
	if !strings.HasSuffix(a.Notice, want) || a.Notice != b.Notice || len(a.Notice) > hybridctx.MaxNoticeLen+40 {
		t.Fatalf("notices\n%q\n%q", a.Notice, b.Notice)
	}
	if bin := mustOffload(t, off, e.ctx, []byte("\xff\xfe binary\nbody here\n")); strings.Contains(bin.Notice, "It begins") {
		t.Fatal("a binary body was previewed")
	}
	if long := mustOffload(t, off, e.ctx, strings.Repeat("x", 100)+"\n"); strings.Contains(long.Notice, "It begins") {
		t.Fatal("a first line over the preview was cut")
	}
	// Within the byte threshold but over the token bound, a stream shows
	// the same preview as the bytes.
	tok, err := hybridctx.NewOffloader(e.bind, hybridctx.Policy{InlineThreshold: 4096, PreviewBytes: 40,
		Tokenizer: hybridctx.EstimateTokens{}, ThresholdTokens: 5}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := mustOffload(t, tok, e.ctx, body)
	d, err := tok.OffloadReader(e.ctx, hybridctx.Call{Tool: "t", ID: "3"}, strings.NewReader(body))
	if err != nil || !strings.HasSuffix(c.Notice, want) || d.Notice != c.Notice {
		t.Fatalf("over the token bound, notices\n%q\n%q (%v)", c.Notice, d.Notice, err)
	}
	plain := mustOffload(t, e.off, e.ctx, body+" ")
	if strings.Contains(plain.Notice, "It begins") {
		t.Fatal("preview without PreviewBytes")
	}
	for _, p := range []hybridctx.Policy{
		{InlineThreshold: 1, PreviewBytes: -1}, {InlineThreshold: 1, PreviewBytes: hybridctx.MaxPreviewBytes + 1},
		{InlineThreshold: 1, ToolThresholds: map[string]int64{"x": 0}}, {InlineThreshold: 1, ToolThresholds: map[string]int64{" ": 5}},
		{InlineThreshold: 1, SearchToolName: "read_artifact"}, {InlineThreshold: 1, QueryToolName: "bad name"},
	} {
		if err := p.Validate(); !errors.Is(err, hybridctx.ErrInvalidPolicy) {
			t.Errorf("%+v: %v", p, err)
		}
	}
}

func TestToolThresholds(t *testing.T) {
	e := newEnv(t, 16)
	off, err := hybridctx.NewOffloader(e.bind, hybridctx.Policy{InlineThreshold: 16, ToolThresholds: map[string]int64{"chatty": 1000}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	body := strings.Repeat("y", 500)
	for tool, want := range map[string]hybridctx.Outcome{"chatty": hybridctx.Inline, "other": hybridctx.Offloaded} {
		out, err := off.Offload(e.ctx, hybridctx.Call{Tool: tool, ID: "1"}, body)
		if err != nil || out.Outcome() != want {
			t.Fatalf("%s: %v %v", tool, out, err)
		}
		wantCfg := int64(16)
		if tool == "chatty" {
			wantCfg = 1000
		}
		if out.Diagnostics().ConfiguredBytes() != wantCfg {
			t.Fatalf("%s: configured %d", tool, out.Diagnostics().ConfiguredBytes())
		}
		s, err := off.OffloadReader(e.ctx, hybridctx.Call{Tool: tool, ID: "2"}, bytes.NewReader([]byte(body+"!")))
		if err != nil || (s.Outcome() == hybridctx.Inline) != (want == hybridctx.Inline) {
			t.Fatalf("%s stream: %v %v", tool, s, err)
		}
		// A reader given to Offload is decided under the tool's threshold too.
		r, err := off.Offload(e.ctx, hybridctx.Call{Tool: tool, ID: "3"}, strings.NewReader(body+"?"))
		if err != nil || (r.Outcome() == hybridctx.Inline) != (want == hybridctx.Inline) || r.Diagnostics().ConfiguredBytes() != wantCfg {
			t.Fatalf("%s reader through Offload: %v %v", tool, r, err)
		}
	}
}

// TestToolNamesOneRule: the read, search and query tools' names follow one
// rule, checked in one place: each field accepts and refuses the same names
// with the same error.
func TestToolNamesOneRule(t *testing.T) {
	set := []func(*hybridctx.Policy, string){
		func(p *hybridctx.Policy, n string) { p.ReadToolName = n },
		func(p *hybridctx.Policy, n string) { p.SearchToolName = n },
		func(p *hybridctx.Policy, n string) { p.QueryToolName = n },
	}
	for _, name := range []string{strings.Repeat("n", hybridctx.MaxReadToolNameLen), "a.b-c_D9"} {
		for i, f := range set {
			p := hybridctx.Policy{InlineThreshold: 1}
			f(&p, name)
			if err := p.Validate(); err != nil {
				t.Errorf("field %d, %q: %v", i, name, err)
			}
		}
	}
	for _, bad := range []string{strings.Repeat("n", hybridctx.MaxReadToolNameLen+1), "read artifact", "x/y", "é"} {
		var msgs []string
		for _, f := range set {
			p := hybridctx.Policy{InlineThreshold: 1}
			f(&p, bad)
			err := p.Validate()
			if !errors.Is(err, hybridctx.ErrInvalidPolicy) {
				t.Fatalf("%q accepted: %v", bad, err)
			}
			msgs = append(msgs, err.Error())
		}
		if msgs[0] != msgs[1] || msgs[1] != msgs[2] {
			t.Errorf("%q: the fields' errors differ: %q", bad, msgs)
		}
	}
	p := hybridctx.Policy{InlineThreshold: 1}
	if p.ToolName(hybridctx.ViewRange) != hybridctx.DefaultReadToolName || p.ToolName(hybridctx.ViewLines) != hybridctx.DefaultReadToolName ||
		p.ToolName(hybridctx.ViewSearch) != hybridctx.DefaultSearchToolName || p.ToolName(hybridctx.ViewQuery) != hybridctx.DefaultQueryToolName {
		t.Fatal("default names")
	}
}
