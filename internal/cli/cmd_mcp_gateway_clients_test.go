package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gatewayConfig writes a gateway configuration of the Go test server and
// the npm everything server and returns its path.
func gatewayConfig(t *testing.T, dir string) string {
	t.Helper()
	cfg := map[string]any{"mcpServers": map[string]any{
		"go":         map[string]any{"command": mcpServerBin(t)},
		"everything": map[string]any{"command": "node", "args": []string{referenceServer(t, "server-everything"), "stdio"}},
	}}
	raw, _ := json.Marshal(cfg)
	p := filepath.Join(dir, "gateway.json")
	if err := os.WriteFile(p, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestMCPGatewayInspectorConfig drives the gateway with the MCP
// Inspector's CLI mode from a client configuration (--config, --server),
// one gateway process per call: the tools are listed (one read tool set,
// both servers' tools), a routed tool's offloaded result is read back
// with read_artifact by the next process.
func TestMCPGatewayInspectorConfig(t *testing.T) {
	cliEntry := inspectorCLI(t)
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	// The Inspector's --config is read by its launcher, beside its CLI.
	launcher := filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(cliEntry))), "inspector", "cli", "build", "cli.js")
	if _, err := os.Stat(launcher); err != nil {
		skipE2E(t, EnvTestMCPServers, "the MCP Inspector's launcher is not installed (run .ci/mcp-servers.sh)")
	}
	dir := t.TempDir()
	client := map[string]any{"mcpServers": map[string]any{"hx": map[string]any{
		"command": binPath,
		"args":    []string{"mcp", "--workspace", newWorkspace(t), "--threshold", "100", "--config", gatewayConfig(t, dir)},
	}}}
	raw, _ := json.Marshal(client)
	clientCfg := filepath.Join(dir, "client.json")
	if err := os.WriteFile(clientCfg, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	inspect := func(args ...string) []byte {
		t.Helper()
		cmd := exec.Command("node", append([]string{launcher, "--cli", "--config", clientCfg, "--server", "hx"}, args...)...)
		cmd.Env = append(os.Environ(), EnvUser+"=ada", EnvSession+"=", EnvWorkflow+"=")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("inspector %v: %v\n%s", args, err, stderr.String())
		}
		return out
	}
	var list struct{ Tools []struct{ Name string } }
	if err := json.Unmarshal(inspect("--method", "tools/list"), &list); err != nil {
		t.Fatal(err)
	}
	names := map[string]int{}
	for _, tl := range list.Tools {
		names[tl.Name]++
	}
	for _, want := range []string{"read_artifact", "search_artifact", "query_artifact", "go__echo", "everything__echo"} {
		if names[want] != 1 {
			t.Errorf("tools/list has %s %d times", want, names[want])
		}
	}
	call := func(tool string, args ...string) string {
		t.Helper()
		argv := []string{"--method", "tools/call", "--tool-name", tool}
		for _, a := range args {
			argv = append(argv, "--tool-arg", a)
		}
		var res struct {
			Content []struct{ Type, Text string }
			IsError bool
		}
		out := inspect(argv...)
		if err := json.Unmarshal(out, &res); err != nil || len(res.Content) == 0 || res.IsError {
			t.Fatalf("inspector %s: %v: %s", tool, err, out)
		}
		return res.Content[0].Text
	}
	text := strings.Repeat("0123456789", 30)
	ref := gatewayRefRE.FindString(call("go__echo", "text="+text))
	if ref == "" {
		t.Fatal("the routed tool's result was not offloaded")
	}
	if got := call("read_artifact", "reference="+ref); got != text {
		t.Fatalf("read_artifact in the next process read %q", got)
	}
}

// TestMCPGatewayTypeScriptClient: the official TypeScript SDK's client
// against the gateway over --listen lists one read tool set beside both
// servers' namespaced tools, calls a routed tool whose result is
// offloaded, and reads it back exact with read_artifact.
func TestMCPGatewayTypeScriptClient(t *testing.T) {
	node, sdk := typeScriptSDK(t)
	dir := t.TempDir()
	l := startListen(t, map[string]string{EnvUser: "ada"}, "--workspace", newWorkspace(t), "--threshold", "100", "--config", gatewayConfig(t, dir))
	text := strings.Repeat("0123456789", 50)
	cmd := exec.Command(node, filepath.Join("testdata", "mcp_gateway_client.mjs"), l.url)
	cmd.Env = append(os.Environ(), EnvTestMCPSDK+"="+sdk, "HYBRIDCTX_TEST_TEXT="+text)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the TypeScript client failed: %v\n%s", err, stderr.String())
	}
	var got struct {
		Tools       []string
		NoticeBytes int    `json:"notice_bytes"`
		Reference   string `json:"reference"`
		ReadBack    string `json:"read_back"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	names := map[string]int{}
	for _, n := range got.Tools {
		names[n]++
	}
	for _, want := range []string{"read_artifact", "search_artifact", "query_artifact", "go__echo", "everything__echo"} {
		if names[want] != 1 {
			t.Errorf("tools/list has %s %d times", want, names[want])
		}
	}
	if got.Reference == "" || got.ReadBack != text {
		t.Fatalf("reference %q, read back %q", got.Reference, got.ReadBack)
	}
}
