package drivertest

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace/driver"
)

var recordTests = []subtest{
	{"RecordCreateTwice", testRecordCreateTwice},
	{"RecordRoundTrip", testRecordRoundTrip},
	{"RecordTouch", testRecordTouch},
	{"RecordDelete", testRecordDelete},
	{"RecordAbsent", testRecordAbsent},
	{"ListRecordsFilters", testListRecordsFilters},
	{"ListRecordsOrder", testListRecordsOrder},
	{"ListRecordsEarlyStop", testListRecordsEarlyStop},
	{"OwnersDistinct", testOwnersDistinct},
}

// record returns a record of owner for a body stored from data.
func (e *env) record(owner artifact.Owner, data []byte, used time.Time) artifact.Record {
	e.t.Helper()
	ref := e.put(data)
	return artifact.Record{
		Owner: owner, Ref: ref, Size: int64(len(data)), Kind: "text",
		Tool: "read_file", CallID: "call-1", Description: "a file",
		CreatedAt: t0, LastUsedAt: used,
	}
}

func (e *env) create(rec artifact.Record) {
	e.t.Helper()
	created, err := e.s.CreateRecord(e.ctx, rec)
	if err != nil || !created {
		e.t.Fatalf("CreateRecord = %v, %v; want created", created, err)
	}
}

// sameRecord compares every field, times by instant.
func sameRecord(got, want artifact.Record) error {
	switch {
	case got.Owner != want.Owner:
		return errors.New("owner differs")
	case got.Ref != want.Ref:
		return fmt.Errorf("ref %v, want %v", got.Ref, want.Ref)
	case got.Size != want.Size || got.Kind != want.Kind || got.Tool != want.Tool ||
		got.CallID != want.CallID || got.Description != want.Description:
		return fmt.Errorf("fields %d/%q/%q/%q/%q, want %d/%q/%q/%q/%q",
			got.Size, got.Kind, got.Tool, got.CallID, got.Description,
			want.Size, want.Kind, want.Tool, want.CallID, want.Description)
	case !got.CreatedAt.Equal(want.CreatedAt) || !got.LastUsedAt.Equal(want.LastUsedAt):
		return fmt.Errorf("times %v/%v, want %v/%v", got.CreatedAt, got.LastUsedAt, want.CreatedAt, want.LastUsedAt)
	}
	return nil
}

func (e *env) wantRecord(owner artifact.Owner, ref artifact.Ref, want artifact.Record) {
	e.t.Helper()
	got, err := e.s.GetRecord(e.ctx, owner, ref)
	if err != nil {
		e.t.Fatalf("Record: %v", err)
	}
	if err := sameRecord(got, want); err != nil {
		e.t.Fatalf("Record: %v", err)
	}
}

// list collects the records q selects, failing on an error.
func (e *env) list(q driver.Query) []artifact.Record {
	e.t.Helper()
	var out []artifact.Record
	for rec, err := range e.s.ListRecords(e.ctx, q) {
		if err != nil {
			e.t.Fatalf("ListRecords: %v", err)
		}
		out = append(out, rec)
	}
	return out
}

// wantList checks that q selects exactly want, in order.
func (e *env) wantList(what string, q driver.Query, want ...artifact.Record) {
	e.t.Helper()
	got := e.list(q)
	if len(got) != len(want) {
		e.t.Fatalf("%s: %d records, want %d", what, len(got), len(want))
	}
	for i := range got {
		if err := sameRecord(got[i], want[i]); err != nil {
			e.t.Fatalf("%s: record %d: %v", what, i, err)
		}
	}
}

func testRecordCreateTwice(e *env) {
	rec := e.record(ownerA, []byte("body"), t0)
	e.create(rec)
	dup := rec
	dup.Description = "second"
	dup.LastUsedAt = t0.Add(time.Hour)
	created, err := e.s.CreateRecord(e.ctx, dup)
	if err != nil || created {
		e.t.Fatalf("second CreateRecord = %v, %v; want false, nil", created, err)
	}
	e.wantRecord(ownerA, rec.Ref, rec)
	created, err = e.r.CreateRecord(e.ctx, dup)
	if err != nil || created {
		e.t.Fatalf("driver CreateRecord of an existing pair = %v, %v; want false, nil", created, err)
	}
	e.wantList("all", driver.Query{}, rec)
}

func testRecordRoundTrip(e *env) {
	owner := artifact.Owner{User: "zoë@example.com", Workflow: "wf/κ 1", Session: "sess:42"}
	data := []byte(`{"k": 1}`)
	rec := artifact.Record{
		Owner: owner, Ref: e.put(data), Size: int64(len(data)), Kind: "json",
		Tool: "grep", CallID: "toolu_01ABC", Description: "matches — «quoted» ✓",
		CreatedAt: t0.Add(-time.Hour), LastUsedAt: t0.Add(90 * time.Second),
	}
	e.create(rec)
	e.wantRecord(owner, rec.Ref, rec)
	got, err := e.r.GetRecord(e.ctx, owner, rec.Ref)
	if err != nil {
		e.t.Fatalf("driver GetRecord: %v", err)
	}
	if err := sameRecord(got, rec); err != nil {
		e.t.Fatalf("driver GetRecord: %v", err)
	}
}

