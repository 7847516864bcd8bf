// Package hybridctx keeps LLM-agent conversations bounded without losing
// anything.
//
// A tool result at or below a policy's inline threshold (in UTF-8 bytes)
// stays in the conversation unchanged. A larger one is written once into the
// workspace (package workspace), the single authoritative store, and the
// conversation carries only a bounded notice whose first line is the
// reference artifact://sha256/<hex>. The body comes back only through an
// explicit Rehydrator call that checks, in order, the owner, the existence of
// the body, a byte budget (before reading anything) and the digest (before
// releasing anything).
//
// Besides a byte range (Rehydrate, RehydrateTo), a Rehydrator answers three
// targeted views of a body (docs/rehydration.md), each a rehydration in every respect
// — the same checks in the same order, the whole body's digest verified
// before a byte is released, one event whose diagnostics name the View:
// ReadLines (whole lines), Search (grep -n style, literal or RE2) and Query
// (a sandboxed jq filter over a JSON body). Package readtools turns them
// into the model-facing tools read_artifact, search_artifact and
// query_artifact.
//
// Every decision yields one *Diagnostics, a privacy-safe snapshot with only
// categorical values and byte counts, and reports exactly one Event to the
// Reporter found in the context, if any. Nothing is ambient: the host builds
// a Binding (owner plus workspace) and constructs an Offloader and a
// Rehydrator for it.
package hybridctx
