package crashfs

import (
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx/workspace/dirstore/internal/vfs"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// write creates name with data, syncing the file when sync is set.
func write(t *testing.T, f *FS, name string, data []byte, sync bool) {
	t.Helper()
	h, err := f.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	must(t, err)
	_, err = h.Write(data)
	must(t, err)
	if sync {
		must(t, h.Sync())
	}
	must(t, h.Close())
}

func syncDir(t *testing.T, f *FS, name string) {
	t.Helper()
	d, err := f.OpenFile(name, os.O_RDONLY, 0)
	must(t, err)
	must(t, d.Sync())
	must(t, d.Close())
}

func read(f *FS, name string) ([]byte, error) {
	h, err := f.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	return io.ReadAll(h)
}

var (
	lose = CloneConfig{Entries: Lose, Data: Lose}
	keep = CloneConfig{Entries: Keep, Data: Keep}
)

func TestLinkIsDurableOnlyAfterDirSync(t *testing.T) {
	f := New(nil)
	must(t, f.Mkdir("d", 0o700))
	syncDir(t, f, ".")
	write(t, f, "d/tmp", []byte("body"), true)
	must(t, f.Link("d/tmp", "d/final"))
	im := f.Crash()
	if _, err := read(im.Clone(lose), "d/final"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("unsynced link survived a crash that loses unsynced state: %v", err)
	}
	if b, err := read(im.Clone(keep), "d/final"); err != nil || string(b) != "body" {
		t.Fatalf("kept: %q %v", b, err)
	}

	f = New(nil)
	must(t, f.Mkdir("d", 0o700))
	syncDir(t, f, ".")
	write(t, f, "d/tmp", []byte("body"), true)
	must(t, f.Link("d/tmp", "d/final"))
	syncDir(t, f, "d")
	must(t, f.Remove("d/tmp"))
	im = f.Crash()
	for _, cfg := range []CloneConfig{lose, keep} {
		c := im.Clone(cfg)
		if b, err := read(c, "d/final"); err != nil || string(b) != "body" {
			t.Fatalf("synced link: %q %v", b, err)
		}
	}
	if _, err := read(im.Clone(lose), "d/tmp"); err != nil {
		t.Fatalf("an unsynced removal was applied: %v", err)
	}
	if _, err := read(im.Clone(keep), "d/tmp"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a kept removal was not applied: %v", err)
	}
}

func TestUnsyncedDataAndNewDirectories(t *testing.T) {
	f := New(nil)
	write(t, f, "a", []byte("synced"), true)
	syncDir(t, f, ".")
	h, err := f.OpenFile("a", os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	_, err = h.Write([]byte(" and more"))
	must(t, err)
	must(t, f.Mkdir("new", 0o700)) // never synced in its parent
	write(t, f, "new/x", []byte("x"), true)
	im := f.Crash()
	if _, err := h.Write([]byte("!")); !errors.Is(err, ErrCrashed) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("write after the crash = %v", err)
	}
	if b, _ := read(im.Clone(lose), "a"); string(b) != "synced" {
		t.Fatalf("lose: %q", b)
	}
	if b, _ := read(im.Clone(keep), "a"); string(b) != "synced and more" {
		t.Fatalf("keep: %q", b)
	}
	if _, err := im.Clone(lose).Lstat("new/x"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a file in an unsynced directory survived: %v", err)
	}
	seen := map[string]bool{}
	for i := range uint64(200) {
		c := im.Clone(CloneConfig{Entries: Random, Data: Random, Rand: rand.New(rand.NewPCG(i, 1))})
		b, err := read(c, "a")
		must(t, err)
		switch {
		case string(b) == "synced", string(b) == "synced and more":
			seen[string(b)] = true
		case len(b) > 6 && string(b[:6]) == "synced" && len(b) <= 15:
			if b[6] == 0 {
				seen["zeros"] = true
			} else {
				seen["prefix"] = true
			}
		default:
			t.Fatalf("impossible content after a crash: %q", b)
		}
	}
	if len(seen) != 4 {
		t.Fatalf("random reboots explored only %v", seen)
	}
}

func TestRenameWithinADirectoryIsAtomic(t *testing.T) {
	f := New(nil)
	write(t, f, "tmp", []byte("new"), true)
	write(t, f, "final", []byte("old"), true)
	syncDir(t, f, ".")
	must(t, f.Rename("tmp", "final"))
	im := f.Crash()
	for i := range uint64(50) {
		c := im.Clone(CloneConfig{Entries: Random, Data: Random, Rand: rand.New(rand.NewPCG(i, 2))})
		b, err := read(c, "final")
		_, terr := c.Lstat("tmp")
		switch {
		case err == nil && string(b) == "old" && terr == nil:
		case err == nil && string(b) == "new" && errors.Is(terr, fs.ErrNotExist):
		default:
			t.Fatalf("rename torn: final %q %v, tmp %v", b, err, terr)
		}
	}
}

func TestCrashAtAndNote(t *testing.T) {
	f := New(&Options{Log: true})
	f.CrashAt(3)
	must(t, f.Mkdir("a", 0o700))                                   // 1
	must(t, f.Note("commit", "record"))                            // 2
	if err := f.Note("commit", "x"); !errors.Is(err, ErrCrashed) { // 3
		t.Fatalf("op 3 = %v", err)
	}
	if err := f.Mkdir("b", 0o700); !errors.Is(err, ErrCrashed) {
		t.Fatalf("after the crash = %v", err)
	}
	if f.Crashed() == nil || f.Ops() != 3 {
		t.Fatalf("crashed %v, ops %d", f.Crashed(), f.Ops())
	}
	log := f.Log()
	if len(log) != 2 || log[0].Kind != "mkdir" || log[1].Kind != "commit" || !log[1].Mutating || log[1].Path != "record" {
		t.Fatalf("log %v", log)
	}
	if s := log[0].String(); s != "1 mkdir a" {
		t.Fatalf("Op.String = %q", s)
	}
	if f.Crash() != f.Crashed() {
		t.Fatal("Crash after a crash froze a new image")
	}
	c := f.Crashed().Clone(keep)
	if _, err := c.Lstat("a"); err != nil {
		t.Fatalf("the directory made before the crash: %v", err)
	}
	must(t, f.Close())
}

func TestErrors(t *testing.T) {
	f := New(nil)
	write(t, f, "ro", []byte("x"), false)
	must(t, f.Chmod("ro", 0o400))
	must(t, f.Mkdir("d", 0o700))
	write(t, f, "d/x", nil, false)
	cases := map[string]struct {
		err  error
		want error
	}{
		"write a read-only file": {errOf(f.OpenFile("ro", os.O_WRONLY, 0)), fs.ErrPermission},
		"exclusive create":       {errOf(f.OpenFile("ro", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)), fs.ErrExist},
		"open a missing file":    {errOf(f.OpenFile("nope", os.O_RDONLY, 0)), fs.ErrNotExist},
		"under a file":           {errOf(f.OpenFile("ro/x", os.O_RDONLY, 0)), syscall.ENOTDIR},
		"write a directory":      {errOf(f.OpenFile("d", os.O_RDWR, 0)), syscall.EISDIR},
		"mkdir twice":            {f.Mkdir("d", 0o700), fs.ErrExist},
		"remove a full dir":      {f.Remove("d"), syscall.ENOTEMPTY},
		"remove the root":        {f.Remove("."), syscall.EBUSY},
		"remove missing":         {f.Remove("nope"), fs.ErrNotExist},
		"link a directory":       {f.Link("d", "e"), syscall.EPERM},
		"link onto a name":       {f.Link("ro", "d/x"), fs.ErrExist},
		"link missing":           {f.Link("nope", "e"), fs.ErrNotExist},
		"rename a directory":     {f.Rename("d", "e"), syscall.EISDIR},
		"rename missing":         {f.Rename("nope", "e"), fs.ErrNotExist},
		"chmod missing":          {f.Chmod("nope", 0o600), fs.ErrNotExist},
		"absolute":               {f.Mkdir("/x", 0o700), syscall.EINVAL},
		"empty":                  {errOf(f.Lstat("")), syscall.EINVAL},
	}
	for name, c := range cases {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: %v, want %v", name, c.err, c.want)
		}
	}
	if err := f.Mkdir("../x", 0o700); err == nil {
		t.Error("a name escaping the root was accepted")
	}
	must(t, f.Close())
	if err := f.Mkdir("z", 0o700); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
}

