package listen

import (
	"io"
	"net/http/httptest"
	"testing"
)

func TestPlainErrors(t *testing.T) {
	for _, c := range []struct {
		status int
		writes []string
		want   string
	}{
		{400, []string{"malformed Last-Event-ID \"evil\"\n", "more evil\n"}, msgBadRequest},
		{400, []string{"Accept must contain both 'application/json' and 'text/event-stream'\n"}, "Accept must contain both 'application/json' and 'text/event-stream'"},
		{404, nil, "Not Found: no such MCP session"},
		{403, []string{"session user mismatch evil\n"}, "Forbidden: the request was refused"},
		{500, []string{"storing stream: evil\n"}, msgServerFailed},
	} {
		rec := httptest.NewRecorder()
		w := &PlainErrors{ResponseWriter: rec}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(c.status)
		for _, s := range c.writes {
			_, _ = io.WriteString(w, s)
		}
		w.Finish()
		if rec.Code != c.status || rec.Body.String() != c.want+"\n" {
			t.Errorf("%d %q: %d %q", c.status, c.writes, rec.Code, rec.Body.String())
		}
	}
	// Success bodies and JSON errors pass unchanged.
	rec := httptest.NewRecorder()
	w := &PlainErrors{ResponseWriter: rec}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(400)
	_, _ = io.WriteString(w, `{"a":1}`)
	_, _ = io.WriteString(w, `{"b":2}`)
	w.Finish()
	if rec.Body.String() != `{"a":1}{"b":2}` {
		t.Fatalf("%q", rec.Body.String())
	}
}
