package httpup

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/hybridctx/hybridctx/internal/jsonstream"
	"github.com/hybridctx/hybridctx/mcpproxy/internal/wireconn"
	"github.com/hybridctx/hybridctx/mcpproxy/internal/wiremsg"
)

// Large messages from an HTTP upstream.
//
// The SDK's client transports read a response body (application/json) or a
// server-sent event (text/event-stream) whole before decoding it, and an
// event over their limit ends the whole connection. So an HTTP upstream
// reads the server's messages below the SDK, in its round tripper: each
// message (a JSON body, or the data of one event) is held only up to the
// streaming length. Past it, the proxy session's wireconn.Hook — the one the
// stdio upstream uses (mcpproxy's stream.go) — is offered the message's first bytes and
// a reader of the rest; when it streamed the message into the workspace (and
// answered the client itself), the SDK reads a small placeholder response
// with the same id in its place (so that it ends the request's stream), which
// the connection skips. A message over the limit is never held: it is read in
// constant memory for its id, and its placeholder becomes the size error the
// stdio reader gives. Any other long message reaches the SDK whole, as
// the hook gives it back (its long value spooled while it was read).
// Event streams: sse.go.

// largeState is an upstream connection's reading of large messages.
type largeState struct {
	hook  atomic.Pointer[wireconn.Streamer] // set by a proxy session
	limit int                               // the message limit; < 0: none
	mark  json.RawMessage                   // the placeholders' result

	// endpointOK checks the URL of an HTTP+SSE endpoint event (nil: any);
	// endpointRefused is set once one was refused.
	endpointOK      func(data []byte) bool
	endpointRefused atomic.Bool

	mu     sync.Mutex
	placed map[string][]*wiremsg.Bad // by id key, oldest first: placeholders not yet read (nil: streamed)
	noID   json.RawMessage           // the id of a placeholder for a message without a usable one
}

func newLargeState(limit int) *largeState {
	var b [12]byte
	_, _ = rand.Read(b[:])
	n := hex.EncodeToString(b[:])
	return &largeState{limit: limit, mark: json.RawMessage(`{"hybridctxPlaceholder":"` + n + `"}`),
		noID: json.RawMessage(`"hybridctx-placeholder-` + n + `"`), placed: map[string][]*wiremsg.Bad{}}
}

// wrap makes resp's body read through st: message bodies and event streams
// as above, any other successful body unchanged, an error body cut at the
// limit (the SDK reads it whole for its error message). callID is the id of
// the request resp answers, if known: a message that is not JSON-RPC
// becomes its error (see checked).
func (st *largeState) wrap(resp *http.Response, callID json.RawMessage) {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if (resp.Body == nil || resp.Body == http.NoBody) && mt == "application/json" && resp.StatusCode/100 == 2 {
		resp.Body = io.NopCloser(bytes.NewReader(nil)) // an empty message: refused as one (checked)
	}
	if resp.Body == nil || resp.Body == http.NoBody {
		return
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		if st.limit >= 0 {
			resp.Body = readCloser{io.LimitReader(resp.Body, int64(st.limit)), resp.Body}
		}
		return
	}
	switch mt {
	case "application/json":
		resp.Body = &msgBody{st: st, src: resp.Body, check: true, callID: callID}
	case "text/event-stream":
		resp.Body = &sseBody{st: st, br: bufio.NewReaderSize(resp.Body, wireconn.LineBuffer), src: resp.Body, check: true, callID: callID}
	default:
		return
	}
	resp.ContentLength = -1
	resp.Header.Del("Content-Length")
}

type readCloser struct {
	io.Reader
	io.Closer
}

