// Package loop is the reference agent loop the demo and the benchmark
// replay run on: an iterative Loop driven by a pluggable Model
// (ScriptedModel plays a fixed script, for tests and demos), a
// conversation History with a checkable size invariant, and sub-agents as
// child loops (RunChild, DelegateTool) whose decisions are reported through
// reporter.Child, so their events carry the parent agent id, their depth
// and the tree's shared sequence. It calls tools through package agent's
// Middleware and ReadTool.
package loop
