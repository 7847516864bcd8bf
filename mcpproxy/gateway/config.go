// Package gateway fronts many MCP servers with one proxy (docs/gateway.md):
// one workspace, one owner, one set of read tools, every upstream's tools
// under a namespaced name, results bounded as mcpproxy bounds them, and
// stored results passed to tools by reference where a server allows it.
//
// This file reads the gateway's configuration: the MCP clients' own
// "mcpServers" (or VS Code's "servers") format, with an optional
// "hybridctx" object per server and one at the top level.
package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/hybridctx/hybridctx/internal/httpguard"
)

// ErrConfig is wrapped by every error about an unusable configuration.
var ErrConfig = errors.New("invalid gateway configuration")

// ConfigError says which server and field of a configuration is wrong.
// It never holds a field's value (values may be secrets).
type ConfigError struct {
	// Server is the server's name, empty for a top-level field.
	Server string
	// Field is the field's path, for example "hybridctx.threshold" or
	// "env.TOKEN".
	Field string
	// Problem says what is wrong, in words.
	Problem string
}

func (e *ConfigError) Error() string {
	if e.Server == "" {
		return fmt.Sprintf("gateway config: %s: %s", e.Field, e.Problem)
	}
	return fmt.Sprintf("gateway config: server %q: %s: %s", e.Server, e.Field, e.Problem)
}

// Unwrap makes every ConfigError match ErrConfig.
func (e *ConfigError) Unwrap() error { return ErrConfig }

// Transport types of a server entry.
const (
	TypeStdio = "stdio"
	TypeHTTP  = "http"
	TypeSSE   = "sse"
)

// Limits of a configuration.
const (
	// MaxServers is the most servers one configuration may name.
	MaxServers = 256
	// DefaultMaxToolNameLength is the longest exposed tool name when the
	// top-level maxToolNameLength is not set (docs/gateway.md).
	DefaultMaxToolNameLength = 48
	// MinToolNameLength is the smallest maxToolNameLength accepted: room
	// for a cut name and its hash.
	MinToolNameLength = 16
	// DefaultDereferenceBudget is the most bytes one argument passed by
	// reference may hold (8 MiB).
	DefaultDereferenceBudget = 8 << 20
	// DefaultStartTimeout bounds an upstream's start and initialize.
	DefaultStartTimeout = 30 * time.Second
)

// Config is a parsed gateway configuration.
type Config struct {
	// Servers are the enabled servers, in the order the file lists them.
	Servers []Server
	// Settings is the top-level "hybridctx" object.
	Settings Settings
}

// Settings are the gateway's own settings (the top-level "hybridctx"
// object). Zero means the default (or the command line's flag).
type Settings struct {
	Threshold         int64         // per-block inline threshold
	ResultThreshold   int64         // whole-result bound
	Budget            int64         // read cap of the read tools
	MaxToolNameLength int           // longest exposed tool name
	DereferenceBudget int64         // most bytes one dereferenced argument holds
	StartTimeout      time.Duration // bound on an upstream's start
}

// Server is one configured upstream.
type Server struct {
	Name    string
	Type    string // TypeStdio, TypeHTTP or TypeSSE
	Command string
	Args    []string
	Env     map[string]string
	Cwd     string
	URL     string
	Headers map[string]string
	// Threshold overrides the per-block inline threshold for this server's
	// results (0: the gateway's).
	Threshold int64
	// Tools, when set, is the allow-list of the server's tool names;
	// DisabledTools is a deny-list applied after it.
	Tools, DisabledTools []string
	// Dereference says which tools get reference arguments replaced by
	// the bodies they name (docs/gateway.md).
	Dereference Dereference
	// Prefix is the name put before the server's tools and prompts; it is
	// the server's name unless the entry sets "prefix". An empty Prefix
	// with PrefixSet exposes the names unchanged.
	Prefix    string
	PrefixSet bool
}

