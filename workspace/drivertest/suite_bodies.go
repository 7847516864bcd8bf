package drivertest

import (
	"bytes"
	"errors"
	"math"
	"strings"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/driver"
)

var bodyTests = []subtest{
	{"PutCreatedThenExisting", testPutCreatedThenExisting},
	{"KnownVectorABC", testKnownVector},
	{"EmptyBody", testEmptyBody},
	{"StatWithoutReading", testStatWithoutReading},
	{"ReadVerifiedRanges", testReadVerifiedRanges},
	{"ReadVerifiedInvalidRanges", testReadVerifiedInvalidRanges},
	{"CopyVerifiedRanges", testCopyVerifiedRanges},
	{"AbsentBody", testAbsentBody},
	{"HostileKeysNotFound", testHostileKeys},
	{"IngestMaxBytes", testIngestMaxBytes},
	{"PendingDiscard", testPendingDiscard},
	{"WriterAbort", testWriterAbort},
	{"CommitExistThenReplace", testCommitExistThenReplace},
	{"ListBodies", testListBodies},
	{"DeleteBody", testDeleteBody},
}

func testPutCreatedThenExisting(e *env) {
	data := content(1, 10_000)
	ref1, n1, res1, err := Put(e.ctx, e.s, bytes.NewReader(data), nil)
	if err != nil || res1 != workspace.Created {
		e.t.Fatalf("first Put = %v, %v; want created", res1, err)
	}
	ref2, n2, res2, err := Put(e.ctx, e.s, bytes.NewReader(data), nil)
	if err != nil || res2 != workspace.Existing {
		e.t.Fatalf("second Put = %v, %v; want existing", res2, err)
	}
	if ref1 != ref2 || ref1 != artifact.RefOf(data) || n1 != n2 || n1 != int64(len(data)) {
		e.t.Fatalf("Puts gave %v/%d and %v/%d, want %v/%d", ref1, n1, ref2, n2, artifact.RefOf(data), len(data))
	}
	p, n, err := e.s.Ingest(e.ctx, bytes.NewReader(data), nil)
	if err != nil {
		e.t.Fatalf("Ingest: %v", err)
	}
	if p.Ref() != ref1 || p.Size() != n1 || n != n1 {
		e.t.Fatalf("Ingest = %v/%d (read %d), want %v/%d", p.Ref(), p.Size(), n, ref1, n1)
	}
	if res, err := p.Commit(e.ctx); err != nil || res != workspace.Existing {
		e.t.Fatalf("Pending.Commit of existing bytes = %v, %v; want existing", res, err)
	}
	e.wantKeys(ref1)
	e.mustRead(ref1, data)
}

func testKnownVector(e *env) {
	const abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	ref := e.put([]byte("abc"))
	if ref.Hex() != abc {
		e.t.Fatalf(`Put("abc") = %s, want %s`, ref.Hex(), abc)
	}
	info, err := e.b.Stat(e.ctx, abc)
	if err != nil || info.Key != abc || info.Size != 3 {
		e.t.Fatalf("driver Stat(abc) = %+v, %v", info, err)
	}
	e.mustRead(ref, []byte("abc"))
}

func testEmptyBody(e *env) {
	const empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	ref, n, res, err := Put(e.ctx, e.s, strings.NewReader(""), nil)
	if err != nil || res != workspace.Created || n != 0 || ref.Hex() != empty {
		e.t.Fatalf(`Put("") = %s, %d, %v, %v; want %s, 0, created`, ref.Hex(), n, res, err, empty)
	}
	info, err := e.s.StatBody(e.ctx, ref)
	if err != nil || info.Size != 0 || info.Key != empty {
		e.t.Fatalf("StatBody(empty) = %+v, %v", info, err)
	}
	if err := e.s.VerifyBody(e.ctx, ref, 0); err != nil {
		e.t.Fatalf("VerifyBody(empty): %v", err)
	}
	got, err := e.s.ReadVerified(e.ctx, ref, 0, 0, 0)
	if err != nil || len(got) != 0 {
		e.t.Fatalf("ReadVerified(empty) = %q, %v", got, err)
	}
	var buf bytes.Buffer
	if n, err := e.s.CopyVerified(e.ctx, ref, 0, 0, 0, &buf); err != nil || n != 0 || buf.Len() != 0 {
		e.t.Fatalf("CopyVerified(empty) = %d, %v", n, err)
	}
	if _, _, res, err := Put(e.ctx, e.s, strings.NewReader(""), nil); err != nil || res != workspace.Existing {
		e.t.Fatalf(`second Put("") = %v, %v; want existing`, res, err)
	}
	if data, _, err := readDriver(e.ctx, e.b, empty); err != nil || len(data) != 0 {
		e.t.Fatalf("driver read of the empty body = %q, %v", data, err)
	}
	e.wantKeys(ref)
}

