package dirstore_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/dirstore"
	"github.com/hybridctx/hybridctx/workspace/driver"
	"github.com/hybridctx/hybridctx/workspace/drivertest"
)

// killGoroutines is how many goroutines of a helper offload at once.
const killGoroutines = 16

// killOffload describes offload i of a concurrent kill helper: offloads 4k
// and 4k+1 store the same content for one owner (they race: one is
// offloaded, the other an existing reference), 4k+2 and 4k+3 the same
// content for the other owner. Sizes are log-normal, median 8 KiB.
func killOffload(i int) (artifact.Owner, []byte) {
	owner := []artifact.Owner{testOwner, ownerB}[(i/2)%2]
	c := i / 4
	r := rand.New(rand.NewPCG(uint64(c), 15))
	n := min(max(int(math.Round(8192*math.Exp(r.NormFloat64()))), 1024), 256<<10)
	b := make([]byte, n)
	for j := range b {
		b[j] = byte(' ' + r.IntN(95))
	}
	return owner, b
}

// killKills is the number of kills of TestKillConcurrentOffloads: a few in
// CI, 50 with HYBRIDCTX_SOAK=1.
func killKills() int {
	if os.Getenv("HYBRIDCTX_SOAK") == "1" {
		return 50
	}
	return 8
}

// concurrentHelper offloads, from killGoroutines goroutines, offloads
// base, base+1, … until it is killed, printing "ACK <i> <outcome>" once
// offload i is acknowledged (one write per line, so lines never mix).
func concurrentHelper(t *testing.T, s *dirstore.Store, base int) {
	store := workspace.New(s, s)
	var offs [2]*hybridctx.Offloader
	for k, o := range []artifact.Owner{testOwner, ownerB} {
		b, err := hybridctx.NewBinding(o, store)
		if err != nil {
			t.Fatal(err)
		}
		if offs[k], err = hybridctx.NewOffloader(b, hybridctx.Policy{InlineThreshold: 512}, nil); err != nil {
			t.Fatal(err)
		}
	}
	var next atomic.Int64
	next.Store(int64(base))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range killGoroutines {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				owner, data := killOffload(i)
				off := offs[0]
				if owner != testOwner {
					off = offs[1]
				}
				out, err := off.Offload(context.Background(), hybridctx.Call{Tool: "kill", ID: strconv.Itoa(i)}, data)
				if err != nil {
					t.Error(err)
					return
				}
				if oc := out.Outcome(); oc != hybridctx.Offloaded && oc != hybridctx.ExistingReference {
					t.Errorf("offload %d: %v %v", i, oc, out.Reason())
					return
				}
				mu.Lock()
				_, _ = os.Stdout.WriteString(fmt.Sprintf("ACK %d %v\n", i, out.Outcome()))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}

// killAck is an offload a helper acknowledged.
type killAck struct {
	i       int
	outcome string
}

// killConcurrent starts a concurrent helper from base and kills it with
// SIGKILL once it has acknowledged after offloads (0: at its first line),
// and returns every acknowledgement it wrote before it died.
func killConcurrent(t *testing.T, dir string, base, after int) []killAck {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), envRole+"=concurrent", envDir+"="+dir, envIndex+"="+strconv.Itoa(base))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var acks []killAck
	killed := false
	timer := time.AfterFunc(2*time.Minute, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[0] == "ACK" {
			i, _ := strconv.Atoi(f[1])
			acks = append(acks, killAck{i, f[2]})
		}
		if !killed && len(acks) >= after {
			// Lines already in the pipe are read on: they were
			// acknowledged before the kill.
			_ = cmd.Process.Signal(syscall.SIGKILL)
			killed = true
		}
	}
	_ = cmd.Wait()
	if !killed {
		t.Fatalf("helper from %d ended before it was killed", base)
	}
	return acks
}

// TestKillConcurrentOffloads kills, with SIGKILL, a process whose 16
// goroutines offload through the public Offloader into one directory
// workspace (so that its body commits share directory fsyncs and its
// records share SQLite transactions), after a random number of
// acknowledgements. The processes work on one workspace in turn, each
// partly on the content of the one before. After every kill the workspace
// is reopened: every offload acknowledged so far has its record and a body
// that verifies, every record's body verifies, no temporary file is left,
// and no owner's content was reported offloaded twice.
//
// A SIGKILL keeps what the process wrote into the kernel's page cache, so
// this proves that no acknowledgement is written before its own body is
// linked and its own record committed by SQLite (a record still queued for
// a batch, or in a batch not yet committed, is never acknowledged), and
// that the workspace recovers from a death in the middle of a batch; it
// does not prove what reaches the disk, which TestCrashConsistencyConcurrent
// (bodies) and SQLite's synchronous=FULL commit (records) cover.
func TestKillConcurrentOffloads(t *testing.T) {
	skipUnlessLong(t)
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := filepath.Join(t.TempDir(), "ws")
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 15))
	kills := killKills()
	var all []killAck
	base := 0
	for range kills {
		after := rng.IntN(300)
		acks := killConcurrent(t, dir, base, after)
		all = append(all, acks...)
		checkKilled(t, dir, all)
		if t.Failed() {
			t.FailNow()
		}
		// The next process starts halfway through what this one did.
		hi := base
		for _, a := range acks {
			hi = max(hi, a.i)
		}
		base += (hi - base) / 2
	}
	t.Logf("%d kills, %d acknowledged offloads, all resolve", kills, len(all))
}

// checkKilled reopens dir and checks the acknowledgements so far.
func checkKilled(t *testing.T, dir string, acks []killAck) {
	t.Helper()
	ctx := context.Background()
	s, err := dirstore.Open(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if tt := temps(t, s); len(tt) != 0 {
		t.Errorf("temporary files left after reopen: %v", tt)
	}
	store := workspace.New(s, s)
	for rec, err := range store.ListRecords(ctx, driver.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		if err := store.VerifyBody(ctx, rec.Ref, rec.Size); err != nil {
			t.Errorf("record of %s: %v", rec.Ref.Hex()[:8], err)
		}
	}
	offloaded := map[string]int{}
	for _, a := range acks {
		owner, data := killOffload(a.i)
		ref := artifact.RefOf(data)
		if a.outcome == hybridctx.Offloaded.String() {
			if offloaded[owner.User+ref.Hex()]++; offloaded[owner.User+ref.Hex()] > 1 {
				t.Errorf("offload %d: a second offloaded for one owner and content", a.i)
			}
		}
		oc, b, err := drivertest.Resolve(ctx, store, owner, ref, time.Now())
		if err != nil || oc != drivertest.Resolved || !bytes.Equal(b, data) {
			t.Errorf("offload %d acknowledged, after the kill: %v %v", a.i, oc, err)
		}
	}
}
