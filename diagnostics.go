package hybridctx

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/hybridctx/hybridctx/artifact"
)

// Diagnostics is the privacy-safe snapshot of one decision. It holds only
// categorical values, byte counts and the canonical reference: never content,
// a path, an owner, a tool name, a call id or error text. It is immutable;
// only this package constructs it, and each outcome and its progress event
// share the same instance.
type Diagnostics struct {
	op         Operation
	outcome    Outcome
	content    Content
	reason     Reason
	observed   int64
	hasObs     bool
	configured int64
	ref        artifact.Ref
	attrIn     int64
	attrOut    int64
	hasOut     bool
	view       View
}

// Operation returns offload or rehydration.
func (d *Diagnostics) Operation() Operation { return d.op }

// Outcome returns the decision's outcome.
func (d *Diagnostics) Outcome() Outcome { return d.outcome }

// Content returns tool_result or recovered_context.
func (d *Diagnostics) Content() Content { return d.content }

// Reason returns the decision's reason.
func (d *Diagnostics) Reason() Reason { return d.reason }

// View returns what a rehydration turned the body into (range, lines,
// search, query); 0 for an offload.
func (d *Diagnostics) View() View { return d.view }

// ObservedBytes returns the bytes the decision looked at; ok is false where
// docs/diagnostics.md makes it null (unauthorized, missing, invalid_reference).
func (d *Diagnostics) ObservedBytes() (n int64, ok bool) { return d.observed, d.hasObs }

// ConfiguredBytes returns the inline threshold (offload) or the byte budget
// (rehydration) the decision was made against.
func (d *Diagnostics) ConfiguredBytes() int64 { return d.configured }

// Reference returns the canonical reference, or the zero Ref where there is
// none.
func (d *Diagnostics) Reference() artifact.Ref { return d.ref }

// Attribution returns the bytes that entered the decision and the bytes it
// put into the conversation (ok false where that is null).
func (d *Diagnostics) Attribution() (in, out int64, ok bool) { return d.attrIn, d.attrOut, d.hasOut }

var (
	errOutOfRange     = errors.New("diagnostics: value out of range")
	errInvalidPair    = errors.New("diagnostics: outcome and reason do not belong together")
	errInvalidRefText = errors.New("diagnostics: invalid reference")
)

// parseDiagRef validates a reference text for a constructor: "" means none.
func parseDiagRef(s string, required bool) (artifact.Ref, error) {
	if s == "" {
		if required {
			return artifact.Ref{}, fmt.Errorf("%w: required", errInvalidRefText)
		}
		return artifact.Ref{}, nil
	}
	if !required {
		return artifact.Ref{}, fmt.Errorf("%w: not allowed on this outcome", errInvalidRefText)
	}
	r, err := artifact.ParseRef(s)
	if err != nil {
		return artifact.Ref{}, fmt.Errorf("%w: %w", errInvalidRefText, err)
	}
	return r, nil
}

// newOffloadDiagnostics validates and builds the snapshot of one offload
// decision. ref is the canonical text, or "" for none.
func newOffloadDiagnostics(outcome Outcome, reason Reason, observed, threshold int64, ref string) (*Diagnostics, error) {
	r, rerr := parseDiagRef(ref, ref != "")
	d := new(Diagnostics)
	if err := initOffloadDiagnostics(d, outcome, reason, observed, threshold, r); err != nil {
		return d, err
	}
	return d, rerr
}

// initOffloadDiagnostics builds the snapshot of one offload decision in
// place, so an outcome can embed its snapshot without a second allocation.
// ref is the decision's reference, or the zero Ref for none; the offloader
// holds it as a value, so it is checked for presence, not parsed again.
func initOffloadDiagnostics(d *Diagnostics, outcome Outcome, reason Reason, observed, threshold int64, ref artifact.Ref) error {
	if outcome.Operation() != OpOffload {
		return fmt.Errorf("%w: %v is not an offload outcome", errOutOfRange, outcome)
	}
	if !ValidPair(outcome, reason) {
		return fmt.Errorf("%w: %v/%v", errInvalidPair, outcome, reason)
	}
	if observed < 0 || threshold <= 0 {
		return fmt.Errorf("%w: observed %d, threshold %d", errOutOfRange, observed, threshold)
	}
	switch required := outcome == Offloaded || outcome == ExistingReference; {
	case required && ref.IsZero():
		return fmt.Errorf("%w: required", errInvalidRefText)
	case !required && !ref.IsZero():
		return fmt.Errorf("%w: not allowed on this outcome", errInvalidRefText)
	}
	*d = Diagnostics{op: OpOffload, outcome: outcome, content: ToolResult, reason: reason,
		observed: observed, hasObs: true, configured: threshold, ref: ref, attrIn: observed}
	switch outcome {
	case Inline:
		d.attrOut, d.hasOut = observed, true
		if reason == RecoveredSegmentBypass {
			d.content = RecoveredContext
		}
	case Offloaded, ExistingReference:
		d.attrOut, d.hasOut = artifact.RefLen, true
	}
	return nil
}

// newRehydrationDiagnostics validates and builds the snapshot of one
// rehydration decision. observed < 0 means null; it must be null exactly for
// unauthorized, missing and invalid_reference. ref is the canonical text
// ("" only for invalid_reference); givenLen is the byte length of the text
// the caller gave (the attribution input of invalid_reference).
func newRehydrationDiagnostics(view View, outcome Outcome, reason Reason, observed, budget int64, ref string, givenLen int) (*Diagnostics, error) {
	d := new(Diagnostics)
	return d, initRehydrationDiagnostics(d, view, outcome, reason, observed, budget, ref, givenLen)
}

