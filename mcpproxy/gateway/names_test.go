package gateway

import (
	"errors"
	"regexp"
	"strings"
	"testing"
)

var validName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func TestNames(t *testing.T) {
	a := &Server{Name: "a.b", Prefix: "a.b"}
	b := &Server{Name: "ab", Prefix: "ab"}
	n := newNamer(DefaultMaxToolNameLength, "read_artifact")
	got := func(s *Server, tool string) string {
		t.Helper()
		e, err := n.name(s, tool)
		if err != nil {
			t.Fatal(err)
		}
		if len(e) > DefaultMaxToolNameLength || !validName.MatchString(e) {
			t.Fatalf("exposed %q", e)
		}
		return e
	}
	if e := got(a, "read file"); e != "ab__readfile" {
		t.Errorf("cut name = %q", e)
	}
	// "ab"'s "readfile" cuts to the same name: made unique with a hash.
	e := got(b, "readfile")
	if e == "ab__readfile" || !strings.HasPrefix(e, "ab__readfile_") {
		t.Errorf("colliding name = %q", e)
	}
	long := strings.Repeat("very_long_tool_name_", 5)
	l1 := got(a, long)
	l2 := got(a, long+"2")
	if l1 == l2 || len(l1) != DefaultMaxToolNameLength {
		t.Errorf("long names %q %q", l1, l2)
	}
	if got(a, long) != l1 {
		t.Error("a name asked twice changed")
	}
	// Deterministic: a fresh namer in the same order gives the same names.
	n2 := newNamer(DefaultMaxToolNameLength, "read_artifact")
	_, _ = n2.name(a, "read file")
	_, _ = n2.name(b, "readfile")
	if e2, _ := n2.name(a, long); e2 != l1 {
		t.Errorf("not deterministic: %q vs %q", e2, l1)
	}
	if e := got(a, "!!!"); !strings.HasPrefix(e, "ab___") {
		t.Errorf("a name of no allowed character = %q", e)
	}
	if len(n.all()) != 4 {
		t.Errorf("renamed = %+v", n.all())
	}
	// prefix "": names kept; a collision is an error, also with the gateway's own tools.
	u1 := &Server{Name: "u1", PrefixSet: true}
	u2 := &Server{Name: "u2", PrefixSet: true}
	if e := got(u1, "echo"); e != "echo" {
		t.Errorf("unprefixed = %q", e)
	}
	if _, err := n.name(u2, "echo"); !errors.Is(err, ErrNameCollision) {
		t.Errorf("collision err = %v", err)
	}
	if _, err := n.name(u2, "read_artifact"); !errors.Is(err, ErrNameCollision) {
		t.Errorf("read tool collision err = %v", err)
	}
}

func TestTenThousandCollidingNames(t *testing.T) {
	n := newNamer(DefaultMaxToolNameLength)
	s := &Server{Name: "s", Prefix: "s"}
	seen := map[string]bool{}
	for i := 0; i < 10000; i++ {
		// Every name cuts to "s__t": all collide.
		e, err := n.name(s, "t"+strings.Repeat(" ", i%50)+string(rune('!'+i%10))+strings.Repeat(".", i/50))
		if err != nil {
			t.Fatal(err)
		}
		if seen[e] || len(e) > DefaultMaxToolNameLength {
			t.Fatalf("name %q repeated or too long", e)
		}
		seen[e] = true
	}
}
