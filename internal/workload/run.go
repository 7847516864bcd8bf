package workload

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/agent"
	"github.com/hybridctx/hybridctx/agent/loop"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
)

// Defaults of RunOptions.
const (
	DefaultThreshold  = 4096
	DefaultRangeBytes = 4096
	DefaultUser       = "bench"
	DefaultWorkflow   = "bench"
	// DefaultConversationLen is how many tool calls one conversation of a
	// session holds before the session starts a fresh one.
	DefaultConversationLen = 256
	// DefaultReadAhead is how many bytes of results Run takes from its
	// source before its clock starts: the whole default workload (about
	// 69 MB) and more.
	DefaultReadAhead = 256 << 20
)

// RunOptions tune Run. The zero value means defaults.
type RunOptions struct {
	// Threshold is the inline threshold in bytes; 0 means
	// DefaultThreshold.
	Threshold int64
	// User and Workflow complete every session's owner; empty means
	// DefaultUser and DefaultWorkflow.
	User, Workflow string
	// RangeBytes is the length of the ranged read of each stored body; 0
	// means DefaultRangeBytes.
	RangeBytes int64
	// ConversationLen bounds the tool calls of one conversation; 0 means
	// DefaultConversationLen. A session's results run through as many
	// consecutive conversations as needed (each a fresh History and Loop),
	// which keeps the scripted loop's per-turn history copies short.
	ConversationLen int
	// RunID and Sinks: every decision's event goes to Sinks as well, under
	// this run id.
	RunID string
	Sinks []hybridctx.Sink
	// Now is the clock latencies are measured with; nil means time.Now.
	Now func() time.Time
	// ReadAhead is how many bytes of results Run takes from the source
	// before its clock starts, so that producing them (generating or
	// decoding a workload) takes no core from the decisions being timed;
	// the items after them are produced during the run. 0 means
	// DefaultReadAhead; a negative value reads nothing ahead.
	ReadAhead int64
}

// ErrRun wraps failures of the run itself (not of a round trip, which the
// report counts).
var ErrRun = errors.New("workload: run failed")

// session is one conversation stream: its own owner, offloader, read tool
// and goroutine. Only its goroutine touches its fields while it runs.
type session struct {
	r       *runner
	agentID string
	items   chan Item
	mw      *agent.Middleware
	read    *agent.ReadTool
	tools   map[string]bool

	hist    *loop.History // the current conversation
	stash   *Item         // the next item, waiting for its tool to be offered
	cur     Item          // the item whose result is being decided
	t0      time.Time
	pending bool
	phase   int // 0 offloading, 1 ranged reads, 2 done
	turns   int

	expected map[artifact.Ref]*expect
	order    []artifact.Ref
	readAt   int
	reading  artifact.Ref

	st stats
}

// expect is what a stored body must read back as.
type expect struct {
	sum    [sha256.Size]byte
	size   int64
	off    int64
	sample []byte // bytes [off, off+len(sample)) of the body
}

// stats are one session's measurements, merged into the report.
type stats struct {
	decisions     []sample
	byOutcome     map[string][]sample
	outcomes      map[string]int
	rehydrations  map[string]int
	whole, ranged []time.Duration
	history       loop.Size // every conversation, reads included
	resultHistory loop.Size // up to the last result's decision
	results       int
	resultBytes   int64
	offloaded     int64
	checked, bad  int
	invariantErrs int
}

type runner struct {
	o       RunOptions
	store   *workspace.Store
	now     func() time.Time
	rep     *hybridctx.TreeReporter
	mu      sync.Mutex
	unique  map[artifact.Ref]int64
	readCap int64
}

type sessionKey struct{}

