package procstat

import (
	"errors"
	"os"
	"runtime"
	"testing"
)

func TestBytes(t *testing.T) {
	if runtime.GOOS != "linux" {
		if _, err := Bytes(0, "VmRSS"); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("without /proc: %v", err)
		}
		return
	}
	self, err := Bytes(0, "VmRSS")
	if err != nil || self <= 0 {
		t.Fatalf("VmRSS of this process: %d, %v", self, err)
	}
	peak, err := Bytes(os.Getpid(), "VmHWM")
	if err != nil || peak < self>>1 {
		t.Fatalf("VmHWM by pid: %d, %v (VmRSS %d)", peak, err, self)
	}
	if _, err := Bytes(0, "NoSuchField"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("unknown field: %v", err)
	}
	if _, err := Bytes(-1, "VmRSS"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("no such process: %v", err)
	}
	if _, err := Bytes(0, "Name"); err == nil || errors.Is(err, ErrUnavailable) {
		t.Fatalf("a field that is not a size: %v", err)
	}
}
