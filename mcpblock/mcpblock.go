// Package mcpblock holds the one rule for which member of an MCP content
// block is its payload: the part the offloader decides and may replace by
// a notice and a resource_link. The MCP proxy (typed results, results on
// the wire, results read as they stream) and the mcp-go adapter all read
// it from here. See docs/mcp-proxy.md.
package mcpblock

// The MIME types the rule names.
const (
	MIMEText   = "text/plain"
	MIMEJSON   = "application/json"
	MIMEBinary = "application/octet-stream"
)

// Payload says where one type of content block holds its payload.
type Payload struct {
	// Type is the block's "type".
	Type string
	// In is "" when the payload is a member of the block itself, else the
	// member of the block holding the object that has it.
	In string
	// Field is the member holding the payload, a JSON string.
	Field string
	// Base64 reports that the string is base64 and the payload is the
	// bytes it encodes.
	Base64 bool
	// MIMEField is the member, beside Field, naming the payload's MIME
	// type; "" when there is none.
	MIMEField string
	// LinkMIME is the link's mimeType when MIMEField is absent or does not
	// hold a usable MIME type.
	LinkMIME string
}

// rules is the rule, in the order it is tried: the first row whose Type is
// the block's and whose Field is present holds the block's payload. A
// block no row matches is decided as its whole JSON (MIMEJSON).
var rules = [...]Payload{
	{Type: "text", Field: "text", LinkMIME: MIMEText},
	{Type: "image", Field: "data", Base64: true, MIMEField: "mimeType", LinkMIME: MIMEBinary},
	{Type: "audio", Field: "data", Base64: true, MIMEField: "mimeType", LinkMIME: MIMEBinary},
	{Type: "resource", In: "resource", Field: "blob", Base64: true, MIMEField: "mimeType", LinkMIME: MIMEBinary},
	{Type: "resource", In: "resource", Field: "text", MIMEField: "mimeType", LinkMIME: MIMEText},
}

// Rules returns the rule's rows in the order they are tried.
func Rules() []Payload { r := rules; return r[:] }

// Getter returns the member field of a block's object in ("" for the block
// itself) and whether it is present. A present payload is a string (as on
// the wire) or bytes already decoded; a MIME field is a string.
type Getter func(in, field string) (v any, ok bool)

// Media returns the Getter of an image or audio block whose payload is
// data (a base64 string as on the wire, or the bytes it decodes to) and
// whose MIME type is mimeType.
func Media(data any, mimeType string) Getter {
	return func(in, f string) (any, bool) {
		switch {
		case in != "":
		case f == "data":
			return data, true
		case f == "mimeType":
			return mimeType, true
		}
		return nil, false
	}
}

// Find applies the rule to a block of type typ: the row that holds its
// payload, the payload member's value and the link's MIME type; ok is
// false when no row holds a payload (the block is decided whole).
func Find(typ string, get Getter) (p Payload, v any, mime string, ok bool) {
	for _, p := range rules {
		if p.Type != typ {
			continue
		}
		if v, ok := get(p.In, p.Field); ok {
			return p, v, p.MIME(get), true
		}
	}
	return Payload{}, nil, "", false
}

// MIME returns the link's MIME type for a payload of this row in the block
// get reads.
func (p Payload) MIME(get Getter) string {
	if p.MIMEField == "" {
		return p.LinkMIME
	}
	m, _ := get(p.In, p.MIMEField)
	s, _ := m.(string)
	return Clean(s, p.LinkMIME)
}

// Member returns the row whose payload is the member field of the block's
// object in ("" for the block itself) in a block of type typ, for a reader
// that meets the members in order; typ is "" when the block's type has not
// been read yet, and the first row with that member is returned (rows that
// share a member agree on Base64).
func Member(typ, in, field string) (Payload, bool) {
	for _, p := range rules {
		if (typ == "" || p.Type == typ) && p.In == in && p.Field == field {
			return p, true
		}
	}
	return Payload{}, false
}

// Holds reports whether the member in of a block of type typ ("" when not
// yet read) is the object holding a payload.
func Holds(typ, in string) bool {
	for _, p := range rules {
		if (typ == "" || p.Type == typ) && in != "" && p.In == in {
			return true
		}
	}
	return false
}

// maxMIMELen bounds a MIME type copied from a block into a resource_link.
const maxMIMELen = 127

// Clean returns m when it looks like a MIME type (short, printable ASCII
// without quotes or backslashes), else d.
func Clean(m, d string) string {
	if m == "" || len(m) > maxMIMELen {
		return d
	}
	for i := 0; i < len(m); i++ {
		if c := m[i]; c < ' ' || c >= 0x7f || c == '"' || c == '\\' {
			return d
		}
	}
	return m
}
