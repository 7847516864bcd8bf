package hybridctx_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/dirstore"
	"github.com/hybridctx/hybridctx/workspace/driver"
	"github.com/hybridctx/hybridctx/workspace/drivertest"
)

const (
	helperEnv = "HYBRIDCTX_TEST_OFFLOAD_HELPER"
	rounds    = 5
)

func roundBody(i int) []byte {
	return bytes.Repeat([]byte(fmt.Sprintf("round %d shared across processes\n", i)), 40_000)
}

// TestMultiProcessOffload runs 4 processes (two owners) against one directory
// workspace, offloading the same content at the same moment, several rounds.
func TestMultiProcessOffload(t *testing.T) {
	skipUnlessLong(t)
	if os.Getenv(helperEnv) != "" {
		t.Skip("helper")
	}
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	gate := filepath.Join(dir, "go")
	const procs = 4
	cmds := make([]*exec.Cmd, procs)
	outs := make([]*bytes.Buffer, procs)
	for i := range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^TestOffloadHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), helperEnv+"="+strings.Join([]string{ws, gate, strconv.Itoa(i % 2)}, "|"))
		outs[i] = &bytes.Buffer{}
		cmd.Stdout, cmd.Stderr = outs[i], outs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
	}
	time.Sleep(300 * time.Millisecond)
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	offloaded := map[string]int{}
	var commits int
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("helper %d: %v\n%s", i, err, outs[i])
		}
		for _, line := range strings.Split(outs[i].String(), "\n") {
			var round, owner, c int
			var oc, ref string
			if n, _ := fmt.Sscanf(line, "RESULT %d %d %s %s %d", &round, &owner, &oc, &ref, &c); n != 5 {
				continue
			}
			if ref != artifact.RefOf(roundBody(round)).String() {
				t.Fatalf("round %d: reference %s", round, ref)
			}
			if oc == "offloaded" {
				offloaded[fmt.Sprintf("%d/%d", round, owner)]++
			} else if oc != "existing_reference" {
				t.Fatalf("outcome %s", oc)
			}
			commits += c
		}
	}
	for r := range rounds {
		for o := range 2 {
			if got := offloaded[fmt.Sprintf("%d/%d", r, o)]; got != 1 {
				t.Errorf("round %d owner %d: %d offloaded, want exactly 1", r, o, got)
			}
		}
	}
	if commits != rounds {
		t.Errorf("%d body commits over %d rounds, want one per round", commits, rounds)
	}
	ds, err := dirstore.Open(context.Background(), ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	n := 0
	for _, err := range ds.ListRecords(context.Background(), driver.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 2*rounds {
		t.Fatalf("%d records, want %d", n, 2*rounds)
	}
}

// TestOffloadHelperProcess is one worker of TestMultiProcessOffload.
func TestOffloadHelperProcess(t *testing.T) {
	arg := os.Getenv(helperEnv)
	if arg == "" {
		t.Skip("only run as a helper process")
	}
	parts := strings.Split(arg, "|")
	ws, gate := parts[0], parts[1]
	ownerIdx, _ := strconv.Atoi(parts[2])
	for {
		if _, err := os.Stat(gate); err == nil {
			break
		}
		time.Sleep(time.Millisecond)
	}
	ctx := context.Background()
	ds, err := dirstore.Open(ctx, ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	inst := drivertest.Instrument(ds, ds, nil)
	owner := []artifact.Owner{ownerA, ownerB}[ownerIdx]
	bind, _ := hybridctx.NewBinding(owner, workspace.New(inst, inst))
	off, _ := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: 1024}, nil)
	for r := range rounds {
		before := inst.Counts()
		out, err := off.OffloadReader(ctx, hybridctx.Call{Tool: "t", ID: "c"}, bytes.NewReader(roundBody(r)))
		if err != nil {
			t.Fatal(err)
		}
		after := inst.Counts()
		fmt.Printf("RESULT %d %d %s %s %d\n", r, ownerIdx, out.Outcome(), out.Ref, after.Commits+after.Replaces-before.Commits-before.Replaces)
	}
}
