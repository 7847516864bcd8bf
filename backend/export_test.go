package backend

import "testing"

// OpenDrivers exposes the drivers Open puts behind a workspace to the
// external tests, which check that a URL opened the right ones.
var OpenDrivers = openDrivers

// WithoutDriver unregisters the driver of scheme until t ends, as in a
// program that did not import its package. t must not be parallel.
func WithoutDriver(t testing.TB, scheme string) {
	registry.Lock()
	d, ok := registry.drivers[scheme]
	delete(registry.drivers, scheme)
	registry.Unlock()
	t.Cleanup(func() {
		if ok {
			registry.Lock()
			registry.drivers[scheme] = d
			registry.Unlock()
		}
	})
}
