// Package mcpproxy bounds the tool results of MCP servers (built on the
// official Go SDK, github.com/modelcontextprotocol/go-sdk/mcp): as a proxy in
// front of any server (Proxy, which "hybridctx mcp" runs over stdio or,
// through HTTPHandler, over Streamable HTTP, one proxy session per MCP
// session; upstreams are a Command or an HTTPUpstream), or inside a Go MCP
// server (Middleware and AddReadTools).
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
// threshold. Then the whole-result bound (docs/mcp-proxy.md), written once in
// hybridctx.Offloader.BoundResult, weighs the result as encoded for the
// client: the largest inline parts are stored one by one while that can
// bring it within the policy's ResultBound, else the parts are folded into
// one stored JSON array and one notice, so at most ResultBound + 1 KiB is
// sent.
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
// stdio; Stream serves the client over a byte stream (standard input and
// output).
//
// Only the first response to each request the proxy forwarded reaches the
// client; a second one, one carrying the id of a request the proxy serves
// itself, and one for an id never sent are dropped (Options.Logger counts
// them, without content). Over Stream and Command, ids are answered
// exactly as the client wrote them, and a malformed line never ends the
// session: a client line is answered with -32700 or -32600 when it carries
// an id (else dropped), an upstream line is dropped (the request it names,
// if any, gets an error), and a line over the message limit is skipped in
// constant memory.
//
// Over Stream, Command and HTTPUpstream, a message longer than 1 MiB is
// never held whole (over HTTP: a JSON response body, or the data of one
// server-sent event). A tools/call result is bounded as it arrives: every
// text block, base64 image, audio or embedded-resource payload, and
// structuredContent, longer than six times the threshold goes on the fly
// (unescaped, base64-decoded, or as written for structuredContent) into the
// offloader, whatever the order of the fields; the rest of the message is
// kept, and the answer and stored bodies are those the whole message would
// give, except that a fold names each streamed payload by its reference
// (a manifest) instead of holding it. When the message's id comes only after the result, the result is
// first spooled to a private temporary file in Options.TempDir (the CLI
// passes the workspace's own temporary area). Any other long message on
// stdio, both ways (a large tools/call argument, a large resources/read
// result), is checked as it is read and its long params or result spooled,
// then written on in 64 KiB pieces. The message limit still applies;
// memory does not grow with it: a message over the limit is read in
// constant memory and its request gets a JSON-RPC error; the session goes
// on. What still reads a long value whole: the rewritten results
// (initialize, the list methods), a read tool called with huge arguments,
// and, over HTTP, a long message that is not a tools/call result (the SDK
// then decodes it too: about three times its size at once).
//
// HTTPUpstream reads the server's messages below the SDK's client transport
// (which reads a body or an event whole, and ends the connection on an
// event over its limit): see internal/httpup/large.go. HTTPHandler bounds a
// client's request by HTTPOptions.MaxRequestBytes before reading it whole
// (413); a request under it is held whole while it is forwarded (the SDK
// decodes it, the proxy re-encodes it: a few copies of its size). The
// answers it sends back are bounded results, small whatever the upstream
// returned. Middleware cannot stream at all: see its documentation.
package mcpproxy
