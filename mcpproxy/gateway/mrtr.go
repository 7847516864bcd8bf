//lint:file-ignore SA1019 sampling is deprecated as of protocol 2026-07-28 but still asked by servers of the versions before; the gateway routes it to clients of either (docs/gateway.md).

package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A client on protocol 2026-07-28 receives no requests from a server: a
// server that needs input answers the call with an input-required result,
// and the client calls again with the responses. The gateway's servers
// speak UpstreamProtocolVersion, where they ask with requests of their own
// during a call; for such a client the gateway keeps the server's call
// running, answers the client's call with the server's pending requests
// and a requestState naming them, and hands the responses of the client's
// next call to the server (docs/gateway.md, "What is routed where").

// MultiRoundTripVersion is the first protocol version whose clients are
// asked for input with input-required results.
const MultiRoundTripVersion = "2026-07-28"

// DefaultInputTimeout is how long a call waiting for a client's input is
// kept after the gateway answered it with an input-required result.
const DefaultInputTimeout = 10 * time.Minute

// MaxPendingInputs bounds the calls one client session may leave waiting
// for its input; a server's request beyond it is refused.
const MaxPendingInputs = 16

// InputStateRefusal is the error (invalid params) a client's call gets when
// its requestState names no call waiting for that session's input:
// unknown, expired, already used, or another session's. Nothing is called.
const InputStateRefusal = "hybridctx: the requestState names no call waiting for this session's input; make the request again without it"

var errInputRefused = errors.New("hybridctx: the client session has too many calls waiting for its input")

func multiRoundTrip(ss *mcp.ServerSession) bool {
	ip := ss.InitializeParams()
	return ip != nil && ip.ProtocolVersion >= MultiRoundTripVersion
}

// roundTrip is one client call whose server call runs while the client is
// asked for input.
type roundTrip struct {
	ss     *mcp.ServerSession
	key    string // the method and the exposed name or URI the client calls
	ctx    context.Context
	cancel context.CancelFunc
	asks   chan *inputAsk // the server's requests, taken by the call's driver
	done   chan struct{}  // closed once res and err are set
	res    mcp.Result
	err    error

	// Touched only by the one driver of the call at a time.
	open  map[string]*inputAsk // sent to the client, not answered yet
	next  int
	token string
	timer *time.Timer
}

// inputAsk is one request of the server waiting for the client's answer.
type inputAsk struct {
	req mcp.InputRequest
	ans chan inputAnswer // buffered: one answer
}

type inputAnswer struct {
	resp mcp.InputResponse
	err  error
}

// inputs holds the calls waiting for a client's input, by client session
// and requestState.
type inputs struct {
	timeout time.Duration
	mu      sync.Mutex
	bySess  map[*mcp.ServerSession]map[string]*roundTrip
}

func newInputs(timeout time.Duration) *inputs {
	if timeout <= 0 {
		timeout = DefaultInputTimeout
	}
	return &inputs{timeout: timeout, bySess: map[*mcp.ServerSession]map[string]*roundTrip{}}
}

// start runs call, the request upstream, in a goroutine of its own, which
// outlives the client's request when the server asks for input, and
// drives it. key names what the client calls (method and name or URI).
func (in *inputs) start(ctx context.Context, g *Gateway, ss *mcp.ServerSession, key string, call func(context.Context, *roundTrip) (mcp.Result, error)) (round, error) {
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	rt := &roundTrip{ss: ss, key: key, ctx: rctx, cancel: cancel, asks: make(chan *inputAsk), done: make(chan struct{}), open: map[string]*inputAsk{}}
	// A call that waits for input holds a request of the server's open,
	// which the server's session waits for when it closes: the gateway's
	// close ends the call.
	stop := func() bool { return false }
	if g.life != nil {
		stop = context.AfterFunc(g.life, cancel)
	}
	go func() {
		defer cancel()
		defer stop()
		rt.res, rt.err = call(rctx, rt)
		close(rt.done)
	}()
	return in.drive(ctx, rt)
}

// resume hands the client's responses to the call its requestState names
// and drives it on. A state that names no call of this session and key is
// refused and calls nothing.
func (in *inputs) resume(ctx context.Context, ss *mcp.ServerSession, key, state string, responses mcp.InputResponseMap) (round, error) {
	in.mu.Lock()
	rt := in.bySess[ss][state]
	if rt == nil || rt.key != key {
		in.mu.Unlock()
		return round{}, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: InputStateRefusal}
	}
	delete(in.bySess[ss], state)
	in.mu.Unlock()
	rt.timer.Stop()
	for id, r := range responses {
		if a := rt.open[id]; a != nil {
			delete(rt.open, id)
			a.ans <- answerFor(a.req, r)
		}
	}
	return in.drive(ctx, rt)
}

// round is how a client's request is answered: the server's requests
// under a requestState, or the server's result.
type round struct {
	inputs mcp.InputRequestMap // nil: res is the result
	state  string
	res    mcp.Result
}

