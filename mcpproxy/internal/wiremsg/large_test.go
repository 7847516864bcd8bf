package wiremsg

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx/workspace/driver"
)

// TestSpoolInTempDir: a spool file is created in the directory given, under
// the workspace's temporary prefix (swept if a process dies holding it),
// and removed at once; an unwritable directory falls back to memory.
func TestSpoolInTempDir(t *testing.T) {
	dir := t.TempDir()
	sp := newSpool(dir)
	defer sp.close()
	if sp.f == nil || filepath.Dir(sp.f.Name()) != dir || !strings.HasPrefix(filepath.Base(sp.f.Name()), driver.TempPrefix) {
		t.Fatalf("spool file %v", sp.f)
	}
	if _, err := os.Stat(sp.f.Name()); !os.IsNotExist(err) {
		t.Fatalf("the spool file is still named: %v", err)
	}
	_, _ = sp.Write([]byte("abc"))
	mem := newSpool(filepath.Join(dir, "missing"))
	_, _ = mem.Write([]byte("abc"))
	for _, s := range []*spool{sp, mem} {
		r, err := s.section(1, 2)
		b := make([]byte, 2)
		if _, rerr := r.Read(b); err != nil || rerr != nil || string(b) != "bc" {
			t.Fatalf("section: %q %v %v", b, err, rerr)
		}
	}
	if mem.f != nil {
		t.Fatal("a spool file in a missing directory")
	}
}