func testStatWithoutReading(e *env) {
	data := content(2, 70_000)
	ref := e.put(data)
	s, in := e.instrumented()
	info, err := s.StatBody(e.ctx, ref)
	if err != nil {
		e.t.Fatalf("StatBody: %v", err)
	}
	if info.Size != int64(len(data)) || info.Key != ref.Hex() {
		e.t.Fatalf("StatBody = %+v, want key %s size %d", info, ref.Hex()[:12], len(data))
	}
	if c := in.Counts(); c.Stats != 1 || c.Opens != 0 || c.BytesRead != 0 {
		e.t.Fatalf("StatBody made %d stats, %d opens, read %d bytes; want 1, 0, 0", c.Stats, c.Opens, c.BytesRead)
	}
	r, err := e.b.Open(e.ctx, ref.Hex())
	if err != nil {
		e.t.Fatalf("Open: %v", err)
	}
	defer r.Close()
	if ri := r.Info(); ri.Size != int64(len(data)) || ri.Key != ref.Hex() {
		e.t.Fatalf("Reader.Info = %+v, want key %s size %d", ri, ref.Hex()[:12], len(data))
	}
}

// rangeBody is larger than the Store's copy buffer, so ranges cross chunk
// boundaries.
const rangeBodySize = 600_000

func rangeCases(size int64) [][2]int64 {
	return [][2]int64{
		{0, size}, {0, 1}, {0, 100}, {1, 99}, {size / 2, 1000},
		{262_000, 1000}, {262_144, 1}, {262_143, 2}, {size - 1, 1},
		{size - 500, 500}, {size, 0}, {0, 0}, {1234, 0},
	}
}

func testReadVerifiedRanges(e *env) {
	data := content(3, rangeBodySize)
	ref := e.put(data)
	size := int64(len(data))
	for _, c := range rangeCases(size) {
		off, n := c[0], c[1]
		got, err := e.s.ReadVerified(e.ctx, ref, size, off, n)
		if err != nil {
			e.t.Errorf("ReadVerified(off %d, n %d): %v", off, n, err)
			continue
		}
		if !bytes.Equal(got, data[off:off+n]) {
			e.t.Errorf("ReadVerified(off %d, n %d) returned the wrong %d bytes", off, n, len(got))
		}
	}
}

func testReadVerifiedInvalidRanges(e *env) {
	data := content(4, 1000)
	ref := e.put(data)
	size := int64(len(data))
	bad := []struct{ size, off, n int64 }{
		{size, -1, 1}, {size, 0, -1}, {size, size + 1, 0}, {size, size, 1},
		{size, size - 1, 2}, {size, 1, size}, {size, 1, math.MaxInt64},
		{size, math.MaxInt64, 1}, {-1, 0, 0},
	}
	for _, c := range bad {
		got, err := e.s.ReadVerified(e.ctx, ref, c.size, c.off, c.n)
		if got != nil || !errors.Is(err, workspace.ErrRange) {
			e.t.Errorf("ReadVerified(size %d, off %d, n %d) = %d bytes, %v; want ErrRange", c.size, c.off, c.n, len(got), err)
		}
		var buf bytes.Buffer
		m, err := e.s.CopyVerified(e.ctx, ref, c.size, c.off, c.n, &buf)
		if m != 0 || buf.Len() != 0 || !errors.Is(err, workspace.ErrRange) {
			e.t.Errorf("CopyVerified(size %d, off %d, n %d) = %d, %v; want ErrRange", c.size, c.off, c.n, m, err)
		}
	}
	// A size other than the stored one is corruption, not a range error.
	if _, err := e.s.ReadVerified(e.ctx, ref, size+1, 0, 1); !errors.Is(err, workspace.ErrCorrupt) {
		e.t.Errorf("ReadVerified with a wrong size: %v, want ErrCorrupt", err)
	}
}

