package hybridctx

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Default names of the search and query tools (docs/rehydration.md).
const (
	DefaultSearchToolName = "search_artifact"
	DefaultQueryToolName  = "query_artifact"
)

// MaxPreviewBytes bounds Policy.PreviewBytes.
const MaxPreviewBytes = 4096

// validateRetrieval checks the policy fields of targeted retrieval (docs/rehydration.md).
func (p Policy) validateRetrieval() error {
	for _, n := range []string{p.ReadToolName, p.SearchToolName, p.QueryToolName} {
		if err := validToolName(n); err != nil {
			return err
		}
	}
	names := []string{p.ToolName(ViewRange), p.ToolName(ViewSearch), p.ToolName(ViewQuery)}
	if names[0] == names[1] || names[0] == names[2] || names[1] == names[2] {
		return fmt.Errorf("%w: the read, search and query tools need distinct names", ErrInvalidPolicy)
	}
	for name, n := range p.ToolThresholds {
		if strings.TrimSpace(name) == "" || n <= 0 {
			return fmt.Errorf("%w: a tool threshold needs a tool name and a threshold > 0", ErrInvalidPolicy)
		}
	}
	if p.PreviewBytes < 0 || p.PreviewBytes > MaxPreviewBytes {
		return fmt.Errorf("%w: preview bytes must be 0 to %d", ErrInvalidPolicy, MaxPreviewBytes)
	}
	return nil
}

// validToolName is the one check of a read tool's name (Policy.ReadToolName,
// SearchToolName, QueryToolName; "" is valid: the default). Every package
// that names the read tools goes through Policy.Validate, so this is the
// only place the rule is written (docs/rehydration.md, "Tool names").
func validToolName(n string) error {
	if len(n) > MaxReadToolNameLen {
		return fmt.Errorf("%w: tool name longer than %d bytes", ErrInvalidPolicy, MaxReadToolNameLen)
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-') {
			return fmt.Errorf("%w: tool name must match [A-Za-z0-9_.-]", ErrInvalidPolicy)
		}
	}
	return nil
}

// ToolName returns the name of the tool that serves view v: the read tool
// for range and lines, else the search or query tool, defaults applied. It
// is the one place a read tool's name is derived (readtools.NamesOf reads
// all three through it).
func (p Policy) ToolName(v View) string {
	switch v {
	case ViewSearch:
		if p.SearchToolName != "" {
			return p.SearchToolName
		}
		return DefaultSearchToolName
	case ViewQuery:
		if p.QueryToolName != "" {
			return p.QueryToolName
		}
		return DefaultQueryToolName
	}
	if p.ReadToolName != "" {
		return p.ReadToolName
	}
	return DefaultReadToolName
}

// forTool returns the Offloader that decides results of tool: o itself, or
// a copy whose inline threshold is the policy's per-tool threshold (docs/rehydration.md), so
// every decision, diagnostics included, uses that threshold.
func (o *Offloader) forTool(tool string) *Offloader {
	if len(o.policy.ToolThresholds) == 0 {
		return o
	}
	n, ok := o.policy.ToolThresholds[tool]
	if !ok || n == o.policy.InlineThreshold {
		return o
	}
	c := *o
	c.policy.InlineThreshold = n
	return &c
}

// previewTap is an ingest observer that keeps the first max bytes of a
// streamed body for the notice preview and passes everything on.
type previewTap struct {
	next io.Writer
	max  int
	buf  []byte
}

func (p *previewTap) Write(b []byte) (int, error) {
	if room := p.max - len(p.buf); room > 0 {
		p.buf = append(p.buf, b[:min(room, len(b))]...)
	}
	return p.next.Write(b)
}

// previewHead returns the first bytes of the body being stored.
func (st *storing) previewHead() []byte {
	if st.head != nil {
		return st.head.buf
	}
	return st.bytes
}

// previewIntro introduces the preview lines after the notice's.
const previewIntro = "\nIt begins:\n"

// withPreview appends to a stored notice the policy's preview (docs/offload.md, "The notice"): the
// first whole lines of a text or JSON body, at most PreviewBytes bytes, so
// the notice is at most MaxNoticeLen + PreviewBytes bytes and stays
// byte-identical for the same body and policy. Nothing for binary bodies,
// or when the first line alone is longer.
func (p Policy) withPreview(notice string, head []byte, kind string) string {
	if p.PreviewBytes <= 0 || kind == "binary" {
		return notice
	}
	head = head[:min(int64(len(head)), p.PreviewBytes)]
	end := bytes.LastIndexByte(head, '\n')
	if end <= 0 || !utf8.Valid(head[:end]) {
		return notice
	}
	return notice + previewIntro + string(head[:end])
}
