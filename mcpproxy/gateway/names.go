package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// ErrNameCollision means two servers whose prefix is "" expose the same
// name, or such a name collides with another exposed name: the gateway
// refuses to start rather than hide one of them.
var ErrNameCollision = errors.New("exposed names collide")

// Separator joins a server's prefix and its tool's name.
const Separator = "__"

// hashLen is how many hex digits of SHA-256 a shortened name ends with.
const hashLen = 8

// cutName keeps the characters of s that every model API accepts in a
// tool name: A-Z, a-z, 0-9, _ and -.
func cutName(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// shorten returns base cut so that, with "_" and a hash of seed, it is at
// most max bytes.
func shorten(base, seed string, max int) string {
	sum := sha256.Sum256([]byte(seed))
	h := hex.EncodeToString(sum[:])[:hashLen]
	keep := max - hashLen - 1
	if keep > len(base) {
		keep = len(base)
	}
	if keep < 0 {
		keep = 0
	}
	return base[:keep] + "_" + h
}

// Renamed is one name the gateway shortened or made unique.
type Renamed struct {
	Server, Name, Exposed string
}

// namer gives each (server, name) pair its exposed name, once: a server
// that restarts gets the names it had, and no name is ever reused for
// another pair. One namer serves tools, another prompts.
type namer struct {
	max     int
	mu      sync.Mutex
	byPair  map[string]string // server\x00name → exposed
	byName  map[string]string // exposed → server\x00name
	renamed []Renamed         // every name shortened, in order
}

func newNamer(max int, reserved ...string) *namer {
	n := &namer{max: max, byPair: map[string]string{}, byName: map[string]string{}}
	for _, r := range reserved {
		n.byName[r] = "\x00reserved"
	}
	return n
}

// name returns the exposed name of the server's name: prefix + "__" +
// name, cut to the allowed characters, shortened with a hash when it is
// too long or already taken. With prefix "" the name is kept as it is, and
// a collision is ErrNameCollision.
func (n *namer) name(server *Server, name string) (string, error) {
	pair := server.Name + "\x00" + name
	n.mu.Lock()
	defer n.mu.Unlock()
	if e, ok := n.byPair[pair]; ok {
		return e, nil
	}
	if server.PrefixSet && server.Prefix == "" {
		if other, taken := n.byName[name]; taken {
			return "", fmt.Errorf("%w: server %q's %q is taken by %s", ErrNameCollision, server.Name, name, describe(other))
		}
		n.take(pair, name)
		return name, nil
	}
	base := cutName(server.Prefix) + Separator + cutName(name)
	exposed := base
	for i := 0; len(exposed) > n.max || n.byName[exposed] != "" || cutName(name) == ""; i++ {
		seed := pair
		if i > 0 {
			seed = fmt.Sprintf("%s\x00%d", pair, i)
		}
		exposed = shorten(base, seed, n.max)
		if n.byName[exposed] == "" {
			break
		}
	}
	if exposed != base {
		n.renamed = append(n.renamed, Renamed{Server: server.Name, Name: name, Exposed: exposed})
	}
	n.take(pair, exposed)
	return exposed, nil
}

func (n *namer) take(pair, exposed string) {
	n.byPair[pair] = exposed
	n.byName[exposed] = pair
}

// all returns every name shortened so far.
func (n *namer) all() []Renamed {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]Renamed(nil), n.renamed...)
}

func describe(pair string) string {
	if pair == "\x00reserved" {
		return "the gateway's own tool"
	}
	server, name, _ := strings.Cut(pair, "\x00")
	return fmt.Sprintf("server %q's %q", server, name)
}

// fromServer is the description of a tool or prompt of server.
func fromServer(server, desc string) string {
	if desc == "" {
		return fmt.Sprintf("(From the MCP server %q.)", server)
	}
	return fmt.Sprintf("(From the MCP server %q.) %s", server, desc)
}
