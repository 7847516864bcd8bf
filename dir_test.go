package hybridctx_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/dirstore"
)

// TestDirectoryStaleAndRepair changes a committed body on disk, as an
// operator or another program could.
func TestDirectoryStaleAndRepair(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ds, err := dirstore.Open(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	bind, _ := hybridctx.NewBinding(ownerA, workspace.New(ds, ds))
	off, _ := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: 16}, nil)
	reh, _ := hybridctx.NewRehydrator(bind, nil)
	body := strings.Repeat("on disk\n", 1000)
	out, err := off.Offload(ctx, hybridctx.Call{Tool: "t", ID: "c"}, body)
	if err != nil || out.Outcome() != hybridctx.Offloaded {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "sha256", out.Ref.Hex())
	onDisk, err := os.ReadFile(path)
	if err != nil || string(onDisk) != body {
		t.Fatalf("body is not stored as a plain file named by its digest: %v", err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm()&0o277 != 0 {
		t.Fatalf("body mode %v", fi.Mode())
	}
	// Flip one byte in place, keeping the size.
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	damaged := []byte(body)
	damaged[500] ^= 1
	if err := os.WriteFile(path, damaged, 0o600); err != nil {
		t.Fatal(err)
	}
	req := hybridctx.Request{Reference: out.Ref.String(), Budget: 1 << 20}
	rh, err := reh.Rehydrate(ctx, req)
	if err != nil || rh.Outcome() != hybridctx.Stale || rh.Segment != nil {
		t.Fatalf("after a bit flip: %v %v", err, rh.Outcome())
	}
	var sink bytes.Buffer
	if rt, err := reh.RehydrateTo(ctx, req, &sink); err != nil || rt.Outcome() != hybridctx.Stale || sink.Len() != 0 {
		t.Fatalf("streamed stale read: %v %v, %d bytes released", err, rt.Outcome(), sink.Len())
	}
	// Offloading the same content again repairs it.
	again, err := off.Offload(ctx, hybridctx.Call{Tool: "t", ID: "c"}, body)
	if err != nil || again.Reason() != hybridctx.ReplacedCorruptBody {
		t.Fatalf("repair: %v %v", err, again.Reason())
	}
	rh, err = reh.Rehydrate(ctx, req)
	if err != nil || rh.Outcome() != hybridctx.Resolved || string(rh.Segment.Bytes()) != body {
		t.Fatalf("after repair: %v %v", err, rh.Outcome())
	}
	// Removing the file makes it missing.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if rh, _ := reh.Rehydrate(ctx, req); rh.Outcome() != hybridctx.Missing {
		t.Fatalf("after removal: %v", rh.Outcome())
	}
}
