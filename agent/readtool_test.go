package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/agent"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/readtools"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/drivertest"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

// readErr calls the read tool and returns its *ReadError, failing otherwise.
func readErr(t *testing.T, e *env, ctx context.Context, args json.RawMessage) *agent.ReadError {
	t.Helper()
	v, err := e.Read.Call(ctx, args)
	var re *agent.ReadError
	if !errors.As(err, &re) || v != nil {
		t.Fatalf("got %v, %v; want a *ReadError", v, err)
	}
	if !errors.Is(err, agent.ErrReadRefused) {
		t.Fatal("ReadError does not wrap ErrReadRefused")
	}
	return re
}

func TestReadResolved(t *testing.T) {
	e := newEnv(t, 16, 1000)
	body := text(3000, 3)
	ref := stored(t, e, body)
	ctx, rec := reporting("root")
	v, err := e.Read.Call(ctx, agent.ReadArguments(ref, 100, 50, 0))
	if err != nil {
		t.Fatal(err)
	}
	seg, ok := v.(*hybridctx.Segment)
	if !ok || string(seg.Bytes()) != body[100:150] || !seg.SkipOffload() || seg.Offset() != 100 || seg.BodySize() != 3000 {
		t.Fatalf("segment %v", v)
	}
	ev := rec.All()
	if len(ev) != 1 || ev[0].Diagnostics.Outcome() != hybridctx.Resolved || ev[0].Diagnostics.ConfiguredBytes() != 1000 {
		t.Fatalf("events %v", ev)
	}
	// max_bytes below the cap is the budget; above it, the cap is.
	if re := readErr(t, e, ctx, agent.ReadArguments(ref, 0, 50, 49)); re.Budget != 49 {
		t.Fatalf("budget %d, want 49", re.Budget)
	}
	if v, err := e.Read.Call(ctx, agent.ReadArguments(ref, 0, 1000, 5000)); err != nil || len(v.(*hybridctx.Segment).Bytes()) != 1000 {
		t.Fatalf("at the cap: %v", err)
	}
	if re := readErr(t, e, ctx, agent.ReadArguments(ref, 0, 1001, 5000)); re.Budget != 1000 {
		t.Fatalf("budget %d, want the cap 1000", re.Budget)
	}
	// Past the end: zero bytes, still verified and resolved.
	r, err := e.Read.Read(ctx, agent.ReadArguments(ref, 5000, 0, 0))
	if err != nil || r.Outcome() != hybridctx.Resolved || len(r.Segment.Bytes()) != 0 || r.BodySize != 3000 {
		t.Fatalf("past the end: %v %v", r, err)
	}
}

func TestReadOverBudget(t *testing.T) {
	e := newEnv(t, 16, 100)
	ref := stored(t, e, text(1000, 4))
	opens := e.Inst.Counts().Opens
	re := readErr(t, e, context.Background(), agent.ReadArguments(ref, 0, 0, 0))
	if re.Rehydration.Outcome() != hybridctx.OverBudget || re.Budget != 100 {
		t.Fatalf("got %v budget %d", re.Rehydration.Outcome(), re.Budget)
	}
	want := "hybridctx: over_budget (budget_exceeded): the range is 1000 bytes, the budget 100; use read_artifact with offset/length to read at most 100 bytes at a time (the body is 1000 bytes)."
	if re.Error() != want {
		t.Fatalf("message\n%s\nwant\n%s", re.Error(), want)
	}
	if e.Inst.Counts().Opens != opens {
		t.Fatal("an over-budget read opened the body")
	}
	// Following the advice works.
	if _, err := e.Read.Call(context.Background(), agent.ReadArguments(ref, 900, 100, 0)); err != nil {
		t.Fatal(err)
	}
}

func TestReadUnauthorized(t *testing.T) {
	mem := memstore.New()
	inst := drivertest.Instrument(mem, mem, nil)
	store := workspace.New(inst, inst)
	other := artifact.Owner{User: "ada", Workflow: "triage", Session: "s2"}
	mine := newEnvOn(t, inst, store, testOwner, 16, 0)
	theirs := newEnvOn(t, inst, store, other, 16, 0)
	ref := stored(t, theirs, text(500, 5))
	opens := inst.Counts().Opens
	re := readErr(t, mine, context.Background(), agent.ReadArguments(ref, 0, 0, 0))
	if re.Rehydration.Outcome() != hybridctx.Unauthorized || inst.Counts().Opens != opens {
		t.Fatalf("got %v (opens %d→%d)", re.Rehydration.Outcome(), opens, inst.Counts().Opens)
	}
	// Indistinguishable from a digest never offloaded at all.
	never := readErr(t, mine, context.Background(), agent.ReadArguments(artifact.RefOf([]byte("never")).String(), 0, 0, 0))
	if never.Error() != re.Error() {
		t.Fatalf("oracle:\n%s\n%s", never.Error(), re.Error())
	}
	// The owner itself reads it.
	if _, err := theirs.Read.Call(context.Background(), agent.ReadArguments(ref, 0, 0, 0)); err != nil {
		t.Fatal(err)
	}
}