func testRecordTouch(e *env) {
	rec := e.record(ownerA, []byte("body"), t0)
	e.create(rec)
	later := t0.Add(36 * time.Hour)
	if err := e.s.TouchRecord(e.ctx, ownerA, rec.Ref, later); err != nil {
		e.t.Fatalf("TouchRecord: %v", err)
	}
	want := rec
	want.LastUsedAt = later
	e.wantRecord(ownerA, rec.Ref, want)
	// Touching to an earlier time sets it too: the caller owns the clock.
	if err := e.s.TouchRecord(e.ctx, ownerA, rec.Ref, t0.Add(time.Minute)); err != nil {
		e.t.Fatalf("TouchRecord: %v", err)
	}
	want.LastUsedAt = t0.Add(time.Minute)
	e.wantRecord(ownerA, rec.Ref, want)
}

func testRecordDelete(e *env) {
	rec := e.record(ownerA, []byte("body"), t0)
	other := e.record(ownerB, []byte("body"), t0)
	e.create(rec)
	e.create(other)
	if err := e.s.DeleteRecord(e.ctx, ownerA, rec.Ref); err != nil {
		e.t.Fatalf("DeleteRecord: %v", err)
	}
	_, err := e.s.GetRecord(e.ctx, ownerA, rec.Ref)
	wantErr(e.t, "Record after DeleteRecord", err, driver.ErrNotFound)
	wantErr(e.t, "second DeleteRecord", e.s.DeleteRecord(e.ctx, ownerA, rec.Ref), driver.ErrNotFound)
	e.wantRecord(ownerB, other.Ref, other)
	e.wantList("all", driver.Query{}, other)
	// The body is not the record's: it stays.
	e.mustRead(rec.Ref, []byte("body"))
	// And the pair can be created again.
	e.create(rec)
}

func testRecordAbsent(e *env) {
	e.create(e.record(ownerA, []byte("present"), t0))
	ref := e.put([]byte("no record"))
	_, err := e.s.GetRecord(e.ctx, ownerA, ref)
	wantErr(e.t, "GetRecord", err, driver.ErrNotFound)
	wantErr(e.t, "TouchRecord", e.s.TouchRecord(e.ctx, ownerA, ref, t0), driver.ErrNotFound)
	wantErr(e.t, "DeleteRecord", e.s.DeleteRecord(e.ctx, ownerA, ref), driver.ErrNotFound)
	_, err = e.r.GetRecord(e.ctx, ownerA, ref)
	wantErr(e.t, "driver GetRecord", err, driver.ErrNotFound)
	wantErr(e.t, "driver TouchRecord", e.r.TouchRecord(e.ctx, ownerA, ref, t0), driver.ErrNotFound)
	wantErr(e.t, "driver DeleteRecord", e.r.DeleteRecord(e.ctx, ownerA, ref), driver.ErrNotFound)
	// Another owner's record for the same body is not this owner's.
	_, err = e.s.GetRecord(e.ctx, ownerB, artifact.RefOf([]byte("present")))
	wantErr(e.t, "Record of another owner", err, driver.ErrNotFound)
	if n := len(e.list(driver.Query{Ref: ref})); n != 0 {
		e.t.Fatalf("ListRecords of a body without records: %d", n)
	}
}

