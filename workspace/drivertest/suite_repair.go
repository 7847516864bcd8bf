package drivertest

import (
	"bytes"
	"errors"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
)

var repairTests = []subtest{
	{"CorruptBodyDetectedAndReplaced", testCorruptBody},
	{"StoredSizeDiffers", testStoredSizeDiffers},
}

// flipped returns a copy of data with one bit flipped at i.
func flipped(data []byte, i int) []byte {
	c := bytes.Clone(data)
	c[i] ^= 0x01
	return c
}

func testCorruptBody(e *env) {
	e.needTamper()
	data := content(20, 300_000)
	size := int64(len(data))
	ref := e.put(data)
	for _, at := range []int{0, len(data) / 2, len(data) - 1} {
		e.tamper(ref.Hex(), flipped(data, at))
		wantErr(e.t, "VerifyBody of a corrupt body", e.s.VerifyBody(e.ctx, ref, size), workspace.ErrCorrupt)
		wantErr(e.t, "VerifyBody(-1) of a corrupt body", e.s.VerifyBody(e.ctx, ref, -1), workspace.ErrCorrupt)
		got, err := e.s.ReadVerified(e.ctx, ref, size, 0, 10)
		wantErr(e.t, "ReadVerified of a corrupt body", err, workspace.ErrCorrupt)
		if got != nil {
			e.t.Errorf("ReadVerified of a corrupt body released %d bytes", len(got))
		}
		var buf bytes.Buffer
		n, err := e.s.CopyVerified(e.ctx, ref, size, 0, size, &buf)
		wantErr(e.t, "CopyVerified of a corrupt body", err, workspace.ErrCorrupt)
		if n != 0 || buf.Len() != 0 {
			e.t.Errorf("CopyVerified of a corrupt body wrote %d bytes", buf.Len())
		}
		ref2, _, res, err := Put(e.ctx, e.s, bytes.NewReader(data), nil)
		if err != nil || res != workspace.Replaced || ref2 != ref {
			e.t.Fatalf("Put over a corrupt body = %v, %v; want replaced", res, err)
		}
		if err := e.s.VerifyBody(e.ctx, ref, size); err != nil {
			e.t.Fatalf("VerifyBody after the repair: %v", err)
		}
		e.mustRead(ref, data)
		if _, _, res, err := Put(e.ctx, e.s, bytes.NewReader(data), nil); err != nil || res != workspace.Existing {
			e.t.Fatalf("Put after the repair = %v, %v; want existing", res, err)
		}
	}
	// The Ingest + Commit path repairs too.
	e.tamper(ref.Hex(), flipped(data, 7))
	p, _, err := e.s.Ingest(e.ctx, bytes.NewReader(data), nil)
	if err != nil {
		e.t.Fatalf("Ingest: %v", err)
	}
	if res, err := p.Commit(e.ctx); err != nil || res != workspace.Replaced {
		e.t.Fatalf("Pending.Commit over a corrupt body = %v, %v; want replaced", res, err)
	}
	e.mustRead(ref, data)
	e.wantKeys(ref)
}

func testStoredSizeDiffers(e *env) {
	e.needTamper()
	data := content(21, 10_000)
	size := int64(len(data))
	ref := e.put(data)
	s, in := e.instrumented()
	for _, stored := range [][]byte{append(bytes.Clone(data), 'x'), data[:len(data)-1], nil} {
		e.tamper(ref.Hex(), stored)
		in.Reset()
		err := s.VerifyBody(e.ctx, ref, size)
		wantErr(e.t, "VerifyBody of a body of another size", err, workspace.ErrCorrupt)
		if c := in.Counts(); c.Opens != 0 || c.BytesRead != 0 {
			e.t.Errorf("VerifyBody of a body of another size opened it %d times and read %d bytes; want 0", c.Opens, c.BytesRead)
		}
		got, err := s.ReadVerified(e.ctx, ref, size, 0, size)
		wantErr(e.t, "ReadVerified of a body of another size", err, workspace.ErrCorrupt)
		var buf bytes.Buffer
		n, cerr := s.CopyVerified(e.ctx, ref, size, 0, size, &buf)
		wantErr(e.t, "CopyVerified of a body of another size", cerr, workspace.ErrCorrupt)
		if got != nil || n != 0 || buf.Len() != 0 {
			e.t.Errorf("a body of another size released %d and %d bytes", len(got), buf.Len())
		}
		if c := in.Counts(); c.BytesRead != 0 {
			e.t.Errorf("reading a body of another size read %d bytes before failing; want 0", c.BytesRead)
		}
		ref2, _, res, err := Put(e.ctx, e.s, bytes.NewReader(data), nil)
		if err != nil || res != workspace.Replaced || ref2 != ref {
			e.t.Fatalf("Put over a body of another size = %v, %v; want replaced", res, err)
		}
		e.mustRead(ref, data)
	}
	// Stored bytes that match another digest are corrupt under this one.
	other := []byte("another body entirely")
	e.tamper(ref.Hex(), other)
	if err := e.s.VerifyBody(e.ctx, ref, -1); !errors.Is(err, workspace.ErrCorrupt) {
		e.t.Fatalf("VerifyBody of swapped bytes: %v, want ErrCorrupt", err)
	}
	if _, err := e.s.StatBody(e.ctx, artifact.RefOf(other)); err == nil {
		e.t.Fatalf("swapped bytes became visible under their own digest")
	}
}
