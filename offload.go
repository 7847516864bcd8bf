package hybridctx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
	"unsafe"

	"github.com/hybridctx/hybridctx/artifact"
)

// Call identifies the tool call a result came from. Both values go into the
// record only, never into diagnostics, events or notices. Each is at most
// artifact.MaxCallFieldLen bytes (see Validate).
type Call struct {
	Tool string
	ID   string
}

// ErrInvalidCall is wrapped by the error Call.Validate returns, and so by
// Offload and OffloadReader for a call that could never be recorded.
var ErrInvalidCall = errors.New("invalid tool call")

// Validate reports whether c can be recorded: its tool name and call id are
// each at most artifact.MaxCallFieldLen bytes. The error wraps
// ErrInvalidCall and names the field, never its value. Offload and
// OffloadReader check it before reading or writing anything, so a call that
// could not be recorded never leaves a body behind.
func (c Call) Validate() error {
	if len(c.Tool) > artifact.MaxCallFieldLen {
		return fmt.Errorf("%w: tool name longer than %d bytes", ErrInvalidCall, artifact.MaxCallFieldLen)
	}
	if len(c.ID) > artifact.MaxCallFieldLen {
		return fmt.Errorf("%w: call id longer than %d bytes", ErrInvalidCall, artifact.MaxCallFieldLen)
	}
	return nil
}

// OffloaderOptions tune an Offloader. The zero value means defaults.
type OffloaderOptions struct {
	// Clock returns the current time (records and event times). Default
	// time.Now.
	Clock func() time.Time
	// Describe returns a record's description from the tool name and call
	// id; it never sees content. Default "tool <name>, call <id>". The
	// result is cut to 500 bytes on a rune boundary.
	Describe func(tool, callID string) string
}

// Offloader makes offload decisions for one binding under one policy. It is
// safe for concurrent use.
type Offloader struct {
	binding  *Binding
	policy   Policy
	clock    func() time.Time
	describe func(tool, callID string) string
}

// NewOffloader returns an Offloader. binding may be nil, or have no store:
// results over the threshold then fail with no_authorized_workspace.
func NewOffloader(binding *Binding, policy Policy, opts *OffloaderOptions) (*Offloader, error) {
	if err := policy.Validate(); err != nil {
		return nil, err
	}
	o := &Offloader{binding: binding, policy: policy, clock: time.Now, describe: defaultDescription}
	if opts != nil {
		if opts.Clock != nil {
			o.clock = opts.Clock
		}
		if opts.Describe != nil {
			o.describe = opts.Describe
		}
	}
	return o, nil
}

func defaultDescription(tool, callID string) string { return "tool " + tool + ", call " + callID }

// Policy returns the offloader's policy.
func (o *Offloader) Policy() Policy { return o.policy }

// OffloadResult is the outcome of one offload decision. What the model
// sees is Text; the rest says why: Notice is the text that replaced the
// result, Content the result's bytes when the decision kept them, Segment
// the recovered segment a bypass inlined. The value passed to Offload is
// the caller's own and is not kept.
type OffloadResult struct {
	// Ref is set for offloaded and existing_reference.
	Ref artifact.Ref
	// Notice is the text that replaces the result for the model: the
	// bounded reference notice (offloaded, existing_reference) or the
	// categorical failure notice (failed, recovery_required). Empty for
	// inline, the one outcome whose Text is the result itself.
	Notice string
	// Consumed is how many bytes OffloadReader read from its reader.
	Consumed int64

	diag    Diagnostics
	content []byte
	str     string
	isStr   bool
	seg     *Segment
}

// Outcome returns the decision's outcome.
func (o *OffloadResult) Outcome() Outcome { return o.diag.outcome }

// Reason returns the decision's reason.
func (o *OffloadResult) Reason() Reason { return o.diag.reason }

// Diagnostics returns the decision's snapshot: the instance its event carries.
func (o *OffloadResult) Diagnostics() *Diagnostics { return &o.diag }

// Content returns the result's bytes, serialized as the model would see
// them, when the outcome kept them: inline (the bytes Text shows), and
// failed and recovery_required for byte input (the bytes the notice stands
// for, so nothing is lost); else nil. For string input it returns a copy.
func (o *OffloadResult) Content() []byte {
	if o.isStr {
		return []byte(o.str)
	}
	return o.content
}

// Text returns what the model must see: the content itself when inline, the
// notice otherwise.
func (o *OffloadResult) Text() string {
	if o.diag.outcome != Inline {
		return o.Notice
	}
	if o.isStr {
		return o.str
	}
	return string(o.content)
}

// Segment returns the recovered segment a recovered_segment_bypass decision
// inlined (its Content is the segment's bytes), or nil for every other
// decision.
func (o *OffloadResult) Segment() *Segment { return o.seg }