func testListRecordsFilters(e *env) {
	e.wantList("empty backend", driver.Query{})
	// Distinct last-used times, so the expected order is total.
	a1 := e.record(ownerA, []byte("one"), t0.Add(1*time.Minute))
	b1 := e.record(ownerB, []byte("one"), t0.Add(2*time.Minute))
	a2 := e.record(ownerA, []byte("two"), t0.Add(3*time.Minute))
	b3 := e.record(ownerB, []byte("three"), t0.Add(4*time.Minute))
	a3 := e.record(ownerA, []byte("three"), t0.Add(5*time.Minute))
	for _, r := range []artifact.Record{a3, b1, a2, a1, b3} {
		e.create(r)
	}
	ref1, ref3 := a1.Ref, a3.Ref
	a, b := ownerA, ownerB
	e.wantList("all", driver.Query{}, a1, b1, a2, b3, a3)
	e.wantList("owner A", driver.Query{Owner: &a}, a1, a2, a3)
	e.wantList("owner B", driver.Query{Owner: &b}, b1, b3)
	e.wantList("ref one", driver.Query{Ref: ref1}, a1, b1)
	e.wantList("ref three", driver.Query{Ref: ref3}, b3, a3)
	// UnusedSince is strict: a record last used exactly then is excluded.
	e.wantList("unused since a2", driver.Query{UnusedSince: a2.LastUsedAt}, a1, b1)
	e.wantList("unused since just after a2", driver.Query{UnusedSince: a2.LastUsedAt.Add(time.Second)}, a1, b1, a2)
	e.wantList("unused since t0", driver.Query{UnusedSince: t0})
	e.wantList("owner A, ref three", driver.Query{Owner: &a, Ref: ref3}, a3)
	e.wantList("owner B, unused since b3", driver.Query{Owner: &b, UnusedSince: b3.LastUsedAt}, b1)
	e.wantList("all three filters", driver.Query{Owner: &a, Ref: ref1, UnusedSince: t0.Add(time.Hour)}, a1)
	e.wantList("owner without records", driver.Query{Owner: &artifact.Owner{User: "carol", Workflow: "build", Session: "s-1"}})
	// A touch moves a record in the order.
	if err := e.s.TouchRecord(e.ctx, ownerA, a1.Ref, t0.Add(time.Hour)); err != nil {
		e.t.Fatalf("TouchRecord: %v", err)
	}
	a1.LastUsedAt = t0.Add(time.Hour)
	e.wantList("owner A after a touch", driver.Query{Owner: &a}, a2, a3, a1)
	e.wantList("unused since t0+10m after a touch", driver.Query{UnusedSince: t0.Add(10 * time.Minute)}, b1, a2, b3, a3)
}

func testListRecordsOrder(e *env) {
	var recs []artifact.Record
	// Several records share a last-used time: they must come by reference.
	for i := range 12 {
		used := t0.Add(time.Duration(i%3) * time.Hour)
		recs = append(recs, e.record(ownerA, fmt.Appendf(nil, "body %d", i), used))
	}
	for i := len(recs) - 1; i >= 0; i-- {
		e.create(recs[i])
	}
	got := e.list(driver.Query{})
	if len(got) != len(recs) {
		e.t.Fatalf("ListRecords: %d records, want %d", len(got), len(recs))
	}
	for i := 1; i < len(got); i++ {
		p, c := got[i-1], got[i]
		if c.LastUsedAt.Before(p.LastUsedAt) ||
			(c.LastUsedAt.Equal(p.LastUsedAt) && strings.Compare(c.Ref.Hex(), p.Ref.Hex()) <= 0) {
			e.t.Fatalf("ListRecords out of order at %d: (%v, %s) after (%v, %s)",
				i, c.LastUsedAt, c.Ref.Hex()[:12], p.LastUsedAt, p.Ref.Hex()[:12])
		}
	}
}

func testListRecordsEarlyStop(e *env) {
	for i := range 5 {
		e.create(e.record(ownerA, fmt.Appendf(nil, "body %d", i), t0.Add(time.Duration(i)*time.Minute)))
	}
	n := 0
	for _, err := range e.s.ListRecords(e.ctx, driver.Query{}) {
		if err != nil {
			e.t.Fatalf("ListRecords: %v", err)
		}
		n++
		if n == 2 {
			break
		}
	}
	for range e.r.ListRecords(e.ctx, driver.Query{}) {
		n++
		break
	}
	if n != 3 {
		e.t.Fatalf("early stop saw %d records, want 3", n)
	}
	// The backend is still usable after an abandoned iteration.
	if got := len(e.list(driver.Query{})); got != 5 {
		e.t.Fatalf("ListRecords after an early stop: %d records, want 5", got)
	}
}

func testOwnersDistinct(e *env) {
	base := artifact.Owner{User: "u", Workflow: "w", Session: "s"}
	owners := []artifact.Owner{
		base,
		{User: "u2", Workflow: "w", Session: "s"},
		{User: "u", Workflow: "w2", Session: "s"},
		{User: "u", Workflow: "w", Session: "s2"},
		// Field boundaries must not blur: "u"+"ws" is not "uw"+"s".
		{User: "uw", Workflow: "s", Session: "s"},
		{User: "u", Workflow: "ws", Session: "s"},
	}
	data := []byte("shared body")
	var recs []artifact.Record
	for i, o := range owners {
		rec := e.record(o, data, t0.Add(time.Duration(i)*time.Minute))
		rec.CallID = fmt.Sprint("call-", i)
		e.create(rec)
		recs = append(recs, rec)
	}
	for i, o := range owners {
		e.wantRecord(o, recs[i].Ref, recs[i])
		e.wantList(fmt.Sprint("owner ", i), driver.Query{Owner: &o}, recs[i])
	}
	e.wantList("the shared body", driver.Query{Ref: recs[0].Ref}, recs...)
	if err := e.s.DeleteRecord(e.ctx, owners[2], recs[2].Ref); err != nil {
		e.t.Fatalf("DeleteRecord: %v", err)
	}
	if got := len(e.list(driver.Query{})); got != len(owners)-1 {
		e.t.Fatalf("after deleting one owner's record %d remain, want %d", got, len(owners)-1)
	}
}
