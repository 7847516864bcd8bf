package hybridctx_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
)

// TestLongJSONKindRule: a body over 64 KiB is labelled json from its first
// 64 KiB (a valid JSON prefix opening with '{' or '[') and its last
// non-space byte ('}' or ']'), whatever lies between, and every input form
// reaches the same label; the whole body is still checked for UTF-8.
func TestLongJSONKindRule(t *testing.T) {
	const big = 200 << 10
	valid := jsonBody(big)
	if !json.Valid(valid) {
		t.Fatal("jsonBody is not JSON")
	}
	brokenMiddle := bytes.Clone(valid)
	copy(brokenMiddle[100<<10:], "}}}not json{{{")
	for _, tc := range []struct {
		name string
		body []byte
		kind string
	}{
		{"valid", valid, "json"},
		{"broken after 64 KiB", brokenMiddle, "json"},
		{"trailing text", append(bytes.Clone(valid), "\nend"...), "text"},
		{"trailing spaces", append(bytes.Clone(valid), " \t\r\n"...), "json"},
		{"error in the first 64 KiB", append([]byte("[1,,"), valid[4:]...), "text"},
		{"invalid UTF-8 after a text head", append([]byte("x"), append(bytes.Clone(valid[1:len(valid)-1]), 0xff, ']')...), "binary"},
		{"scalar head", append([]byte(`"`+strings.Repeat("a", 70<<10)+`"`), ' ', ']'), "text"},
	} {
		e := newEnv(t, 1024)
		for _, form := range []string{"bytes", "string", "raw", "reader"} {
			var in any = tc.body
			switch form {
			case "string":
				in = string(tc.body)
			case "raw":
				in = json.RawMessage(tc.body)
			}
			var notice string
			if form == "reader" {
				out, err := e.off.OffloadReader(e.ctx, hybridctx.Call{Tool: "tool", ID: "call"}, bytes.NewReader(tc.body))
				if err != nil {
					t.Fatalf("%s, %s: %v", tc.name, form, err)
				}
				notice = out.Notice
			} else {
				notice = mustOffload(t, e.off, e.ctx, in).Notice
			}
			if want := " lines, " + tc.kind + ";"; !strings.Contains(notice, want) {
				t.Errorf("%s, %s: notice %q, want kind %s", tc.name, form, notice, tc.kind)
			}
		}
	}
}

// TestStringInputIsNotCopiedNorHandedOut: a string result is offloaded
// from its own bytes (no copy), stored byte for byte, and an outcome that
// keeps the content gives the string back, so that no caller can write
// into the string's memory through Content.
func TestStringInputIsNotCopiedNorHandedOut(t *testing.T) {
	e := newEnv(t, 1024)
	s := strings.Repeat("résumé line\n", 500)
	out := mustOffload(t, e.off, e.ctx, s)
	if out.Outcome() != hybridctx.Offloaded {
		t.Fatalf("outcome %v", out.Outcome())
	}
	rh := mustRehydrate(t, e.reh, e.ctx, hybridctx.Request{Reference: out.Ref.String(), Budget: int64(len(s))})
	if string(rh.Segment.Bytes()) != s {
		t.Fatal("the stored body differs from the string")
	}
	big := strings.Repeat("0123456789abcdef", 1<<19) // 8 MiB
	mustOffload(t, e.off, e.ctx, big)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const runs = 4
	for range runs {
		if out := mustOffload(t, e.off, e.ctx, big); out.Outcome() != hybridctx.ExistingReference {
			t.Fatalf("reuse: %v", out.Outcome())
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / runs; per > uint64(len(big))/2 {
		t.Errorf("a reuse of an 8 MiB string allocated %d bytes: the string was copied", per)
	}
	for _, name := range []string{"write failed", "record failed"} {
		e := newEnv(t, 1024)
		switch name {
		case "write failed":
			e.hooks.Commit = func(context.Context, string, bool) error { return errors.New("injected") }
		default:
			e.hooks.CreateRecord = func(context.Context, artifact.Record) error { return errors.New("injected") }
		}
		out := mustOffload(t, e.off, e.ctx, s)
		if oc := out.Outcome(); oc != hybridctx.Failed && oc != hybridctx.RecoveryRequired {
			t.Fatalf("%s: outcome %v", name, oc)
		}
		if string(out.Content()) != s {
			t.Fatalf("%s: the outcome does not keep the string", name)
		}
		c := out.Content()
		c[0] = 'X'
		if s[0] != 'r' || out.Content()[0] != 'r' {
			t.Fatalf("%s: writing into Content changed the string", name)
		}
	}
}

// TestMidSizeKindAndLines: between 16 KiB and one chunk, the label and the
// line count of a body that may be JSON are those of the whole body,
// whether it is JSON or only opens like it.
func TestMidSizeKindAndLines(t *testing.T) {
	logs := bytes.Repeat([]byte("[INFO] request served in 3 ms ✓\n"), 2000)
	for _, tc := range []struct {
		name string
		body []byte
		kind string
	}{
		{"json, 16 KiB", jsonBody(16 << 10), "json"},
		{"json", jsonBody(40 << 10), "json"},
		{"json, 255 KiB", jsonBody(255 << 10), "json"},
		{"log lines in brackets", logs, "text"},
		{"bracket then invalid UTF-8", append(bytes.Clone(logs), 0xff), "binary"},
	} {
		e := newEnv(t, 1024)
		notice := mustOffload(t, e.off, e.ctx, tc.body).Notice
		lines := bytes.Count(tc.body, []byte{'\n'})
		if tc.body[len(tc.body)-1] != '\n' {
			lines++
		}
		want := fmt.Sprintf("%d bytes, %d lines, %s;", len(tc.body), lines, tc.kind)
		if !strings.Contains(notice, want) {
			t.Errorf("%s: notice %q, want %q", tc.name, notice, want)
		}
	}
}
