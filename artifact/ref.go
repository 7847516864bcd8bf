// Package artifact holds the value types every other hybridctx package shares:
// the content reference (artifact://sha256/<hex>), the owner a record is bound
// to, and the record itself. It does no I/O.
package artifact

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
)

// Prefix is the fixed text that starts every canonical reference.
const Prefix = "artifact://sha256/"

// RefLen is the length in bytes of every canonical reference text.
const RefLen = 18 + 2*sha256.Size

// The length of Prefix is fixed at 18; this fails to compile otherwise.
var _ = [1]struct{}{}[len(Prefix)-18]

// Ref identifies one immutable body by the SHA-256 digest of its exact bytes.
// Its canonical text form is artifact://sha256/ followed by 64 lowercase hex
// digits. The zero Ref is not a valid reference; see IsZero.
type Ref struct {
	sum   [sha256.Size]byte
	valid bool
}

// RefOf returns the reference of the given bytes.
func RefOf(b []byte) Ref {
	return Ref{sum: sha256.Sum256(b), valid: true}
}

// RefFromSum returns the reference whose digest is sum.
func RefFromSum(sum [sha256.Size]byte) Ref {
	return Ref{sum: sum, valid: true}
}

// ErrMalformedRef is wrapped by every *ParseError.
var ErrMalformedRef = errors.New("malformed artifact reference")

// ParseError reports why a text is not a canonical reference. It never
// repeats the rejected text, which may be arbitrary model output.
type ParseError struct {
	// Len is the byte length of the rejected text.
	Len int
	// Reason is a fixed phrase naming the first rule the text broke.
	Reason string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("%v: %s (%d bytes)", ErrMalformedRef, e.Reason, e.Len)
}

// Unwrap returns ErrMalformedRef.
func (e *ParseError) Unwrap() error { return ErrMalformedRef }

// ParseRef parses the canonical text form. Nothing else is accepted: no
// surrounding space, no uppercase hex, no other algorithm, no query,
// fragment or path. The error is a *ParseError.
func ParseRef(s string) (Ref, error) {
	if len(s) != RefLen {
		if len(s) >= len(Prefix) && s[:len(Prefix)] == Prefix {
			return Ref{}, &ParseError{Len: len(s), Reason: "digest is not 64 hex digits"}
		}
		return Ref{}, &ParseError{Len: len(s), Reason: "not an artifact://sha256/ reference"}
	}
	if s[:len(Prefix)] != Prefix {
		return Ref{}, &ParseError{Len: len(s), Reason: "not an artifact://sha256/ reference"}
	}
	return parseHex(s[len(Prefix):], len(s))
}

// ParseDigest parses 64 lowercase hex digits (a reference without its prefix).
func ParseDigest(h string) (Ref, error) {
	if len(h) != 2*sha256.Size {
		return Ref{}, &ParseError{Len: len(h), Reason: "digest is not 64 hex digits"}
	}
	return parseHex(h, len(h))
}

func parseHex(h string, n int) (Ref, error) {
	var r Ref
	var bad byte
	for i := 0; i < len(r.sum); i++ {
		hi, lo := hexValue[h[2*i]], hexValue[h[2*i+1]]
		bad |= hi | lo
		r.sum[i] = hi<<4 | lo
	}
	if bad&notHex != 0 {
		return Ref{}, &ParseError{Len: n, Reason: "digest is not lowercase hex"}
	}
	r.valid = true
	return r, nil
}

// ValidDigest reports whether h is exactly 64 lowercase hex digits: the
// digest part of a canonical reference, and the key under which every
// workspace backend stores a body. It does not allocate, and takes no
// branch per digit (hex digits are random, so a branch per digit would
// mispredict half the time).
func ValidDigest(h string) bool {
	if len(h) != 2*sha256.Size {
		return false
	}
	var bad byte
	for i := 0; i < len(h); i++ {
		bad |= hexValue[h[i]]
	}
	return bad&notHex == 0
}

// notHex marks the bytes that are not lowercase hex digits in hexValue.
const notHex = 0xf0

// hexValue maps each lowercase hex digit to its value and every other byte
// to notHex.
var hexValue = func() (t [256]byte) {
	for i := range t {
		t[i] = notHex
	}
	for c := byte('0'); c <= '9'; c++ {
		t[c] = c - '0'
	}
	for c := byte('a'); c <= 'f'; c++ {
		t[c] = c - 'a' + 10
	}
	return t
}()

// IsZero reports whether r is the zero Ref (no reference).
func (r Ref) IsZero() bool { return !r.valid }

// Sum returns the raw SHA-256 digest.
func (r Ref) Sum() [sha256.Size]byte { return r.sum }

// Hex returns the 64 lowercase hex digits of the digest, or "" for the zero Ref.
func (r Ref) Hex() string {
	var b [2 * sha256.Size]byte
	return string(r.AppendHex(b[:0]))
}

// String returns the canonical text, or "" for the zero Ref.
func (r Ref) String() string {
	var b [RefLen]byte
	return string(r.AppendString(b[:0]))
}

// AppendHex appends Hex's digits to b (nothing for the zero Ref), for a
// caller that keeps them in memory of its own.
func (r Ref) AppendHex(b []byte) []byte {
	if !r.valid {
		return b
	}
	return hex.AppendEncode(b, r.sum[:])
}

// AppendString appends String's text to b (nothing for the zero Ref).
func (r Ref) AppendString(b []byte) []byte {
	if !r.valid {
		return b
	}
	return r.AppendHex(append(b, Prefix...))
}

// MarshalText implements encoding.TextMarshaler. The zero Ref is an error.
func (r Ref) MarshalText() ([]byte, error) {
	if !r.valid {
		return nil, fmt.Errorf("%w: zero reference", ErrMalformedRef)
	}
	return []byte(r.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler with ParseRef's rules.
func (r *Ref) UnmarshalText(b []byte) error {
	p, err := ParseRef(string(b))
	if err != nil {
		return err
	}
	*r = p
	return nil
}

// LogValue implements slog.LogValuer.
func (r Ref) LogValue() slog.Value { return slog.StringValue(r.String()) }
