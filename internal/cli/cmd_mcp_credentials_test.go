package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/mcpproxy"
)

const (
	aliceToken = "alice-secret-token-0123"
	bobToken   = "bob-secret-token-456789"
)

func TestParseTokens(t *testing.T) {
	creds, err := parseTokens([]byte("# who\tand the token\n\nalice " + aliceToken + "\r\n  \t# indented comment\n\tbob\t\t" + bobToken + "  \nalice " + strings.Repeat("r", 16)))
	want := []mcpproxy.Credential{{Name: "alice", Token: aliceToken}, {Name: "bob", Token: bobToken}, {Name: "alice", Token: strings.Repeat("r", 16)}}
	if err != nil || len(creds) != len(want) {
		t.Fatalf("%v %v", creds, err)
	}
	for i := range want {
		if creds[i] != want[i] {
			t.Fatalf("credential %d: %+v, want %+v", i, creds[i], want[i])
		}
	}
	for name, c := range map[string]struct{ in, want string }{
		"empty":         {"", "holds no token"},
		"only comments": {"# alice " + aliceToken + "\n\n", "holds no token"},
		"one field":     {"alice\n", "line 1: want SESSION TOKEN"},
		"three fields":  {"\nalice " + aliceToken + " extra\n", "line 2: want SESSION TOKEN"},
		"short token":   {"alice short-secret\n", "line 1: the token must be 16 to 4096"},
		"long token":    {"alice " + strings.Repeat("s", 4097) + "\n", "line 1: the token must be"},
		"not ASCII":     {"alice secret-tökén-0123456789\n", "line 1: the token must be"},
		"control":       {"alice secret-token\x7f0123456789\n", "line 1: the token must be"},
		"bad session":   {"al\x01ice " + aliceToken + "\n", "line 1: the session name is not valid"},
		"long session":  {strings.Repeat("a", 300) + " " + aliceToken + "\n", "line 1: the session name is not valid"},
		"not UTF-8":     {"al\xffice " + aliceToken + "\n", "line 1: the session name is not valid"},
		"repeated":      {"alice " + aliceToken + "\nbob " + aliceToken + "\n", "line 2 repeats the token of line 1"},
	} {
		_, err := parseTokens([]byte(c.in))
		if !errors.Is(err, errTokensFile) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
		if err != nil && (strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "alice")) {
			t.Errorf("%s: the error quotes the file: %v", name, err)
		}
	}
}

// tokensMessage is every error text parseTokens may return, digits taken
// out.
var tokensMessage = regexp.MustCompile(`^invalid tokens file: (it holds no token|line : (want SESSION TOKEN, separated by spaces|the session name is not valid \(at most  bytes of text, no control characters\)|the token must be  to  visible ASCII characters)|line  repeats the token of line )$`)

func FuzzParseTokens(f *testing.F) {
	for _, s := range []string{"", "alice " + aliceToken, "# c\nalice\t" + aliceToken + "\r\nbob " + bobToken + "\n",
		"alice " + aliceToken + "\nbob " + aliceToken, "a b c", "x\x00 " + aliceToken, "\xff " + aliceToken} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		creds, err := parseTokens(data)
		if err != nil {
			if !errors.Is(err, errTokensFile) || !tokensMessage.MatchString(strings.Map(func(r rune) rune {
				if '0' <= r && r <= '9' {
					return -1
				}
				return r
			}, err.Error())) {
				t.Fatalf("unexpected error text: %v", err)
			}
			return
		}
		if len(creds) == 0 {
			t.Fatal("no credentials and no error")
		}
		seen := map[string]bool{}
		for _, c := range creds {
			if len(c.Token) < mcpproxy.MinTokenBytes || !visibleASCII(c.Token) || seen[c.Token] || c.Name == "" ||
				!bytes.Contains(data, []byte(c.Token)) || !bytes.Contains(data, []byte(c.Name)) {
				t.Fatalf("bad credential %q %q", c.Name, c.Token)
			}
			seen[c.Token] = true
		}
		// The handler takes every parsed file.
		if _, err := mcpproxy.NewHTTPHandler(func(context.Context, string, string) (*mcpproxy.Proxy, mcp.Transport, error) {
			return nil, nil, errors.New("unused")
		}, &mcpproxy.HTTPOptions{Credentials: creds}); err != nil {
			t.Fatalf("the handler refuses parsed credentials: %v", err)
		}
	})
}

