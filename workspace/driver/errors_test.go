package driver_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"testing"

	"github.com/hybridctx/hybridctx/workspace/driver"
)

func TestWrapKeepsTheErrorAndAddsTheCategory(t *testing.T) {
	base := &os.PathError{Op: "open", Path: "x", Err: syscall.ENOSPC}
	err := driver.Wrap(driver.ErrNoSpace, fmt.Errorf("store: %w", base))
	if !errors.Is(err, driver.ErrNoSpace) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("%v: want both the category and the cause", err)
	}
	var pe *os.PathError
	if !errors.As(err, &pe) || pe != base {
		t.Fatalf("errors.As lost the cause: %v", err)
	}
	if err.Error() != "store: open x: no space left on device" {
		t.Fatalf("message %q, want the cause's own", err.Error())
	}
	if driver.Category(err) != driver.ErrNoSpace {
		t.Fatalf("Category = %v", driver.Category(err))
	}
	if driver.Wrap(driver.ErrNoSpace, nil) != nil {
		t.Fatal("Wrap of nil is not nil")
	}
	if again := driver.Wrap(driver.ErrNoSpace, err); again != err {
		t.Fatal("Wrap marked an error already in its category twice")
	}
}

func TestCategoriesMatchTheirFsSentinelsOneWay(t *testing.T) {
	for _, c := range []struct{ cat, std error }{
		{driver.ErrNotFound, fs.ErrNotExist},
		{driver.ErrAlreadyExists, fs.ErrExist},
		{driver.ErrPermission, fs.ErrPermission},
	} {
		if !errors.Is(driver.Wrap(c.cat, errors.New("x")), c.std) {
			t.Errorf("%v does not match %v", c.cat, c.std)
		}
		// A bare io/fs error is in no category: the driver must mark it.
		if errors.Is(fmt.Errorf("x: %w", c.std), c.cat) || driver.Category(fmt.Errorf("x: %w", c.std)) != nil {
			t.Errorf("a bare %v counts as %v", c.std, c.cat)
		}
	}
	for _, c := range driver.Categories() {
		if c == driver.ErrNotFound || c == driver.ErrAlreadyExists || c == driver.ErrPermission {
			continue
		}
		for _, std := range []error{fs.ErrNotExist, fs.ErrExist, fs.ErrPermission} {
			if errors.Is(c, std) {
				t.Errorf("%v matches %v", c, std)
			}
		}
	}
}

func TestCategoriesAreDistinct(t *testing.T) {
	for i, a := range driver.Categories() {
		for j, b := range driver.Categories() {
			if i != j && (a == b || errors.Is(a, b) || a.Error() == b.Error()) {
				t.Errorf("categories %d and %d overlap: %v, %v", i, j, a, b)
			}
		}
	}
}

func TestFromOS(t *testing.T) {
	cases := []struct {
		err  error
		want error
	}{
		{&os.PathError{Op: "open", Path: "a", Err: syscall.ENOENT}, driver.ErrNotFound},
		{&os.PathError{Op: "mkdir", Path: "a", Err: syscall.EEXIST}, driver.ErrAlreadyExists},
		{&os.PathError{Op: "open", Path: "a", Err: syscall.EACCES}, driver.ErrPermission},
		{&os.PathError{Op: "open", Path: "a", Err: syscall.EPERM}, driver.ErrPermission},
		{&os.PathError{Op: "write", Path: "a", Err: syscall.ENOSPC}, driver.ErrNoSpace},
		{&os.PathError{Op: "write", Path: "a", Err: syscall.EDQUOT}, driver.ErrNoSpace},
		{&os.PathError{Op: "open", Path: "a", Err: syscall.EROFS}, driver.ErrReadOnly},
		{&os.PathError{Op: "read", Path: "a", Err: syscall.EIO}, driver.ErrIO},
		{&os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}, driver.ErrUnavailable},
		{&os.SyscallError{Syscall: "connect", Err: syscall.EHOSTUNREACH}, driver.ErrUnavailable},
		{&os.SyscallError{Syscall: "connect", Err: syscall.ENETUNREACH}, driver.ErrUnavailable},
		{errors.New("something else"), nil},
		{&os.PathError{Op: "read", Path: "a", Err: syscall.EINVAL}, nil},
	}
	for _, c := range cases {
		got := driver.FromOS(c.err)
		if cat := driver.Category(got); cat != c.want {
			t.Errorf("FromOS(%v) in %v, want %v", c.err, cat, c.want)
		}
		if !errors.Is(got, c.err) {
			t.Errorf("FromOS(%v) lost the error", c.err)
		}
	}
	if driver.FromOS(nil) != nil {
		t.Fatal("FromOS(nil) is not nil")
	}
	// An error already marked keeps its category.
	marked := driver.Wrap(driver.ErrDamaged, &os.PathError{Op: "read", Path: "a", Err: syscall.EIO})
	if got := driver.FromOS(marked); got != marked || errors.Is(got, driver.ErrIO) {
		t.Fatal("FromOS re-marked an error already in a category")
	}
}

// ClassifySeq passes each error through classify, keeps the values, and
// stops when the consumer does.
func TestClassifySeq(t *testing.T) {
	seq := func(yield func(int, error) bool) {
		_ = yield(1, nil) && yield(2, syscall.ENOSPC) && yield(3, nil)
	}
	classify := func(err error) error {
		if err == nil {
			return nil
		}
		return driver.Wrap(driver.ErrNoSpace, err)
	}
	var got []int
	for v, err := range driver.ClassifySeq(seq, classify) {
		got = append(got, v)
		if v == 2 {
			if !errors.Is(err, driver.ErrNoSpace) || !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("error not classified: %v", err)
			}
			break
		}
		if err != nil {
			t.Fatalf("value %d: %v", v, err)
		}
	}
	if fmt.Sprint(got) != "[1 2]" {
		t.Fatalf("values %v, want [1 2]: the consumer stopped at 2", got)
	}
}