// Offload decides one tool result (docs/offload.md). result is serialized as the model
// would see it: string, []byte and json.RawMessage as they are, a *Segment
// (recovered by a Rehydrator) bypassed inline, an io.Reader streamed through
// OffloadReader, anything else encoded with encoding/json.
//
// The error is non-nil only when no decision was made: a cancelled context
// (checked first), a value that cannot be serialized, or a failure that
// happened before anything was written. Every decision returns an *OffloadResult
// and reports exactly one event.
func (o *Offloader) Offload(ctx context.Context, call Call, result any) (*OffloadResult, error) {
	if err := start(ctx, call); err != nil {
		return nil, err
	}
	o = o.forTool(call.Tool)
	seg, result := recovered(result)
	if seg != nil {
		return o.bypass(ctx, seg)
	}
	if r, ok := result.(io.Reader); ok {
		return o.offloadStream(ctx, call, r) // checked and under the tool's threshold already
	}
	b, str, isStr, err := serialize(result)
	if err != nil {
		return nil, err
	}
	n := int64(len(b))
	if isStr {
		n = int64(len(str))
	}
	if n <= o.policy.InlineThreshold && (o.policy.ThresholdTokens == 0 || !o.policy.overTokens(b, str, isStr)) {
		out := &OffloadResult{content: b, str: str, isStr: isStr}
		return o.finish(ctx, out, Inline, BelowThreshold, n)
	}
	if isStr {
		// A read-only view of the string's bytes, not a copy: they are
		// hashed, classified and copied into the workspace, never written
		// to, and never handed out (kept gives the host the string back).
		// A copy cost 20-58% more CPU per decision from 4 KiB to 1 MiB and
		// doubled the memory a decision takes, for a result of any size
		// (BENCHMARKS.md, "Speed code and its figures").
		b = unsafe.Slice(unsafe.StringData(str), len(str))
	}
	return o.offloadBytes(ctx, call, result, b)
}

// Store decides result like Offload, except that it stores it whatever its
// size: the whole-result bound (Policy.ResultBound, docs/mcp-proxy.md) uses it for
// parts of a result that are each under the threshold but too large
// together. A recovered segment is still inlined (recovered_segment_bypass).
func (o *Offloader) Store(ctx context.Context, call Call, result any) (*OffloadResult, error) {
	if err := start(ctx, call); err != nil {
		return nil, err
	}
	seg, result := recovered(result)
	if seg != nil {
		return o.bypass(ctx, seg)
	}
	if r, ok := result.(io.Reader); ok {
		b, err := io.ReadAll(io.LimitReader(r, o.policy.maxBytes()+1))
		if err != nil {
			return nil, err
		}
		result = b
	}
	b, str, isStr, err := serialize(result)
	if err != nil {
		return nil, err
	}
	if isStr {
		b = []byte(str)
	}
	return o.offloadBytes(ctx, call, result, b)
}

// recovered returns result's recovered segment, which is inlined whatever
// its size (bypass), or nil; and result, with a nil *Segment made an
// untyped nil (serialized as null).
func recovered(result any) (*Segment, any) {
	switch s, ok := result.(*Segment); {
	case !ok:
		return nil, result
	case s == nil:
		return nil, nil
	case s.valid:
		return s, result
	}
	return nil, result
}

// start is what every decision checks before anything else: a cancelled
// context (docs/offload.md, step 1), and a call that could never be recorded. An
// error means no decision, no event and no workspace access.
func start(ctx context.Context, call Call) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return call.Validate()
}

// bypass inlines a recovered segment whatever its size: no threshold check,
// no write (docs/offload.md, step 2).
func (o *Offloader) bypass(ctx context.Context, s *Segment) (*OffloadResult, error) {
	out := &OffloadResult{content: s.body, seg: s}
	return o.finish(ctx, out, Inline, RecoveredSegmentBypass, int64(len(s.body)))
}

// finish validates the snapshot, fills the notice and reports the event.
func (o *Offloader) finish(ctx context.Context, out *OffloadResult, oc Outcome, r Reason, observed int64) (*OffloadResult, error) {
	if err := initOffloadDiagnostics(&out.diag, oc, r, observed, o.policy.InlineThreshold, out.Ref); err != nil {
		return nil, err
	}
	if oc == Failed || oc == RecoveryRequired {
		out.Notice = failureNotice(oc, r, observed)
	}
	report(ctx, o.clock, &out.diag)
	return out, nil
}

// failed builds a failed or recovery_required outcome that keeps the
// original content.
func (o *Offloader) failed(ctx context.Context, orig any, b []byte, oc Outcome, r Reason, observed int64) (*OffloadResult, error) {
	return o.finish(ctx, kept(orig, b), oc, r, observed)
}

// kept is an outcome that keeps the original content b for the host. For
// string input b is a view of the string's own bytes, which must never be
// handed out as a []byte: the outcome keeps the string instead.
func kept(orig any, b []byte) *OffloadResult {
	if s, ok := orig.(string); ok {
		return &OffloadResult{str: s, isStr: true}
	}
	return &OffloadResult{content: b}
}

// offloadBytes runs step 5 of docs/offload.md for byte input.
func (o *Offloader) offloadBytes(ctx context.Context, call Call, orig any, b []byte) (*OffloadResult, error) {
	n := int64(len(b))
	if r := o.unstorable(n); r != 0 {
		return o.failed(ctx, orig, b, Failed, r, n)
	}
	// Hash (and classify, in parallel) first and write only if the
	// workspace lacks the body: a result seen again costs no write at all
	// (docs/offload.md: existing_reference writes nothing). The write reuses the digest.
	st := storing{o: o, call: call, size: n, bytes: b, orig: orig}
	if err := st.digestForNotice(ctx); err != nil {
		return st.abort(err)
	}
	return st.decide(ctx)
}

// unstorable returns why a body of n bytes cannot be stored at all
// (no_authorized_workspace, exceeds_max_artifact_size), or 0 when it may be.
func (o *Offloader) unstorable(n int64) Reason {
	switch {
	case o.binding == nil || o.binding.store == nil:
		return NoAuthorizedWorkspace
	case n > o.policy.maxBytes():
		return ExceedsMaxArtifactSize
	}
	return 0
}

// ErrSource wraps an error returned by the reader given to OffloadReader.
var ErrSource = errors.New("reading the tool result failed")

func sourceError(err error) error { return fmt.Errorf("%w: %w", ErrSource, err) }