// writeTokens writes a tokens file of mode perm and returns its path.
func writeTokens(t *testing.T, perm os.FileMode, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(p, []byte(content), perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, perm); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestMCPTokensFileUsageErrors(t *testing.T) {
	good := writeTokens(t, 0o600, "alice "+aliceToken+"\n")
	env := map[string]string{EnvUser: "ada", "TOKEN": aliceToken}
	listen := []string{"mcp", "--listen", "127.0.0.1:0"}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"mcp", "--tokens-file", good, "--", "x"}, "--tokens-file needs --listen"},
		{append(listen, "--tokens-file", good, "--token-env", "TOKEN", "--", "x"), "not both"},
		{append(listen, "--tokens-file", good, "--session", "mine", "--", "x"), "--session NAME cannot pin"},
		{append(listen, "--tokens-file", filepath.Join(t.TempDir(), "none"), "--", "x"), "cannot read the file"},
		{append(listen, "--tokens-file", t.TempDir(), "--", "x"), "not a regular file"},
		{append(listen, "--tokens-file", writeTokens(t, 0o644, "alice "+aliceToken+"\n"), "--", "x"), "chmod 600"},
		{append(listen, "--tokens-file", writeTokens(t, 0o600, "alice "+aliceToken+"\nbob "+aliceToken+"\n"), "--", "x"), "line 2 repeats the token of line 1"},
		{append(listen, "--tokens-file", writeTokens(t, 0o600, "alice\n"), "--", "x"), "line 1: want SESSION TOKEN"},
		{append(listen, "--tokens-file", writeTokens(t, 0o600, strings.Repeat("#", maxTokensFileBytes+1)), "--", "x"), "over 1048576 bytes"},
		{append(listen, "--session-burst", "0", "--", "x"), "--session-burst must be > 0"},
		{append(listen, "--session-rate", "0", "--", "x"), "--session-rate must be a number > 0"},
		{append(listen, "--session-rate", "NaN", "--", "x"), "--session-rate must be a number > 0"},
		{append(listen, "--session-rate", "-1", "--", "x"), "--session-rate must be a number > 0"},
		{[]string{"mcp", "--listen", "0.0.0.0:0", "--", "x"}, "--tokens-file FILE"},
	}
	for _, c := range cases {
		var stderr bytes.Buffer
		code := Main(context.Background(), c.args, Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: &stderr,
			Getenv: func(k string) string { return env[k] }})
		if code != ExitUsage || !strings.Contains(stderr.String(), c.want) || strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line with %q", c.args, code, stderr.String(), c.want)
		}
		if strings.Contains(stderr.String(), "secret") {
			t.Errorf("%v: a token leaked: %q", c.args, stderr.String())
		}
	}
}

// storeOne has cs store a 5,000-byte result and returns its reference.
func storeOne(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	ref, _, _ := strings.Cut(firstText(callTool(t, cs, "cat", map[string]any{"size": 5000})), "\n")
	if !strings.HasPrefix(ref, "artifact://sha256/") {
		t.Fatalf("no reference: %q", ref)
	}
	return ref
}

// reads reports whether cs reads ref (its first line).
func reads(t *testing.T, cs *mcp.ClientSession, ref string) bool {
	t.Helper()
	res := callTool(t, cs, "read_artifact", map[string]any{"reference": ref, "length": 12})
	return !res.IsError && firstText(res) == "line 0000000"
}

// Over --listen the owner follows the credential: a client evicted at
// --max-sessions re-initializes and still reads its references.
func TestMCPListenEvictedClientKeepsReferences(t *testing.T) {
	bin := mcpServerBin(t)
	l := startListen(t, map[string]string{EnvUser: "ada", EnvSession: ""}, "--workspace", newWorkspace(t), "--threshold", "1000",
		"--max-sessions", "1", "--", bin)
	a := httpClient(t, l.url, nil)
	ref := storeOne(t, a)
	callTool(t, httpClientWhenIdle(t, l.url), "echo", map[string]any{"text": "takes the only session"})
	if _, err := a.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}}); err == nil {
		t.Fatal("a's session was not evicted")
	}
	if !reads(t, httpClientWhenIdle(t, l.url), ref) {
		t.Fatal("the evicted client lost its reference")
	}
}