func testCopyVerifiedRanges(e *env) {
	data := content(5, rangeBodySize)
	ref := e.put(data)
	size := int64(len(data))
	for _, c := range rangeCases(size) {
		off, n := c[0], c[1]
		var buf bytes.Buffer
		m, err := e.s.CopyVerified(e.ctx, ref, size, off, n, &buf)
		if err != nil {
			e.t.Errorf("CopyVerified(off %d, n %d): %v", off, n, err)
			continue
		}
		if m != n || !bytes.Equal(buf.Bytes(), data[off:off+n]) {
			e.t.Errorf("CopyVerified(off %d, n %d) = %d, with %d wrong bytes", off, n, m, buf.Len())
		}
	}
}

func testAbsentBody(e *env) {
	e.put([]byte("some other body"))
	ref := artifact.RefOf([]byte("never stored"))
	_, err := e.s.StatBody(e.ctx, ref)
	wantErr(e.t, "StatBody", err, driver.ErrNotFound)
	wantErr(e.t, "VerifyBody", e.s.VerifyBody(e.ctx, ref, 12), driver.ErrNotFound)
	got, err := e.s.ReadVerified(e.ctx, ref, 12, 0, 12)
	wantErr(e.t, "ReadVerified", err, driver.ErrNotFound)
	if got != nil {
		e.t.Errorf("ReadVerified of an absent body returned %d bytes", len(got))
	}
	var buf bytes.Buffer
	_, err = e.s.CopyVerified(e.ctx, ref, 12, 0, 12, &buf)
	wantErr(e.t, "CopyVerified", err, driver.ErrNotFound)
	wantErr(e.t, "DeleteBody", e.s.DeleteBody(e.ctx, ref), driver.ErrNotFound)

	_, err = e.b.Stat(e.ctx, ref.Hex())
	wantErr(e.t, "driver Stat", err, driver.ErrNotFound)
	r, err := e.b.Open(e.ctx, ref.Hex())
	wantErr(e.t, "driver Open", err, driver.ErrNotFound)
	if r != nil {
		r.Close()
		e.t.Errorf("driver Open of an absent body returned a reader")
	}
	wantErr(e.t, "driver Delete", e.b.Delete(e.ctx, ref.Hex()), driver.ErrNotFound)
}