// message reads one message from src and returns what the SDK is to read in
// its place: the message itself, or a placeholder; raw reports the message
// as the server wrote it, unread by the proxy.
func (st *largeState) message(src io.Reader) (msg []byte, raw bool, err error) {
	h := st.hook.Load()
	upTo := -1 // the prefix length at which to decide
	if h != nil {
		upTo = h.Above
	}
	if st.limit >= 0 && (upTo < 0 || st.limit < upTo) {
		upTo = st.limit + 1
	}
	if upTo < 0 {
		msg, err = io.ReadAll(src)
		return msg, err == nil, err
	}
	prefix, err := readUpTo(src, upTo)
	if err != nil || len(prefix) < upTo {
		return prefix, err == nil, err // the whole message, under every length
	}
	r := &msgRest{src: src, budget: -1}
	r.feed(prefix)
	if st.limit >= 0 {
		if r.budget = st.limit - len(prefix); r.budget < 0 {
			msg, err = st.over(r)
			return msg, false, err
		}
	}
	// Here the prefix reached the hook's length: one that reached limit+1
	// is over the limit above, and without a hook upTo is limit+1. The hook
	// reads the whole message: it bounds a tools/call result as it streams
	// (and answers the client itself), or gives back any other message with
	// its long value spooled.
	m, err := h.Hook(prefix, r)
	r.Drain()
	if r.err != nil {
		return nil, false, r.err
	}
	var bad *wiremsg.Bad
	switch {
	case errors.As(err, &bad):
		return st.placeholder(r.sc.ID(), bad), false, nil
	case err != nil:
		return nil, false, err
	case m == nil:
		return st.placeholder(r.sc.ID(), nil), false, nil
	}
	return m.Encode(), false, nil
}

// checked returns msg, a message the server wrote, or, when it is not one
// JSON-RPC message, a placeholder refusing it: its request (callID, else
// the id found in it) gets a JSON-RPC error and the session goes on, where
// the SDK would end the whole connection.
func (st *largeState) checked(msg []byte, callID json.RawMessage) []byte {
	if _, err := jsonrpc.DecodeMessage(msg); err == nil {
		return msg
	}
	id := callID
	if id == nil {
		id = jsonstream.ScanID(msg)
	}
	return st.placeholder(id, &wiremsg.Bad{Code: jsonrpc.CodeParseError, Why: whyNotMessage, ID: id})
}

// requestID returns the id of the JSON-RPC request in req's body (nil for a
// notification, a response or a body it cannot read again).
func requestID(req *http.Request) json.RawMessage {
	if req.GetBody == nil {
		return nil
	}
	body, err := req.GetBody()
	if err != nil {
		return nil
	}
	defer body.Close()
	var sc jsonstream.IDScanner
	var buf [4 << 10]byte
	for !sc.Done() && sc.ID() == nil {
		n, err := body.Read(buf[:])
		sc.Feed(buf[:n])
		if err != nil {
			break
		}
	}
	return sc.ID()
}

// whyNotMessage is why a message of an HTTP upstream that is not JSON-RPC
// was refused.
const whyNotMessage = "the upstream's message is not a JSON-RPC message"

// over reads the rest of a message over the limit in constant memory and
// returns its placeholder.
func (st *largeState) over(r *msgRest) ([]byte, error) {
	r.Drain()
	if r.err != nil {
		return nil, r.err
	}
	return st.placeholder(r.sc.ID(), &wiremsg.Bad{Code: jsonrpc.CodeInvalidRequest, Why: wiremsg.WhyTooLarge, ID: r.sc.ID()}), nil
}

