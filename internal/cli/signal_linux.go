package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"
)

// settleSignals waits, until deadline, for the moment when no SIGINT or
// SIGTERM is pending for the process and no other thread of it is running
// or runnable. A signal the kernel has handed to a thread is on its way to
// the runtime's queue only while that thread runs (or waits to run) its
// handler; once every other thread sleeps, each such signal is in the
// queue, ahead of the sync signal Sync raises next. Without /proc it
// returns at once.
func settleSignals(deadline time.Time) {
	runtime.LockOSThread() // this thread is the one not to wait for
	defer runtime.UnlockOSThread()
	self := strconv.Itoa(syscall.Gettid())
	for pause := 50 * time.Microsecond; ; pause = min(2*pause, time.Millisecond) {
		settled, ok := signalsSettled(self)
		if settled || !ok || time.Now().After(deadline) {
			return
		}
		time.Sleep(pause)
	}
}

// signalsSettled reports whether no SIGINT or SIGTERM is pending and every
// thread but self sleeps; ok is false when /proc cannot tell.
func signalsSettled(self string) (settled, ok bool) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false, false
	}
	pending, ok := procMask(status, "ShdPnd:")
	if !ok {
		return false, false
	}
	if pending&(1<<(syscall.SIGINT-1)|1<<(syscall.SIGTERM-1)) != 0 {
		return false, true
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return false, false
	}
	for _, t := range tasks {
		if t.Name() == self {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc/self/task", t.Name(), "stat"))
		if err != nil {
			continue // the thread exited
		}
		// "tid (comm) S …": the state follows the last parenthesis.
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'R' {
			return false, true
		}
	}
	return true, true
}

// procMask parses the hexadecimal signal mask of a /proc status line.
func procMask(status []byte, key string) (uint64, bool) {
	i := bytes.Index(status, []byte("\n"+key))
	if i < 0 {
		return 0, false
	}
	line := status[i+1+len(key):]
	if j := bytes.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	}
	m, err := strconv.ParseUint(string(bytes.TrimSpace(line)), 16, 64)
	return m, err == nil
}
