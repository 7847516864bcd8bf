// Package mcpproxy bounds the tool results of MCP servers (built on the
// official Go SDK, github.com/modelcontextprotocol/go-sdk/mcp): as a proxy in
// front of any server (Proxy, which "hybridctx mcp" runs over stdio), or
// inside a Go MCP server (Middleware and AddReadTools).
//
// # Bounding a tools/call result
//
// Each content block gets one offload decision from a hybridctx.Offloader:
// a text block on its text, an image or audio block on its decoded bytes,
// an embedded resource on its text or decoded blob, any other block (a
// resource_link, an unknown type) on its JSON. A block whose other fields
// (_meta, annotations, MIME type) are themselves over the threshold is
// decided on its whole JSON instead, so nothing unbounded stays inline.
// structuredContent gets one decision on its JSON; the result's remaining
// fields (_meta and unknown keys) get one when together they exceed the
// threshold.
//
//   - inline (at or below the threshold): the block passes unchanged;
//   - offloaded or existing_reference: the block is replaced, in place, by
//     a text block holding the bounded notice (first line the reference)
//     and a resource_link {uri: the reference, name: "sha256-<16 hex>",
//     mimeType, size}; both keep the block's annotations;
//   - failed or recovery_required: the block is replaced by a text block
//     holding the categorical notice, which says what happened (the content
//     is not shown: it would break the bound).
//
// Stored structuredContent (and stored extra fields) are removed from the
// result, and their notice and link are appended to the content, unless a
// content block already links the same reference (the usual case: a server
// returns its structured result as JSON text too). Because a bounded result
// can no longer promise a tool's outputSchema, tools/list answers lose every
// outputSchema; clients that validate structured results against it would
// otherwise reject the bounded ones.
//
// # Reading back
//
// The read tools are package readtools' definitions, served by the proxy
// itself (never forwarded upstream): read_artifact {"reference", "offset",
// "length" | "start_line", "line_count", "max_bytes"}, search_artifact and
// query_artifact (names from the policy). A call's budget is min(max_bytes,
// Options.Budget). Search, query and paged lines answers carry MetaView,
// MetaTotal and MetaNext in _meta; a lines read that stopped early adds a
// second text block saying where to continue. A resolved
// read returns the bytes as one text block when they are valid UTF-8, else
// as one embedded resource whose blob holds them (a page that starts or
// ends inside a multi-byte character is therefore a blob); _meta carries
// the clamped range (MetaOffset, MetaLength, MetaBodySize). Every other
// outcome, and malformed arguments, is an isError result with one line
// saying what to do next. Reads are recovered content: they are never
// offloaded again. resources/read of an artifact:// URI (ArtifactURITemplate)
// applies the same owner, digest and budget checks to the whole body.
//
// The owner is the binding's: set by the host, never by the model. Two
// proxies with different sessions on one workspace cannot read each other's
// results. No message the client receives carries an owner field, a
// workspace path or error text; storage failures become categorical
// messages.
//
// # The proxy
//
// Proxy.Run forwards JSON-RPC messages between the client and the upstream
// unchanged, whatever the protocol version, except: initialize and
// server/discover results advertise tools and resources; tools/list gets the
// read tool on its last page; resources/templates/list gets the artifact
// template; tools/call results are bounded; read tool calls and
// resources/read (or subscribe) of artifact:// URIs are answered by the
// proxy. Everything else — prompts, completions, logging, progress and
// list-changed notifications, requests from the server to the client
// (sampling, elicitation, roots) and cancellation in both directions —
// passes as it is. Command runs the upstream as a child process speaking
// stdio.
package mcpproxy
