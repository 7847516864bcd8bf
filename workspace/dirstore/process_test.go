package dirstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx/workspace/dirstore"
)

// Environment of a helper process: its role, the workspace directory and a
// scratch directory outside the workspace for barriers and counters.
const (
	envRole    = "DIRSTORE_TEST_HELPER_ROLE"
	envDir     = "DIRSTORE_TEST_HELPER_DIR"
	envScratch = "DIRSTORE_TEST_HELPER_SCRATCH"
	envIndex   = "DIRSTORE_TEST_HELPER_INDEX"
)

// The body, record and lock key every helper process works on.
var (
	sharedBody = bytes.Repeat([]byte("shared across processes\n"), 4096)
	sharedKey  = keyOf(sharedBody)
)

// Counter rounds per process in the lock test.
const lockRounds = 25

// TestHelperProcess is not a test: it is the body of the helper processes
// the cross-process tests start by re-executing the test binary.
func TestHelperProcess(t *testing.T) {
	role := os.Getenv(envRole)
	if role == "" {
		t.Skip("helper process only")
	}
	dir, scratch, index := os.Getenv(envDir), os.Getenv(envScratch), os.Getenv(envIndex)
	ctx := context.Background()
	s, err := dirstore.Open(ctx, dir, nil)
	if err != nil {
		t.Fatalf("helper open: %v", err)
	}
	defer s.Close()
	switch role {
	case "race":
		// Prepare a pending body, then wait at the barrier so that every
		// process commits and creates its record at about the same moment.
		w, err := s.NewWriter(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Abort()
		if _, err := w.Write(sharedBody); err != nil {
			t.Fatal(err)
		}
		barrier(t, scratch, index)
		commit := "created"
		if err := w.Commit(ctx, sharedKey, false); errors.Is(err, fs.ErrExist) {
			commit = "exists"
		} else if err != nil {
			t.Fatalf("Commit: %v", err)
		}
		created, err := s.CreateRecord(ctx, record(testOwner, string(sharedBody), time.Now()))
		if err != nil {
			t.Fatalf("CreateRecord: %v", err)
		}
		fmt.Printf("RESULT commit=%s record=%t\n", commit, created)
	case "counter":
		// Read-modify-write of a counter file outside the workspace, only
		// under the lock: lost updates show that the lock did not exclude.
		counter := filepath.Join(scratch, "counter")
		barrier(t, scratch, index)
		for range lockRounds {
			unlock, err := s.Lock(ctx, sharedKey)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(counter)
			n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			time.Sleep(time.Millisecond)
			if err := os.WriteFile(counter, []byte(strconv.Itoa(n+1)), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := unlock(); err != nil {
				t.Fatal(err)
			}
		}
		fmt.Println("RESULT done")
	case "trylock":
		ctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		unlock, err := s.Lock(ctx, sharedKey)
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			fmt.Println("RESULT busy")
		case err == nil:
			_ = unlock()
			fmt.Println("RESULT acquired")
		default:
			t.Fatal(err)
		}
	case "soak":
		soakHelper(t, s, index)
	case "concurrent":
		base, _ := strconv.Atoi(index)
		concurrentHelper(t, s, base)
	case "gcreuse":
		barrier(t, scratch, index)
		gcReuseHelper(t, s, index)
	default:
		t.Fatalf("unknown helper role %q", role)
	}
}

// barrier announces that helper index is ready and waits for the go file.
func barrier(t *testing.T, scratch, index string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(scratch, "ready-"+index), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(filepath.Join(scratch, "go")); err == nil {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("barrier timed out")
}

// helper is one started helper process.
type helper struct {
	cmd *exec.Cmd
	out bytes.Buffer
}

// startHelpers starts n helper processes in role on dir, and releases them
// from the barrier once all are ready when barrier is true.
func startHelpers(t *testing.T, role, dir, scratch string, n int, withBarrier bool) []*helper {
	t.Helper()
	var hs []*helper
	for i := range n {
		h := &helper{cmd: exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")}
		h.cmd.Env = append(os.Environ(),
			envRole+"="+role, envDir+"="+dir, envScratch+"="+scratch, envIndex+"="+strconv.Itoa(i))
		h.cmd.Stdout = &h.out
		h.cmd.Stderr = &h.out
		if err := h.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	if !withBarrier {
		return hs
	}
	deadline := time.Now().Add(time.Minute)
	for i := 0; i < n; {
		if _, err := os.Stat(filepath.Join(scratch, "ready-"+strconv.Itoa(i))); err == nil {
			i++
			continue
		}
		if time.Now().After(deadline) {
			t.Fatal("helpers never became ready")
		}
		time.Sleep(time.Millisecond)
	}
	if err := os.WriteFile(filepath.Join(scratch, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return hs
}

// results waits for the helpers and returns their RESULT lines.
func results(t *testing.T, hs []*helper) []string {
	t.Helper()
	var out []string
	for _, h := range hs {
		if err := h.cmd.Wait(); err != nil {
			t.Fatalf("helper failed: %v\n%s", err, h.out.String())
		}
		found := false
		for line := range strings.Lines(h.out.String()) {
			if r, ok := strings.CutPrefix(strings.TrimSpace(line), "RESULT "); ok {
				out = append(out, r)
				found = true
			}
		}
		if !found {
			t.Fatalf("helper printed no result:\n%s", h.out.String())
		}
	}
	return out
}

func TestCrossProcessCreateOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	const procs = 4
	for trial := range 3 {
		dir := filepath.Join(t.TempDir(), "ws")
		if trial > 0 {
			// Also race on an existing workspace, not only a fresh one.
			s, err := dirstore.Open(context.Background(), dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			_ = s.Close()
		}
		scratch := t.TempDir()
		res := results(t, startHelpers(t, "race", dir, scratch, procs, true))
		commits, records := 0, 0
		for _, r := range res {
			if strings.Contains(r, "commit=created") {
				commits++
			}
			if strings.Contains(r, "record=true") {
				records++
			}
		}
		if commits != 1 || records != 1 {
			t.Fatalf("trial %d: %d commits created, %d records created, want 1 and 1: %v", trial, commits, records, res)
		}
		s := openAt(t, dir)
		if got := readBody(t, s, sharedKey); !bytes.Equal(got, sharedBody) {
			t.Fatal("shared body corrupted")
		}
		if tt := temps(t, s); len(tt) != 0 {
			t.Fatalf("temps left: %v", tt)
		}
	}
}

func TestCrossProcessLock(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := filepath.Join(t.TempDir(), "ws")
	s := openAt(t, dir)

	// Held here, the lock is busy for another process.
	unlock, err := s.Lock(context.Background(), sharedKey)
	if err != nil {
		t.Fatal(err)
	}
	if got := results(t, startHelpers(t, "trylock", dir, t.TempDir(), 1, false)); got[0] != "busy" {
		t.Fatalf("other process while held: %v, want busy", got)
	}
	// Also for another goroutine of this process.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := s.Lock(ctx, sharedKey); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second Lock in process = %v, want deadline exceeded", err)
	}
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
	if err := unlock(); err != nil {
		t.Fatalf("second unlock: %v", err)
	}
	if got := results(t, startHelpers(t, "trylock", dir, t.TempDir(), 1, false)); got[0] != "acquired" {
		t.Fatalf("other process after unlock: %v, want acquired", got)
	}

	// Four processes increment a shared counter under the lock.
	const procs = 4
	scratch := t.TempDir()
	results(t, startHelpers(t, "counter", dir, scratch, procs, true))
	b, err := os.ReadFile(filepath.Join(scratch, "counter"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(b)); got != strconv.Itoa(procs*lockRounds) {
		t.Fatalf("counter = %s, want %d: the lock did not exclude", got, procs*lockRounds)
	}
}
