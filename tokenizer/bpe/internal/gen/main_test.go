package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseRanks(t *testing.T) {
	toks, err := parseRanks([]byte("IQ== 1\nYQ== 0\n"))
	if err != nil || len(toks) != 2 || toks[0] != "a" || toks[1] != "!" {
		t.Fatalf("%q %v", toks, err)
	}
	for _, bad := range []string{"IQ==\n", "!!! 0\n", "IQ== 1\n", "IQ== 0\nYQ== 0\n", "IQ== x\n", " 0\n", "IQ== -1\n"} {
		if _, err := parseRanks([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	long := strings.Repeat("QUFB", 86) // 258 bytes
	if _, err := parseRanks([]byte(long + " 0\n")); err == nil {
		t.Error("a token of 258 bytes parsed")
	}
}

// TestRunRefusesOtherFiles: a rank file whose digest is not the published
// one is refused, and nothing is written.
func TestRunRefusesOtherFiles(t *testing.T) {
	dir, out := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cl100k_base.tiktoken"), []byte("IQ== 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := run(dir, out)
	if err == nil || !strings.Contains(err.Error(), "SHA-256") {
		t.Fatalf("%v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "cl100k_base.bpe")); err == nil {
		t.Fatal("wrote a vocabulary from an unpublished file")
	}
	if err := run(filepath.Join(dir, "missing"), out); err == nil {
		t.Fatal("no rank files, no error")
	}
}

// TestRebuild: the reference's map literal turns back into a rank file.
func TestRebuild(t *testing.T) {
	src := filepath.Join(t.TempDir(), "v.go")
	lit := "package codec\n\nvar v = map[string]uint{\n\t\"a\": 1,\n\t\"!\": 0,\n}\n"
	if err := os.WriteFile(src, []byte(lit), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := rebuild(src)
	if err != nil || string(b) != "IQ== 0\nYQ== 1\n" {
		t.Fatalf("%q %v", b, err)
	}
	if err := os.WriteFile(src, []byte("package codec\nvar v = map[string]uint{\"a\": x}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := rebuild(src); err == nil {
		t.Error("a non-literal rank rebuilt")
	}
}
