package sink

import (
	"context"
	"log/slog"

	"github.com/hybridctx/hybridctx"
)

// SlogOptions tune a Slog sink. The zero value means defaults.
type SlogOptions struct {
	// Level is the level of every record; default slog.LevelInfo.
	Level slog.Level
	// Message is every record's message; default "hybridctx decision".
	Message string
}

// Slog logs each event as one record with one group attribute, "event": the
// event's LogValue (type, sequence, time, run and agent ids, depth, parent
// and the diagnostics' categorical fields and byte counts), grouped so its
// time never collides with the record's own. No content, path, owner,
// tool name or call id can reach it, because events hold none.
type Slog struct {
	logger *slog.Logger
	level  slog.Level
	msg    string
}

// NewSlog returns a sink logging to logger (slog.Default() when nil).
func NewSlog(logger *slog.Logger, opts *SlogOptions) *Slog {
	s := &Slog{logger: logger, level: slog.LevelInfo, msg: "hybridctx decision"}
	if s.logger == nil {
		s.logger = slog.Default()
	}
	if opts != nil {
		s.level = opts.Level
		if opts.Message != "" {
			s.msg = opts.Message
		}
	}
	return s
}

// Emit implements hybridctx.Sink.
func (s *Slog) Emit(ctx context.Context, e *hybridctx.Event) error {
	if !s.logger.Enabled(ctx, s.level) {
		return nil
	}
	s.logger.LogAttrs(ctx, s.level, s.msg, slog.Any("event", e))
	return nil
}
