package gateway

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// parseServerSettings reads a server's "hybridctx" object into s. Unknown
// keys are errors: a misspelt setting must not be silently ignored.
func parseServerSettings(s *Server, data json.RawMessage) error {
	bad := func(f, problem string) error {
		return &ConfigError{Server: s.Name, Field: "hybridctx" + f, Problem: problem}
	}
	fs, err := fields(data)
	if err != nil {
		return bad("", "must be a JSON object with unique keys")
	}
	for _, f := range fs {
		switch f.key {
		case "threshold":
			n, err := positive(f.val)
			if err != nil {
				return bad(".threshold", err.Error())
			}
			s.Threshold = n
		case "tools", "disabledTools":
			list, err := names(f.val)
			if err != nil {
				return bad("."+f.key, err.Error())
			}
			if f.key == "tools" {
				s.Tools = list
			} else {
				s.DisabledTools = list
			}
		case "dereference":
			var all bool
			if json.Unmarshal(f.val, &all) == nil {
				s.Dereference = Dereference{All: all}
				continue
			}
			list, err := names(f.val)
			if err != nil {
				return bad(".dereference", "must be true, false or a list of tool names")
			}
			s.Dereference = Dereference{Tools: list}
		case "prefix":
			var p string
			if json.Unmarshal(f.val, &p) != nil {
				return bad(".prefix", "must be a string")
			}
			if p != cutName(p) {
				return bad(".prefix", "may hold only A-Z, a-z, 0-9, _ and -")
			}
			s.Prefix, s.PrefixSet = p, true
		default:
			return bad("."+f.key, "unknown setting (known: threshold, tools, disabledTools, dereference, prefix)")
		}
	}
	return nil
}

// parseSettings reads the top-level "hybridctx" object.
func parseSettings(data json.RawMessage) (Settings, error) {
	var st Settings
	bad := func(f, problem string) (Settings, error) {
		return Settings{}, &ConfigError{Field: "hybridctx" + f, Problem: problem}
	}
	fs, err := fields(data)
	if err != nil {
		return bad("", "must be a JSON object with unique keys")
	}
	for _, f := range fs {
		var n int64
		var err error
		if f.key != "startTimeout" {
			n, err = positive(f.val)
		}
		switch f.key {
		case "threshold":
			st.Threshold = n
		case "resultThreshold":
			st.ResultThreshold = n
		case "budget":
			st.Budget = n
		case "dereferenceBudget":
			st.DereferenceBudget = n
		case "maxToolNameLength":
			if err == nil && (n < MinToolNameLength || n > 128) {
				err = fmt.Errorf("must be from %d to 128", MinToolNameLength)
			}
			st.MaxToolNameLength = int(n)
		case "startTimeout":
			var s string
			if json.Unmarshal(f.val, &s) != nil {
				return bad(".startTimeout", `must be a duration such as "30s"`)
			}
			d, perr := time.ParseDuration(s)
			if perr != nil || d <= 0 {
				return bad(".startTimeout", `must be a positive duration such as "30s"`)
			}
			st.StartTimeout = d
		default:
			return bad("."+f.key, "unknown setting (known: threshold, resultThreshold, budget, dereferenceBudget, maxToolNameLength, startTimeout)")
		}
		if err != nil {
			return bad("."+f.key, err.Error())
		}
	}
	return st, nil
}

// positive reads a JSON integer > 0.
func positive(v json.RawMessage) (int64, error) {
	var n int64
	if err := json.Unmarshal(v, &n); err != nil || n <= 0 {
		return 0, fmt.Errorf("must be an integer > 0")
	}
	return n, nil
}

// names reads a JSON array of non-empty, distinct strings.
func names(v json.RawMessage) ([]string, error) {
	var list []string
	if err := json.Unmarshal(v, &list); err != nil || list == nil {
		return nil, fmt.Errorf("must be a list of tool names")
	}
	seen := map[string]bool{}
	for _, n := range list {
		if strings.TrimSpace(n) == "" {
			return nil, fmt.Errorf("holds an empty name")
		}
		if seen[n] {
			return nil, fmt.Errorf("names a tool twice")
		}
		seen[n] = true
	}
	return list, nil
}