func testHostileKeys(e *env) {
	ref := e.put([]byte("a body"))
	h := ref.Hex()
	keys := []string{
		"", ".", "..", "/", "../" + h[:61], "../../../../../../../../etc/passwd",
		"/etc/passwd", h[:2] + "/../" + h[6:], h[:32] + "/" + h[33:], h + "/", h + "\x00",
		"./" + h[:62], h[:63], h + "0", `..\` + h[:61],
	}
	for _, k := range keys {
		if info, err := e.b.Stat(e.ctx, k); err == nil {
			e.t.Errorf("Stat(%q) succeeded: %+v", k, info)
		}
		if r, err := e.b.Open(e.ctx, k); err == nil {
			r.Close()
			e.t.Errorf("Open(%q) succeeded", k)
		}
		if err := e.b.Delete(e.ctx, k); err == nil {
			e.t.Errorf("Delete(%q) succeeded", k)
		}
	}
	e.wantKeys(ref)
	e.mustRead(ref, []byte("a body"))
}

// endless yields zero bytes forever.
type endless struct{}

func (endless) Read(p []byte) (int, error) { clear(p); return len(p), nil }

func testIngestMaxBytes(e *env) {
	const max = 4096
	exact := content(6, max)
	ref, _, res, err := Put(e.ctx, e.s, bytes.NewReader(exact), &workspace.IngestOptions{MaxBytes: max})
	if err != nil || res != workspace.Created || ref != artifact.RefOf(exact) {
		e.t.Fatalf("Put of exactly MaxBytes = %v, %v", res, err)
	}
	over := content(7, max+1)
	ref2, _, _, err := Put(e.ctx, e.s, bytes.NewReader(over), &workspace.IngestOptions{MaxBytes: max})
	wantErr(e.t, "Put of MaxBytes+1", err, workspace.ErrTooLarge)
	if !ref2.IsZero() {
		e.t.Errorf("Put of MaxBytes+1 returned ref %v", ref2)
	}
	p, n, err := e.s.Ingest(e.ctx, endless{}, &workspace.IngestOptions{MaxBytes: max})
	wantErr(e.t, "Ingest of an endless reader", err, workspace.ErrTooLarge)
	if p != nil || n <= max {
		e.t.Errorf("Ingest of an endless reader = %v, read %d; want nil after more than %d", p, n, max)
	}
	e.mustBeAbsent(artifact.RefOf(over))
	e.mustBeAbsent(artifact.RefOf(over[:max]))
	e.wantKeys(ref)
}

func testPendingDiscard(e *env) {
	data := content(8, 5000)
	p, n, err := e.s.Ingest(e.ctx, bytes.NewReader(data), nil)
	if err != nil {
		e.t.Fatalf("Ingest: %v", err)
	}
	if p.Ref() != artifact.RefOf(data) || p.Size() != int64(len(data)) || n != int64(len(data)) {
		e.t.Fatalf("Ingest = %v/%d (read %d)", p.Ref(), p.Size(), n)
	}
	p.Discard()
	p.Discard()
	e.mustBeAbsent(p.Ref())
	if res, err := p.Commit(e.ctx); err == nil {
		e.t.Fatalf("Commit after Discard = %v, want an error", res)
	}
	e.mustBeAbsent(p.Ref())
	e.wantKeys()

	p2, _, err := e.s.Ingest(e.ctx, bytes.NewReader(data), nil)
	if err != nil {
		e.t.Fatalf("Ingest: %v", err)
	}
	if res, err := p2.Commit(e.ctx); err != nil || res != workspace.Created {
		e.t.Fatalf("Commit = %v, %v; want created", res, err)
	}
	p2.Discard() // a no-op after Commit
	if res, err := p2.Commit(e.ctx); err == nil {
		e.t.Fatalf("second Commit = %v, want an error", res)
	}
	e.mustRead(p2.Ref(), data)
}

func testWriterAbort(e *env) {
	data := content(9, 3000)
	key := artifact.RefOf(data).Hex()
	w, err := e.b.NewWriter(e.ctx)
	if err != nil {
		e.t.Fatalf("NewWriter: %v", err)
	}
	if n, err := w.Write(data); err != nil || n != len(data) {
		e.t.Fatalf("Write = %d, %v", n, err)
	}
	if err := w.Abort(); err != nil {
		e.t.Fatalf("Abort: %v", err)
	}
	_ = w.Abort() // must not panic
	if err := w.Commit(e.ctx, key, false); err == nil {
		e.t.Fatalf("Commit after Abort succeeded")
	}
	if _, err := e.b.Stat(e.ctx, key); !errors.Is(err, driver.ErrNotFound) {
		e.t.Fatalf("Stat after Abort: %v, want driver.ErrNotFound", err)
	}
	e.wantKeys()

	w2, err := e.b.NewWriter(e.ctx)
	if err != nil {
		e.t.Fatalf("NewWriter: %v", err)
	}
	// Several writes make one body.
	for _, part := range [][]byte{data[:1], data[1:1000], data[1000:]} {
		if _, err := w2.Write(part); err != nil {
			e.t.Fatalf("Write: %v", err)
		}
	}
	if err := w2.Commit(e.ctx, key, false); err != nil {
		e.t.Fatalf("Commit: %v", err)
	}
	if err := w2.Abort(); err != nil {
		e.t.Fatalf("Abort after Commit: %v", err)
	}
	got, info, err := readDriver(e.ctx, e.b, key)
	if err != nil || !bytes.Equal(got, data) || info.Size != int64(len(data)) {
		e.t.Fatalf("read after Commit+Abort = %d bytes (info %d), %v; want the %d committed", len(got), info.Size, err, len(data))
	}
}

func testCommitExistThenReplace(e *env) {
	data := content(10, 8000)
	key := artifact.RefOf(data).Hex()
	if err := e.writeBody(data, false); err != nil {
		e.t.Fatalf("first Commit: %v", err)
	}
	stored := data
	if e.tamper != nil {
		// Make the kept and the replaced bodies distinguishable.
		stored = bytes.Repeat([]byte{'x'}, len(data))
		e.tamper(key, stored)
	}
	w, err := e.b.NewWriter(e.ctx)
	if err != nil {
		e.t.Fatalf("NewWriter: %v", err)
	}
	defer w.Abort()
	if _, err := w.Write(data); err != nil {
		e.t.Fatalf("Write: %v", err)
	}
	if err := w.Commit(e.ctx, key, false); !onlyIn(err, driver.ErrAlreadyExists) {
		e.t.Fatalf("create-only Commit over an existing body: %v, want driver.ErrAlreadyExists alone", err)
	}
	if got, _, err := readDriver(e.ctx, e.b, key); err != nil || !bytes.Equal(got, stored) {
		e.t.Fatalf("after a refused Commit the body changed (%d bytes, %v)", len(got), err)
	}
	if err := w.Commit(e.ctx, key, true); err != nil {
		e.t.Fatalf("Commit(replace) after driver.ErrAlreadyExists: %v", err)
	}
	if got, info, err := readDriver(e.ctx, e.b, key); err != nil || !bytes.Equal(got, data) || info.Size != int64(len(data)) {
		e.t.Fatalf("after Commit(replace) read %d bytes, %v; want the new %d", len(got), err, len(data))
	}
	// A refused writer that is then aborted leaves the body alone.
	if err := e.writeBody(data, false); !onlyIn(err, driver.ErrAlreadyExists) {
		e.t.Fatalf("create-only Commit over an existing body: %v, want driver.ErrAlreadyExists alone", err)
	}
	// Replace on an absent key creates it.
	other := content(11, 100)
	if err := e.writeBody(other, true); err != nil {
		e.t.Fatalf("Commit(replace) of an absent key: %v", err)
	}
	e.wantKeys(artifact.RefOf(data), artifact.RefOf(other))
	e.mustRead(artifact.RefOf(data), data)
	e.mustRead(artifact.RefOf(other), other)
}

func testListBodies(e *env) {
	e.wantKeys()
	for info, err := range e.s.ListBodies(e.ctx) {
		e.t.Fatalf("ListBodies of an empty backend yielded %+v, %v", info, err)
	}
	bodies := [][]byte{nil, []byte("abc"), content(12, 300_000), content(13, 1)}
	want := map[string]int64{}
	var refs []artifact.Ref
	for _, b := range bodies {
		r := e.put(b)
		refs = append(refs, r)
		want[r.Hex()] = int64(len(b))
	}
	e.put(bodies[2]) // a duplicate adds nothing
	seen := map[string]bool{}
	for info, err := range e.s.ListBodies(e.ctx) {
		if err != nil {
			e.t.Fatalf("ListBodies: %v", err)
		}
		size, ok := want[info.Key]
		if !ok || seen[info.Key] {
			e.t.Fatalf("ListBodies yielded an unexpected or repeated key %q", info.Key)
		}
		seen[info.Key] = true
		if info.Size != size {
			e.t.Errorf("ListBodies: %s has size %d, want %d", info.Key[:12], info.Size, size)
		}
	}
	if len(seen) != len(want) {
		e.t.Fatalf("ListBodies yielded %d bodies, want %d", len(seen), len(want))
	}
	e.wantKeys(refs...)
	n := 0
	for range e.s.ListBodies(e.ctx) {
		n++
		break
	}
	for range e.b.List(e.ctx) {
		n++
		break
	}
	if n != 2 {
		e.t.Fatalf("early stop: %d", n)
	}
}

func testDeleteBody(e *env) {
	data := content(14, 2048)
	keep := e.put([]byte("kept"))
	ref := e.put(data)
	if err := e.s.DeleteBody(e.ctx, ref); err != nil {
		e.t.Fatalf("DeleteBody: %v", err)
	}
	e.mustBeAbsent(ref)
	wantErr(e.t, "second DeleteBody", e.s.DeleteBody(e.ctx, ref), driver.ErrNotFound)
	e.wantKeys(keep)
	if _, _, res, err := Put(e.ctx, e.s, bytes.NewReader(data), nil); err != nil || res != workspace.Created {
		e.t.Fatalf("Put after DeleteBody = %v, %v; want created", res, err)
	}
	e.mustRead(ref, data)
	e.mustRead(keep, []byte("kept"))
}
