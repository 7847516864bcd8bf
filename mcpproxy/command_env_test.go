package mcpproxy

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCommandDropEnv: a variable named in DropEnv (the listener's token)
// never reaches the upstream process, which writes its environment out;
// the rest of the environment does, whether Cmd.Env is set or inherited.
func TestCommandDropEnv(t *testing.T) {
	t.Setenv("HYBRIDCTX_TEST_TOKEN_INHERITED", "tok-inherited-0123456789")
	for _, explicit := range []bool{false, true} {
		out := filepath.Join(t.TempDir(), "env")
		cmd := exec.Command("sh", "-c", `env > "$0"; exec "$1" -test.run='^$'`, out, os.Args[0])
		if explicit {
			cmd.Env = append(os.Environ(), helperEnv+"=serve", "HYBRIDCTX_TEST_TOKEN_SET=tok-set-0123456789", "KEEP_ME=1")
		} else {
			t.Setenv(helperEnv, "serve")
			t.Setenv("KEEP_ME", "1")
		}
		c := &Command{Cmd: cmd, TerminateDuration: time.Second,
			DropEnv: []string{"HYBRIDCTX_TEST_TOKEN_INHERITED", "HYBRIDCTX_TEST_TOKEN_SET"}}
		conn, err := c.Connect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var env []byte
		waitFor(t, func() bool {
			env, _ = os.ReadFile(out)
			return strings.Contains(string(env), "KEEP_ME=1")
		})
		_ = conn.Close()
		if strings.Contains(string(env), "tok-") || strings.Contains(string(env), "HYBRIDCTX_TEST_TOKEN") {
			t.Fatalf("explicit Env %v: the token reached the upstream:\n%s", explicit, env)
		}
		if !strings.Contains(string(env), helperEnv+"=serve") {
			t.Fatalf("explicit Env %v: the rest of the environment is missing", explicit)
		}
	}
}