// readUpTo reads from r until it has n bytes or r ends, growing its buffer
// as the bytes come.
func readUpTo(r io.Reader, n int) ([]byte, error) {
	b := make([]byte, 0, min(n, 4<<10))
	for len(b) < n {
		if len(b) == cap(b) {
			b = append(b, make([]byte, min(cap(b), n-len(b)))...)[:len(b)]
		}
		k, err := r.Read(b[len(b):min(cap(b), n)])
		b = b[:len(b)+k]
		if errors.Is(err, io.EOF) {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
	}
	return b, nil
}

// placeholder records a placeholder for the message with id (its outcome:
// nil when streamed, else why it was refused) and returns it.
func (st *largeState) placeholder(id json.RawMessage, bad *wiremsg.Bad) []byte {
	key, ok := wiremsg.IDKey(id)
	if !ok || !wireconn.SDKExact(id) {
		id = st.noID
		key, _ = wiremsg.IDKey(id)
		if bad != nil {
			bad.ID = nil
		}
	}
	st.mu.Lock()
	st.placed[key] = append(st.placed[key], bad)
	st.mu.Unlock()
	return append(append(append([]byte(`{"jsonrpc":"2.0","id":`), id...), `,"result":`...), append(st.mark, '}')...)
}

// claim reports whether msg is one of st's placeholders, with its outcome
// and the id as the upstream wrote it.
func (st *largeState) claim(msg jsonrpc.Message) (placed bool, bad *wiremsg.Bad, id json.RawMessage) {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok || resp.Error != nil || !bytes.Equal(resp.Result, st.mark) {
		return false, nil, nil
	}
	id, _ = json.Marshal(resp.ID.Raw())
	key, _ := wiremsg.IDKey(id)
	st.mu.Lock()
	defer st.mu.Unlock()
	q, ok := st.placed[key]
	if !ok {
		return false, nil, nil
	}
	if len(q) == 1 {
		delete(st.placed, key)
	} else {
		st.placed[key] = q[1:]
	}
	return true, q[0], id
}

// msgRest is the rest of one message past its prefix: a wiremsg.RestReader failing
// once past budget bytes, finding the message's id on the way. A read
// error of the connection (a message cut short) wraps wiremsg.ErrCut.
type msgRest struct {
	src    io.Reader
	budget int // < 0: no limit
	sc     jsonstream.IDScanner
	done   bool
	err    error // the source's error other than its end
}

func (r *msgRest) feed(p []byte) {
	if r.sc.ID() == nil {
		r.sc.Feed(p)
	}
}

func (r *msgRest) Read(p []byte) (int, error) {
	if r.done {
		return 0, io.EOF
	}
	n, err := r.src.Read(p)
	r.feed(p[:n])
	if err != nil {
		r.done = true
		if !errors.Is(err, io.EOF) {
			r.err = fmt.Errorf("%w: %w", wiremsg.ErrCut, err)
			return n, r.err
		}
		if n == 0 {
			return 0, io.EOF
		}
	}
	if r.budget >= 0 {
		if r.budget -= n; r.budget < 0 {
			return n, wiremsg.ErrLineTooLarge
		}
	}
	return n, nil
}

func (r *msgRest) NoLimit() { r.budget = -1 }

// drain discards the rest of the message in constant memory.
func (r *msgRest) Drain() {
	var buf [8 << 10]byte
	for !r.done {
		_, _ = r.Read(buf[:])
	}
}

// msgBody is a response body holding one message.
type msgBody struct {
	st     *largeState
	src    io.ReadCloser
	out    io.Reader
	check  bool            // refuse a message that is not JSON-RPC (checked)
	callID json.RawMessage // the id of the request answered
}

func (b *msgBody) Read(p []byte) (int, error) {
	if b.out == nil {
		msg, raw, err := b.st.message(b.src)
		if raw && b.check {
			msg = b.st.checked(msg, b.callID)
		}
		b.out = bytes.NewReader(msg)
		if err != nil {
			b.out = io.MultiReader(b.out, errReader{err})
		}
	}
	return b.out.Read(p)
}

func (b *msgBody) Close() error { return b.src.Close() }

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// httpWire is the proxy's view of an upstream connection: its messages
// with the proxy's placeholders taken out (see above), and ids the SDK
// cannot hold sent under stand-ins (wireconn.SDK).
type httpWire struct{ c *Conn }

func (w httpWire) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := w.c.read(ctx)
		if err != nil {
			return nil, err
		}
		placed, bad, id := w.c.big.claim(msg)
		if !placed {
			return msg, nil
		}
		cid := w.c.wire.ClientIDOf(id, true)
		if bad != nil {
			b := *bad
			if b.ID != nil {
				b.ID = cid
			}
			return nil, &b
		}
	}
}

func (w httpWire) Write(ctx context.Context, msg jsonrpc.Message) error { return w.c.Write(ctx, msg) }
func (w httpWire) Close() error                                         { return w.c.Close() }
func (w httpWire) SessionID() string                                    { return w.c.SessionID() }

// ReadMsg implements wireconn.Conn.
func (c *Conn) ReadMsg(ctx context.Context) (*wiremsg.Msg, error) {
	return c.wire.ReadMsg(ctx)
}

// WriteMsg implements wireconn.Conn.
func (c *Conn) WriteMsg(ctx context.Context, m *wiremsg.Msg) error {
	return c.wire.WriteMsg(ctx, m)
}

// SetLarge installs the proxy session's hook for messages longer than
// above.
func (c *Conn) SetLarge(h wireconn.Hook, above int) {
	c.big.hook.Store(&wireconn.Streamer{Hook: h, Above: above})
}

// ClientID returns the client's id for an id the connection sent upstream.
func (c *Conn) ClientID(id json.RawMessage) json.RawMessage {
	return c.wire.ClientIDOf(id, false)
}

// Placeholder is the result of this connection's placeholders, which never
// reach the proxy (FuzzUpstreamResponse checks).
func (c *Conn) Placeholder() json.RawMessage { return c.big.mark }
