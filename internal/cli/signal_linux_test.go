package cli

import (
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"testing"
	"time"
)

func TestProcMask(t *testing.T) {
	status := []byte("Name:\tx\nSigQ:\t0/1\nSigPnd:\t0000000000000000\nShdPnd:\t0000000000004002\nSigBlk:\t0\n")
	if m, ok := procMask(status, "ShdPnd:"); !ok || m != 1<<(syscall.SIGTERM-1)|1<<(syscall.SIGINT-1) {
		t.Fatalf("ShdPnd %x %v", m, ok)
	}
	for _, bad := range []string{"Name:\tx\n", "x\nShdPnd:\tzz\n"} {
		if _, ok := procMask([]byte(bad), "ShdPnd:"); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}

// TestSignalsSettle: with nothing pending settleSignals returns well
// before its deadline, and a SIGTERM the process caught is no longer
// pending once it was handled.
func TestSignalsSettle(t *testing.T) {
	if _, ok := signalsSettled(strconv.Itoa(syscall.Gettid())); !ok {
		t.Skip("no /proc")
	}
	start := time.Now()
	settleSignals(start.Add(5 * time.Second))
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("settling with nothing pending took %v", d)
	}
	// A SIGTERM that is caught is delivered and handled: it settles.
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM)
	defer signal.Stop(c)
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	settleSignals(time.Now().Add(5 * time.Second))
	select {
	case <-c:
	case <-time.After(5 * time.Second):
		t.Fatal("the SIGTERM never arrived")
	}
	if settled, _ := signalsSettled(""); !settled {
		// Other threads may run at this moment; pending must be clear.
		status, _ := os.ReadFile("/proc/self/status")
		if m, _ := procMask(status, "ShdPnd:"); m&(1<<(syscall.SIGTERM-1)) != 0 {
			t.Fatal("SIGTERM still pending after it was handled")
		}
	}
}
