package workload

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/readtools"
	"github.com/hybridctx/hybridctx/workspace"
)

// The context-economy benchmark (docs/figures.md): for every stored result of a
// workload, one question with a known answer — the line of a text result
// that holds a token found nowhere else in it, or the value at a path of a
// JSON result — answered twice by a scripted model: with byte pages only
// (read_artifact from offset 0 in windows of the notice's size until the
// answer is in hand: the line whole, or the JSON document whole), and with
// the targeted tools (search_artifact then, for a line cut in the answer,
// read_artifact by line; query_artifact for JSON). The targeted calls run
// through package readtools against the workspace; the byte pages are
// counted from the body, since every page is its bytes exactly.

// QuestionOptions configure AskQuestions.
type QuestionOptions struct {
	// Threshold is the inline threshold the workload ran under: results
	// larger than it were stored and get a question. Zero (as the history
	// bench asks of masked results) skips the notice-led strategy.
	Threshold int64
	// User and Workflow are the owner the workload ran under (with each
	// item's session).
	User, Workflow string
	// MaxBytes is the budget the scripted model asks for on targeted
	// calls; 0 means 4096.
	MaxBytes int64
}

// QuestionReport is the outcome of AskQuestions.
type QuestionReport struct {
	// Questions is the number of questions asked; Skipped counts stored
	// results with no question (binary, or no line unique in its body).
	Questions int `json:"questions"`
	Skipped   int `json:"skipped"`
	// BytePages, Tools and NoticeLed are the three strategies.
	BytePages Strategy `json:"byte_pages"`
	Tools     Strategy `json:"targeted_tools"`
	NoticeLed Strategy `json:"notice_led"`

	// shapeMisses counts JSON questions whose filter the notice's outline
	// did not settle (the scripted model then wrote the rest as the
	// question words it).
	shapeMisses int
}

// Strategy sums one way of answering every question.
type Strategy struct {
	// Calls and Bytes are per question: read calls made and bytes
	// rehydrated into the conversation.
	Calls Dist `json:"calls"`
	Bytes Dist `json:"bytes"`
	// Exact counts answers equal to the known answer; ExactShare is their
	// share, in percent.
	Exact      int     `json:"exact"`
	ExactShare float64 `json:"exact_percent"`

	calls, bytes []int64
}

// Dist is a distribution's p50, p95 and maximum.
type Dist struct {
	P50 int64 `json:"p50"`
	P95 int64 `json:"p95"`
	Max int64 `json:"max"`
}

func (s *Strategy) add(calls, n int64, exact bool) {
	s.calls, s.bytes = append(s.calls, calls), append(s.bytes, n)
	if exact {
		s.Exact++
	}
}

func (s *Strategy) finish() {
	s.Calls, s.Bytes = dist(s.calls), dist(s.bytes)
	if len(s.calls) > 0 {
		s.ExactShare = 100 * float64(s.Exact) / float64(len(s.calls))
	}
}

func dist(v []int64) Dist {
	if len(v) == 0 {
		return Dist{}
	}
	s := slices.Clone(v)
	slices.Sort(s)
	at := func(p float64) int64 { return s[min(len(s)-1, int(p*float64(len(s))))] }
	return Dist{P50: at(0.50), P95: at(0.95), Max: s[len(s)-1]}
}

// pageBytes is the window of a byte-page read: the notice's suggestion.
const pageBytes = 65536

// AskQuestions replays src's stored results against store, which the
// workload already ran into, and reports both strategies.
func AskQuestions(ctx context.Context, src Source, store *workspace.Store, opts QuestionOptions) (*QuestionReport, error) {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = 4096
	}
	if opts.User == "" {
		opts.User = DefaultUser
	}
	if opts.Workflow == "" {
		opts.Workflow = DefaultWorkflow
	}
	if opts.Threshold <= 0 {
		opts.Threshold = DefaultThreshold
	}
	rep := &QuestionReport{}
	sets := map[string]*readtools.Set{}
	for {
		it, err := src.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if int64(len(it.Content)) <= opts.Threshold {
			continue
		}
		set := sets[it.Session]
		if set == nil {
			if set, err = toolsFor(store, artifact.Owner{User: opts.User, Workflow: opts.Workflow, Session: it.Session}); err != nil {
				return nil, err
			}
			sets[it.Session] = set
		}
		asked, err := ask(ctx, set, it.Content, opts, rep)
		if err != nil {
			return nil, err
		}
		if asked {
			rep.Questions++
		} else {
			rep.Skipped++
		}
	}
	rep.BytePages.finish()
	rep.Tools.finish()
	rep.NoticeLed.finish()
	return rep, nil
}