func initRehydrationDiagnostics(d *Diagnostics, view View, outcome Outcome, reason Reason, observed, budget int64, ref string, givenLen int) error {
	if outcome.Operation() != OpRehydration {
		return fmt.Errorf("%w: %v is not a rehydration outcome", errOutOfRange, outcome)
	}
	if !view.valid() {
		return fmt.Errorf("%w: %v", errOutOfRange, view)
	}
	if !ValidPair(outcome, reason) {
		return fmt.Errorf("%w: %v/%v", errInvalidPair, outcome, reason)
	}
	nullObs := outcome == Unauthorized || outcome == Missing || outcome == InvalidReference
	if budget <= 0 || (nullObs != (observed < 0)) || givenLen < 0 {
		return fmt.Errorf("%w: observed %d, budget %d", errOutOfRange, observed, budget)
	}
	r, err := parseDiagRef(ref, outcome != InvalidReference)
	if err != nil {
		return err
	}
	*d = Diagnostics{op: OpRehydration, outcome: outcome, content: RecoveredContext, reason: reason,
		configured: budget, ref: r, attrIn: artifact.RefLen, view: view}
	if !nullObs {
		d.observed, d.hasObs = observed, true
	}
	if outcome == InvalidReference {
		d.attrIn = int64(givenLen)
	}
	if outcome == Resolved {
		d.attrOut, d.hasOut = observed, true
	}
	return nil
}

// diagJSON is the wire shape of docs/cli.md, "JSON shapes".
type diagJSON struct {
	Operation       Operation       `json:"operation"`
	Outcome         Outcome         `json:"outcome"`
	Content         Content         `json:"content"`
	Reason          Reason          `json:"reason"`
	ObservedBytes   *int64          `json:"observed_bytes"`
	ConfiguredBytes int64           `json:"configured_bytes"`
	Reference       *string         `json:"reference"`
	Attribution     attributionJSON `json:"attribution"`
	View            View            `json:"view,omitempty"`
}

type attributionJSON struct {
	InputBytes  int64  `json:"input_bytes"`
	OutputBytes *int64 `json:"output_bytes"`
}

func (d *Diagnostics) wire() diagJSON {
	w := diagJSON{Operation: d.op, Outcome: d.outcome, Content: d.content, Reason: d.reason,
		ConfiguredBytes: d.configured, Attribution: attributionJSON{InputBytes: d.attrIn}, View: d.view}
	if d.hasObs {
		n := d.observed
		w.ObservedBytes = &n
	}
	if !d.ref.IsZero() {
		s := d.ref.String()
		w.Reference = &s
	}
	if d.hasOut {
		n := d.attrOut
		w.Attribution.OutputBytes = &n
	}
	return w
}

// MarshalJSON renders the snake_case shape of docs/diagnostics.md.
func (d *Diagnostics) MarshalJSON() ([]byte, error) { return json.Marshal(d.wire()) }

// String renders one line: operation outcome/reason and the byte counts.
func (d *Diagnostics) String() string {
	if d == nil {
		return "<nil>"
	}
	var b strings.Builder
	b.WriteString(d.op.String())
	b.WriteByte(' ')
	b.WriteString(d.outcome.String())
	b.WriteByte('/')
	b.WriteString(d.reason.String())
	b.WriteString(" content=")
	b.WriteString(d.content.String())
	b.WriteString(" observed=")
	b.WriteString(optInt(d.observed, d.hasObs))
	b.WriteString(" configured=")
	b.WriteString(strconv.FormatInt(d.configured, 10))
	b.WriteString(" ref=")
	if d.ref.IsZero() {
		b.WriteString("null")
	} else {
		b.WriteString(d.ref.String())
	}
	b.WriteString(" in=")
	b.WriteString(strconv.FormatInt(d.attrIn, 10))
	b.WriteString(" out=")
	b.WriteString(optInt(d.attrOut, d.hasOut))
	if d.view != 0 {
		b.WriteString(" view=")
		b.WriteString(d.view.String())
	}
	return b.String()
}

// GoString makes %#v print the same safe line.
func (d *Diagnostics) GoString() string { return "hybridctx.Diagnostics{" + d.String() + "}" }

// Format makes every verb (%v, %+v, %#v, %s) print only the safe line.
func (d *Diagnostics) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		_, _ = f.Write([]byte(d.GoString()))
		return
	}
	_, _ = f.Write([]byte(d.String()))
}

// LogValue implements slog.LogValuer with the same fields as the JSON shape.
func (d *Diagnostics) LogValue() slog.Value {
	attrs := []slog.Attr{
		slog.String("operation", d.op.String()),
		slog.String("outcome", d.outcome.String()),
		slog.String("content", d.content.String()),
		slog.String("reason", d.reason.String()),
		slog.Int64("configured_bytes", d.configured),
		slog.Int64("input_bytes", d.attrIn),
	}
	if d.hasObs {
		attrs = append(attrs, slog.Int64("observed_bytes", d.observed))
	}
	if d.hasOut {
		attrs = append(attrs, slog.Int64("output_bytes", d.attrOut))
	}
	if !d.ref.IsZero() {
		attrs = append(attrs, slog.String("reference", d.ref.String()))
	}
	if d.view != 0 {
		attrs = append(attrs, slog.String("view", d.view.String()))
	}
	return slog.GroupValue(attrs...)
}

func optInt(n int64, ok bool) string {
	if !ok {
		return "null"
	}
	return strconv.FormatInt(n, 10)
}
