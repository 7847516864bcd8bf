package dirstore_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/dirstore"
	"github.com/hybridctx/hybridctx/workspace/driver"
)

// soakSize is the size of every offload of the kill soak.
const soakSize = 8 << 20

// soakContent is the reproducible content number i of helper process p.
func soakContent(p, i int) io.Reader {
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:], uint64(p))
	binary.LittleEndian.PutUint64(seed[8:], uint64(i))
	return io.LimitReader(rand.NewChaCha8(seed), soakSize)
}

// soakHelper offloads 8 MiB streams one after another until it is killed,
// printing "ACK <index> <ref>" after each acknowledged offload.
func soakHelper(t *testing.T, s *dirstore.Store, index string) {
	p, _ := strconv.Atoi(index)
	store := workspace.New(s, s)
	b, err := hybridctx.NewBinding(testOwner, store)
	if err != nil {
		t.Fatal(err)
	}
	o, err := hybridctx.NewOffloader(b, hybridctx.Policy{InlineThreshold: 4096}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		out, err := o.OffloadReader(context.Background(), hybridctx.Call{Tool: "soak", ID: strconv.Itoa(i)}, soakContent(p, i))
		if err != nil {
			t.Fatal(err)
		}
		if oc := out.Outcome(); oc != hybridctx.Offloaded && oc != hybridctx.ExistingReference {
			t.Fatalf("offload %d: %v", i, out.Reason())
		}
		fmt.Printf("ACK %d %s\n", i, out.Ref)
	}
}

// soakKills is the number of kills of TestKillSoak: a few in CI, 50 with
// HYBRIDCTX_SOAK=1.
func soakKills() int {
	if os.Getenv("HYBRIDCTX_SOAK") == "1" {
		return 50
	}
	return 3
}

// TestKillSoak kills a process with SIGKILL at random moments while it
// offloads 8 MiB streams into a directory workspace. After reopening: no
// temporary file is left, every body verifies, every record's body is
// present, and every offload the process acknowledged before it died
// resolves. HYBRIDCTX_SOAK=1 runs 50 kills instead of 3.
func TestKillSoak(t *testing.T) {
	skipUnlessLong(t)
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := filepath.Join(t.TempDir(), "ws")
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	kills := soakKills()
	var acks []soakAck
	midWrite := 0
	for p := range kills {
		acks = append(acks, killHelper(t, dir, p, rng)...)
		if n := len(tempsIn(t, dir)); n > 0 {
			midWrite++
		}
	}
	bodies := checkSoak(t, dir, acks)
	t.Logf("%d kills (%d left a temporary file behind), %d acknowledged offloads, %d bodies, verify clean",
		kills, midWrite, len(acks), bodies)
}

// soakAck is an offload a soak helper process acknowledged: helper p's
// offload i, and the reference it printed.
type soakAck struct {
	p, i int
	ref  string
}

// killHelper starts soak helper p on dir, kills it with SIGKILL at a random
// moment after its first acknowledgement, and returns what it acknowledged.
func killHelper(t *testing.T, dir string, p int, rng *rand.Rand) []soakAck {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), envRole+"=soak", envDir+"="+dir, envIndex+"="+strconv.Itoa(p))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var acks []soakAck
	ack := func(line string) bool {
		f := strings.Fields(line)
		if len(f) != 3 || f[0] != "ACK" {
			return false
		}
		i, _ := strconv.Atoi(f[1])
		acks = append(acks, soakAck{p, i, f[2]})
		return true
	}
	// Wait for the first acknowledgement (so the process is past its
	// start-up), then kill it at a random moment of what follows.
	deadline := time.After(time.Minute)
	var kill <-chan time.Time
read:
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("helper %d exited before it was killed", p)
			}
			if ack(line) && kill == nil {
				kill = time.After(time.Duration(rng.IntN(400)) * time.Millisecond)
			}
		case <-kill:
			_ = cmd.Process.Signal(syscall.SIGKILL)
			break read
		case <-deadline:
			_ = cmd.Process.Kill()
			t.Fatalf("helper %d never acknowledged an offload", p)
		}
	}
	for line := range lines { // acknowledgements flushed before the kill
		ack(line)
	}
	_ = cmd.Wait()
	return acks
}

// checkSoak reopens dir and checks it after the kills: no temporary file,
// every body verifies, every record's body is present, and every
// acknowledged offload resolves. It returns the number of bodies.
func checkSoak(t *testing.T, dir string, acks []soakAck) int {
	t.Helper()
	ctx := context.Background()
	s := openAt(t, dir)
	if tt := temps(t, s); len(tt) != 0 {
		t.Fatalf("temporary files left after reopen: %v", tt)
	}
	store := workspace.New(s, s)
	bodies := 0
	for info, err := range store.ListBodies(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		bodies++
		ref, _ := artifact.ParseDigest(info.Key)
		if err := store.VerifyBody(ctx, ref, -1); err != nil {
			t.Errorf("body %s: %v", info.Key[:8], err)
		}
	}
	for rec, err := range store.ListRecords(ctx, driver.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		if err := store.VerifyBody(ctx, rec.Ref, rec.Size); err != nil {
			t.Errorf("record of %s: %v", rec.Ref.Hex()[:8], err)
		}
	}
	b, _ := hybridctx.NewBinding(testOwner, store)
	h, _ := hybridctx.NewRehydrator(b, nil)
	for _, a := range acks {
		want := sha256.New()
		_, _ = io.Copy(want, soakContent(a.p, a.i))
		if ref, _ := artifact.ParseRef(a.ref); ref != artifact.RefFromSum([32]byte(want.Sum(nil))) {
			t.Fatalf("helper %d offload %d acknowledged the wrong reference", a.p, a.i)
		}
		r, err := h.RehydrateTo(ctx, hybridctx.Request{Reference: a.ref, Budget: soakSize}, io.Discard)
		if err != nil || r.Outcome() != hybridctx.Resolved {
			t.Errorf("helper %d offload %d acknowledged, after the kill: %v %v", a.p, a.i, r, err)
		}
	}
	return bodies
}

// tempsIn lists the temporary files in the body directory of dir.
func tempsIn(t *testing.T, dir string) []string {
	t.Helper()
	es, _ := os.ReadDir(filepath.Join(dir, "sha256"))
	var out []string
	for _, e := range es {
		if strings.HasPrefix(e.Name(), ".tmp-") {
			out = append(out, e.Name())
		}
	}
	return out
}
