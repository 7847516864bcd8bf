package gateway

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestParseClientFormats(t *testing.T) {
	env := map[string]string{"TOKEN": "s3cret", "DIR": "/data"}
	expand := func(s string) (string, error) {
		for k, v := range env {
			s = strings.ReplaceAll(s, "${"+k+"}", v)
		}
		if strings.Contains(s, "${") {
			return "", errors.New("environment variable is unset")
		}
		return s, nil
	}
	cfg, err := Parse([]byte(`{
	  "mcpServers": {
	    "fs": {"command": "npx", "args": ["-y", "server-filesystem", "${DIR}"], "env": {"A": "${TOKEN}"}, "cwd": "/tmp",
	           "hybridctx": {"threshold": 100, "dereference": ["write_file"], "disabledTools": ["move_file"]}},
	    "remote": {"url": "https://example.test/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"},
	           "hybridctx": {"prefix": "", "tools": ["a", "b"], "dereference": true}},
	    "legacy": {"type": "sse", "url": "http://127.0.0.1:1/sse"},
	    "off": {"command": "x", "disabled": true, "autoApprove": ["y"]}
	  },
	  "hybridctx": {"threshold": 2048, "maxToolNameLength": 40, "dereferenceBudget": 1000, "startTimeout": "5s"},
	  "otherClientKey": 1
	}`), &ParseOptions{Expand: expand})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Servers) != 3 {
		t.Fatalf("servers = %d, want 3 (the disabled one left out)", len(cfg.Servers))
	}
	fs, remote, legacy := cfg.Servers[0], cfg.Servers[1], cfg.Servers[2]
	if fs.Name != "fs" || fs.Type != TypeStdio || fs.Args[2] != "/data" || fs.Env["A"] != "s3cret" || fs.Cwd != "/tmp" || fs.Threshold != 100 {
		t.Errorf("fs = %+v", fs)
	}
	if !fs.Dereference.Applies("write_file") || fs.Dereference.Applies("read_file") || fs.Allowed("move_file") || !fs.Allowed("read_file") || fs.Prefix != "fs" {
		t.Errorf("fs settings = %+v", fs)
	}
	if remote.Type != TypeHTTP || remote.Headers["Authorization"] != "Bearer s3cret" || !remote.PrefixSet || remote.Prefix != "" ||
		!remote.Dereference.Applies("anything") || remote.Allowed("c") || !remote.Allowed("a") {
		t.Errorf("remote = %+v", remote)
	}
	if legacy.Type != TypeSSE {
		t.Errorf("legacy = %+v", legacy)
	}
	if cfg.Settings.Threshold != 2048 || cfg.Settings.MaxToolNameLength != 40 || cfg.Settings.DereferenceBudget != 1000 || cfg.Settings.StartTimeout.Seconds() != 5 {
		t.Errorf("settings = %+v", cfg.Settings)
	}

	vs, err := Parse([]byte(`{"servers": {"a": {"type": "stdio", "command": "a"}}, "inputs": []}`), nil)
	if err != nil || len(vs.Servers) != 1 || vs.Servers[0].Name != "a" {
		t.Fatalf("VS Code form: %v %+v", err, vs)
	}
}

