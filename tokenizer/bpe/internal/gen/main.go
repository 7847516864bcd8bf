// Command gen writes the compact vocabularies package bpe embeds
// (o200k_base.bpe and cl100k_base.bpe) from the published rank files of
// those encodings: one "<base64 token> <rank>" line per token. The files'
// SHA-256 digests are pinned below, so a vocabulary is either the published
// one or gen refuses it.
//
// With -ranks DIR it reads DIR/<name>.tiktoken. Without it, it rebuilds each
// rank file from the reference encoder's Go source (the map literal the
// reference module compiles in, found through "go mod download"), which
// must reproduce the published file byte for byte, digest included.
//
// The output format (see docs/history.md, "Tokens"): the magic "BPEV1\n",
// the token count as a little-endian uint32, then each token in rank order
// as one length byte and its bytes. Ranks are dense from 0.
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// published maps each encoding to the SHA-256 of its published rank file.
var published = map[string]string{
	"cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
	"o200k_base":  "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}

// reference is the module whose compiled-in vocabularies rebuild the rank
// files when no -ranks directory is given.
const reference = "github.com/tiktoken-go/tokenizer@v0.10.0"

func main() {
	ranks := flag.String("ranks", "", "directory of <name>.tiktoken rank files (default: rebuild them from "+reference+")")
	out := flag.String("out", ".", "directory to write <name>.bpe into")
	flag.Parse()
	if err := run(*ranks, *out); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(ranksDir, outDir string) error {
	var refDir string
	if ranksDir == "" {
		d, err := moduleDir(reference)
		if err != nil {
			return err
		}
		refDir = d
	}
	for _, name := range []string{"cl100k_base", "o200k_base"} {
		var file []byte
		var err error
		if ranksDir != "" {
			file, err = os.ReadFile(filepath.Join(ranksDir, name+".tiktoken"))
		} else {
			file, err = rebuild(filepath.Join(refDir, "codec", name+"_vocab.go"))
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		sum := sha256.Sum256(file)
		if got := hex.EncodeToString(sum[:]); got != published[name] {
			return fmt.Errorf("%s: rank file SHA-256 %s, want the published %s", name, got, published[name])
		}
		tokens, err := parseRanks(file)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		var b bytes.Buffer
		b.WriteString("BPEV1\n")
		_ = binary.Write(&b, binary.LittleEndian, uint32(len(tokens)))
		for _, t := range tokens {
			b.WriteByte(byte(len(t)))
			b.WriteString(t)
		}
		if err := os.WriteFile(filepath.Join(outDir, name+".bpe"), b.Bytes(), 0o644); err != nil {
			return err
		}
		fmt.Printf("%s: %d tokens, %d bytes (rank file %s)\n", name, len(tokens), b.Len(), published[name][:12])
	}
	return nil
}

// parseRanks reads a rank file into its tokens indexed by rank, checking
// that ranks are dense from 0 and every token fits a length byte.
func parseRanks(file []byte) ([]string, error) {
	lines := strings.Split(strings.TrimSuffix(string(file), "\n"), "\n")
	tokens := make([]string, len(lines))
	seen := make([]bool, len(lines))
	for i, line := range lines {
		tok, rank, ok := strings.Cut(line, " ")
		if !ok {
			return nil, fmt.Errorf("line %d: no rank", i+1)
		}
		raw, err := base64.StdEncoding.DecodeString(tok)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		r, err := strconv.Atoi(rank)
		if err != nil || r < 0 || r >= len(lines) || seen[r] {
			return nil, fmt.Errorf("line %d: rank %q not dense", i+1, rank)
		}
		if len(raw) == 0 || len(raw) > 255 {
			return nil, fmt.Errorf("line %d: token of %d bytes", i+1, len(raw))
		}
		seen[r] = true
		tokens[r] = string(raw)
	}
	return tokens, nil
}

// rebuild turns the reference's map literal back into a rank file.
func rebuild(path string) ([]byte, error) {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	type entry struct {
		tok  string
		rank int
	}
	var es []entry
	var perr error
	ast.Inspect(f, func(n ast.Node) bool {
		kv, ok := n.(*ast.KeyValueExpr)
		if !ok || perr != nil {
			return perr == nil
		}
		k, ok1 := kv.Key.(*ast.BasicLit)
		v, ok2 := kv.Value.(*ast.BasicLit)
		if !ok1 || !ok2 || k.Kind != token.STRING || v.Kind != token.INT {
			perr = errors.New("unexpected map entry")
			return false
		}
		s, err := strconv.Unquote(k.Value)
		if err != nil {
			perr = err
			return false
		}
		r, err := strconv.Atoi(v.Value)
		if err != nil {
			perr = err
			return false
		}
		es = append(es, entry{s, r})
		return false
	})
	if perr != nil {
		return nil, perr
	}
	if len(es) == 0 {
		return nil, errors.New("no vocabulary entries")
	}
	sort.Slice(es, func(i, j int) bool { return es[i].rank < es[j].rank })
	var b bytes.Buffer
	for _, e := range es {
		fmt.Fprintf(&b, "%s %d\n", base64.StdEncoding.EncodeToString([]byte(e.tok)), e.rank)
	}
	return b.Bytes(), nil
}

// moduleDir downloads (or finds in the module cache) a module and returns
// its directory.
func moduleDir(mod string) (string, error) {
	out, err := exec.Command("go", "mod", "download", "-json", mod).Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s: %w", mod, err)
	}
	var m struct{ Dir, Error string }
	if err := json.Unmarshal(out, &m); err != nil {
		return "", err
	}
	if m.Dir == "" {
		return "", fmt.Errorf("go mod download %s: %s", mod, m.Error)
	}
	return m.Dir, nil
}
