package pgstore

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io/fs"
	"net/url"
	"strings"
	"testing"
)

// FuzzDecodeKey checks the key parser: it accepts exactly 64 lowercase hex
// digits, agrees with encoding/hex on them, and round-trips.
func FuzzDecodeKey(f *testing.F) {
	f.Add("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
	f.Add("BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD")
	f.Add("../../../../etc/passwd")
	f.Add("")
	f.Fuzz(func(t *testing.T, key string) {
		d, err := decodeKey(key)
		valid := len(key) == 64 && strings.ToLower(key) == key
		want, herr := hex.DecodeString(key)
		valid = valid && herr == nil
		if (err == nil) != valid {
			t.Fatalf("decodeKey(%q) error %v, want valid=%v", key, err, valid)
		}
		if err != nil {
			if !errors.Is(err, fs.ErrInvalid) {
				t.Fatalf("decodeKey(%q): %v does not wrap fs.ErrInvalid", key, err)
			}
			if len(key) >= 8 && strings.Contains(err.Error(), key) {
				t.Fatalf("the error quotes the key")
			}
			return
		}
		if !bytes.Equal(d, want) || encodeKey(d) != key {
			t.Fatalf("decodeKey(%q) = %x", key, d)
		}
	})
}

// FuzzPasswordIn checks that the password of any userinfo-bearing URL is
// found exactly, so that redact can remove it from a parser's message.
func FuzzPasswordIn(f *testing.F) {
	f.Add("user", "s3cret", "localhost:5432", "db")
	f.Add("u", "p@ss:word/x", "[::1", "")
	f.Add("", "%zz", "h", "d?x=1")
	f.Fuzz(func(t *testing.T, user, password, host, path string) {
		if password == "" || strings.ContainsAny(password, "@") {
			t.Skip() // an "@" in a raw password is ambiguous to any parser
		}
		u := "postgres://" + url.User(user).String() + ":" + password + "@" + host + "/" + path
		if strings.Contains(host+path, "@") {
			t.Skip()
		}
		got := passwordIn(u)
		if got != password {
			t.Fatalf("passwordIn(%q) = %q, want %q", u, got, password)
		}
		if r := redact("cannot parse `"+u+"`", got); r != strings.ReplaceAll("cannot parse `"+u+"`", password, "xxxxx") {
			t.Fatalf("redact = %q", r)
		}
	})
}
