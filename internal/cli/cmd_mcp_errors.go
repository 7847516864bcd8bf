package cli

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/hybridctx/hybridctx/mcpproxy"
)

// The one line of a proxy run that ended from the upstream side says what
// ended and why in fixed words: never a URL, a header, a server's bytes or
// a Go error's text. See docs/security.md, "The listener and the upstream".

// upstreamLine is the categorical line for err, which wraps
// mcpproxy.ErrUpstreamClosed or mcpproxy.ErrUpstreamUnreachable.
func upstreamLine(err error) string {
	what := mcpproxy.ErrUpstreamClosed.Error()
	if errors.Is(err, mcpproxy.ErrUpstreamUnreachable) {
		what = mcpproxy.ErrUpstreamUnreachable.Error()
	}
	if why := upstreamCause(err); why != "" {
		return what + ": " + why
	}
	return what
}

// upstreamCause names the category of an upstream failure ("" when none
// is known).
func upstreamCause(err error) string {
	var exit *exec.ExitError
	var dns *net.DNSError
	var ne net.Error
	var cert *tls.CertificateVerificationError
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var rec tls.RecordHeaderError
	switch {
	case errors.As(err, &exit):
		if exit.Exited() {
			return fmt.Sprintf("exit status %d", exit.ExitCode())
		}
		return "killed by a signal"
	case mcpproxy.UpstreamCategory(err) != nil:
		return mcpproxy.UpstreamCategory(err).Error()
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "no route to the host"
	case errors.As(err, &dns):
		return "the host name does not resolve"
	case errors.As(err, &cert), errors.As(err, &unknown), errors.As(err, &host):
		return "the server's TLS certificate is not trusted"
	case errors.As(err, &rec):
		return "the server does not speak TLS"
	case errors.As(err, &ne) && ne.Timeout():
		return "timed out"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the connection was closed"
	}
	return ""
}

// flagError is the usage error for a flag the command line got wrong: a
// value that does not parse says which kind of value the flag takes,
// never the parser's error.
func flagError(c *cobra.Command, err error) error {
	var inv *pflag.InvalidValueError
	if errors.As(err, &inv) {
		return usagef("--%s: the value is not %s (see %q)", inv.GetFlag().Name, valueKind(inv.GetFlag().Value.Type()), c.CommandPath()+" --help")
	}
	return usagef("%s (see %q)", oneLine(err.Error()), c.CommandPath()+" --help")
}

// valueKind names the values a flag of type typ takes.
func valueKind(typ string) string {
	switch typ {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "a whole number"
	case "float32", "float64":
		return "a number"
	case "bool":
		return "true or false"
	case "duration":
		return "a duration such as 90s or 30m"
	}
	return "valid"
}