func toolsFor(store *workspace.Store, o artifact.Owner) (*readtools.Set, error) {
	bind, err := hybridctx.NewBinding(o, store)
	if err != nil {
		return nil, err
	}
	reh, err := hybridctx.NewRehydrator(bind, nil)
	if err != nil {
		return nil, err
	}
	return readtools.New(reh, nil)
}

// ask asks the question of one body, if it has one.
func ask(ctx context.Context, set *readtools.Set, body []byte, opts QuestionOptions, rep *QuestionReport) (bool, error) {
	ref := artifact.RefOf(body).String()
	seed := fnv.New64a()
	seed.Write(body[:min(len(body), 4096)])
	pick := seed.Sum64()
	var q question
	if json.Valid(body) {
		path, steps, want, ok := jsonQuestion(body, pick)
		if !ok {
			return false, nil
		}
		q = question{json: true, path: path, steps: steps, want: want}
		rep.BytePages.add(pages(int64(len(body))), int64(len(body)), true)
	} else {
		if !utf8.Valid(body) {
			return false, nil
		}
		lineNo, line, token, ok := textQuestion(body, pick)
		if !ok {
			return false, nil
		}
		q = question{lineNo: lineNo, line: line, token: token}
		end := int64(bytes.Index(body, line)) + int64(len(line))
		rep.BytePages.add(pages(end), min(int64(len(body)), pages(end)*pageBytes), true)
	}
	m := &scripted{set: set, ref: ref, maxBytes: opts.MaxBytes}
	exact, err := m.targeted(ctx, &q)
	if err != nil {
		return false, err
	}
	rep.Tools.add(m.calls, m.bytes, exact)
	if opts.Threshold <= 0 {
		return true, nil // no notice to lead: the targeted tools only
	}
	notice, err := noticeOf(ctx, body, opts.Threshold)
	if err != nil {
		return false, err
	}
	m = &scripted{set: set, ref: ref, maxBytes: opts.MaxBytes}
	exact, missed, err := m.noticeLed(ctx, &q, notice, body)
	if err != nil {
		return false, err
	}
	rep.NoticeLed.add(m.calls, m.bytes, exact)
	if missed {
		rep.shapeMisses++
	}
	return true, nil
}

// question is the question asked of one body: a text body's line, with
// its number and the token found nowhere else, or the value at a path of
// a JSON body (the path's steps: int indices and string keys).
type question struct {
	json   bool
	lineNo int64
	line   []byte
	token  string
	path   string
	steps  []any
	want   any
}

// scripted is the scripted model answering one question: the calls it
// made and the bytes they brought into the conversation.
type scripted struct {
	set          *readtools.Set
	ref          string
	maxBytes     int64
	calls, bytes int64
}

// call makes one read call and counts it.
func (m *scripted) call(ctx context.Context, k readtools.Kind, args map[string]any) (*readtools.Result, error) {
	res, err := call(ctx, m.set, k, args)
	if err != nil {
		return nil, err
	}
	m.calls++
	m.bytes += answerBytes(res)
	return res, nil
}

// targeted answers with the targeted tools: query_artifact with the
// question's path; search_artifact for the token, then the line by number
// if the search cut it.
func (m *scripted) targeted(ctx context.Context, q *question) (bool, error) {
	if q.json {
		return m.query(ctx, q, q.path)
	}
	return m.search(ctx, q, map[string]any{"reference": m.ref, "pattern": q.token})
}

// query runs filter and says whether its first result is the answer.
func (m *scripted) query(ctx context.Context, q *question, filter string) (bool, error) {
	res, err := m.call(ctx, readtools.Query, map[string]any{"reference": m.ref, "filter": filter, "max_bytes": m.maxBytes})
	if err != nil {
		return false, err
	}
	first, _, _ := strings.Cut(res.ModelText(), "\n")
	var got any
	return !res.IsError && json.Unmarshal([]byte(first), &got) == nil && reflect.DeepEqual(got, q.want), nil
}

