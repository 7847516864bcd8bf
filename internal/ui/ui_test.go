package ui_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/internal/ui"
	"github.com/hybridctx/hybridctx/sink"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/drivertest"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

var (
	ownerA = artifact.Owner{User: "ada", Workflow: "triage", Session: "s1"}
	ownerB = artifact.Owner{User: "bob", Workflow: "triage", Session: "s1"}
)

// rig is a workspace with an events file and a served view of ownerA.
type rig struct {
	mem    *memstore.Store
	store  *workspace.Store
	events string
	srv    *httptest.Server
	seen   chan *hybridctx.Event // the events of the page's reads
}

func newRig(t *testing.T, token string) *rig {
	t.Helper()
	mem := memstore.New()
	r := &rig{mem: mem, store: workspace.New(mem, mem), events: filepath.Join(t.TempDir(), "events.jsonl"),
		seen: make(chan *hybridctx.Event, 1000)}
	b, err := hybridctx.NewBinding(ownerA, r.store)
	if err != nil {
		t.Fatal(err)
	}
	reh, err := hybridctx.NewRehydrator(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep := hybridctx.NewReporter(hybridctx.ReporterOptions{RunID: "ui", AgentID: "hybridctx", Sinks: []hybridctx.Sink{sink.Channel{C: r.seen}}})
	h, err := ui.New(ui.Options{Store: r.store, Owner: ownerA, Rehydrator: reh, EventsPath: r.events, Reporter: rep, Token: token, MaxBudget: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	r.srv = httptest.NewServer(h)
	t.Cleanup(r.srv.Close)
	return r
}

// offload stores each result for owner and appends the events to the
// events file under runID; it returns the references and the run's summary.
func (r *rig) offload(t *testing.T, owner artifact.Owner, runID string, results ...string) ([]string, *sink.Summary) {
	t.Helper()
	f, err := os.OpenFile(r.events, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sum := sink.NewSummary()
	rep := hybridctx.NewReporter(hybridctx.ReporterOptions{RunID: runID, AgentID: "root", Sinks: []hybridctx.Sink{sink.NewJSONLines(f), sum}})
	b, err := hybridctx.NewBinding(owner, r.store)
	if err != nil {
		t.Fatal(err)
	}
	off, err := hybridctx.NewOffloader(b, hybridctx.Policy{InlineThreshold: 16}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	for i, res := range results {
		ctx := hybridctx.WithReporter(context.Background(), rep)
		if i%2 == 1 {
			ctx = hybridctx.WithReporter(context.Background(), rep.Child("sub"))
		}
		out, err := off.Offload(ctx, hybridctx.Call{Tool: "tool", ID: fmt.Sprint(i)}, res)
		if err != nil {
			t.Fatal(err)
		}
		if ref := out.Diagnostics().Reference(); !ref.IsZero() {
			refs = append(refs, ref.String())
		}
	}
	return refs, sum
}

// get does one request and decodes a JSON answer into v (when not nil).
func (r *rig) get(t *testing.T, method, path string, v any, header ...string) int {
	t.Helper()
	req, err := http.NewRequest(method, r.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if v != nil && resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, body)
		}
	}
	return resp.StatusCode
}

func TestRefusals(t *testing.T) {
	r := newRig(t, "")
	port := r.srv.URL[strings.LastIndex(r.srv.URL, ":")+1:]
	for _, c := range []struct {
		name, method, path string
		header             []string
		want               int
	}{
		{"page", "GET", "/", nil, 200},
		{"api", "GET", "/api/runs", nil, 200},
		{"head", "HEAD", "/api/runs", nil, 200},
		{"own origin", "GET", "/api/runs", []string{"Origin", "http://localhost:" + port}, 200},
		{"rebinding Host", "GET", "/api/runs", []string{"Host", "evil.example:" + port}, 403},
		{"rebinding Host, page", "GET", "/", []string{"Host", "evil.example"}, 403},
		{"foreign origin", "GET", "/api/artifacts", []string{"Origin", "http://evil.example"}, 403},
		{"other port", "GET", "/api/artifacts", []string{"Origin", "http://127.0.0.1:1"}, 403},
		{"null origin", "GET", "/api/artifacts", []string{"Origin", "null"}, 403},
		{"POST", "POST", "/api/runs", nil, 405},
		{"PUT", "PUT", "/api/artifacts", nil, 405},
		{"DELETE", "DELETE", "/api/artifacts/" + strings.Repeat("a", 64) + "/lines", nil, 405},
		{"PATCH page", "PATCH", "/", nil, 405},
		{"unknown API", "GET", "/api/nothing", nil, 404},
		{"unknown run", "GET", "/api/runs/none", nil, 404},
		{"unknown view", "GET", "/api/artifacts/" + strings.Repeat("a", 64) + "/write", nil, 404},
	} {
		if got := r.get(t, c.method, c.path, nil, c.header...); got != c.want {
			t.Errorf("%s: status %d, want %d", c.name, got, c.want)
		}
	}
}

func TestToken(t *testing.T) {
	const tok = "0123456789abcdef-token"
	r := newRig(t, tok)
	for _, c := range []struct {
		path, auth string
		want       int
	}{
		{"/", "", 200}, // the page's files hold no data
		{"/app.js", "", 200},
		{"/api/runs", "", 401},
		{"/api/artifacts", "Bearer wrong", 401},
		{"/api/artifacts", tok, 401},
		{"/api/artifacts", "Bearer " + tok + "x", 401},
		{"/api/artifacts", "Bearer " + tok, 200},
	} {
		var h []string
		if c.auth != "" {
			h = []string{"Authorization", c.auth}
		}
		if got := r.get(t, "GET", c.path, nil, h...); got != c.want {
			t.Errorf("%s with %q: status %d, want %d", c.path, c.auth, got, c.want)
		}
	}
	if _, err := ui.New(ui.Options{Token: "short"}); err == nil {
		t.Error("New accepted a short token")
	}
}

// TestBadEventLines: bad lines are counted, listed by number and skipped;
// the good ones make the runs, whose summary is sink.Summary's.
func TestBadEventLines(t *testing.T) {
	r := newRig(t, "")
	big := strings.Repeat("x", 5000)
	_, sum1 := r.offload(t, ownerA, "run-1", big, "small", big+"y")
	f, _ := os.OpenFile(r.events, os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintln(f, "not json")
	fmt.Fprintln(f, `{"type":"offload_decision","sequence":1}`)
	fmt.Fprintln(f, strings.Repeat("z", ui.MaxEventLine+10))
	fmt.Fprintln(f, `{"type":"run_summary","run_id":"run-1","history":{"compactions":2,"masked":3,"bytes_taken_out":100,"tokens_taken_out":0,"over_budget":0}}`)
	f.Close()
	_, sum2 := r.offload(t, ownerA, "run-2", big+"z")

	var runs struct {
		Present  bool `json:"present"`
		Lines    int
		BadLines int64 `json:"bad_lines"`
		Bad      []ui.BadLine
		Runs     []struct {
			RunID     string `json:"run_id"`
			Decisions int
		}
	}
	if r.get(t, "GET", "/api/runs", &runs) != 200 {
		t.Fatal("runs")
	}
	wantBad := []ui.BadLine{{Line: 4, Reason: "not_an_event"}, {Line: 5, Reason: "not_an_event"}, {Line: 6, Reason: "too_long"}}
	if !runs.Present || runs.BadLines != 3 || !reflect.DeepEqual(runs.Bad, wantBad) || runs.Lines != 8 {
		t.Fatalf("lines %d, bad %d %v", runs.Lines, runs.BadLines, runs.Bad)
	}
	if len(runs.Runs) != 2 || runs.Runs[0].RunID != "run-2" || runs.Runs[1].Decisions != 3 {
		t.Fatalf("runs %+v", runs.Runs)
	}
	for id, sum := range map[string]*sink.Summary{"run-1": sum1, "run-2": sum2} {
		var run struct {
			Summary     json.RawMessage `json:"summary"`
			SummaryText []string        `json:"summary_text"`
			Agents      []struct {
				Agent    string
				Children []struct{ Agent string }
			}
			Economy struct {
				Sentence string
				Kept     []int64
			}
		}
		if r.get(t, "GET", "/api/runs/"+id, &run) != 200 {
			t.Fatal(id)
		}
		want := sum.Report()
		if id == "run-1" {
			want.History = sink.HistoryReport{Compactions: 2, Masked: 3, BytesTakenOut: 100}
		}
		if string(run.Summary) != jsonOf(t, want) {
			t.Errorf("%s: summary\n got %s\nwant %s", id, run.Summary, jsonOf(t, want))
		}
		if !reflect.DeepEqual(run.SummaryText, ui.SummaryText(want)) {
			t.Errorf("%s: summary text %q", id, run.SummaryText)
		}
		if n := len(run.Economy.Kept); n == 0 || run.Economy.Kept[n-1] != want.BytesKeptOutOfContext {
			t.Errorf("%s: economy %v, kept %d", id, run.Economy.Kept, want.BytesKeptOutOfContext)
		}
		if id == "run-1" && (len(run.Agents) != 1 || run.Agents[0].Agent != "root" || len(run.Agents[0].Children) != 1 ||
			run.Agents[0].Children[0].Agent != "sub") {
			t.Errorf("agents %+v", run.Agents)
		}
	}
}

func jsonOf(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestNoEventsFile(t *testing.T) {
	r := newRig(t, "")
	var runs struct {
		Present bool
		Runs    []any
	}
	if r.get(t, "GET", "/api/runs", &runs) != 200 || runs.Present || len(runs.Runs) != 0 {
		t.Fatalf("%+v", runs)
	}
}

// TestPaging: thousands of artifacts and decisions come a page at a time,
// sorted and filtered on the server.
func TestPaging(t *testing.T) {
	r := newRig(t, "")
	results := make([]string, 2500)
	for i := range results {
		results[i] = fmt.Sprintf("%0*d", 20+i, i) // distinct sizes, all offloaded
	}
	r.offload(t, ownerA, "big", results...)
	type page struct {
		Total     int
		Offset    int
		Artifacts []struct {
			Size int64
			Kind string
		}
	}
	var p page
	if r.get(t, "GET", "/api/artifacts?sort=size&order=asc&offset=2400&limit=1000", &p) != 200 {
		t.Fatal("artifacts")
	}
	if p.Total != 2500 || len(p.Artifacts) != 100 || p.Artifacts[0].Size != 20+2400 || p.Artifacts[99].Size != 20+2499 {
		t.Fatalf("total %d, %d items, first %+v", p.Total, len(p.Artifacts), p.Artifacts[0])
	}
	if r.get(t, "GET", "/api/artifacts?sort=size&order=desc", &p) != 200 || len(p.Artifacts) != ui.DefaultPage || p.Artifacts[0].Size != 2519 {
		t.Fatalf("desc: %+v", p.Artifacts[:1])
	}
	if r.get(t, "GET", "/api/artifacts?kind=json", &p) != 200 || p.Total != 0 {
		t.Fatalf("kind filter: %d", p.Total)
	}
	for _, bad := range []string{"offset=-1", "limit=0", "limit=1001", "limit=x", "sort=owner", "order=up"} {
		if got := r.get(t, "GET", "/api/artifacts?"+bad, nil); got != 400 {
			t.Errorf("%s: status %d", bad, got)
		}
	}
	var d struct {
		Total     int
		Decisions []struct{ Seq uint64 }
	}
	if r.get(t, "GET", "/api/runs/big/decisions?offset=2450&limit=100", &d) != 200 || d.Total != 2500 || len(d.Decisions) != 50 ||
		d.Decisions[0].Seq != 2451 {
		t.Fatalf("decisions: total %d, %d rows", d.Total, len(d.Decisions))
	}
	if r.get(t, "GET", "/api/runs/big/decisions?offset=0&limit=10&agent=sub", &d) != 200 || d.Total != 1250 {
		t.Fatalf("agent filter: %d", d.Total)
	}
}

type readAnswer struct {
	Outcome, Reason, Text, Summary string
	First, Count, Next, Total      int64
	BodySize                       int64 `json:"body_size"`
}

// TestOwnerIsolation: nothing of another owner is listed or read; a
// foreign reference is refused like an unknown one, with its event.
func TestOwnerIsolation(t *testing.T) {
	r := newRig(t, "")
	mine, _ := r.offload(t, ownerA, "a", strings.Repeat("mine\n", 100))
	theirs, _ := r.offload(t, ownerB, "b", strings.Repeat("theirs\n", 100), strings.Repeat("only theirs\n", 50))
	var p struct {
		Total     int
		Artifacts []struct{ Reference string }
	}
	if r.get(t, "GET", "/api/artifacts?limit=1000", &p) != 200 || p.Total != 1 || p.Artifacts[0].Reference != mine[0] {
		t.Fatalf("listed %+v", p)
	}
	if r.get(t, "GET", "/api/artifacts?q="+theirs[0][18:30], &p) != 200 || p.Total != 0 {
		t.Fatal("a filter found another owner's record")
	}
	unknown := strings.Repeat("0", 64)
	var answers []readAnswer
	for _, hex := range []string{theirs[0][18:], theirs[1][18:], unknown} {
		for _, q := range []string{"lines?start=1", "search?pattern=theirs", "query?filter=.", "shape?"} {
			var a readAnswer
			if r.get(t, "GET", "/api/artifacts/"+hex+"/"+q+"&budget=4096", &a) != 200 {
				t.Fatal(q)
			}
			if a.Outcome != "unauthorized" || a.Text != "" || a.BodySize != 0 {
				t.Errorf("%s of another owner's artifact: %+v", q, a)
			}
			answers = append(answers, a)
			if e := <-r.seen; e.Diagnostics.Outcome() != hybridctx.Unauthorized {
				t.Errorf("event %v", e)
			}
		}
	}
	for i := 4; i < len(answers); i++ {
		if answers[i] != answers[i%4] {
			t.Errorf("a foreign and an unknown reference differ: %+v %+v", answers[i], answers[i%4])
		}
	}
}

// TestReads: each read is a rehydration with its view, budget and event;
// a missing or stale body is a categorical answer.
func TestReads(t *testing.T) {
	r := newRig(t, "")
	var text strings.Builder
	for i := 1; i <= 500; i++ {
		fmt.Fprintf(&text, "line %d\n", i)
	}
	text.WriteString("the needle is here\n")
	refs, _ := r.offload(t, ownerA, "a", text.String(), `{"items":[{"id":1,"name":"x"},{"id":2,"name":"y"}],"total":2}`, "gone gone gone gone gone")
	hex := func(i int) string { return refs[i][len(artifact.Prefix):] }
	read := func(path string) readAnswer {
		t.Helper()
		var a readAnswer
		if code := r.get(t, "GET", "/api/artifacts/"+path, &a); code != 200 {
			t.Fatalf("%s: status %d", path, code)
		}
		e := <-r.seen
		if e.Diagnostics.Outcome().String() != a.Outcome || e.Diagnostics.Reference().String() != artifact.Prefix+path[:64] {
			t.Fatalf("%s: event %v for answer %+v", path, e, a)
		}
		return a
	}
	a := read(hex(0) + "/lines?start=499&count=5&budget=4096")
	if a.Outcome != "resolved" || a.Text != "line 499\nline 500\nthe needle is here\n" || a.First != 499 || a.Total != 501 {
		t.Fatalf("lines: %+v", a)
	}
	a = read(hex(0) + "/search?pattern=NEEDLE&ignore_case=1&budget=4096")
	if a.Outcome != "resolved" || a.Text != "501:the needle is here\n" || !strings.HasPrefix(a.Summary, "1 match") {
		t.Fatalf("search: %+v", a)
	}
	a = read(hex(0) + "/search?pattern=line&max=10&skip=10&budget=4096")
	if a.Count != 10 || a.First != 11 || a.Next != 20 {
		t.Fatalf("search paging: %+v", a)
	}
	a = read(hex(1) + "/query?filter=.items[].name&budget=4096")
	if a.Outcome != "resolved" || a.Text != "\"x\"\n\"y\"\n" {
		t.Fatalf("query: %+v", a)
	}
	a = read(hex(1) + "/shape?budget=4096")
	if a.Text != `{"items":[{"id":"number","name":"string"}],"total":"number"}`+"\n" {
		t.Fatalf("shape: %q", a.Text)
	}
	if a = read(hex(0) + "/query?filter=.&budget=4096"); a.Outcome != "view_failed" || a.Reason != "not_json" {
		t.Fatalf("query of text: %+v", a)
	}
	if a = read(hex(0) + "/lines?start=1&count=500&budget=3"); a.Outcome != "over_budget" || a.Text != "" {
		t.Fatalf("over budget: %+v", a)
	}
	ref0, _ := artifact.ParseRef(refs[1])
	drivertest.Overwrite(r.mem, ref0.Hex(), bytes.Repeat([]byte("x"), len(`{"items":[{"id":1,"name":"x"},{"id":2,"name":"y"}],"total":2}`)))
	if a = read(hex(1) + "/lines?budget=4096"); a.Outcome != "stale" || a.Reason != "digest_mismatch" || a.Text != "" {
		t.Fatalf("stale: %+v", a)
	}
	ref2, _ := artifact.ParseRef(refs[2])
	if err := r.store.DeleteBody(context.Background(), ref2); err != nil {
		t.Fatal(err)
	}
	if a = read(hex(2) + "/search?pattern=gone&budget=4096"); a.Outcome != "missing" || a.Reason != "body_missing" {
		t.Fatalf("missing: %+v", a)
	}
	// Argument errors decide nothing: no event.
	for _, bad := range []string{"/lines?start=0&budget=10", "/search?pattern=&budget=10", "/search?pattern=(&regex=1&budget=10",
		"/lines?budget=0", "/lines?budget=2000000", "/lines?budget=x", "/query?filter=&budget=10"} {
		if code := r.get(t, "GET", "/api/artifacts/"+hex(0)+bad, nil); code != 400 {
			t.Errorf("%s: status %d", bad, code)
		}
	}
	select {
	case e := <-r.seen:
		t.Fatalf("an argument error reported %v", e)
	default:
	}
}
