package backend

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/hybridctx/hybridctx/workspace/driver"
)

// A Driver opens the workspaces of the URL schemes it is registered for
// (Register). The packages backend/postgres and backend/s3 register this
// module's own; a host may register one of its own the same way.
type Driver struct {
	// Kind names the backend: Parse returns it for the driver's URLs,
	// and errors name it.
	Kind string
	// Check validates a URL of the driver's schemes without opening
	// anything; its errors wrap ErrBadURL and never quote the URL, which
	// may hold a password. nil accepts every URL.
	Check func(u string) error
	// Open opens the body and record drivers of u (one value may be
	// both). opts is never nil.
	Open func(ctx context.Context, u string, opts *Options) (driver.Bodies, driver.Records, error)
}

// The registry is the one piece of global state of this module: a driver
// package's init registers its schemes, as database/sql's drivers do, so
// that Open links only the drivers a program imports.
var registry struct {
	sync.RWMutex
	drivers map[string]Driver
}

// shipped are the schemes of the drivers this module ships, and the
// package whose import registers each.
var shipped = map[string]string{
	"postgres":   "github.com/hybridctx/hybridctx/backend/postgres",
	"postgresql": "github.com/hybridctx/hybridctx/backend/postgres",
	"s3":         "github.com/hybridctx/hybridctx/backend/s3",
}

// Register makes d open the URLs of scheme (lower case, without "://").
// It is meant for a driver package's init and panics, as database/sql's
// Register does, on a programming error: an empty scheme or Kind, a nil
// Open, a built-in scheme (file, mem) or kind (dir, mem), or a scheme
// already registered.
func Register(scheme string, d Driver) {
	if scheme == "" || d.Kind == "" || d.Open == nil {
		panic("backend: Register needs a scheme, a Kind and an Open function")
	}
	if scheme == "file" || scheme == "mem" || d.Kind == "dir" || d.Kind == "mem" {
		panic("backend: Register of a built-in scheme or kind")
	}
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.drivers[scheme]; dup {
		panic("backend: Register called twice for scheme " + scheme)
	}
	if registry.drivers == nil {
		registry.drivers = make(map[string]Driver)
	}
	registry.drivers[scheme] = d
}

// Schemes lists the URL schemes Open accepts in this program, sorted: the
// built-in file and mem, and every registered one. (A directory path
// without a scheme is accepted too.)
func Schemes() []string {
	registry.RLock()
	defer registry.RUnlock()
	s := []string{"file", "mem"}
	for k := range registry.drivers {
		s = append(s, k)
	}
	slices.Sort(s)
	return s
}

// lookup finds the driver of a lower-cased scheme.
func lookup(scheme string) (Driver, error) {
	registry.RLock()
	d, ok := registry.drivers[scheme]
	registry.RUnlock()
	if !ok {
		return Driver{}, &UnregisteredError{Scheme: scheme, Import: shipped[scheme]}
	}
	return d, nil
}

// UnregisteredError is the error of Open and Parse for a URL whose scheme
// has no driver in the program. When this module ships the driver, Import
// names the package to import (a blank import is enough) and the error
// wraps ErrNotBuilt; otherwise Import is empty and the error wraps
// ErrBadURL: no such backend.
type UnregisteredError struct {
	// Scheme is the URL's scheme, lower-cased (not the URL, which may
	// hold a password).
	Scheme string
	// Import is the path of the package that registers the scheme's
	// driver, or "" when this module ships none.
	Import string
}

func (e *UnregisteredError) Error() string {
	if e.Import != "" {
		return fmt.Sprintf("%v: %s:// needs its driver: import _ %q", ErrNotBuilt, e.Scheme, e.Import)
	}
	return fmt.Sprintf("%v: no backend for %s:// (this module has drivers for %s)", ErrBadURL, e.Scheme, shippedList())
}

// Unwrap returns ErrNotBuilt for a driver this module ships, else
// ErrBadURL.
func (e *UnregisteredError) Unwrap() error {
	if e.Import != "" {
		return ErrNotBuilt
	}
	return ErrBadURL
}

// shippedList names every scheme this module can open, for an error.
func shippedList() string {
	s := []string{"file://", "mem://"}
	for k := range shipped {
		s = append(s, k+"://")
	}
	slices.Sort(s)
	return strings.Join(s, ", ")
}
