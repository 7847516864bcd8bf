// Package agent is the framework-neutral seam between an agent loop and
// hybridctx: a tool middleware that sends every tool result through an
// Offloader, the explicit read tool read_artifact that rehydrates a
// reference under a host-set budget, a conversation History with a
// checkable size invariant, and an iterative Loop driven by a pluggable
// Model (ScriptedModel plays a fixed script, for tests and demos).
//
// The host builds one hybridctx.Binding per execution and constructs the
// Offloader, the Rehydrator and from them a Middleware and a ReadTool; the
// model never chooses the owner or the workspace. Sub-agents run as child
// loops whose decisions are reported through reporter.Child (RunChild,
// DelegateTool), so their events carry the parent agent id, their depth and
// the tree's shared sequence.
package agent