func errOf[T any](_ T, err error) error { return err }

func TestFiles(t *testing.T) {
	clock := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	f := New(&Options{Clock: func() time.Time { return clock }})
	h, err := f.OpenFile("f", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	must(t, err)
	_, err = h.Write([]byte("hello world"))
	must(t, err)
	buf := make([]byte, 5)
	if n, err := h.ReadAt(buf, 6); n != 5 || err != nil || string(buf) != "world" {
		t.Fatalf("ReadAt = %d %v %q", n, err, buf)
	}
	if n, err := h.ReadAt(buf, 9); n != 2 || err != io.EOF {
		t.Fatalf("short ReadAt = %d %v", n, err)
	}
	must(t, h.Chmod(0o400))
	when := clock.Add(-time.Hour)
	must(t, h.SetModTime(when))
	fi, err := h.Stat()
	must(t, err)
	if fi.Size() != 11 || fi.Mode() != 0o400 || !fi.ModTime().Equal(when) || fi.Name() != "f" || fi.IsDir() {
		t.Fatalf("Stat = %v %v %v", fi.Size(), fi.Mode(), fi.ModTime())
	}
	li, err := f.Lstat("f")
	must(t, err)
	if !vfs.SameFile(fi, li) {
		t.Fatal("SameFile of one file is false")
	}
	// Locks: one holder at a time, released by Close.
	h2, err := f.OpenFile("f", os.O_RDONLY, 0)
	must(t, err)
	must(t, h.TryLock())
	if err := h2.TryLock(); !vfs.IsLocked(err) {
		t.Fatalf("second TryLock = %v", err)
	}
	must(t, h.Close())
	must(t, h2.TryLock())
	must(t, h2.Unlock())
	must(t, h2.Close())
	if err := h2.Close(); !errors.Is(err, fs.ErrClosed) {
		t.Fatalf("second Close = %v", err)
	}
	// Directory listing in batches.
	for _, n := range []string{"b", "a", "c"} {
		write(t, f, n, nil, false)
	}
	d, err := f.OpenFile(".", os.O_RDONLY, 0)
	must(t, err)
	var names []string
	for {
		es, err := d.ReadDir(2)
		for _, e := range es {
			names = append(names, e.Name())
		}
		if err == io.EOF {
			break
		}
		must(t, err)
	}
	if !slices.Equal(names, []string{"a", "b", "c", "f"}) {
		t.Fatalf("ReadDir = %v", names)
	}
	d2, err := f.OpenFile(".", os.O_RDONLY, 0)
	must(t, err)
	first, err := d2.ReadDirNames(3)
	must(t, err)
	rest, err := d2.ReadDirNames(0)
	must(t, err)
	if got := append(first, rest...); !slices.Equal(got, names) {
		t.Fatalf("ReadDirNames = %v", got)
	}
	if _, err := d2.ReadDirNames(1); err != io.EOF {
		t.Fatalf("ReadDirNames at the end = %v", err)
	}
	h3, err := f.OpenFile("a", os.O_RDONLY, 0)
	must(t, err)
	if _, err := h3.ReadDirNames(1); !errors.Is(err, syscall.ENOTDIR) {
		t.Fatalf("ReadDirNames of a file = %v", err)
	}
	if _, err := d.Write([]byte("x")); err == nil {
		t.Fatal("write to a directory succeeded")
	}
}

// TestClonesAreIndependent: writing in one reboot changes neither the image
// nor another reboot.
func TestClonesAreIndependent(t *testing.T) {
	f := New(nil)
	write(t, f, "f", []byte("original"), true)
	syncDir(t, f, ".")
	im := f.Crash()
	a, b := im.Clone(keep), im.Clone(keep)
	h, err := a.OpenFile("f", os.O_WRONLY, 0)
	must(t, err)
	_, err = h.Write([]byte("CHANGED"))
	must(t, err)
	if got, _ := read(a, "f"); string(got) != "CHANGEDl" {
		t.Fatalf("a = %q", got)
	}
	if got, _ := read(b, "f"); string(got) != "original" {
		t.Fatalf("b = %q", got)
	}
	if got, _ := read(im.Clone(lose), "f"); string(got) != "original" {
		t.Fatalf("image = %q", got)
	}
}
