// Package adapttest is the shared fixture of the adapter modules' tests:
// two owners over one memory workspace, a 1 MiB tool result with one
// needle line, and a scripted model that pages a stored result back through
// the read tools. It is test support only.
package adapttest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

// Threshold is the inline threshold of the fixture's offloaders.
const Threshold = 4096

// Needle is the one line of Body that Script searches for.
const Needle = "NEEDLE-7f3a9c"

// BigTool is the name of the tool returning Body in the end-to-end tests.
const BigTool = "fetch_log"

// FailingTool is the name of a tool that fails with Secret in its error.
const FailingTool = "flaky"

// Secret is the text of FailingTool's error; it must never reach the model.
const Secret = "dial tcp 10.9.8.7:5432: password authentication failed for user \"svc\""

// Env is one memory workspace shared by two owners, A and B.
type Env struct {
	Off, OffB *hybridctx.Offloader
	Reh, RehB *hybridctx.Rehydrator
}

// New returns the fixture. policy, when non-nil, replaces the default
// policy (Threshold, default read tool name).
func New(tb testing.TB, policy *hybridctx.Policy) *Env {
	tb.Helper()
	mem := memstore.New()
	ws := workspace.New(mem, mem)
	p := hybridctx.Policy{InlineThreshold: Threshold}
	if policy != nil {
		p = *policy
	}
	e := &Env{}
	for i, owner := range []string{"ada", "bob"} {
		bind, err := hybridctx.NewBinding(artifact.Owner{User: owner, Workflow: "adapters", Session: "s1"}, ws)
		if err != nil {
			tb.Fatal(err)
		}
		off, err := hybridctx.NewOffloader(bind, p, nil)
		if err != nil {
			tb.Fatal(err)
		}
		reh, err := hybridctx.NewRehydrator(bind, nil)
		if err != nil {
			tb.Fatal(err)
		}
		if i == 0 {
			e.Off, e.Reh = off, reh
		} else {
			e.OffB, e.RehB = off, reh
		}
	}
	return e
}

// Body returns the 1 MiB tool result: numbered text lines, one of which
// holds Needle.
func Body() string {
	var b strings.Builder
	const size = 1 << 20
	b.Grow(size)
	for i := 0; b.Len() < size; i++ {
		line := fmt.Sprintf("%06d level=info msg=\"request served\" path=/v1/items/%d bytes=%d\n", i, i*7%1000, i*13%9000)
		if i == 9000 {
			line = fmt.Sprintf("%06d level=error msg=\"%s\"\n", i, Needle)
		}
		if b.Len()+len(line) > size {
			line = strings.Repeat("x", size-b.Len()-1) + "\n"
		}
		b.WriteString(line)
	}
	return b.String()
}

// NeverStored is a well-formed reference no one has stored.
const NeverStored = "artifact://sha256/" + "0000000000000000000000000000000000000000000000000000000000000000"

// RefOf returns the reference on the first line of a notice.
func RefOf(notice string) (string, error) {
	first, _, _ := strings.Cut(notice, "\n")
	if _, err := artifact.ParseRef(first); err != nil {
		return "", fmt.Errorf("notice does not start with a reference: %w", err)
	}
	return first, nil
}

// MaxNotice is the most bytes the model may see of a stored result (no
// preview configured).
const MaxNotice = hybridctx.MaxNoticeLen

// Step is one tool call the scripted model makes.
type Step struct {
	Name string
	Args json.RawMessage
}

// Script is a scripted model: it calls BigTool, checks the notice is
// bounded, pages the stored body back with the read tool in Page-sized
// ranges, then searches for Needle (when SearchTool is set) and stops. It
// is driven by the tool results the SDK under test delivers.
type Script struct {
	// ReadTool and SearchTool name the read tools ("" skips the search).
	ReadTool, SearchTool string
	// Page is the length of one read.
	Page int64

	// Notice is the text the model saw for BigTool.
	Notice string
	// Pages holds every read answer, in order.
	Pages []string
	// Search is the search answer.
	Search string

	ref   string
	got   bytes.Buffer
	state int
}

// ErrScript is wrapped by every complaint of the scripted model.
var ErrScript = errors.New("scripted model")

// Next returns the next tool call after the previous call's result (""
// for the first call), or done when the model has finished.
func (s *Script) Next(result string) (step Step, done bool, err error) {
	switch s.state {
	case 0:
		s.state = 1
		return Step{Name: BigTool, Args: json.RawMessage(`{"path":"/var/log/app.log"}`)}, false, nil
	case 1:
		s.Notice = result
		if len(result) > MaxNotice {
			return Step{}, false, fmt.Errorf("%w: notice is %d bytes", ErrScript, len(result))
		}
		if s.ref, err = RefOf(result); err != nil {
			return Step{}, false, fmt.Errorf("%w: %w", ErrScript, err)
		}
		s.state = 2
		return s.read(0), false, nil
	case 2:
		s.Pages = append(s.Pages, result)
		s.got.WriteString(result)
		if int64(len(result)) == s.Page {
			return s.read(int64(s.got.Len())), false, nil
		}
		if s.SearchTool == "" {
			s.state = 4
			return Step{}, true, nil
		}
		s.state = 3
		args, _ := json.Marshal(map[string]any{"reference": s.ref, "pattern": Needle})
		return Step{Name: s.SearchTool, Args: args}, false, nil
	case 3:
		s.Search = result
		s.state = 4
		return Step{}, true, nil
	}
	return Step{}, true, nil
}

func (s *Script) read(off int64) Step {
	args, _ := json.Marshal(map[string]any{"reference": s.ref, "offset": off, "length": s.Page, "max_bytes": s.Page})
	return Step{Name: s.ReadTool, Args: args}
}

// Got returns the bytes read back.
func (s *Script) Got() string { return s.got.String() }

// Ref returns the reference the notice named.
func (s *Script) Ref() string { return s.ref }

// Check reports what the script saw against the body it should have read.
func (s *Script) Check(body string) error {
	if s.state != 4 {
		return fmt.Errorf("%w: stopped in state %d", ErrScript, s.state)
	}
	if s.Got() != body {
		return fmt.Errorf("%w: read back %d bytes, want the %d-byte body byte for byte", ErrScript, s.got.Len(), len(body))
	}
	if s.SearchTool != "" && !strings.Contains(s.Search, Needle) {
		return fmt.Errorf("%w: search answer %.200q lacks the needle", ErrScript, s.Search)
	}
	return nil
}

// Offload stores body for e's owner A and returns the notice, for tests
// that need a stored reference without running a tool.
func (e *Env) Offload(ctx context.Context, body string) (string, error) {
	out, err := e.Off.Offload(ctx, hybridctx.Call{Tool: BigTool, ID: "setup"}, body)
	if err != nil {
		return "", err
	}
	return out.Text(), nil
}

// Payload returns a result of size bytes whose first bytes hold i, so every
// i gives different content (a fresh offload each time).
func Payload(i, size int) string {
	head := fmt.Sprintf("%012d\n", i)
	var b strings.Builder
	b.Grow(size)
	b.WriteString(head)
	line := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n"
	for b.Len()+len(line) <= size {
		b.WriteString(line)
	}
	b.WriteString(strings.Repeat("z", size-b.Len()))
	return b.String()
}

// BenchSizes are the result sizes of the adapters' overhead benchmarks: one
// kept inline, one offloaded.
var BenchSizes = []struct {
	Name string
	Size int
}{{"inline_1KiB", 1 << 10}, {"offloaded_64KiB", 64 << 10}}