// search runs a search with args (the token filled in) and, when the line
// was cut around the token, reads it whole by number.
func (m *scripted) search(ctx context.Context, q *question, args map[string]any) (bool, error) {
	args["max_bytes"] = m.maxBytes
	res, err := m.call(ctx, readtools.Search, args)
	if err != nil {
		return false, err
	}
	text := strings.TrimSuffix(string(q.line), "\n")
	prefix := strconv.FormatInt(q.lineNo, 10) + ":"
	exact := !res.IsError && strings.HasPrefix(res.ModelText(), prefix+text+"\n")
	if !exact && !res.IsError && strings.HasPrefix(res.ModelText(), prefix+"[line of ") {
		// The line was cut around the token: read it whole by number.
		res, err = m.call(ctx, readtools.Read, map[string]any{"reference": m.ref, "start_line": q.lineNo, "line_count": 1, "max_bytes": m.maxBytes})
		if err != nil {
			return false, err
		}
		exact = !res.IsError && bytes.Equal(res.Bytes(), q.line)
	}
	return exact, nil
}

func pages(end int64) int64 { return max(1, (end+pageBytes-1)/pageBytes) }

func answerBytes(r *readtools.Result) int64 { return int64(len(r.ModelText())) }

func call(ctx context.Context, set *readtools.Set, k readtools.Kind, args map[string]any) (*readtools.Result, error) {
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	res, err := set.CallKind(ctx, k, raw)
	if err != nil {
		return nil, err
	}
	if res.Rehydration == nil {
		return nil, fmt.Errorf("questions: %s: %w", set.Tool(k).Name, errors.Join(errors.New(res.Text), res.Err))
	}
	return res, nil
}

// textQuestion picks a line of body holding a token found nowhere else in
// it: the line's last word, or else the line itself. It returns the line's
// number, its bytes (LF kept) and the token.
func textQuestion(body []byte, pick uint64) (int64, []byte, string, bool) {
	n := int64(bytes.Count(body, []byte{'\n'}))
	if len(body) > 0 && body[len(body)-1] != '\n' {
		n++
	}
	if n == 0 {
		return 0, nil, "", false
	}
	start := int64(pick % uint64(n))
	for k := int64(0); k < min(n, 50); k++ {
		no := (start+k)%n + 1
		line := nthLine(body, no)
		text := strings.TrimSuffix(string(line), "\n")
		fields := strings.Fields(text)
		for _, tok := range []string{lastOf(fields), text} {
			if len(tok) >= 6 && len(tok) <= hybridctx.MaxPatternBytes && bytes.Count(body, []byte(tok)) == 1 {
				return no, line, tok, true
			}
		}
	}
	return 0, nil, "", false
}

func lastOf(f []string) string {
	if len(f) == 0 {
		return ""
	}
	return f[len(f)-1]
}

// nthLine returns line no (1-based) of body, LF kept.
func nthLine(body []byte, no int64) []byte {
	for i := int64(1); i < no; i++ {
		j := bytes.IndexByte(body, '\n')
		body = body[j+1:]
	}
	if j := bytes.IndexByte(body, '\n'); j >= 0 {
		return body[:j+1]
	}
	return body
}

// jsonQuestion walks from the document's root to a leaf, choosing array
// elements and object keys from pick, and returns the jq path, its steps
// (int indices, string keys) and the leaf's value.
func jsonQuestion(body []byte, pick uint64) (string, []any, any, bool) {
	var v any
	if json.Unmarshal(body, &v) != nil {
		return "", nil, nil, false
	}
	var steps []any
	var path strings.Builder
	for depth := 0; depth < 32; depth++ {
		switch x := v.(type) {
		case []any:
			if len(x) == 0 {
				return finishPath(&path), steps, v, true
			}
			i := int(pick % uint64(len(x)))
			steps = append(steps, i)
			pick = pick/uint64(len(x)) + 7919*uint64(depth+1)
			fmt.Fprintf(&path, "[%d]", i)
			v = x[i]
		case map[string]any:
			if len(x) == 0 {
				return finishPath(&path), steps, v, true
			}
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			k := keys[int(pick%uint64(len(keys)))]
			steps = append(steps, k)
			pick = pick/uint64(len(keys)) + 104729*uint64(depth+1)
			q, _ := json.Marshal(k)
			fmt.Fprintf(&path, "[%s]", q)
			v = x[k]
		default:
			return finishPath(&path), steps, v, true
		}
	}
	return "", nil, nil, false
}

func finishPath(b *strings.Builder) string { return "." + b.String() }