// Run replays src through the agent-loop seam against store and measures
// it: each session gets a binding (owner user, workflow, session), an
// agent.Middleware, and an loop.Loop whose scripted model calls one tool
// per result and whose tool returns that result, so every result is decided
// by the middleware as a host's tool would be; then the model reads a range
// of every body it stored through read_artifact, and the runner reads every
// stored body whole through the same read tool and compares it with the
// original bytes. Sessions run side by side, each keeping its results'
// order.
//
// The error is non-nil when the run could not complete: a bad item (wrapping
// ErrField), the source's error, a cancelled context, or a failure of the
// loop (wrapping ErrRun). Round-trip mismatches are counted in the report.
func Run(ctx context.Context, src Source, store *workspace.Store, opts *RunOptions) (*Report, error) {
	if store == nil || src == nil {
		return nil, fmt.Errorf("%w: nil source or store", ErrRun)
	}
	r := &runner{store: store, unique: map[artifact.Ref]int64{}, readCap: hybridctx.DefaultMaxArtifactBytes}
	if opts != nil {
		r.o = *opts
	}
	r.fillDefaults()
	if _, err := hybridctx.NewBinding(r.owner("x"), store); err != nil {
		return nil, fmt.Errorf("%w: owner: %w", ErrField, err)
	}
	sinks := append([]hybridctx.Sink{hybridctx.SinkFunc(r.observe)}, r.o.Sinks...)
	r.rep = hybridctx.NewReporter(hybridctx.ReporterOptions{RunID: r.o.RunID, AgentID: "bench", Sinks: sinks})
	src = readAhead(src, r.o.ReadAhead)
	start := r.now()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	fail := func(err error) {
		errOnce.Do(func() { firstErr = err; cancel() })
	}
	sessions := map[string]*session{}
	var all []*session
	err := r.dispatch(ctx, src, func(it Item) (*session, error) {
		if s := sessions[it.Session]; s != nil {
			return s, nil
		}
		s, err := r.newSession(it.Session, len(all)+1)
		if err != nil {
			return nil, err
		}
		sessions[it.Session] = s
		all = append(all, s)
		wg.Add(1)
		sctx := context.WithValue(hybridctx.WithReporter(ctx, r.rep.Child(s.agentID)), sessionKey{}, s)
		go func() {
			defer wg.Done()
			if err := s.run(sctx); err != nil {
				fail(err)
			}
		}()
		return s, nil
	})
	for _, s := range all {
		close(s.items)
	}
	if err != nil {
		fail(err)
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	return r.report(ctx, all, r.now().Sub(start))
}

func (r *runner) fillDefaults() {
	if r.o.Threshold == 0 {
		r.o.Threshold = DefaultThreshold
	}
	if r.o.User == "" {
		r.o.User = DefaultUser
	}
	if r.o.Workflow == "" {
		r.o.Workflow = DefaultWorkflow
	}
	if r.o.RangeBytes <= 0 {
		r.o.RangeBytes = DefaultRangeBytes
	}
	if r.o.ConversationLen <= 0 {
		r.o.ConversationLen = DefaultConversationLen
	}
	if r.o.ReadAhead == 0 {
		r.o.ReadAhead = DefaultReadAhead
	}
	r.now = r.o.Now
	if r.now == nil {
		r.now = time.Now
	}
}

func (r *runner) owner(session string) artifact.Owner {
	return artifact.Owner{User: r.o.User, Workflow: r.o.Workflow, Session: session}
}

// aheadSource yields the items read ahead of the run, then the source's
// error met while reading them, if any, then the rest of the source.
type aheadSource struct {
	src   Source
	items []Item
	err   error
}

// readAhead takes items from src until their contents reach limit bytes
// or src ends or fails. Items keep their order, and an error keeps its
// place after them, as if nothing had been read ahead.
func readAhead(src Source, limit int64) Source {
	a := &aheadSource{src: src}
	for n := int64(0); n < limit; {
		it, err := src.Next()
		if err != nil {
			a.err = err
			break
		}
		a.items = append(a.items, it)
		n += int64(len(it.Content))
	}
	return a
}

func (a *aheadSource) Next() (Item, error) {
	if len(a.items) > 0 {
		it := a.items[0]
		a.items[0] = Item{} // the session owns it now
		a.items = a.items[1:]
		return it, nil
	}
	if a.err != nil {
		return Item{}, a.err
	}
	return a.src.Next()
}

// dispatch reads src and hands each item to its session, in order.
func (r *runner) dispatch(ctx context.Context, src Source, sessionOf func(Item) (*session, error)) error {
	for n := 1; ; n++ {
		it, err := src.Next()
		switch {
		case err == io.EOF:
			return nil
		case err != nil:
			return err
		}
		if err := it.Validate(); err != nil {
			return fmt.Errorf("result %d: %w", n, err)
		}
		if it.Tool == hybridctx.DefaultReadToolName {
			return fmt.Errorf("result %d: %w: tool %s is the read tool's name", n, ErrField, it.Tool)
		}
		s, err := sessionOf(it)
		if err != nil {
			return err
		}
		select {
		case s.items <- it:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (r *runner) newSession(name string, n int) (*session, error) {
	bind, err := hybridctx.NewBinding(r.owner(name), r.store)
	if err != nil {
		return nil, fmt.Errorf("%w: session: %w", ErrField, err)
	}
	off, err := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: r.o.Threshold}, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRun, err)
	}
	reh, err := hybridctx.NewRehydrator(bind, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRun, err)
	}
	mw, err := agent.NewMiddleware(off)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRun, err)
	}
	read, err := agent.NewReadTool(reh, &agent.ReadToolOptions{BudgetCap: r.readCap})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRun, err)
	}
	return &session{
		r: r, agentID: "agent-" + strconv.Itoa(n), items: make(chan Item, 2), mw: mw, read: read,
		tools: map[string]bool{}, expected: map[artifact.Ref]*expect{},
		st: stats{outcomes: map[string]int{}, rehydrations: map[string]int{}, byOutcome: map[string][]sample{}},
	}, nil
}

