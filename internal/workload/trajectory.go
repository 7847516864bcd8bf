package workload

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/hybridctx/hybridctx"
)

// Trajectory is one recorded agent run in the replay format of
// docs/history.md ("Real runs"): the prompt, then each tool output with the
// sizes of what the conversation held around it. Only tool outputs are
// kept verbatim; every other message is a size in bytes.
type Trajectory struct {
	// Set and ID name the trajectory; the bench reports neither.
	Set, ID string
	// PromptBytes is what the first model call sends: system prompt, task,
	// demonstrations.
	PromptBytes int64
	// Turns are the tool outputs in order.
	Turns []TrajectoryTurn
	// FinalPreBytes, FinalCalls and FinalAssistantBytes describe the span
	// after the last output: other text, then that many model calls, the
	// last answer's size.
	FinalPreBytes       int64
	FinalCalls          int
	FinalAssistantBytes int64
}

// TrajectoryTurn is one tool output of a Trajectory.
type TrajectoryTurn struct {
	// Tool and CallID are the call's tool name and id.
	Tool, CallID string
	// Output is the tool's output as the model saw it.
	Output string
	// PreBytes is the other text (user turns, feedback, the model's text
	// answers) that came before the model call issuing this call.
	PreBytes int64
	// AssistantBytes is that call's assistant message: text and arguments.
	AssistantBytes int64
	// Calls counts the model calls of the span; 0 means a parallel call of
	// the previous assistant message.
	Calls int
}

// MaxTrajectoryLineBytes bounds one trajectory's line unless
// TrajectoryReaderOptions sets another.
const MaxTrajectoryLineBytes = 256 << 20

// TrajectoryReaderOptions tune a TrajectoryReader; nil means defaults.
type TrajectoryReaderOptions struct {
	// MaxLineBytes bounds one line (one trajectory); 0 means
	// MaxTrajectoryLineBytes.
	MaxLineBytes int
}

// TrajectoryReader reads trajectories in their JSON Lines form, gzipped or
// plain (told apart by gzip's magic bytes). It holds one trajectory in
// memory at a time.
type TrajectoryReader struct {
	lines
	zr  *gzip.Reader
	err error
}

// NewTrajectoryReader returns a reader over r. A stream that starts with
// gzip's magic bytes is decompressed; an error reading its header wraps
// ErrSyntax.
func NewTrajectoryReader(r io.Reader, opts *TrajectoryReaderOptions) (*TrajectoryReader, error) {
	max := MaxTrajectoryLineBytes
	if opts != nil && opts.MaxLineBytes > 0 {
		max = opts.MaxLineBytes
	}
	br := bufio.NewReaderSize(r, 64<<10)
	t := &TrajectoryReader{}
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%w: not a readable gzip stream", ErrSyntax)
		}
		zr.Multistream(true)
		t.zr = zr
		t.lines = newLines(zr, max)
	} else {
		t.lines = newLines(br, max)
	}
	return t, nil
}

// wireTrajectory is the JSON shape of one line. Other keys (source, meta,
// agent, model, task) are ignored.
type wireTrajectory struct {
	Set                 string      `json:"set"`
	ID                  string      `json:"id"`
	PromptBytes         *int64      `json:"prompt_bytes"`
	Turns               *[]wireTurn `json:"turns"`
	FinalPreBytes       int64       `json:"final_pre_bytes"`
	FinalCalls          int         `json:"final_calls"`
	FinalAssistantBytes int64       `json:"final_assistant_bytes"`
}

type wireTurn struct {
	Tool           *string `json:"tool"`
	CallID         string  `json:"call_id"`
	Output         *string `json:"output"`
	PreBytes       int64   `json:"pre_bytes"`
	AssistantBytes int64   `json:"assistant_bytes"`
	Calls          *int    `json:"calls"`
}

// Next returns the next trajectory, io.EOF at the end, or an error: a
// *LineError for a bad line (after which Next keeps returning it), or the
// underlying reader's error (a damaged gzip stream wraps ErrSyntax).
func (t *TrajectoryReader) Next() (*Trajectory, error) {
	for t.err == nil {
		line, err := t.readLine()
		if err != nil {
			if t.zr != nil && err != io.EOF {
				var le *LineError
				if !errors.As(err, &le) {
					err = &LineError{Line: t.line, Err: fmt.Errorf("%w: damaged gzip stream", ErrSyntax)}
				}
			}
			t.err = err
			break
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		tr, err := parseTrajectory(line)
		if err != nil {
			t.err = &LineError{Line: t.line, Err: err}
			break
		}
		return tr, nil
	}
	return nil, t.err
}

// parseTrajectory decodes and checks one line.
func parseTrajectory(line []byte) (*Trajectory, error) {
	if !utf8.Valid(line) {
		return nil, fmt.Errorf("%w: not valid UTF-8", ErrSyntax)
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	var w wireTrajectory
	if err := dec.Decode(&w); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrSyntax, trajectoryProblem(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: more than one value on the line", ErrSyntax)
	}
	switch {
	case w.PromptBytes == nil || w.Turns == nil:
		return nil, fmt.Errorf("%w: prompt_bytes and turns are required", ErrField)
	case *w.PromptBytes < 0 || w.FinalPreBytes < 0 || w.FinalAssistantBytes < 0 || w.FinalCalls < 0:
		return nil, fmt.Errorf("%w: sizes and call counts must be >= 0", ErrField)
	}
	tr := &Trajectory{Set: w.Set, ID: w.ID, PromptBytes: *w.PromptBytes, Turns: make([]TrajectoryTurn, len(*w.Turns)),
		FinalPreBytes: w.FinalPreBytes, FinalCalls: w.FinalCalls, FinalAssistantBytes: w.FinalAssistantBytes}
	for i, wt := range *w.Turns {
		switch {
		case wt.Tool == nil || wt.Output == nil || wt.Calls == nil:
			return nil, fmt.Errorf("%w: turn %d: tool, output and calls are required", ErrField, i)
		case wt.PreBytes < 0 || wt.AssistantBytes < 0 || *wt.Calls < 0:
			return nil, fmt.Errorf("%w: turn %d: sizes and call counts must be >= 0", ErrField, i)
		}
		// A recorded tool name may be anything a call may carry ("./rock").
		if *wt.Tool == "" || (hybridctx.Call{Tool: *wt.Tool, ID: wt.CallID}).Validate() != nil {
			return nil, fmt.Errorf("%w: turn %d: tool must be 1 to %d bytes and call_id at most %d", ErrField, i, MaxToolNameLen, MaxCallIDLen)
		}
		tr.Turns[i] = TrajectoryTurn{Tool: *wt.Tool, CallID: wt.CallID, Output: *wt.Output,
			PreBytes: wt.PreBytes, AssistantBytes: wt.AssistantBytes, Calls: *wt.Calls}
	}
	return tr, nil
}

// trajectoryProblem describes a decoding error without quoting input.
func trajectoryProblem(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("field %q has the wrong type", te.Field)
	}
	return jsonProblem(err)
}
