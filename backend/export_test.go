package backend

// OpenDrivers exposes the drivers Open puts behind a workspace to the
// external tests, which check that a URL opened the right ones.
var OpenDrivers = openDrivers