// run plays the session: conversations until its results and ranged reads
// are done, then the whole-body round trip.
func (s *session) run(ctx context.Context) error {
	for s.phase < 2 {
		h, err := loop.NewHistory(s.r.o.Threshold)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrRun, err)
		}
		s.hist = h
		if s.stash != nil {
			s.tools[s.stash.Tool] = true
		}
		l, err := loop.NewLoop(loop.Config{Model: s, Middleware: s.mw, Tools: s.toolList(), MaxTurns: s.r.o.ConversationLen + 2})
		if err != nil {
			return fmt.Errorf("%w: %w", ErrRun, err)
		}
		s.turns = 0
		if _, err := l.Run(ctx, h); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("%w: %w", ErrRun, err)
		}
		if h.Verify() != nil {
			s.st.invariantErrs++
		}
		size := h.Size()
		s.st.history.Bytes += size.Bytes
		s.st.history.WithoutOffload += size.WithoutOffload
	}
	return s.roundTrip(ctx)
}

// toolList offers the tools seen so far, all answering with the current
// result, and the timed read tool.
func (s *session) toolList() []agent.Tool {
	out := []agent.Tool{{Spec: s.read.Spec(), Func: s.timedRead}}
	for name := range s.tools {
		out = append(out, agent.Tool{
			Spec: agent.ToolSpec{Name: name, Description: "a recorded tool result", Parameters: json.RawMessage(`{"type":"object"}`)},
			Func: s.result,
		})
	}
	return out
}

// result is every workload tool's body: it returns the current result and
// starts the decision's clock.
func (s *session) result(context.Context, json.RawMessage) (any, error) {
	s.pending = true
	s.t0 = s.r.now()
	return s.cur.Content, nil
}