// --session new keeps one owner per MCP session: another session, or the
// same client after eviction, reads nothing of it.
func TestMCPListenSessionNew(t *testing.T) {
	bin := mcpServerBin(t)
	l := startListen(t, map[string]string{EnvUser: "ada"}, "--workspace", newWorkspace(t), "--threshold", "1000",
		"--session", "new", "--", bin)
	a := httpClient(t, l.url, nil)
	ref := storeOne(t, a)
	if !reads(t, a, ref) || reads(t, httpClient(t, l.url, nil), ref) {
		t.Fatal("with --session new, an MCP session is its own owner")
	}
}

// With --tokens-file each token is its own owner session, named by the
// file: a credential reads only its own references, never ends another's
// sessions, and HYBRIDCTX_SESSION does not pin them to one owner.
func TestMCPListenTokensFile(t *testing.T) {
	bin := mcpServerBin(t)
	ws := newWorkspace(t)
	file := writeTokens(t, 0o600, "# session token\nalice "+aliceToken+"\nbob "+bobToken+"\n")
	l := startListen(t, map[string]string{EnvUser: "ada", EnvSession: "pinned-by-env"}, "--workspace", ws, "--threshold", "1000",
		"--max-sessions", "2", "--tokens-file", file, "--", bin)
	as := func(token string) *mcp.ClientSession {
		return httpClient(t, l.url, &http.Client{Transport: bearer{token}})
	}
	resp, err := http.Post(l.url, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no token: %d", resp.StatusCode)
	}
	alice := as(aliceToken)
	ref := storeOne(t, alice)
	bob := as(bobToken)
	if reads(t, bob, ref) {
		t.Fatal("bob read alice's reference")
	}
	// bob opens sessions: past his two, his own are evicted, never alice's
	// (with one limit for all, alice's would be the least recently used).
	for range 3 {
		callTool(t, as(bobToken), "echo", map[string]any{"text": "bob"})
	}
	if !reads(t, alice, ref) {
		t.Fatal("alice's session was ended by bob's, or her reference lost")
	}
	// alice's reference belongs to the session the file names.
	var out bytes.Buffer
	code := Main(context.Background(), []string{"stat", "--workspace", ws, "--user", "ada", "--workflow", workflowName("", []string{bin}),
		"--session", "alice", ref}, Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: io.Discard, Getenv: func(string) string { return "" }})
	if code != ExitOK {
		t.Fatalf("stat as session alice: exit %d %s", code, out.String())
	}
	if l.stop(t); strings.Contains(l.stderr.String(), "secret") {
		t.Fatalf("a token was printed: %q", l.stderr.String())
	}
}

// The default workflow tells apart two servers run by one launcher.
func TestWorkflowName(t *testing.T) {
	a := workflowName("", []string{"python3", "server_a.py"})
	b := workflowName("", []string{"python3", "server_b.py"})
	if a == b || !regexp.MustCompile(`^python3-[0-9a-f]{8}$`).MatchString(a) {
		t.Fatalf("%q, %q", a, b)
	}
	if again := workflowName("", []string{"python3", "server_a.py"}); again != a {
		t.Fatalf("not stable: %q, %q", again, a)
	}
	if workflowName("", []string{"npx", "a b"}) == workflowName("", []string{"npx", "a", "b"}) {
		t.Fatal("arguments are not told apart from their concatenation")
	}
	if w := workflowName("", []string{"/usr/bin/uvx", "mcp-server-git"}); !strings.HasPrefix(w, "uvx-") {
		t.Fatalf("%q", w)
	}
	u := workflowName("https://mcp.example.com/a", nil)
	if !strings.HasPrefix(u, "mcp.example.com-") || u == workflowName("https://mcp.example.com/b", nil) ||
		u != workflowName("https://ada:pw@mcp.example.com/a", nil) {
		t.Fatalf("URL workflows: %q", u)
	}
	long := workflowName("", []string{strings.Repeat("é", 300)})
	if err := (artifact.Owner{User: "u", Workflow: long, Session: "s"}).Validate(); err != nil {
		t.Fatalf("a long command gives an invalid workflow: %v", err)
	}
}
