package artifact_test

import (
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx/artifact"
)

const abcHex = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"

func TestRefOfVector(t *testing.T) {
	r := artifact.RefOf([]byte("abc"))
	if r.Hex() != abcHex {
		t.Fatalf("Hex = %s", r.Hex())
	}
	if r.String() != artifact.Prefix+abcHex || len(r.String()) != artifact.RefLen || artifact.RefLen != 82 {
		t.Fatalf("String = %q (%d)", r.String(), len(r.String()))
	}
	p, err := artifact.ParseRef(r.String())
	if err != nil || p != r {
		t.Fatalf("ParseRef round trip: %v %v", p, err)
	}
}

func TestParseRefRejects(t *testing.T) {
	good := artifact.Prefix + abcHex
	cases := map[string]string{
		"empty":             "",
		"spaces":            strings.Repeat(" ", 82),
		"prefix only":       artifact.Prefix,
		"bare hex":          abcHex,
		"uppercase hex":     artifact.Prefix + strings.ToUpper(abcHex),
		"one uppercase":     artifact.Prefix + "B" + abcHex[1:],
		"63 digits":         good[:81],
		"65 digits":         good + "0",
		"sha1":              "artifact://sha1/" + abcHex[:40],
		"sha512 name":       "artifact://sha512/" + abcHex,
		"uppercase scheme":  "ARTIFACT://sha256/" + abcHex,
		"uppercase algo":    "artifact://SHA256/" + abcHex,
		"leading space":     " " + good,
		"trailing space":    good + " ",
		"trailing newline":  good + "\n",
		"query":             good + "?x=1",
		"fragment":          good + "#f",
		"path suffix":       good + "/x",
		"dotdot":            artifact.Prefix + "../" + abcHex[3:],
		"escaped dots":      artifact.Prefix + "%2e%2e" + abcHex[6:],
		"nul":               artifact.Prefix + "\x00" + abcHex[1:],
		"fullwidth digit":   artifact.Prefix + "\uff11" + abcHex[3:],
		"non-hex letter":    artifact.Prefix + "g" + abcHex[1:],
		"other scheme":      "https://sha256/" + abcHex,
		"missing slash":     "artifact:/sha256/" + abcHex + "0",
		"not actually hex":  artifact.Prefix + "not-actually-hex",
		"not canonical id":  "not-a-canonical-reference-id",
		"double prefix":     artifact.Prefix + artifact.Prefix,
		"tab inside":        artifact.Prefix + "\t" + abcHex[1:],
		"plus sign":         artifact.Prefix + "+" + abcHex[1:],
		"colon form":        "sha256:" + abcHex,
		"unicode prefix":    "artifаct://sha256/" + abcHex, // Cyrillic а
		"embedded newline":  artifact.Prefix + abcHex[:32] + "\n" + abcHex[33:],
		"64 spaces":         artifact.Prefix + strings.Repeat(" ", 64),
		"zero width joiner": artifact.Prefix + "\u200d" + abcHex[3:],
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := artifact.ParseRef(in)
			if err == nil {
				t.Fatalf("ParseRef(%q) accepted", in)
			}
			var pe *artifact.ParseError
			if !errors.As(err, &pe) || !errors.Is(err, artifact.ErrMalformedRef) || pe.Len != len(in) {
				t.Fatalf("error %v is not a *ParseError with Len %d", err, len(in))
			}
			if len(in) > 4 && strings.Contains(err.Error(), in) {
				t.Fatalf("error repeats the input: %v", err)
			}
		})
	}
}

func TestZeroRef(t *testing.T) {
	var r artifact.Ref
	if !r.IsZero() || r.String() != "" || r.Hex() != "" {
		t.Fatal("zero Ref must be empty")
	}
	if _, err := r.MarshalText(); !errors.Is(err, artifact.ErrMalformedRef) {
		t.Fatalf("MarshalText(zero) = %v", err)
	}
	if artifact.RefOf(nil).IsZero() {
		t.Fatal("the reference of empty content is not zero")
	}
}

func TestRefText(t *testing.T) {
	type doc struct {
		Ref artifact.Ref `json:"ref"`
	}
	in := doc{Ref: artifact.RefOf([]byte("abc"))}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"ref":"artifact://sha256/`+abcHex+`"}` {
		t.Fatalf("json = %s", b)
	}
	var out doc
	if err := json.Unmarshal(b, &out); err != nil || out != in {
		t.Fatalf("unmarshal: %v %+v", err, out)
	}
	if err := json.Unmarshal([]byte(`{"ref":"artifact://sha256/ABC"}`), &out); !errors.Is(err, artifact.ErrMalformedRef) {
		t.Fatalf("bad text accepted: %v", err)
	}
}

func TestParseDigest(t *testing.T) {
	r, err := artifact.ParseDigest(abcHex)
	if err != nil || r.Hex() != abcHex {
		t.Fatalf("ParseDigest: %v", err)
	}
	if !artifact.ValidDigest(abcHex) {
		t.Fatal("ValidDigest rejected a digest")
	}
	bads := []string{"", abcHex[:63], abcHex + "0", strings.ToUpper(abcHex), "../" + abcHex[3:]}
	// Every byte that is not a lowercase hex digit, at the first and last
	// place.
	for c := range 256 {
		if b := byte(c); (b < '0' || b > '9') && (b < 'a' || b > 'f') {
			bads = append(bads, string(b)+abcHex[1:], abcHex[:63]+string(b))
		}
	}
	for _, bad := range bads {
		if _, err := artifact.ParseDigest(bad); err == nil {
			t.Errorf("ParseDigest(%q) accepted", bad)
		}
		if artifact.ValidDigest(bad) {
			t.Errorf("ValidDigest(%q) accepted", bad)
		}
	}
}

var canonical = regexp.MustCompile(`\Aartifact://sha256/[0-9a-f]{64}\z`)

