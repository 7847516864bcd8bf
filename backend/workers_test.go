package backend_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/backend"
	"github.com/hybridctx/hybridctx/internal/cli"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/blobstore/blobtest"
	"github.com/hybridctx/hybridctx/workspace/driver"
	"github.com/hybridctx/hybridctx/workspace/pgstore"
	"github.com/hybridctx/hybridctx/workspace/pgstore/pgtest"
)

const mib = 1 << 20

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func owner(session string) artifact.Owner {
	return artifact.Owner{User: "ada", Workflow: "triage", Session: session}
}

// payload is deterministic content: workers regenerate it from its seed.
type payload struct {
	Seed uint64
	Size int
}

func (p payload) bytes() []byte {
	r := rand.New(rand.NewPCG(p.Seed, 3))
	b := make([]byte, p.Size)
	for i := 0; i < len(b); i += 8 {
		v := r.Uint64()
		for j := 0; j < 8 && i+j < len(b); j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

func (p payload) sum() string {
	s := sha256.Sum256(p.bytes())
	return hex.EncodeToString(s[:])
}

// job is what one worker process does, passed in the environment.
type job struct {
	Role     string // offload, rehydrate or hang
	URL      string
	Owner    artifact.Owner
	Payloads []payload
	Refs     []string
	Dir      string // barrier and result files
	Name     string
}

// result is what a worker reports, in Dir/Name.json.
type result struct {
	Outcomes []string
	Refs     []string
	Sums     []string // sha256 of rehydrated bytes
	Error    string
}

const workerEnv = "HYBRIDCTX_BACKEND_WORKER"

// TestWorkerProcess is the body of the worker processes the tests below
// start; run directly it does nothing.
func TestWorkerProcess(t *testing.T) {
	spec := os.Getenv(workerEnv)
	if spec == "" {
		return
	}
	var j job
	if err := json.Unmarshal([]byte(spec), &j); err != nil {
		t.Fatal(err)
	}
	res := runJob(j)
	b, _ := json.Marshal(res)
	if err := os.WriteFile(filepath.Join(j.Dir, j.Name+".json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// await marks this worker ready and waits until the test says go.
func await(j job) {
	_ = os.WriteFile(filepath.Join(j.Dir, j.Name+".ready"), nil, 0o600)
	for {
		if _, err := os.Stat(filepath.Join(j.Dir, "go")); err == nil {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

func runJob(j job) (res result) {
	ctx := context.Background()
	store, err := backend.Open(ctx, j.URL, nil)
	if err != nil {
		return result{Error: err.Error()}
	}
	defer store.Close()
	bind, err := hybridctx.NewBinding(j.Owner, store)
	if err != nil {
		return result{Error: err.Error()}
	}
	off, err := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: 4096}, nil)
	if err != nil {
		return result{Error: err.Error()}
	}
	reh, err := hybridctx.NewRehydrator(bind, nil)
	if err != nil {
		return result{Error: err.Error()}
	}
	await(j)
	switch j.Role {
	case "offload":
		for i, p := range j.Payloads {
			out, err := off.Offload(ctx, hybridctx.Call{Tool: "fetch", ID: fmt.Sprint("call-", i)}, p.bytes())
			if err != nil {
				return result{Error: err.Error()}
			}
			o := out.Outcome().String()
			if out.Outcome() != hybridctx.Offloaded && out.Outcome() != hybridctx.ExistingReference {
				o += "/" + out.Reason().String()
			}
			res.Outcomes = append(res.Outcomes, o)
			res.Refs = append(res.Refs, out.Ref.String())
		}
	case "rehydrate":
		for _, ref := range j.Refs {
			rh, err := reh.Rehydrate(ctx, hybridctx.Request{Reference: ref, Budget: 16 * mib})
			if err != nil {
				return result{Error: err.Error()}
			}
			res.Outcomes = append(res.Outcomes, rh.Outcome().String())
			sum := ""
			if rh.Segment != nil {
				s := sha256.Sum256(rh.Segment.Bytes())
				sum = hex.EncodeToString(s[:])
			}
			res.Sums = append(res.Sums, sum)
		}
	case "hang":
		// A tool's output stream that stops halfway, forever: the test
		// kills this process while the body is being written.
		p := j.Payloads[0]
		r := io.MultiReader(bytes.NewReader(p.bytes()[:p.Size/2]), &stall{mark: filepath.Join(j.Dir, j.Name+".mid")})
		out, err := off.OffloadReader(ctx, hybridctx.Call{Tool: "stream", ID: "c"}, r)
		if err != nil {
			return result{Error: err.Error()}
		}
		res.Outcomes = append(res.Outcomes, out.Outcome().String())
	default:
		return result{Error: "unknown role " + j.Role}
	}
	return res
}

// stall marks that the stream reached it, then blocks.
type stall struct{ mark string }

func (s *stall) Read([]byte) (int, error) {
	_ = os.WriteFile(s.mark, nil, 0o600)
	select {}
}

// worker is one started worker process.
type worker struct {
	j   job
	cmd *exec.Cmd
	out bytes.Buffer
}

// start starts the workers and releases them at once when all are ready.
func start(t *testing.T, dir string, jobs ...job) []*worker {
	t.Helper()
	_ = os.Remove(filepath.Join(dir, "go"))
	var ws []*worker
	for _, j := range jobs {
		j.Dir = dir
		spec, _ := json.Marshal(j)
		w := &worker{j: j, cmd: exec.Command(os.Args[0], "-test.run=^TestWorkerProcess$", "-test.count=1")}
		w.cmd.Env = append(os.Environ(), workerEnv+"="+string(spec))
		w.cmd.Stdout, w.cmd.Stderr = &w.out, &w.out
		if err := w.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = w.cmd.Process.Kill(); _ = w.cmd.Wait() })
		ws = append(ws, w)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for _, w := range ws {
		for !exists(filepath.Join(dir, w.j.Name+".ready")) {
			if time.Now().After(deadline) {
				t.Fatalf("worker %s never became ready: %s", w.j.Name, w.out.String())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return ws
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

// wait waits for a worker and returns its result.
func (w *worker) wait(t *testing.T) result {
	t.Helper()
	if err := w.cmd.Wait(); err != nil {
		t.Fatalf("worker %s: %v\n%s", w.j.Name, err, w.out.String())
	}
	b, err := os.ReadFile(filepath.Join(w.j.Dir, w.j.Name+".json"))
	if err != nil {
		t.Fatalf("worker %s wrote no result: %v\n%s", w.j.Name, err, w.out.String())
	}
	var r result
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.Error != "" {
		t.Fatalf("worker %s: %s", w.j.Name, r.Error)
	}
	return r
}

// distributed describes one distributed workspace under test.
type distributed struct {
	name   string
	url    string
	tamper func(t *testing.T, key string, data []byte)
	pgURL  string // the schema of the bodies (postgres) or records (s3)
}

func distributedBackends(t *testing.T) []distributed {
	pg := pgtest.NewSchema(t)
	idx := pgtest.NewSchema(t)
	pre := blobtest.NewPrefix(t)
	return []distributed{
		{name: "postgres", url: pg, pgURL: pg, tamper: func(t *testing.T, key string, data []byte) {
			t.Helper()
			// Altering the row plainly is refused by the database itself.
			err := pgtest.TryExec(pg, `UPDATE hybridctx_bodies SET body = $2, size = $3 WHERE digest = decode($1, 'hex')`, key, data, len(data))
			if err == nil || !strings.Contains(err.Error(), "23514") {
				t.Fatalf("a plain UPDATE of a body row: %v, want a check violation", err)
			}
			pgtest.Tamper(t, pg, key, data)
		}},
		{name: "s3", url: s3URL(pre, idx), pgURL: idx, tamper: func(t *testing.T, key string, data []byte) {
			t.Helper()
			blobtest.Tamper(t, pre, key, data)
		}},
	}
}

// TestWorkers runs the several-workers scenarios, with worker processes,
// on each distributed backend.
func TestWorkers(t *testing.T) {
	for _, d := range distributedBackends(t) {
		t.Run(d.name, func(t *testing.T) {
			dir := t.TempDir()
			ctx := context.Background()
			bodies, records, err := backend.OpenDrivers(ctx, d.url, nil)
			if err != nil {
				t.Fatal(err)
			}
			store := workspace.New(bodies, records)
			defer store.Close()

			t.Run("SameContentAtOnce", func(t *testing.T) { sameContentAtOnce(t, d, store, dir) })
			refs, want := handoff(t, d, dir)
			t.Run("StaleAndVerify", func(t *testing.T) { staleAndVerify(t, d, dir, refs, want) })
			t.Run("KilledMidWrite", func(t *testing.T) { killedMidWrite(t, d, store, bodies, dir) })
		})
	}
}

// sameContentAtOnce: four worker processes of two owners offload the same
// 8 MiB at once.
func sameContentAtOnce(t *testing.T, d distributed, store *workspace.Store, dir string) {
	p := payload{Seed: 1, Size: 8 * mib}
	var jobs []job
	for i := range 4 {
		jobs = append(jobs, job{Role: "offload", URL: d.url, Owner: owner(fmt.Sprint("same-", i%2)),
			Payloads: []payload{p}, Name: fmt.Sprint("same", i)})
	}
	ws := start(t, dir, jobs...)
	outcomes := map[string]map[string]int{}
	want := artifact.RefOf(p.bytes()).String()
	for _, w := range ws {
		r := w.wait(t)
		if r.Refs[0] != want {
			t.Fatalf("worker %s: %s, reference %s, want %s", w.j.Name, r.Outcomes[0], r.Refs[0], want)
		}
		s := w.j.Owner.Session
		if outcomes[s] == nil {
			outcomes[s] = map[string]int{}
		}
		outcomes[s][r.Outcomes[0]]++
	}
	for s, o := range outcomes {
		if o["offloaded"] != 1 || o["existing_reference"] != 1 {
			t.Errorf("owner %s: outcomes %v; want one offloaded and one existing_reference", s, o)
		}
	}
	ctx := context.Background()
	n := 0
	for _, err := range store.ListBodies(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 1 {
		t.Fatalf("%d bodies stored, want exactly 1", n)
	}
	ref, _ := artifact.ParseRef(want)
	recs := 0
	for rec, err := range store.ListRecords(ctx, driver.Query{Ref: ref}) {
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(rec.Owner.Session, "same-") {
			t.Fatalf("unexpected record")
		}
		recs++
	}
	if recs != 2 {
		t.Fatalf("%d records, want one per owner (2)", recs)
	}
	if err := store.VerifyBody(ctx, ref, int64(p.Size)); err != nil {
		t.Fatalf("VerifyBody: %v", err)
	}
}

// handoff: worker A offloads a session's artifacts, worker B of the same
// owner rehydrates them byte-exact, worker C of another owner is refused.
func handoff(t *testing.T, d distributed, dir string) (refs []string, want []payload) {
	want = []payload{{Seed: 10, Size: 5000}, {Seed: 11, Size: 3*mib/2 + 3}, {Seed: 12, Size: 5*mib + 1}}
	ok := t.Run("Handoff", func(t *testing.T) {
		a := start(t, dir, job{Role: "offload", URL: d.url, Owner: owner("handoff"), Payloads: want, Name: "A"})[0].wait(t)
		for i, o := range a.Outcomes {
			if o != "offloaded" {
				t.Fatalf("A: artifact %d %s, want offloaded", i, o)
			}
		}
		refs = a.Refs
		ws := start(t, dir,
			job{Role: "rehydrate", URL: d.url, Owner: owner("handoff"), Refs: refs, Name: "B"},
			job{Role: "rehydrate", URL: d.url, Owner: artifact.Owner{User: "eve", Workflow: "triage", Session: "handoff"}, Refs: refs, Name: "C"})
		b, c := ws[0].wait(t), ws[1].wait(t)
		for i := range refs {
			if b.Outcomes[i] != "resolved" || b.Sums[i] != want[i].sum() {
				t.Errorf("B: artifact %d %s, sum match %v", i, b.Outcomes[i], b.Sums[i] == want[i].sum())
			}
			if c.Outcomes[i] != "unauthorized" || c.Sums[i] != "" {
				t.Errorf("C (another owner): artifact %d %s, want unauthorized", i, c.Outcomes[i])
			}
		}
	})
	if !ok {
		t.FailNow()
	}
	return refs, want
}

// staleAndVerify alters a body behind the workspace's back: a worker's
// rehydration says stale, and hybridctx verify finds it.
func staleAndVerify(t *testing.T, d distributed, dir string, refs []string, want []payload) {
	ref, _ := artifact.ParseRef(refs[1])
	damaged := want[1].bytes()
	damaged[mib+1] ^= 0x80
	d.tamper(t, ref.Hex(), damaged)
	b := start(t, dir, job{Role: "rehydrate", URL: d.url, Owner: owner("handoff"), Refs: refs, Name: "B2"})[0].wait(t)
	if b.Outcomes[0] != "resolved" || b.Outcomes[1] != "stale" || b.Sums[1] != "" || b.Outcomes[2] != "resolved" {
		t.Fatalf("rehydration after tampering: %v; want resolved, stale, resolved", b.Outcomes)
	}
	var stdout, stderr bytes.Buffer
	code := cli.Main(context.Background(), []string{"--workspace", d.url, "verify", "--json"}, cli.Env{Stdout: &stdout, Stderr: &stderr})
	var rep struct {
		Bodies  int
		Corrupt []string
		Missing []string
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("verify --json: %v: %q %q", err, stdout.String(), stderr.String())
	}
	if code != cli.ExitDamage || len(rep.Corrupt) != 1 || rep.Corrupt[0] != refs[1] || len(rep.Missing) != 0 {
		t.Fatalf("verify = exit %d, %+v; want exit %d naming %s corrupt", code, rep, cli.ExitDamage, refs[1])
	}
	// Offloading the same content again repairs it, for every reader.
	a := start(t, dir, job{Role: "offload", URL: d.url, Owner: owner("handoff"), Payloads: want[1:2], Name: "A2"})[0].wait(t)
	if a.Outcomes[0] != "offloaded" {
		t.Fatalf("re-offload over the damaged body: %s, want offloaded (replaced_corrupt_body)", a.Outcomes[0])
	}
	b = start(t, dir, job{Role: "rehydrate", URL: d.url, Owner: owner("handoff"), Refs: refs[1:2], Name: "B3"})[0].wait(t)
	if b.Outcomes[0] != "resolved" || b.Sums[0] != want[1].sum() {
		t.Fatalf("after the repair: %s", b.Outcomes[0])
	}
}

// killedMidWrite kills a worker while it streams a body: no record may point
// at a missing body, and the leftovers are swept.
func killedMidWrite(t *testing.T, d distributed, store *workspace.Store, bodies driver.Bodies, dir string) {
	p := payload{Seed: 20, Size: 14 * mib}
	w := start(t, dir, job{Role: "hang", URL: d.url, Owner: owner("killed"), Payloads: []payload{p}, Name: "D"})[0]
	mid := filepath.Join(dir, "D.mid")
	deadline := time.Now().Add(2 * time.Minute)
	for !exists(mid) {
		if time.Now().After(deadline) {
			t.Fatalf("the worker never reached the middle of its stream: %s", w.out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // let the upload of what was read proceed
	if err := w.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = w.cmd.Wait()
	ctx := context.Background()
	n := 0
	for rec, err := range store.ListRecords(ctx, driver.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		if rec.Owner.Session == "killed" {
			t.Fatalf("the killed worker left a record")
		}
		if err := store.VerifyBody(ctx, rec.Ref, rec.Size); err != nil {
			t.Fatalf("a record points at a body that does not verify: %v", err)
		}
		n++
	}
	if n == 0 {
		t.Fatal("no records at all")
	}
	half := payload{Seed: p.Seed, Size: p.Size / 2}
	for _, ref := range []artifact.Ref{artifact.RefOf(p.bytes()), artifact.RefOf(half.bytes())} {
		if _, err := store.StatBody(ctx, ref); err == nil {
			t.Fatalf("a body of the killed write is visible")
		}
	}
	if d.name == "postgres" {
		pg := bodies.(*pgstore.Store)
		if k, err := pg.SweepUploads(ctx, 0); err != nil || k != 1 {
			t.Fatalf("SweepUploads after the kill = %d, %v; want the dead writer's upload", k, err)
		}
	}
}
