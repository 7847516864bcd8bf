package workload

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/readtools"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

// The notice-led strategy: a scripted model that makes first the call the
// notice shows (line 3), its placeholder filled in: the token for a
// search's "pattern", and for a query's "filter" a path written from the
// outline on line 4, each step of the question checked against it and
// each key taken from it; then it goes on as the targeted strategy does
// (the line by number when the search cut it; the known path when the
// filter failed). A notice whose first call is a byte range is followed
// by byte pages.

// noticeOf returns the notice the model saw for body under threshold. A
// notice depends only on the body and the policy, so a throwaway memory
// workspace gives the very notice of the run, and the owner asking reads
// nothing into its own.
func noticeOf(ctx context.Context, body []byte, threshold int64) (string, error) {
	m := memstore.New()
	bind, err := hybridctx.NewBinding(artifact.Owner{User: "notice", Workflow: "notice", Session: "notice"}, workspace.New(m, m))
	if err != nil {
		return "", err
	}
	off, err := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: threshold}, nil)
	if err != nil {
		return "", err
	}
	out, err := off.Offload(ctx, hybridctx.Call{Tool: "bench", ID: "notice"}, body)
	if err != nil {
		return "", err
	}
	if out.Ref.IsZero() {
		return "", fmt.Errorf("questions: a stored result was %s", out.Outcome())
	}
	return out.Notice, nil
}

// errNotice reports a notice the scripted model cannot follow.
var errNotice = errors.New("questions: the notice shows no call to make")

// noticeLed answers q as the notice leads: it reports whether the answer
// is exact and whether the outline left a JSON filter unsettled.
func (m *scripted) noticeLed(ctx context.Context, q *question, notice string, body []byte) (exact, missed bool, err error) {
	lines := strings.Split(notice, "\n")
	if len(lines) < 3 {
		return false, false, errNotice
	}
	k, args, err := firstCall(m.set, lines[2])
	if err != nil {
		return false, false, err
	}
	switch {
	case k == readtools.Search && !q.json:
		args["pattern"] = q.token
		exact, err := m.search(ctx, q, args)
		return exact, false, err
	case k == readtools.Query && q.json:
		var outline *shapeNode
		if len(lines) > 3 {
			outline = parseShape(strings.TrimPrefix(lines[3], "shape: "))
		}
		filter, settled := filterFromShape(outline, q.steps)
		exact, err := m.query(ctx, q, filter)
		if err == nil && !exact {
			// As the targeted strategy: the path as the question gives it.
			exact, err = m.query(ctx, q, q.path)
		}
		return exact, !settled, err
	case k == readtools.Read && args["offset"] != nil:
		end := int64(len(body))
		if !q.json {
			end = int64(bytes.Index(body, q.line) + len(q.line))
		}
		m.calls, m.bytes = pages(end), min(int64(len(body)), pages(end)*pageBytes)
		return true, false, nil
	}
	return false, false, fmt.Errorf("%w: %q", errNotice, lines[2])
}

// firstCall parses the first call a notice's line shows: the tool's name
// before the first '{', and the JSON object of its arguments.
func firstCall(set *readtools.Set, line string) (readtools.Kind, map[string]any, error) {
	i := strings.Index(line, " {")
	if i < 0 {
		return 0, nil, fmt.Errorf("%w: %q", errNotice, line)
	}
	name := line[strings.LastIndexByte(line[:i], ' ')+1 : i]
	var args map[string]any
	if err := json.NewDecoder(strings.NewReader(line[i+1:])).Decode(&args); err != nil {
		return 0, nil, fmt.Errorf("%w: %q: %v", errNotice, line, err)
	}
	for _, k := range []readtools.Kind{readtools.Read, readtools.Search, readtools.Query} {
		if set.Tool(k).Name == name {
			return k, args, nil
		}
	}
	return 0, nil, fmt.Errorf("%w: no tool %q", errNotice, name)
}

// shapeNode is an outline as the notice shows it: a scalar or "object"
// (typ), an array with the outline of its elements, or an object with its
// keys; nil where the outline was cut (…).
type shapeNode struct {
	typ  string // "string", "number", "bool", "null", "object", "array", "{}"
	elem *shapeNode
	keys []string
	vals []*shapeNode
}

// parseShape reads an outline; what it cannot read is nil.
func parseShape(s string) *shapeNode {
	p := &shapeParser{s: s}
	return p.value()
}

type shapeParser struct {
	s string
	i int
}

func (p *shapeParser) eat(t string) bool {
	if strings.HasPrefix(p.s[p.i:], t) {
		p.i += len(t)
		return true
	}
	return false
}

func (p *shapeParser) value() *shapeNode {
	for _, w := range []string{"string", "number", "bool", "null", "object"} {
		if p.eat(w) {
			return &shapeNode{typ: w}
		}
	}
	switch {
	case p.eat("array["):
		p.eat("≥")
		for p.i < len(p.s) && '0' <= p.s[p.i] && p.s[p.i] <= '9' {
			p.i++
		}
		n := &shapeNode{typ: "array"}
		if p.eat("]") && p.eat(" of ") {
			n.elem = p.value()
		}
		return n
	case p.eat("{"):
		n := &shapeNode{typ: "{}"}
		for !p.eat("}") && p.i < len(p.s) && p.s[p.i] == '"' {
			var key string
			dec := json.NewDecoder(strings.NewReader(p.s[p.i:]))
			if dec.Decode(&key) != nil {
				return n
			}
			p.i += int(dec.InputOffset())
			if !p.eat(": ") {
				return n
			}
			n.keys, n.vals = append(n.keys, key), append(n.vals, p.value())
			p.eat(", ")
		}
		return n
	}
	return nil // …, or what the outline does not say
}

// filterFromShape writes the jq path of steps from the outline: an index
// where it shows an array, a key where it shows an object listing that key
// (the key as the outline spells it). Where the outline runs out, the rest
// is written as the question words it, and settled is false.
func filterFromShape(n *shapeNode, steps []any) (filter string, settled bool) {
	var b strings.Builder
	b.WriteByte('.')
	for j, st := range steps {
		next, ok := (*shapeNode)(nil), false
		switch st := st.(type) {
		case int:
			if n != nil && n.typ == "array" {
				b.WriteString("[" + strconv.Itoa(st) + "]")
				next, ok = n.elem, true
			}
		case string:
			if n != nil && n.typ == "{}" {
				for i, k := range n.keys {
					if k == st {
						q, _ := json.Marshal(k)
						b.WriteString("[" + string(q) + "]")
						next, ok = n.vals[i], true
						break
					}
				}
			}
		}
		if !ok {
			for _, st := range steps[j:] {
				if i, isInt := st.(int); isInt {
					b.WriteString("[" + strconv.Itoa(i) + "]")
				} else {
					q, _ := json.Marshal(st)
					b.WriteString("[" + string(q) + "]")
				}
			}
			return b.String(), false
		}
		n = next
	}
	return b.String(), true
}
