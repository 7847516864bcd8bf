package filestore

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// ErrInvalidPath is wrapped by every path that cannot be used. The error
// says why, never repeating the path.
var ErrInvalidPath = errors.New("filestore: invalid path")

// MaxPathLen bounds a path, in bytes, before canonicalization.
const MaxPathLen = 4096

func invalid(why string) error { return fmt.Errorf("%w: %s", ErrInvalidPath, why) }

// CanonicalFile returns the canonical form of a file path: outer whitespace
// trimmed, every `\` turned into `/`, empty and `.` segments dropped, no
// leading or trailing slash; repeated while a pass changes anything, so
// "a /" becomes "a" and canonical paths are fixed points. A segment equal
// to `..` is an error (a name that merely contains `..` is fine), and so is
// a path that is empty once canonical (the root is not a file), longer than
// MaxPathLen, not valid UTF-8, or holding a NUL byte. Case is preserved and significant. The
// error wraps ErrInvalidPath.
func CanonicalFile(p string) (string, error) {
	c, err := canonical(p)
	if err != nil {
		return "", err
	}
	if c == "" {
		return "", invalid("empty file path (the root is a directory)")
	}
	return c, nil
}

// CanonicalDir is CanonicalFile for directories, except that a path that is
// empty once canonical ("", ".", "/", "./", `\`, ...) is the root, returned
// as "".
func CanonicalDir(p string) (string, error) { return canonical(p) }

func canonical(p string) (string, error) {
	switch {
	case len(p) > MaxPathLen:
		return "", invalid(fmt.Sprintf("longer than %d bytes", MaxPathLen))
	case !utf8.ValidString(p):
		return "", invalid("not valid UTF-8")
	case strings.IndexByte(p, 0) >= 0:
		return "", invalid("contains a NUL byte")
	}
	// Dropping empty segments can bare whitespace that was inside a
	// segment ("a /" → "a "), so repeat until nothing changes; each pass
	// shortens the path, and every pass rejects a ".." segment.
	for {
		q := strings.ReplaceAll(strings.TrimSpace(p), `\`, "/")
		segs := strings.Split(q, "/")
		out := segs[:0]
		for _, s := range segs {
			switch s {
			case "", ".":
				continue
			case "..":
				return "", invalid(`a ".." segment`)
			}
			out = append(out, s)
		}
		q = strings.Join(out, "/")
		if q == p {
			return q, nil
		}
		p = q
	}
}

// Rooted reports whether p, after trimming outer whitespace, is rooted: it
// starts with `/` or `\` (which covers UNC paths such as `\\server\x`), or
// with a drive letter and a colon (`C:\x`, `C:/x`, `C:x`). The adapter
// rejects rooted paths before canonicalizing them.
func Rooted(p string) bool {
	p = strings.TrimSpace(p)
	if p == "" {
		return false
	}
	if p[0] == '/' || p[0] == '\\' {
		return true
	}
	return len(p) >= 2 && p[1] == ':' && ('a' <= p[0] && p[0] <= 'z' || 'A' <= p[0] && p[0] <= 'Z')
}

// cleanFile applies the adapter's rules to a file path: not rooted, then
// canonical.
func cleanFile(p string) (string, error) {
	if Rooted(p) {
		return "", invalid("rooted path (a leading slash, backslash or drive letter)")
	}
	return CanonicalFile(p)
}

// cleanDir applies the adapter's rules to a directory path.
func cleanDir(p string) (string, error) {
	if Rooted(p) {
		return "", invalid("rooted path (a leading slash, backslash or drive letter)")
	}
	return CanonicalDir(p)
}

// reservedNames are the top-level names of the workspace's own artifact and
// record namespace, compared without regard to case: the directory layout
// of a workspace (sha256/, locks/, records.db*), the default workspace
// directory, temporary bodies, and reference-looking paths
// (artifact://sha256/... canonicalizes to artifact:/sha256/...).
var reservedNames = []string{"sha256", "locks", "artifact:"}

var reservedPrefixes = []string{"records.db", ".hybridctx", ".tmp-"}

// Reserved reports whether a canonical path lies in the reserved namespace,
// which the adapter never shows and never writes.
func Reserved(canonical string) bool {
	first, _, _ := strings.Cut(canonical, "/")
	for _, n := range reservedNames {
		if strings.EqualFold(first, n) {
			return true
		}
	}
	for _, p := range reservedPrefixes {
		if len(first) >= len(p) && strings.EqualFold(first[:len(p)], p) {
			return true
		}
	}
	return false
}
