// Package procstat reads a process's memory sizes from /proc/PID/status,
// for the tests and figures that measure resident memory (Linux only).
package procstat

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ErrUnavailable is wrapped when the system has no /proc/PID/status, or it
// has no such field: the figure cannot be read here.
var ErrUnavailable = errors.New("procstat: not available")

// Bytes returns the size field of process pid's status ("VmRSS", "VmHWM",
// written in kB there), in bytes; pid 0 is this process.
func Bytes(pid int, field string) (int64, error) {
	path := "/proc/self/status"
	if pid != 0 {
		path = "/proc/" + strconv.Itoa(pid) + "/status"
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), field+":")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("procstat: %s in %s: %w", field, path, err)
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("%w: no %s in %s", ErrUnavailable, field, path)
}
