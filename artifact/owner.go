package artifact

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// ErrInvalidOwner is wrapped by errors about incomplete or malformed owners.
var ErrInvalidOwner = errors.New("invalid owner")

// MaxOwnerFieldLen bounds each owner field, in bytes.
const MaxOwnerFieldLen = 256

// Owner is the trusted identity an artifact record is bound to. It is set by
// the host, never by a model or a tool argument. Every field must be
// non-blank valid UTF-8 of at most MaxOwnerFieldLen bytes, without control
// characters (newlines, tabs, escapes) and without leading or trailing space,
// so that one identity has one spelling.
type Owner struct {
	User     string
	Workflow string
	Session  string
}

// Missing names the blank fields of o ("user", "workflow", "session"), in
// that order.
func (o Owner) Missing() []string {
	var m []string
	if strings.TrimSpace(o.User) == "" {
		m = append(m, "user")
	}
	if strings.TrimSpace(o.Workflow) == "" {
		m = append(m, "workflow")
	}
	if strings.TrimSpace(o.Session) == "" {
		m = append(m, "session")
	}
	return m
}

// Validate reports whether o is complete and well formed. The error wraps
// ErrInvalidOwner and names fields, never their values.
func (o Owner) Validate() error {
	if plainField(o.User) && plainField(o.Workflow) && plainField(o.Session) {
		return nil
	}
	if m := o.Missing(); len(m) > 0 {
		return fmt.Errorf("%w: missing %s", ErrInvalidOwner, strings.Join(m, ", "))
	}
	for _, f := range [...]struct{ name, v string }{{"user", o.User}, {"workflow", o.Workflow}, {"session", o.Session}} {
		if len(f.v) > MaxOwnerFieldLen {
			return fmt.Errorf("%w: %s longer than %d bytes", ErrInvalidOwner, f.name, MaxOwnerFieldLen)
		}
		if !utf8.ValidString(f.v) || strings.ContainsRune(f.v, 0) {
			return fmt.Errorf("%w: %s is not valid text", ErrInvalidOwner, f.name)
		}
		if strings.IndexFunc(f.v, unicode.IsControl) >= 0 {
			return fmt.Errorf("%w: %s contains a control character", ErrInvalidOwner, f.name)
		}
		if strings.TrimSpace(f.v) != f.v {
			return fmt.Errorf("%w: %s has leading or trailing space", ErrInvalidOwner, f.name)
		}
	}
	return nil
}

// plainField reports, without allocating, that f is a valid owner field
// of the common kind: 1 to MaxOwnerFieldLen printable ASCII bytes (space
// included, but not first or last). Validate checks every other field in
// full; this only spares the owner checks of each workspace call their
// cost.
func plainField(f string) bool {
	if len(f) == 0 || len(f) > MaxOwnerFieldLen || f[0] == ' ' || f[len(f)-1] == ' ' {
		return false
	}
	for i := 0; i < len(f); i++ {
		if c := f[i]; c < ' ' || c > '~' {
			return false
		}
	}
	return true
}

// LogValue implements slog.LogValuer: an owner never reaches a log.
func (o Owner) LogValue() slog.Value { return slog.StringValue("[owner]") }

// String hides the identity so that a stray %v cannot leak it.
func (o Owner) String() string { return "[owner]" }

// GoString hides the identity from %#v too.
func (o Owner) GoString() string { return "artifact.Owner{[redacted]}" }

// MaxCallFieldLen bounds a record's tool name and call id, each in bytes. It
// is the one limit every surface applies to them (the library's call
// validation, the CLI's flags, the agent and the MCP proxy), and the longest
// that every workspace backend stores.
const MaxCallFieldLen = 4096

// MaxDescriptionLen bounds a record's description, in bytes.
const MaxDescriptionLen = 500

// Record binds one owner to one stored body. It is metadata only: it never
// holds content.
type Record struct {
	Owner Owner
	Ref   Ref
	// Size is the body's length in bytes.
	Size int64
	// Kind is a content hint: "text", "json" or "binary".
	Kind string
	// Tool and CallID name the tool call that created the record.
	Tool   string
	CallID string
	// Description is bounded metadata, never content.
	Description string
	// CreatedAt and LastUsedAt are UTC times.
	CreatedAt  time.Time
	LastUsedAt time.Time
}

// TruncateUTF8 cuts s to at most n bytes on a rune boundary.
func TruncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
