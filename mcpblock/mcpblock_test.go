package mcpblock

import "testing"

// A reader that meets a payload member before the block's type must know
// whether it is base64 from the member alone.
func TestRowsSharingAMemberAgree(t *testing.T) {
	for _, p := range Rules() {
		q, ok := Member("", p.In, p.Field)
		if !ok || q.Base64 != p.Base64 {
			t.Errorf("%s %s.%s: the member alone gives %+v", p.Type, p.In, p.Field, q)
		}
		if r, ok := Member(p.Type, p.In, p.Field); !ok || r.Type != p.Type {
			t.Errorf("%s %s.%s: not found for its type", p.Type, p.In, p.Field)
		}
		if p.In != "" && (!Holds(p.Type, p.In) || !Holds("", p.In)) {
			t.Errorf("%s: %q holds no payload", p.Type, p.In)
		}
	}
	if _, ok := Member("image", "", "text"); ok {
		t.Error("an image's text member is its payload")
	}
	if Holds("text", "resource") || Holds("resource", "") {
		t.Error("Holds names a member that holds no payload")
	}
}

func getter(m map[string]any) Getter {
	return func(in, f string) (any, bool) {
		v, ok := m[in+"."+f]
		return v, ok
	}
}

func TestFind(t *testing.T) {
	cases := []struct {
		typ     string
		members map[string]any
		field   string
		mime    string
		ok      bool
	}{
		{"text", map[string]any{".text": "hi"}, "text", MIMEText, true},
		{"text", map[string]any{".data": "aGk="}, "", "", false},
		{"image", map[string]any{".data": "aGk=", ".mimeType": "image/png"}, "data", "image/png", true},
		{"audio", map[string]any{".data": "aGk=", ".mimeType": "bad\"mime"}, "data", MIMEBinary, true},
		{"resource", map[string]any{"resource.blob": "aGk=", "resource.text": "x"}, "blob", MIMEBinary, true},
		{"resource", map[string]any{"resource.text": "x", "resource.mimeType": "text/csv"}, "text", "text/csv", true},
		{"resource", map[string]any{".text": "x"}, "", "", false},
		{"resource_link", map[string]any{".uri": "x"}, "", "", false},
		{"", map[string]any{".text": "x"}, "", "", false},
	}
	for _, c := range cases {
		p, _, mime, ok := Find(c.typ, getter(c.members))
		if ok != c.ok || p.Field != c.field || mime != c.mime {
			t.Errorf("%s %v: got %+v %q %v", c.typ, c.members, p, mime, ok)
		}
	}
}

func TestClean(t *testing.T) {
	long := make([]byte, maxMIMELen+1)
	for i := range long {
		long[i] = 'a'
	}
	for m, want := range map[string]string{"": "d", "text/csv": "text/csv", "a\nb": "d", "a\\b": "d",
		"é": "d", string(long): "d", string(long[1:]): string(long[1:])} {
		if got := Clean(m, "d"); got != want {
			t.Errorf("Clean(%q) = %q, want %q", m, got, want)
		}
	}
}

// TestMedia: an image or audio block's getter answers its data and MIME
// type, nothing else, and Find reads them through it.
func TestMedia(t *testing.T) {
	get := Media("aGk=", "image/png")
	if v, ok := get("", "data"); !ok || v != "aGk=" {
		t.Fatalf("data %v %v", v, ok)
	}
	if _, ok := get("resource", "data"); ok {
		t.Fatal("a member of another object")
	}
	if _, ok := get("", "text"); ok {
		t.Fatal("a member the block does not have")
	}
	p, v, mime, ok := Find("image", get)
	if !ok || !p.Base64 || v != "aGk=" || mime != "image/png" {
		t.Fatalf("Find: %+v %v %q %v", p, v, mime, ok)
	}
}
