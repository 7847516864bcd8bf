package httpguard

import (
	"net/http"
	"testing"
)

func TestIsLoopback(t *testing.T) {
	for s, want := range map[string]bool{
		"localhost": true, "LOCALHOST:80": true, "127.0.0.1": true, "127.9.9.9:1": true, "[::1]:8080": true, "::1": true,
		"example.com": false, "10.0.0.1": false, "[::]:1": false, "": false, "127.0.0.1.example": false,
	} {
		if got := IsLoopback(s); got != want {
			t.Errorf("IsLoopback(%q) = %v", s, got)
		}
	}
	for s, want := range map[string]bool{"127.0.0.1:0": true, "localhost:8080": true, ":0": false, "0.0.0.0:1": false, "127.0.0.1": false} {
		if got := IsLoopbackAddress(s); got != want {
			t.Errorf("IsLoopbackAddress(%q) = %v", s, got)
		}
	}
}

func TestOrigin(t *testing.T) {
	for s, want := range map[string]string{
		"http://LocalHost": "http://localhost:80", "https://a.example": "https://a.example:443", "http://[::1]:9/": "http://[::1]:9",
		"null": "", "file:///x": "", "http://u@h": "", "http://h/p": "", "http://h?q": "", "ws://h": "",
	} {
		got, ok := Origin(s)
		if got != want || ok != (want != "") {
			t.Errorf("Origin(%q) = %q %v", s, got, ok)
		}
	}
}

func TestCheckOrigins(t *testing.T) {
	req := func(host string, origins ...string) *http.Request {
		r, _ := http.NewRequest("GET", "http://"+host+"/", nil)
		r.Host = host
		for _, o := range origins {
			r.Header.Add("Origin", o)
		}
		return r
	}
	allowed := map[string]bool{"http://dev.example:3000": true}
	for _, c := range []struct {
		r        *http.Request
		loopback bool
		want     bool
	}{
		{req("127.0.0.1:8080"), true, true},
		{req("127.0.0.1:8080", "http://localhost:8080"), true, true},
		{req("127.0.0.1:8080", "http://localhost:8080", "http://evil.example:8080"), true, false},
		{req("127.0.0.1:8080", "http://localhost:3000"), true, false},
		{req("127.0.0.1:8080", "http://dev.example:3000"), true, true},
		{req("h.example:8080", "http://h.example:8080"), false, true},
		{req("h.example:8080", "http://other.example:8080"), false, false},
		{req("127.0.0.1:8080", "null"), true, false},
	} {
		if got := CheckOrigins(c.r, allowed, c.loopback, "8080"); got != c.want {
			t.Errorf("%s %v: %v", c.r.Host, c.r.Header.Values("Origin"), got)
		}
	}
}

func TestBearerOK(t *testing.T) {
	r, _ := http.NewRequest("GET", "/", nil)
	for auth, want := range map[string]bool{"": false, "Bearer tok": true, "bearer tok": false, "Bearer tok2": false, "tok": false} {
		r.Header.Set("Authorization", auth)
		if got := BearerOK(r, "tok"); got != want {
			t.Errorf("%q: %v", auth, got)
		}
	}
}

func TestHeaderName(t *testing.T) {
	for s, want := range map[string]bool{"X-Api-Key": true, "authorization": true, "a!#$%&'*+-.^_`|~9": true,
		"": false, "X Api": false, "X:Y": false, "é": false, "X\r\n": false} {
		if HeaderName(s) != want {
			t.Errorf("HeaderName(%q) = %v", s, !want)
		}
	}
}