func TestParseErrorsNameServerAndField(t *testing.T) {
	cases := []struct {
		name, json, server, field string
	}{
		{"not json", `{`, "", "(file)"},
		{"no servers", `{}`, "", "mcpServers"},
		{"both keys", `{"mcpServers": {}, "servers": {}}`, "", "servers"},
		{"servers not object", `{"mcpServers": []}`, "", "mcpServers"},
		{"duplicate name", `{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}`, "a", "(name)"},
		{"empty name", `{"mcpServers": {"": {"command": "x"}}}`, "", "mcpServers"},
		{"entry not object", `{"mcpServers": {"a": 1}}`, "a", "(entry)"},
		{"command and url", `{"mcpServers": {"a": {"command": "x", "url": "http://h/"}}}`, "a", "command"},
		{"neither", `{"mcpServers": {"a": {}}}`, "a", "command"},
		{"bad type", `{"mcpServers": {"a": {"type": "ws", "url": "http://h/"}}}`, "a", "type"},
		{"http without url", `{"mcpServers": {"a": {"type": "http"}}}`, "a", "url"},
		{"bad url", `{"mcpServers": {"a": {"url": "file:///x"}}}`, "a", "url"},
		{"args on url", `{"mcpServers": {"a": {"url": "http://h/", "args": ["x"]}}}`, "a", "args"},
		{"headers on stdio", `{"mcpServers": {"a": {"command": "x", "headers": {"A": "b"}}}}`, "a", "headers"},
		{"bad header name", `{"mcpServers": {"a": {"url": "http://h/", "headers": {"A B": "b"}}}}`, "a", "headers"},
		{"args type", `{"mcpServers": {"a": {"command": "x", "args": "y"}}}`, "a", "args"},
		{"env type", `{"mcpServers": {"a": {"command": "x", "env": {"A": 1}}}}`, "a", "env"},
		{"null command", `{"mcpServers": {"a": {"command": null}}}`, "a", "command"},
		{"unknown setting", `{"mcpServers": {"a": {"command": "x", "hybridctx": {"treshold": 1}}}}`, "a", "hybridctx.treshold"},
		{"settings not object", `{"mcpServers": {"a": {"command": "x", "hybridctx": 1}}}`, "a", "hybridctx"},
		{"zero threshold", `{"mcpServers": {"a": {"command": "x", "hybridctx": {"threshold": 0}}}}`, "a", "hybridctx.threshold"},
		{"bad dereference", `{"mcpServers": {"a": {"command": "x", "hybridctx": {"dereference": "yes"}}}}`, "a", "hybridctx.dereference"},
		{"twice in list", `{"mcpServers": {"a": {"command": "x", "hybridctx": {"tools": ["t", "t"]}}}}`, "a", "hybridctx.tools"},
		{"bad prefix", `{"mcpServers": {"a": {"command": "x", "hybridctx": {"prefix": "a b"}}}}`, "a", "hybridctx.prefix"},
		{"dup setting", `{"mcpServers": {"a": {"command": "x", "hybridctx": {"prefix": "p", "prefix": "q"}}}}`, "a", "hybridctx"},
		{"top unknown", `{"mcpServers": {}, "hybridctx": {"thresold": 1}}`, "", "hybridctx.thresold"},
		{"name length", `{"mcpServers": {}, "hybridctx": {"maxToolNameLength": 8}}`, "", "hybridctx.maxToolNameLength"},
		{"start timeout", `{"mcpServers": {}, "hybridctx": {"startTimeout": "soon"}}`, "", "hybridctx.startTimeout"},
		{"unset var", `{"mcpServers": {"a": {"command": "x", "env": {"K": "${NOPE}"}}}}`, "a", "env.K"},
		{"unset var in args", `{"mcpServers": {"a": {"command": "x", "args": ["${NOPE}"]}}}`, "a", "args[0]"},
		{"trailing data", `{"mcpServers": {}} {}`, "", "(file)"},
	}
	expand := func(s string) (string, error) {
		if strings.Contains(s, "${") {
			return "", errors.New("environment variable is unset")
		}
		return s, nil
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.json), &ParseOptions{Expand: expand})
			var ce *ConfigError
			if !errors.As(err, &ce) || !errors.Is(err, ErrConfig) {
				t.Fatalf("err = %v, want a *ConfigError", err)
			}
			if ce.Server != c.server || ce.Field != c.field {
				t.Errorf("server, field = %q, %q; want %q, %q (%v)", ce.Server, ce.Field, c.server, c.field, err)
			}
		})
	}
}

func TestParseErrorsHideValues(t *testing.T) {
	_, err := Parse([]byte(`{"mcpServers": {"a": {"url": "http://h/", "headers": {"X": "secret-value\n"}}}}`), nil)
	if err == nil || strings.Contains(err.Error(), "secret-value") {
		t.Fatalf("err = %v", err)
	}
}

func TestParseTooManyServers(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"mcpServers": {`)
	for i := 0; i <= MaxServers; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"s%d": {"command": "x"}`, i)
	}
	b.WriteString("}}")
	if _, err := Parse([]byte(b.String()), nil); !errors.Is(err, ErrConfig) {
		t.Fatalf("err = %v", err)
	}
}

func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{
		`{"mcpServers": {"a": {"command": "x", "args": ["${A}"], "hybridctx": {"dereference": ["t"], "prefix": ""}}}}`,
		`{"servers": {"b": {"type": "sse", "url": "http://h/x", "headers": {"K": "${B}"}}}, "hybridctx": {"startTimeout": "1s"}}`,
		`{"mcpServers": {"a": {"command": "x"}, "a": {}}}`,
		`{"mcpServers": {"a": {"url": "https://h", "hybridctx": {"tools": [], "disabledTools": ["x"], "threshold": 5}}}}`,
	} {
		f.Add([]byte(s))
	}
	expand := func(s string) (string, error) {
		if strings.Contains(s, "${") {
			return strings.ReplaceAll(s, "${", "["), nil
		}
		return s, nil
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(data, &ParseOptions{Expand: expand})
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) || !errors.Is(err, ErrConfig) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, s := range cfg.Servers {
			if seen[s.Name] {
				t.Fatalf("server %q twice", s.Name)
			}
			seen[s.Name] = true
			if (s.Command == "") == (s.URL == "") {
				t.Fatalf("server %q: command %q url %q", s.Name, s.Command, s.URL)
			}
			if s.Type != TypeStdio && s.Type != TypeHTTP && s.Type != TypeSSE {
				t.Fatalf("type %q", s.Type)
			}
			if s.PrefixSet && cutName(s.Prefix) != s.Prefix {
				t.Fatalf("prefix %q", s.Prefix)
			}
		}
	})
}
