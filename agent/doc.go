// Package agent is the framework-neutral seam between an agent loop and
// hybridctx: a tool middleware that sends every tool result through an
// Offloader, and the explicit read tool read_artifact that rehydrates a
// reference under a host-set budget. Any loop (package agent/loop, the
// eino adapter, a host's own) calls tools through them.
//
// The host builds one hybridctx.Binding per execution and constructs the
// Offloader, the Rehydrator and from them a Middleware and a ReadTool; the
// model never chooses the owner or the workspace.
package agent