func TestReadStaleAndMissing(t *testing.T) {
	e := newEnv(t, 16, 0)
	body := text(800, 6)
	ref := stored(t, e, body)
	r, _ := artifact.ParseRef(ref)
	if !e.Inst.Tamper(r.Hex(), []byte(strings.ToUpper(body))) {
		t.Fatal("cannot tamper")
	}
	re := readErr(t, e, context.Background(), agent.ReadArguments(ref, 0, 10, 0))
	if re.Rehydration.Outcome() != hybridctx.Stale || !strings.Contains(re.Error(), "stale (digest_mismatch)") {
		t.Fatalf("got %v: %s", re.Rehydration.Outcome(), re.Error())
	}
	if err := e.Store.DeleteBody(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	re = readErr(t, e, context.Background(), agent.ReadArguments(ref, 0, 10, 0))
	if re.Rehydration.Outcome() != hybridctx.Missing || !strings.Contains(re.Error(), "missing (body_missing)") {
		t.Fatalf("got %v: %s", re.Rehydration.Outcome(), re.Error())
	}
}

func TestReadInvalidReference(t *testing.T) {
	e := newEnv(t, 16, 0)
	ctx, rec := reporting("root")
	re := readErr(t, e, ctx, json.RawMessage(`{"reference":"artifact://sha256/ABC"}`))
	if re.Rehydration.Outcome() != hybridctx.InvalidReference || !strings.Contains(re.Error(), "64 lowercase hex") {
		t.Fatalf("got %v: %s", re.Rehydration.Outcome(), re.Error())
	}
	if len(rec.All()) != 1 {
		t.Fatal("invalid_reference reports one event")
	}
}

func TestReadInvalidArguments(t *testing.T) {
	e := newEnv(t, 16, 0)
	ref := stored(t, e, text(100, 7))
	ctx, rec := reporting("root")
	for _, args := range []string{
		``, `null`, `[]`, `"x"`, `{`, `{} {}`, `{}`, `{"reference":null}`, `{"reference":""}`,
		`{"reference":42}`, `{"reference":"` + ref + `","offset":-1}`, `{"reference":"` + ref + `","length":-5}`,
		`{"reference":"` + ref + `","max_bytes":0}`, `{"reference":"` + ref + `","offset":"5"}`,
		`{"reference":"` + ref + `","offset":1.5}`, `{"reference":"` + ref + `","offset":1e3}`,
		`{"reference":"` + ref + `","offset":99999999999999999999}`, `{"reference":"` + ref + `","path":"/etc/passwd"}`,
		`{"reference":"` + ref + `"}x`, "{\"reference\":\"\xff\"}", `{"reference":"` + strings.Repeat("a", 5000) + `"}`,
	} {
		before := e.Inst.Counts()
		v, err := e.Read.Call(ctx, json.RawMessage(args))
		if v != nil || !errors.Is(err, agent.ErrInvalidArguments) {
			t.Errorf("%.60q: got %v, %v", args, v, err)
			continue
		}
		if !strings.Contains(err.Error(), `expected {"reference"`) || strings.Contains(err.Error(), "passwd") {
			t.Errorf("%.60q: message %q", args, err)
		}
		if after := e.Inst.Counts(); after.GetRecords != before.GetRecords || after.Opens != before.Opens {
			t.Errorf("%.60q reached the workspace", args)
		}
	}
	if n := len(rec.All()); n != 0 {
		t.Fatalf("%d events for invalid arguments", n)
	}
	// null optional fields are absent.
	if _, err := e.Read.Call(ctx, json.RawMessage(`{"reference":"`+ref+`","offset":null,"length":null,"max_bytes":null}`)); err != nil {
		t.Fatal(err)
	}
}

func TestReadStorageFailureIsCategorical(t *testing.T) {
	mem := memstore.New()
	cause := errors.New("open /srv/secret/.hybridctx/records.db: disk on fire")
	inst := drivertest.Instrument(mem, mem, &drivertest.Hooks{
		GetRecord: func(context.Context, artifact.Owner, artifact.Ref) error { return cause },
	})
	e := newEnvOn(t, inst, workspace.New(inst, inst), testOwner, 16, 0)
	_, err := e.Read.Call(context.Background(), agent.ReadArguments(artifact.RefOf([]byte("x")).String(), 0, 0, 0))
	if !errors.Is(err, agent.ErrReadFailed) || !errors.Is(err, cause) || strings.Contains(err.Error(), "secret") {
		t.Fatalf("err %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Read.Call(ctx, agent.ReadArguments(artifact.RefOf([]byte("x")).String(), 0, 0, 0)); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

func TestNewReadTool(t *testing.T) {
	e := newEnv(t, 16, 0)
	if _, err := agent.NewReadTool(nil, nil); !errors.Is(err, readtools.ErrNilRehydrator) {
		t.Fatal(err)
	}
	for _, o := range []agent.ReadToolOptions{{Names: readtools.Names{Read: "read artifact"}}, {Names: readtools.Names{Read: strings.Repeat("r", 65)}}, {BudgetCap: -1}} {
		if _, err := agent.NewReadTool(e.Reh, &o); !errors.Is(err, hybridctx.ErrInvalidPolicy) {
			t.Errorf("%+v: %v", o, err)
		}
	}
	rt, err := agent.NewReadTool(e.Reh, &agent.ReadToolOptions{Names: readtools.Names{Read: "fetch_artifact"}})
	if err != nil || rt.Name() != "fetch_artifact" || rt.BudgetCap() != agent.DefaultBudgetCap || rt.Spec().Name != "fetch_artifact" {
		t.Fatalf("%v %v", rt, err)
	}
	var schema struct {
		Type       string                     `json:"type"`
		Required   []string                   `json:"required"`
		Properties map[string]json.RawMessage `json:"properties"`
		Additional bool                       `json:"additionalProperties"`
	}
	if err := json.Unmarshal(rt.Spec().Parameters, &schema); err != nil {
		t.Fatal(err)
	}
	if schema.Type != "object" || len(schema.Required) != 1 || schema.Required[0] != "reference" || len(schema.Properties) != 6 || schema.Additional {
		t.Fatalf("schema %+v", schema)
	}
}
