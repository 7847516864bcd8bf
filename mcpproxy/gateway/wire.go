//lint:file-ignore SA1019 logging is deprecated as of protocol 2026-07-28 but still spoken by servers of the versions before; the gateway routes it (docs/gateway.md).

package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybridctx/hybridctx/mcpproxy"
	"github.com/hybridctx/hybridctx/mcpproxy/internal/wiremsg"
)

// The notifications the gateway takes off an upstream's connection itself,
// in the order the server wrote them (docs/gateway.md, "What is routed
// where").
const (
	methodLog      = "notifications/message"
	methodProgress = "notifications/progress"
)

// wire is an upstream's connection as the SDK's client session reads it.
// It drops the lines a server writes that are not JSON-RPC messages (a
// banner on standard output) instead of ending the session, and it
// delivers the server's log and progress notifications itself, before it
// reads the next message: the SDK hands a response to its caller apart
// from the notifications queued before it, so a message the server wrote
// during a call could otherwise reach the client after the call's result,
// when the call's own stream has closed. It also takes the result of each
// tools/call the gateway forwards off the wire as it came (takenResult),
// so that the SDK never decodes a large one.
type wire struct {
	mcp.Connection
	u *upstream

	mu    sync.Mutex
	taken map[jsonrpc.ID]*takenResult // tools/call requests written, by id
}

// takenResult receives one tools/call result as the server encoded it.
// callTool puts it in the call's context; the wire fills it from the
// response and hands the SDK an empty result in its place.
type takenResult struct {
	mu  sync.Mutex
	w   *wire
	id  jsonrpc.ID
	raw json.RawMessage
}

type takenKey struct{}

// withTaken returns ctx asking the wire to take the result of the
// tools/call made with it into t.
func withTaken(ctx context.Context, t *takenResult) context.Context {
	return context.WithValue(ctx, takenKey{}, t)
}

// result returns the result taken off the wire (nil if none was, or the
// response had none) and forgets the request, answered or not.
func (t *takenResult) result() json.RawMessage {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.w != nil {
		t.w.mu.Lock()
		delete(t.w.taken, t.id)
		t.w.mu.Unlock()
		t.w = nil
	}
	raw := t.raw
	t.raw = nil
	return raw
}

// emptyResult is what the SDK decodes in place of a taken result.
var emptyResult = json.RawMessage(`{"content":[]}`)

func (w *wire) Write(ctx context.Context, m jsonrpc.Message) error {
	if r, ok := m.(*jsonrpc.Request); ok && r.IsCall() && r.Method == "tools/call" {
		if t, ok := ctx.Value(takenKey{}).(*takenResult); ok {
			t.mu.Lock()
			t.w, t.id = w, r.ID
			t.mu.Unlock()
			w.mu.Lock()
			if w.taken == nil {
				w.taken = map[jsonrpc.ID]*takenResult{}
			}
			w.taken[r.ID] = t
			w.mu.Unlock()
		}
	}
	return w.Connection.Write(ctx, m)
}

// take moves a tools/call result into its takenResult.
func (w *wire) take(r *jsonrpc.Response) {
	w.mu.Lock()
	t, ok := w.taken[r.ID]
	delete(w.taken, r.ID)
	w.mu.Unlock()
	if !ok || r.Error != nil {
		return
	}
	t.mu.Lock()
	t.raw, r.Result = r.Result, emptyResult
	t.mu.Unlock()
}

func (w *wire) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		m, err := w.Connection.Read(ctx)
		if errors.Is(err, mcpproxy.ErrMalformedMessage) {
			if r := w.malformed(err); r != nil {
				return r, nil
			}
			continue
		}
		if err != nil {
			return m, err
		}
		if r, ok := m.(*jsonrpc.Response); ok {
			w.take(r)
			return m, nil
		}
		if r, ok := m.(*jsonrpc.Request); ok && !r.IsCall() {
			switch r.Method {
			case methodLog:
				w.u.logMessage(ctx, r.Params)
				continue
			case methodProgress:
				w.u.progressed(ctx, r.Params)
				continue
			}
		}
		return m, nil
	}
}

// malformed answers a forwarded tools/call whose response the server
// wrote malformed (not JSON, over the size limit, neither a result nor an
// error) but with an id the line still shows: the SDK gets a response with
// no result taken, so the call answers the categorical tool error of a
// malformed result (callTool) now instead of waiting for an answer that
// will not come. Any other malformed line is dropped (nil).
func (w *wire) malformed(err error) *jsonrpc.Response {
	var bad *wiremsg.Bad
	var v any
	if !errors.As(err, &bad) || bad.ID == nil || json.Unmarshal(bad.ID, &v) != nil {
		return nil
	}
	id, e := jsonrpc.MakeID(v)
	if e != nil {
		return nil
	}
	w.mu.Lock()
	_, ok := w.taken[id]
	delete(w.taken, id)
	w.mu.Unlock()
	if !ok {
		return nil
	}
	return &jsonrpc.Response{ID: id, Result: emptyResult}
}

// progressRoute is where an upstream's progress goes: the client's call
// (its session, its context, so over Streamable HTTP the notification
// travels on that call's stream) and the token the client gave.
type progressRoute struct {
	ctx   context.Context
	ss    *mcp.ServerSession
	token any
}

// progressed hands a server's progress to the client call whose token it
// carries; progress for no call the gateway forwards (one that has ended)
// is dropped.
func (u *upstream) progressed(_ context.Context, raw json.RawMessage) {
	var p mcp.ProgressNotificationParams
	if json.Unmarshal(raw, &p) != nil {
		return
	}
	key := fmt.Sprint(p.ProgressToken)
	u.g.mu.Lock()
	pr, ok := u.g.progress[key]
	u.g.mu.Unlock()
	if !ok {
		return
	}
	p.ProgressToken = pr.token
	_ = pr.ss.NotifyProgress(pr.ctx, &p)
}

// logMessage hands a server's log message to the client call it serves,
// or to every client session outside a call, the logger named
// SERVER/logger.
func (u *upstream) logMessage(ctx context.Context, raw json.RawMessage) {
	var p mcp.LoggingMessageParams
	if json.Unmarshal(raw, &p) != nil {
		return
	}
	p.Logger = u.cfg.Name + "/" + p.Logger
	if c := u.call(); c != nil {
		_ = c.ss.Log(c.ctx, &p)
		return
	}
	for ss := range u.g.server.Sessions() {
		_ = ss.Log(ctx, &p)
	}
}