func FuzzParseRef(f *testing.F) {
	f.Add(artifact.Prefix + abcHex)
	f.Add(artifact.Prefix + strings.ToUpper(abcHex))
	f.Add("artifact://sha1/" + abcHex)
	f.Add(artifact.Prefix + abcHex + "\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		r, err := artifact.ParseRef(s)
		if want := canonical.MatchString(s); want != (err == nil) {
			t.Fatalf("ParseRef(%q) err=%v, regexp says %v", s, err, want)
		}
		if d := strings.TrimPrefix(s, artifact.Prefix); artifact.ValidDigest(d) != canonical.MatchString(artifact.Prefix+d) {
			t.Fatalf("ValidDigest(%q) = %v, the regexp disagrees", d, artifact.ValidDigest(d))
		}
		if err != nil {
			if !r.IsZero() {
				t.Fatal("rejected input returned a non-zero Ref")
			}
			return
		}
		if r.String() != s || len(s) != artifact.RefLen {
			t.Fatalf("round trip %q -> %q", s, r.String())
		}
		d, err := artifact.ParseDigest(r.Hex())
		if err != nil || d != r {
			t.Fatalf("ParseDigest(Hex) = %v, %v", d, err)
		}
	})
}

func TestOwner(t *testing.T) {
	ok := artifact.Owner{User: "u", Workflow: "w", Session: "s"}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := artifact.Owner{User: " ", Workflow: "w"}
	err := bad.Validate()
	if !errors.Is(err, artifact.ErrInvalidOwner) || !strings.Contains(err.Error(), "user, session") {
		t.Fatalf("Validate = %v", err)
	}
	for _, o := range []artifact.Owner{
		{User: strings.Repeat("x", artifact.MaxOwnerFieldLen+1), Workflow: "w", Session: "s"},
		{User: "u", Workflow: "w\xff", Session: "s"},
		{User: "u", Workflow: "w", Session: "s\x00"},
		{User: " u", Workflow: "w", Session: "s"},
		{User: "u", Workflow: "w\t", Session: "s"},
		{User: "u", Workflow: "w", Session: "s\u00a0"},
		{User: "u\nroot", Workflow: "w", Session: "s"},
		{User: "u", Workflow: "a\x1b[31mb", Session: "s"},
		{User: "u", Workflow: "w", Session: "s\u0085x"},
	} {
		if err := o.Validate(); !errors.Is(err, artifact.ErrInvalidOwner) {
			t.Errorf("Validate accepted a malformed owner: %v", err)
		}
	}
	inner := artifact.Owner{User: "Ada Lovelace", Workflow: "wf/κ 1", Session: "s"}
	if err := inner.Validate(); err != nil {
		t.Fatalf("inner spaces and non-ASCII letters are fine: %v", err)
	}
	secret := artifact.Owner{User: "SECRET-USER", Workflow: "SECRET-WF", Session: "SECRET-S"}
	for _, s := range []string{secret.String(), secret.GoString(), secret.LogValue().String()} {
		if strings.Contains(s, "SECRET") {
			t.Fatalf("owner printed: %s", s)
		}
	}
}

func TestTruncateUTF8(t *testing.T) {
	s := strings.Repeat("é", 300) // 600 bytes
	got := artifact.TruncateUTF8(s, 501)
	if len(got) != 500 || !strings.HasPrefix(s, got) {
		t.Fatalf("len %d", len(got))
	}
	if artifact.TruncateUTF8("abc", 10) != "abc" {
		t.Fatal("short string changed")
	}
}

// TestAppendTextMatchesStrings: AppendHex and AppendString append exactly
// Hex and String after what b holds, and nothing for the zero Ref.
func TestAppendTextMatchesStrings(t *testing.T) {
	r := artifact.RefOf([]byte("body"))
	if got := string(r.AppendHex([]byte("k="))); got != "k="+r.Hex() || len(r.Hex()) != 64 {
		t.Errorf("AppendHex = %q, Hex = %q", got, r.Hex())
	}
	if got := string(r.AppendString([]byte("> "))); got != "> "+r.String() || len(r.String()) != artifact.RefLen {
		t.Errorf("AppendString = %q, String = %q", got, r.String())
	}
	var zero artifact.Ref
	if got := string(zero.AppendString(zero.AppendHex([]byte("x")))); got != "x" || zero.Hex() != "" || zero.String() != "" {
		t.Errorf("zero Ref appends %q, Hex %q, String %q", got, zero.Hex(), zero.String())
	}
}