// drive waits for the call's result or for the server's requests; these
// answer the client's call as an input-required result, and the call
// waits, bounded, for the client's next call.
func (in *inputs) drive(ctx context.Context, rt *roundTrip) (round, error) {
	for {
		if len(rt.open) == 0 {
			select {
			case <-rt.done:
				return round{res: rt.res}, rt.err
			case a := <-rt.asks:
				rt.add(a)
			case <-ctx.Done():
				rt.cancel()
				return round{}, ctx.Err()
			}
		}
		select {
		case <-rt.done:
			return round{res: rt.res}, rt.err
		default:
		}
	more: // requests the server makes at the same time go out together
		for {
			select {
			case a := <-rt.asks:
				rt.add(a)
			default:
				break more
			}
		}
		if in.park(rt) {
			reqs := make(mcp.InputRequestMap, len(rt.open))
			for id, a := range rt.open {
				reqs[id] = a.req
			}
			return round{inputs: reqs, state: rt.token}, nil
		}
		for id, a := range rt.open { // over the bound: the server is refused
			delete(rt.open, id)
			a.ans <- inputAnswer{err: errInputRefused}
		}
	}
}

func (rt *roundTrip) add(a *inputAsk) {
	rt.next++
	rt.open["in-"+strconv.Itoa(rt.next)] = a
}

// park keeps the call under a fresh requestState, bound to its session,
// until the client's next call, the timeout or the session's end; false
// when the session holds MaxPendingInputs calls already.
func (in *inputs) park(rt *roundTrip) bool {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails
	token := hex.EncodeToString(b[:])
	in.mu.Lock()
	defer in.mu.Unlock()
	m, watched := in.bySess[rt.ss]
	if len(m) >= MaxPendingInputs {
		return false
	}
	if !watched {
		m = map[string]*roundTrip{}
		in.bySess[rt.ss] = m
		go in.watch(rt.ss)
	}
	m[token] = rt
	rt.token = token
	rt.timer = time.AfterFunc(in.timeout, func() { in.expire(rt.ss, token) })
	return true
}

// watch ends every call waiting for a session's input when the session
// ends.
func (in *inputs) watch(ss *mcp.ServerSession) {
	_ = ss.Wait()
	in.mu.Lock()
	m := in.bySess[ss]
	delete(in.bySess, ss)
	in.mu.Unlock()
	for _, rt := range m {
		rt.timer.Stop()
		rt.cancel()
	}
}

// expire ends a call the client did not come back to in time.
func (in *inputs) expire(ss *mcp.ServerSession, token string) {
	in.mu.Lock()
	rt := in.bySess[ss][token]
	delete(in.bySess[ss], token)
	in.mu.Unlock()
	if rt != nil {
		rt.cancel()
	}
}

// pending reports how many calls wait for a session's input.
func (in *inputs) pending(ss *mcp.ServerSession) int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.bySess[ss])
}

// ask hands a server's request to the call's driver and waits for the
// client's answer, the server's cancellation or the call's end.
func (rt *roundTrip) ask(ctx context.Context, req mcp.InputRequest) (mcp.InputResponse, error) {
	a := &inputAsk{req: req, ans: make(chan inputAnswer, 1)}
	select {
	case rt.asks <- a:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-rt.ctx.Done():
		return nil, rt.ctx.Err()
	}
	select {
	case r := <-a.ans:
		return r.resp, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-rt.ctx.Done():
		return nil, rt.ctx.Err()
	}
}

var errWrongResponse = errors.New("hybridctx: the client answered an input request with a response of another kind")

func (rt *roundTrip) elicit(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	r, err := rt.ask(ctx, p)
	if err != nil {
		return nil, err
	}
	return r.(*mcp.ElicitResult), nil
}

func (rt *roundTrip) sample(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	r, err := rt.ask(ctx, p)
	if err != nil {
		return nil, err
	}
	return r.(*mcp.CreateMessageResult), nil
}

// answerFor checks a client's response against the request it answers and
// gives it the form the server's request takes: a sampling result of one
// content block (the form a request without tools gets).
func answerFor(req mcp.InputRequest, resp mcp.InputResponse) inputAnswer {
	switch req.(type) {
	case *mcp.ElicitParams:
		if r, ok := resp.(*mcp.ElicitResult); ok && r != nil {
			return inputAnswer{resp: r}
		}
	case *mcp.CreateMessageParams:
		switch r := resp.(type) {
		case *mcp.CreateMessageResult:
			if r != nil {
				return inputAnswer{resp: r}
			}
		case *mcp.CreateMessageWithToolsResult:
			if r == nil {
				break
			}
			raw, err := json.Marshal(r)
			var out mcp.CreateMessageResult
			if err == nil && json.Unmarshal(raw, &out) == nil {
				return inputAnswer{resp: &out}
			}
		}
	}
	return inputAnswer{err: errWrongResponse}
}

// toolRound, promptRound and readRound answer a client's request with a
// round.
func toolRound(r round, err error) (*mcp.CallToolResult, error) {
	if err != nil {
		return nil, err
	}
	if r.inputs != nil {
		return &mcp.CallToolResult{InputRequests: r.inputs, RequestState: r.state}, nil
	}
	return r.res.(*mcp.CallToolResult), nil
}

func promptRound(r round, err error) (*mcp.GetPromptResult, error) {
	if err != nil {
		return nil, err
	}
	if r.inputs != nil {
		return &mcp.GetPromptResult{InputRequests: r.inputs, RequestState: r.state}, nil
	}
	return r.res.(*mcp.GetPromptResult), nil
}

func readRound(r round, err error) (*mcp.ReadResourceResult, error) {
	if err != nil {
		return nil, err
	}
	if r.inputs != nil {
		return &mcp.ReadResourceResult{InputRequests: r.inputs, RequestState: r.state}, nil
	}
	return r.res.(*mcp.ReadResourceResult), nil
}
