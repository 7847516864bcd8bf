package hybridctx_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/dirstore"
	"github.com/hybridctx/hybridctx/workspace/drivertest"
)

// markers that must never appear in diagnostics, events or notices.
var markers = []string{"MARKER-CONTENT", "MARKER-USER", "MARKER-FLOW", "MARKER-SESSION", "MARKER-PATH", "MARKER-TOOL", "MARKER-CALL", "MARKER-STORAGE-ERROR"}

func TestPrivacy(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "MARKER-PATH")
	ds, err := dirstore.Open(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ds.Close() })
	hooks := &drivertest.Hooks{}
	inst := drivertest.Instrument(ds, ds, hooks)
	store := workspace.New(inst, inst)
	owner := artifact.Owner{User: "MARKER-USER", Workflow: "MARKER-FLOW", Session: "MARKER-SESSION"}
	bind, _ := hybridctx.NewBinding(owner, store)
	off, _ := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: 16}, nil)
	reh, _ := hybridctx.NewRehydrator(bind, nil)
	col := &collector{}
	root := hybridctx.NewReporter(hybridctx.ReporterOptions{RunID: "run", AgentID: "agent", Sinks: []hybridctx.Sink{col}})
	rctx := hybridctx.WithReporter(ctx, root)
	call := hybridctx.Call{Tool: "MARKER-TOOL", ID: "MARKER-CALL"}
	content := "MARKER-CONTENT " + strings.Repeat("x", 64)

	var notices []string
	var diags []*hybridctx.Diagnostics
	do := func(o *hybridctx.OffloadResult, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		notices = append(notices, o.Notice)
		diags = append(diags, o.Diagnostics())
	}
	do(off.Offload(rctx, call, "MARKER-CONTENT"))
	first, err := off.Offload(rctx, call, content)
	do(first, err)
	do(off.Offload(rctx, call, content))
	hooks.Write = func([]byte) error { return errors.New("MARKER-STORAGE-ERROR at " + dir) }
	do(off.Offload(rctx, call, content+"2"))
	hooks.Write = nil
	hooks.CreateRecord = func(context.Context, artifact.Record) error { return errors.New("MARKER-STORAGE-ERROR") }
	do(off.Offload(rctx, call, content+"3"))
	hooks.CreateRecord = nil
	nob, _ := hybridctx.NewOffloader(nil, hybridctx.Policy{InlineThreshold: 16}, nil)
	do(nob.Offload(rctx, call, content))
	for _, req := range []hybridctx.Request{
		{Reference: first.Ref.String(), Budget: 1000},
		{Reference: first.Ref.String(), Budget: 1},
		{Reference: "MARKER-CONTENT", Budget: 10},
		{Reference: artifact.RefOf([]byte("MARKER")).String(), Budget: 10},
	} {
		r, err := reh.Rehydrate(rctx, req)
		if err != nil {
			t.Fatal(err)
		}
		diags = append(diags, r.Diagnostics())
	}
	evs := col.all()
	if len(evs) != len(diags) || len(diags) != 10 {
		t.Fatalf("%d events, %d decisions", len(evs), len(diags))
	}
	var buf bytes.Buffer
	jlog := slog.New(slog.NewJSONHandler(&buf, nil))
	tlog := slog.New(slog.NewTextHandler(&buf, nil))
	for i, d := range diags {
		ev := evs[i]
		jd, _ := json.Marshal(d)
		je, _ := json.Marshal(ev)
		jlog.Info("decision", "diagnostics", d, "event", ev)
		tlog.Info("decision", "diagnostics", d, "event", ev)
		outputs := []string{
			d.String(), fmt.Sprint(d), fmt.Sprintf("%v %+v %#v %s", d, d, d, d),
			ev.String(), fmt.Sprintf("%v %+v %#v", ev, ev, ev), fmt.Sprintf("%+v", *ev),
			string(jd), string(je), notices[min(i, len(notices)-1)],
		}
		outputs = append(outputs, walk(reflect.ValueOf(ev))...)
		for _, s := range outputs {
			assertClean(t, s)
		}
	}
	assertClean(t, buf.String())
	for _, n := range notices {
		assertClean(t, n)
	}
}

func assertClean(t *testing.T, s string) {
	t.Helper()
	for _, m := range markers {
		if strings.Contains(s, m) {
			t.Fatalf("private marker %s leaked in %q", m, s)
		}
	}
}

// walk returns every string reachable from v, exported or not.
func walk(v reflect.Value) []string {
	var out []string
	seen := map[uintptr]bool{}
	var rec func(v reflect.Value)
	rec = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer:
			if v.IsNil() || seen[v.Pointer()] {
				return
			}
			seen[v.Pointer()] = true
			rec(v.Elem())
		case reflect.Interface:
			if !v.IsNil() {
				rec(v.Elem())
			}
		case reflect.Struct:
			for i := range v.NumField() {
				rec(v.Field(i))
			}
		case reflect.Slice, reflect.Array:
			if v.Type().Elem().Kind() == reflect.Uint8 {
				b := make([]byte, v.Len())
				for i := range b {
					b[i] = byte(v.Index(i).Uint())
				}
				out = append(out, string(b))
				return
			}
			for i := range v.Len() {
				rec(v.Index(i))
			}
		case reflect.Map:
			for _, k := range v.MapKeys() {
				rec(k)
				rec(v.MapIndex(k))
			}
		case reflect.String:
			out = append(out, v.String())
		}
	}
	rec(v)
	return out
}
