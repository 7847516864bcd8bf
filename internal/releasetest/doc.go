// Package releasetest holds one test: a module outside this repository
// depends on an adapter module and the core the way a user's module does
// (go get, the module proxy, no go.work), and builds and runs a program
// with it. See RELEASING.md.
package releasetest