// Next implements loop.Model: the scripted model. It ends a conversation
// (a reply without tool calls) when it is long enough, when the next
// result needs a tool the loop does not offer yet, and when the session is
// done.
func (s *session) Next(ctx context.Context, _ []loop.Message, _ []agent.ToolSpec) (loop.Reply, error) {
	if s.turns >= s.r.o.ConversationLen {
		return loop.Reply{}, nil
	}
	s.turns++
	if s.phase == 0 {
		if s.stash == nil {
			select {
			case it, ok := <-s.items:
				if ok {
					s.stash = &it
				} else {
					s.phase = 1
					size := s.hist.Size()
					s.st.resultHistory = loop.Size{Bytes: s.st.history.Bytes + size.Bytes,
						WithoutOffload: s.st.history.WithoutOffload + size.WithoutOffload}
				}
			case <-ctx.Done():
				return loop.Reply{}, ctx.Err()
			}
		}
		if s.phase == 0 {
			if !s.tools[s.stash.Tool] {
				return loop.Reply{}, nil
			}
			s.cur, s.stash = *s.stash, nil
			s.st.results++
			s.st.resultBytes += int64(len(s.cur.Content))
			return loop.Reply{ToolCalls: []loop.ToolCall{{ID: s.cur.CallID, Name: s.cur.Tool, Arguments: json.RawMessage(`{}`)}}}, nil
		}
	}
	if s.readAt < len(s.order) {
		ref := s.order[s.readAt]
		s.readAt++
		e := s.expected[ref]
		s.reading = ref
		n := int64(len(e.sample))
		return loop.Reply{ToolCalls: []loop.ToolCall{{Name: s.read.Name(), Arguments: agent.ReadArguments(ref.String(), e.off, n, n)}}}, nil
	}
	s.phase = 2
	return loop.Reply{Content: "done"}, nil
}

// timedRead is read_artifact as the loop offers it: the read tool's own
// body, timed, with the returned range checked against the original bytes.
func (s *session) timedRead(ctx context.Context, args json.RawMessage) (any, error) {
	t0 := s.r.now()
	v, err := s.read.Call(ctx, args)
	s.st.ranged = append(s.st.ranged, s.r.now().Sub(t0))
	e := s.expected[s.reading]
	s.st.checked++
	if seg, ok := v.(*hybridctx.Segment); !ok || err != nil || e == nil || !bytes.Equal(seg.Bytes(), e.sample) {
		s.st.bad++
	}
	return v, err
}

// observe is the first sink of every event: decision latency and outcome,
// and what each stored body must read back as.
func (r *runner) observe(ctx context.Context, e *hybridctx.Event) error {
	t1 := r.now()
	s, _ := ctx.Value(sessionKey{}).(*session)
	if s == nil {
		return nil
	}
	d := e.Diagnostics
	if d == nil {
		return nil // a history_compaction event: no decision
	}
	if e.Type == hybridctx.RehydrationDecision {
		s.st.rehydrations[d.Outcome().String()]++
		return nil
	}
	if !s.pending {
		return nil // the read tool's recovered segment, inlined
	}
	s.pending = false
	lat, oc := t1.Sub(s.t0), d.Outcome().String()
	smp := sample{d: lat, n: len(s.cur.Content)}
	s.st.decisions = append(s.st.decisions, smp)
	s.st.byOutcome[oc] = append(s.st.byOutcome[oc], smp)
	s.st.outcomes[oc]++
	if oc := d.Outcome(); oc != hybridctx.Offloaded && oc != hybridctx.ExistingReference {
		return nil
	}
	body := s.cur.Content
	s.st.offloaded += int64(len(body))
	ref := d.Reference()
	r.mu.Lock()
	r.unique[ref] = int64(len(body))
	r.mu.Unlock()
	if s.expected[ref] == nil {
		size := int64(len(body))
		off := size / 2
		n := min(r.o.RangeBytes, size-off)
		s.expected[ref] = &expect{sum: sha256.Sum256(body), size: size, off: off, sample: bytes.Clone(body[off : off+n])}
		s.order = append(s.order, ref)
	}
	return nil
}

// roundTrip reads every body the session stored whole through the read
// tool and compares it with the original bytes.
func (s *session) roundTrip(ctx context.Context) error {
	for _, ref := range s.order {
		e := s.expected[ref]
		t0 := s.r.now()
		rh, err := s.read.Read(ctx, agent.ReadArguments(ref.String(), 0, 0, e.size))
		s.st.whole = append(s.st.whole, s.r.now().Sub(t0))
		if err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
		s.st.checked++
		if err != nil || rh.Outcome() != hybridctx.Resolved || int64(len(rh.Segment.Bytes())) != e.size ||
			sha256.Sum256(rh.Segment.Bytes()) != e.sum || ref.Sum() != e.sum {
			s.st.bad++
		}
	}
	return nil
}
