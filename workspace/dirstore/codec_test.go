package dirstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx/artifact"
)

var goodRow = row{
	user: "alice", workflow: "wf", session: "s1",
	digest: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
	size:   3, kind: "text", tool: "shell", callID: "call-1", description: "tool shell, call call-1",
	created: 1_700_000_000_000_000_000, lastUsed: 1_700_000_360_000_000_000,
}

func TestDecodeRecord(t *testing.T) {
	rec, err := decodeRecord(goodRow)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Ref.Hex() != goodRow.digest || rec.Owner.User != "alice" || rec.Size != 3 ||
		!rec.CreatedAt.Equal(time.Unix(0, goodRow.created)) || rec.CreatedAt.Location() != time.UTC {
		t.Fatalf("decoded %+v", rec)
	}
	back, err := encodeRecord(rec)
	if err != nil || back != goodRow {
		t.Fatalf("encode(decode(row)) = %+v, %v", back, err)
	}
	zero := goodRow
	zero.created, zero.lastUsed = 0, 0
	if rec, err := decodeRecord(zero); err != nil || !rec.CreatedAt.IsZero() || !rec.LastUsedAt.IsZero() {
		t.Fatalf("zero times: %+v, %v", rec, err)
	}
	bad := map[string]func(r *row){
		"uppercase digest": func(r *row) { r.digest = strings.ToUpper(r.digest) },
		"short digest":     func(r *row) { r.digest = r.digest[:63] },
		"prefixed digest":  func(r *row) { r.digest = "artifact://sha256/" + r.digest },
		"blank user":       func(r *row) { r.user = "  " },
		"nul in session":   func(r *row) { r.session = "s\x00" },
		"invalid utf-8":    func(r *row) { r.workflow = "\xff" },
		"long owner":       func(r *row) { r.user = strings.Repeat("u", 257) },
		"negative size":    func(r *row) { r.size = -1 },
		"long kind":        func(r *row) { r.kind = strings.Repeat("k", maxTextLen+1) },
		"long description": func(r *row) { r.description = strings.Repeat("d", maxTextLen+1) },
	}
	for name, mutate := range bad {
		r := goodRow
		mutate(&r)
		if _, err := decodeRecord(r); !errors.Is(err, ErrBadRecord) {
			t.Errorf("%s: decode = %v, want ErrBadRecord", name, err)
		}
		if strings.Contains(name, "digest") {
			continue
		}
		rec, _ := decodeRecord(goodRow)
		rec.Owner = artifact.Owner{User: r.user, Workflow: r.workflow, Session: r.session}
		rec.Size, rec.Kind, rec.Description = r.size, r.kind, r.description
		if _, err := encodeRecord(rec); !errors.Is(err, ErrBadRecord) {
			t.Errorf("%s: encode = %v, want ErrBadRecord", name, err)
		}
	}
	rec.CreatedAt = time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := encodeRecord(rec); !errors.Is(err, ErrBadRecord) {
		t.Errorf("time out of range: %v", err)
	}
	rec.CreatedAt = time.Unix(0, 0)
	if _, err := encodeRecord(rec); !errors.Is(err, ErrBadRecord) {
		t.Errorf("time at the epoch: %v", err)
	}
	rec.CreatedAt, rec.Ref = time.Now(), artifact.Ref{}
	if _, err := encodeRecord(rec); !errors.Is(err, ErrBadRecord) {
		t.Errorf("zero reference: %v", err)
	}
}