// Dereference is a server's "dereference" setting: true for all of its
// tools, or a list of tool names.
type Dereference struct {
	All   bool
	Tools []string
}

// Applies reports whether tool (the server's own name) dereferences.
func (d Dereference) Applies(tool string) bool {
	if d.All {
		return true
	}
	for _, t := range d.Tools {
		if t == tool {
			return true
		}
	}
	return false
}

// Allowed reports whether the server's tool passes its allow- and
// deny-lists.
func (s *Server) Allowed(tool string) bool {
	if s.Tools != nil && !contains(s.Tools, tool) {
		return false
	}
	return !contains(s.DisabledTools, tool)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// ParseOptions tune Parse. Nil means defaults.
type ParseOptions struct {
	// Expand, when set, expands "${VAR}" in env and header values and in
	// args; nil leaves them as they are. The command line passes its own
	// expansion from the environment (the library reads no environment).
	Expand func(string) (string, error)
}

// Parse reads a configuration. Every error is a *ConfigError (wrapping
// ErrConfig) naming the server and the field.
func Parse(data []byte, opts *ParseOptions) (*Config, error) {
	top, err := fields(data)
	if err != nil {
		return nil, &ConfigError{Field: "(file)", Problem: "must be one JSON object with unique keys"}
	}
	var servers []field
	var key string
	cfg := &Config{}
	for _, f := range top {
		switch f.key {
		case "mcpServers", "servers":
			if key != "" {
				return nil, &ConfigError{Field: f.key, Problem: `give "mcpServers" or "servers", not both`}
			}
			key = f.key
			var dup *dupKeyError
			if servers, err = fields(f.val); errors.As(err, &dup) {
				return nil, &ConfigError{Server: dup.key, Field: "(name)", Problem: "two servers have this name"}
			} else if err != nil {
				return nil, &ConfigError{Field: f.key, Problem: "must be an object of servers by name"}
			}
		case "hybridctx":
			if cfg.Settings, err = parseSettings(f.val); err != nil {
				return nil, err
			}
		}
	}
	if key == "" {
		return nil, &ConfigError{Field: "mcpServers", Problem: `missing: the file has no "mcpServers" (or "servers") object`}
	}
	if len(servers) > MaxServers {
		return nil, &ConfigError{Field: key, Problem: fmt.Sprintf("more than %d servers", MaxServers)}
	}
	var expand func(string) (string, error)
	if opts != nil {
		expand = opts.Expand
	}
	for _, f := range servers {
		if strings.TrimSpace(f.key) == "" {
			return nil, &ConfigError{Field: key, Problem: "a server has an empty name"}
		}
		s, enabled, err := parseServer(f.key, f.val, expand)
		if err != nil {
			return nil, err
		}
		if enabled {
			cfg.Servers = append(cfg.Servers, s)
		}
	}
	return cfg, nil
}

// field is one member of a JSON object, in file order.
type field struct {
	key string
	val json.RawMessage
}

// dupKeyError is a key an object holds twice.
type dupKeyError struct{ key string }

func (e *dupKeyError) Error() string { return fmt.Sprintf("the key %q appears twice", e.key) }

// fields returns the members of the JSON object data in order; a
// duplicate key is an error (encoding/json would keep the last silently).
func fields(data []byte) ([]field, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not an object")
	}
	var out []field
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if seen[k] {
			return nil, &dupKeyError{k}
		}
		seen[k] = true
		out = append(out, field{k, v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("data after the object")
	}
	return out, nil
}

// parseServer reads one server entry. Fields the clients use that the
// gateway has no use for ("timeout", "autoApprove", …) are ignored;
// enabled is false for an entry with "disabled": true.
func parseServer(name string, data json.RawMessage, expand func(string) (string, error)) (s Server, enabled bool, err error) {
	bad := func(f, problem string) (Server, bool, error) {
		return Server{}, false, &ConfigError{Server: name, Field: f, Problem: problem}
	}
	fs, err := fields(data)
	if err != nil {
		return bad("(entry)", "must be a JSON object with unique keys")
	}
	s = Server{Name: name, Prefix: name}
	enabled = true
	for _, f := range fs {
		var err error
		switch f.key {
		case "type":
			err = json.Unmarshal(f.val, &s.Type)
		case "command":
			err = json.Unmarshal(f.val, &s.Command)
		case "args":
			err = json.Unmarshal(f.val, &s.Args)
		case "env":
			err = json.Unmarshal(f.val, &s.Env)
		case "cwd":
			err = json.Unmarshal(f.val, &s.Cwd)
		case "url":
			err = json.Unmarshal(f.val, &s.URL)
		case "headers":
			err = json.Unmarshal(f.val, &s.Headers)
		case "disabled":
			var off bool
			err = json.Unmarshal(f.val, &off)
			enabled = !off
		case "hybridctx":
			if e := parseServerSettings(&s, f.val); e != nil {
				return Server{}, false, e
			}
		}
		if err != nil || isNull(f.val) && f.key != "hybridctx" {
			return bad(f.key, "has the wrong type")
		}
	}
	if e := checkTransport(&s); e != nil {
		return Server{}, false, e
	}
	if e := expandAll(&s, expand); e != nil {
		return Server{}, false, e
	}
	return s, enabled, nil
}

func isNull(v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == "null" }

// checkTransport settles the entry's type and checks it has what the type
// needs, and nothing of the other.
func checkTransport(s *Server) error {
	bad := func(f, problem string) error { return &ConfigError{Server: s.Name, Field: f, Problem: problem} }
	switch {
	case s.Command != "" && s.URL != "":
		return bad("command", `give "command" or "url", not both`)
	case s.Type == "":
		if s.URL != "" {
			s.Type = TypeHTTP
		} else {
			s.Type = TypeStdio
		}
	case s.Type == "streamable-http" || s.Type == "streamableHttp":
		s.Type = TypeHTTP
	}
	switch s.Type {
	case TypeStdio:
		if strings.TrimSpace(s.Command) == "" {
			return bad("command", "missing: a stdio server needs a command")
		}
		if s.Headers != nil {
			return bad("headers", "only a URL server takes headers")
		}
	case TypeHTTP, TypeSSE:
		if s.URL == "" {
			return bad("url", "missing: an http or sse server needs a url")
		}
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return bad("url", "must be an http:// or https:// URL")
		}
		if s.Args != nil || s.Env != nil || s.Cwd != "" {
			return bad("args", "only a stdio server takes args, env or cwd")
		}
	default:
		return bad("type", `must be "stdio", "http" or "sse"`)
	}
	for k, v := range s.Headers {
		if !httpguard.HeaderName(k) {
			return bad("headers", "a header name is not a valid HTTP token")
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return bad("headers."+k, "the value may not hold line breaks")
		}
	}
	return nil
}

// expandAll expands ${VAR} in args, env and header values. Errors name the
// field, never the value.
func expandAll(s *Server, expand func(string) (string, error)) error {
	if expand == nil {
		return nil
	}
	for i, a := range s.Args {
		v, err := expand(a)
		if err != nil {
			return &ConfigError{Server: s.Name, Field: fmt.Sprintf("args[%d]", i), Problem: err.Error()}
		}
		s.Args[i] = v
	}
	for _, m := range []struct {
		name string
		vals map[string]string
	}{{"env", s.Env}, {"headers", s.Headers}} {
		for k, val := range m.vals {
			v, err := expand(val)
			if err != nil {
				return &ConfigError{Server: s.Name, Field: m.name + "." + k, Problem: err.Error()}
			}
			if m.name == "headers" && strings.ContainsAny(v, "\r\n\x00") {
				return &ConfigError{Server: s.Name, Field: m.name + "." + k, Problem: "the value may not hold line breaks"}
			}
			m.vals[k] = v
		}
	}
	return nil
}
