package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/mcpproxy"
)

// The --tokens-file format (docs/cli.md, "The tokens file"): one credential
// per line, "SESSION TOKEN", the two separated by spaces or tabs; blank
// lines and lines starting with "#" are skipped. SESSION is the owner
// session of what that token's clients store (any valid session name;
// tokens naming the same session are one credential, as when rotating);
// TOKEN is at least mcpproxy.MinTokenBytes and at most maxTokenBytes
// visible ASCII characters, and appears once in the file. Errors name the
// line, never what is on it.

// Limits of the tokens file.
const (
	maxTokensFileBytes = 1 << 20
	maxTokenBytes      = 4096
)

// errTokensFile is wrapped by every error of a tokens file's content.
var errTokensFile = errors.New("invalid tokens file")

// parseTokens reads the credentials of a tokens file.
func parseTokens(data []byte) ([]mcpproxy.Credential, error) {
	var creds []mcpproxy.Credential
	lineOf := map[string]int{} // token → its line
	for n := 1; len(data) > 0; n++ {
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		trimmed := bytes.TrimLeft(line, " \t")
		if len(trimmed) == 0 || trimmed[0] == '#' {
			continue
		}
		fields := strings.FieldsFunc(string(line), func(r rune) bool { return r == ' ' || r == '\t' })
		if len(fields) != 2 {
			return nil, fmt.Errorf("%w: line %d: want SESSION TOKEN, separated by spaces", errTokensFile, n)
		}
		session, token := fields[0], fields[1]
		if (artifact.Owner{User: "u", Workflow: "w", Session: session}).Validate() != nil {
			return nil, fmt.Errorf("%w: line %d: the session name is not valid (at most %d bytes of text, no control characters)",
				errTokensFile, n, artifact.MaxOwnerFieldLen)
		}
		if len(token) < mcpproxy.MinTokenBytes || len(token) > maxTokenBytes || !visibleASCII(token) {
			return nil, fmt.Errorf("%w: line %d: the token must be %d to %d visible ASCII characters",
				errTokensFile, n, mcpproxy.MinTokenBytes, maxTokenBytes)
		}
		if first, ok := lineOf[token]; ok {
			return nil, fmt.Errorf("%w: line %d repeats the token of line %d", errTokensFile, n, first)
		}
		lineOf[token] = n
		creds = append(creds, mcpproxy.Credential{Name: session, Token: token})
	}
	if len(creds) == 0 {
		return nil, fmt.Errorf("%w: it holds no token", errTokensFile)
	}
	return creds, nil
}

func visibleASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// readTokensFile reads and parses a tokens file, which must be readable by
// its owner only (it holds secrets, like an SSH key). Every error is a usage
// error naming the file and a line, never a token.
func readTokensFile(path string) ([]mcpproxy.Credential, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, usagef("--tokens-file %s: cannot read the file", path)
	}
	defer f.Close()
	st, err := f.Stat()
	switch {
	case err != nil || !st.Mode().IsRegular():
		return nil, usagef("--tokens-file %s: not a regular file", path)
	case st.Mode().Perm()&0o077 != 0:
		return nil, usagef("--tokens-file %s: the file is open to group or others; chmod 600 it", path)
	case st.Size() > maxTokensFileBytes:
		return nil, usagef("--tokens-file %s: the file is over %d bytes", path, maxTokensFileBytes)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxTokensFileBytes+1))
	if err != nil || len(data) > maxTokensFileBytes {
		return nil, usagef("--tokens-file %s: cannot read the file", path)
	}
	creds, err := parseTokens(data)
	if err != nil {
		return nil, &exitError{code: ExitUsage, msg: fmt.Sprintf("--tokens-file %s: %v", path, err), err: err}
	}
	return creds, nil
}

// mcpCredentials returns the bearer tokens the listener accepts: the one
// of --token-env (the credential ""), the ones of --tokens-file, or none.
func (a *app) mcpCredentials(f mcpHTTPFlags) ([]mcpproxy.Credential, error) {
	if f.tokensFile != "" {
		return readTokensFile(f.tokensFile)
	}
	token, err := a.mcpToken(f)
	if err != nil || token == "" {
		return nil, err
	}
	return []mcpproxy.Credential{{Token: token}}, nil
}