// FuzzDecodeRecord: any row either decodes to a record that encodes back to
// exactly the same row, or is refused with ErrBadRecord; never a panic.
func FuzzDecodeRecord(f *testing.F) {
	g := goodRow
	f.Add(g.user, g.workflow, g.session, g.digest, g.size, g.kind, g.tool, g.callID, g.description, g.created, g.lastUsed)
	f.Add("", "", "", "", int64(-1), "", "", "", "", int64(0), int64(-1))
	f.Add("ü", "w\x00", "s", strings.ToUpper(g.digest), int64(1)<<62, "json", "t", "c", "d", int64(-1)<<63, int64(1)<<62)
	f.Fuzz(func(t *testing.T, user, workflow, session, digest string, size int64, kind, tool, callID, desc string, created, lastUsed int64) {
		r := row{user, workflow, session, digest, size, kind, tool, callID, desc, created, lastUsed}
		rec, err := decodeRecord(r)
		if err != nil {
			if !errors.Is(err, ErrBadRecord) {
				t.Fatalf("decode error %v does not wrap ErrBadRecord", err)
			}
			return
		}
		if err := rec.Owner.Validate(); err != nil || rec.Size < 0 || rec.Ref.Hex() != digest {
			t.Fatalf("decoded an invalid record: %+v", rec)
		}
		back, err := encodeRecord(rec)
		if err != nil {
			t.Fatalf("a decoded record does not encode: %v", err)
		}
		if back != r {
			t.Fatalf("round trip changed the row:\n%+v\n%+v", r, back)
		}
	})
}

// FuzzRecordRoundTrip: whatever CreateRecord accepts, GetRecord returns
// unchanged through SQLite (text with NUL bytes, invalid UTF-8, extreme
// times and sizes); what it refuses wraps ErrBadRecord.
func FuzzRecordRoundTrip(f *testing.F) {
	dir := filepath.Join(f.TempDir(), "ws")
	s, err := Open(context.Background(), dir, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = s.Close() })
	f.Add("alice", "wf", "s1", []byte("abc"), int64(3), "text", "shell", "call-1", "tool shell, call call-1", int64(1), int64(2))
	f.Add("ü", "w", "s", []byte{}, int64(0), "", "t\x00t", "\xff\xfe", strings.Repeat("d", 600), int64(math.MinInt64), int64(math.MaxInt64))
	f.Add("", "w", "s", []byte("x"), int64(-5), "k", "t", "c", "d", int64(0), int64(0))
	f.Fuzz(func(t *testing.T, user, workflow, session string, body []byte, size int64, kind, tool, callID, desc string, created, lastUsed int64) {
		ctx := context.Background()
		sum := sha256.Sum256(body)
		ref, err := artifact.ParseDigest(hex.EncodeToString(sum[:]))
		if err != nil {
			t.Fatal(err)
		}
		rec := artifact.Record{
			Owner: artifact.Owner{User: user, Workflow: workflow, Session: session},
			Ref:   ref, Size: size, Kind: kind, Tool: tool, CallID: callID, Description: desc,
			CreatedAt: fromNanos(created), LastUsedAt: fromNanos(lastUsed),
		}
		created1, err := s.CreateRecord(ctx, rec)
		if err != nil {
			if !errors.Is(err, ErrBadRecord) {
				t.Fatalf("CreateRecord refused with %v, not ErrBadRecord", err)
			}
			if _, gerr := s.GetRecord(ctx, rec.Owner, ref); !errors.Is(gerr, fs.ErrNotExist) && !errors.Is(gerr, ErrBadRecord) && rec.Owner.Validate() == nil {
				t.Fatalf("a refused record is readable: %v", gerr)
			}
			return
		}
		defer func() { _ = s.DeleteRecord(ctx, rec.Owner, ref) }()
		if !created1 {
			t.Fatal("a fresh record was not created")
		}
		got, err := s.GetRecord(ctx, rec.Owner, ref)
		if err != nil {
			t.Fatalf("GetRecord of a stored record: %v", err)
		}
		if got.Owner != rec.Owner || got.Ref != rec.Ref || got.Size != rec.Size || got.Kind != rec.Kind ||
			got.Tool != rec.Tool || got.CallID != rec.CallID || got.Description != rec.Description ||
			!got.CreatedAt.Equal(rec.CreatedAt) || !got.LastUsedAt.Equal(rec.LastUsedAt) {
			t.Fatalf("record changed in the database:\nput %#v\ngot %#v", rec, got)
		}
	})
}
