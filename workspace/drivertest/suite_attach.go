package drivertest

import (
	"fmt"
	"sync"
	"time"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/driver"
)

// attachTests check Store.Attach, the one operation by which a body and its
// owner's record become visible (docs/offload.md, step 5), on the backend.
var attachTests = []subtest{
	{"AttachCreatesThenFindsExisting", testAttachExisting},
	{"AttachNewOwnerReusesBody", testAttachNewOwner},
	{"AttachReplacesCorruptBody", testAttachReplaces},
	{"AttachTouchesAtMostOncePerInterval", testAttachTouch},
	{"AttachConcurrentOneCreates", testAttachConcurrent},
	{"AttachConcurrentOneRepairs", testAttachConcurrentRepair},
	{"AttachRacesGarbageCollection", testAttachRacesGC},
}

// attachRec is a record of owner used at the given time, as an offload
// builds it; Attach fills in its Ref and Size.
func attachRec(owner artifact.Owner, at time.Time) artifact.Record {
	return artifact.Record{Owner: owner, Kind: "text", Tool: "t", CallID: "c", CreatedAt: at, LastUsedAt: at}
}

// wantAttach attaches data and checks the case.
func (e *env) wantAttach(s *workspace.Store, data []byte, stream bool, rec artifact.Record, want workspace.AttachCase) {
	e.t.Helper()
	c, err := attach(e.ctx, s, data, stream, rec)
	if err != nil || c != want {
		e.t.Fatalf("Attach for %s (stream %v) = %v, %v; want %v", rec.Owner.User, stream, c, err, want)
	}
}

func testAttachExisting(e *env) {
	s, in := e.instrumented()
	for _, stream := range []bool{false, true} {
		data := content(map[bool]uint64{false: 60, true: 61}[stream], 70_000)
		e.wantAttach(s, data, stream, attachRec(ownerA, t0), workspace.AttachCreated)
		got, err := s.GetRecord(e.ctx, ownerA, artifact.RefOf(data))
		if err != nil || got.Size != int64(len(data)) || got.Kind != "text" || !got.LastUsedAt.Equal(t0) {
			e.t.Fatalf("record after Attach = %+v, %v", got, err)
		}
		e.mustRead(artifact.RefOf(data), data)
		// The same bytes again: the record and body are found, and a byte
		// body is not written at all.
		in.Reset()
		e.wantAttach(s, data, stream, attachRec(ownerA, t0.Add(time.Minute)), workspace.AttachExisting)
		c := in.Counts()
		if c.CreateRecords != 0 || c.TouchRecords != 0 || c.Commits+c.Replaces != 0 || !stream && c.NewWriters != 0 {
			e.t.Fatalf("Attach of a body the owner has (stream %v): %+v; want no write", stream, c)
		}
	}
}

func testAttachNewOwner(e *env) {
	s, in := e.instrumented()
	data := content(62, 50_000)
	e.wantAttach(s, data, false, attachRec(ownerA, t0), workspace.AttachCreated)
	in.Reset()
	// Another owner's first offload of stored bytes reports created too:
	// nothing tells it the body was there (no cross-owner oracle).
	e.wantAttach(s, data, false, attachRec(ownerB, t0), workspace.AttachCreated)
	if c := in.Counts(); c.NewWriters != 0 || c.RecordsCreated != 1 {
		e.t.Fatalf("Attach of a stored body for a new owner: %+v; want one record, no write", c)
	}
	if _, err := s.GetRecord(e.ctx, ownerB, artifact.RefOf(data)); err != nil {
		e.t.Fatalf("the new owner's record: %v", err)
	}
}

func testAttachReplaces(e *env) {
	e.needTamper()
	data := content(63, 90_000)
	ref := artifact.RefOf(data)
	e.wantAttach(e.s, data, false, attachRec(ownerA, t0), workspace.AttachCreated)
	e.tamper(ref.Hex(), flipped(data, 1000))
	e.wantAttach(e.s, data, false, attachRec(ownerA, t0), workspace.AttachReplaced)
	e.mustRead(ref, data)
	// A new owner's bytes repair someone else's corrupt body silently.
	e.tamper(ref.Hex(), flipped(data, 5))
	e.wantAttach(e.s, data, true, attachRec(ownerB, t0), workspace.AttachCreated)
	e.mustRead(ref, data)
	// The owner's record again, the bytes streamed.
	e.tamper(ref.Hex(), flipped(data, 9))
	e.wantAttach(e.s, data, true, attachRec(ownerA, t0), workspace.AttachReplaced)
	e.mustRead(ref, data)
}

func testAttachTouch(e *env) {
	data := content(64, 5_000)
	ref := artifact.RefOf(data)
	e.wantAttach(e.s, data, false, attachRec(ownerA, t0), workspace.AttachCreated)
	used := func() time.Time {
		rec, err := e.s.GetRecord(e.ctx, ownerA, ref)
		if err != nil {
			e.t.Fatalf("GetRecord: %v", err)
		}
		return rec.LastUsedAt
	}
	soon := t0.Add(workspace.TouchEvery - time.Second)
	e.wantAttach(e.s, data, false, attachRec(ownerA, soon), workspace.AttachExisting)
	if got := used(); !got.Equal(t0) {
		e.t.Fatalf("a reuse within TouchEvery moved the last-used time to %v", got)
	}
	later := t0.Add(workspace.TouchEvery)
	e.wantAttach(e.s, data, false, attachRec(ownerA, later), workspace.AttachExisting)
	if got := used(); !got.Equal(later) {
		e.t.Fatalf("a reuse after TouchEvery left the last-used time at %v, want %v", got, later)
	}
}

func testAttachConcurrent(e *env) {
	const goroutines, trials = 16, 4
	for trial := range trials {
		data := content(uint64(70+trial), 40_000)
		cases := make([]workspace.AttachCase, goroutines)
		together(goroutines, func(i int) {
			c, err := attach(e.ctx, e.s, data, i%2 == 1, attachRec(ownerA, t0))
			if err != nil {
				e.t.Errorf("trial %d: Attach: %v", trial, err)
			}
			cases[i] = c
		})
		count := map[workspace.AttachCase]int{}
		for _, c := range cases {
			count[c]++
		}
		if count[workspace.AttachCreated] != 1 || count[workspace.AttachExisting]+count[workspace.AttachLostRace] != goroutines-1 {
			e.t.Fatalf("trial %d: cases %v; want exactly one created, the others existing or lost the race", trial, count)
		}
		e.mustRead(artifact.RefOf(data), data)
	}
}

func testAttachConcurrentRepair(e *env) {
	e.needTamper()
	const goroutines = 8
	// The backend's Locker, or an in-process one: without any lock two
	// repairers may both replace (the store documents that).
	in := Instrument(e.b, e.r, nil)
	s := workspace.New(in, in)
	data := content(75, 120_000)
	ref := artifact.RefOf(data)
	e.wantAttach(s, data, false, attachRec(ownerA, t0), workspace.AttachCreated)
	e.tamper(ref.Hex(), flipped(data, 77))
	cases := make([]workspace.AttachCase, goroutines)
	together(goroutines, func(i int) {
		c, err := attach(e.ctx, s, data, i%2 == 0, attachRec(ownerA, t0))
		if err != nil {
			e.t.Errorf("Attach over a corrupt body: %v", err)
		}
		cases[i] = c
	})
	count := map[workspace.AttachCase]int{}
	for _, c := range cases {
		count[c]++
	}
	if count[workspace.AttachReplaced] != 1 || count[workspace.AttachExisting] != goroutines-1 {
		e.t.Fatalf("concurrent repairs: %v; want exactly one replaced, the others existing", count)
	}
	e.mustRead(ref, data)
}

// gcRaceRounds is how many times testAttachRacesGC runs garbage collection
// against attaches of the bodies it may collect.
const gcRaceRounds = 12

// testAttachRacesGC runs garbage collection, with a clock forty days ahead
// so that every body and record is old, concurrently with attaches that
// reuse those bodies: a new owner, the old owner (its record expiring or
// touched first; another new owner when the records driver has no atomic
// RecordExpirer), and a stream. Whatever the interleaving, every
// acknowledged attach leaves a record whose body verifies, and no record
// points at a deleted body.
func testAttachRacesGC(e *env) {
	if _, ok := e.b.(driver.Locker); !ok {
		e.t.Skip("backend offers no per-body lock: garbage collection refuses to run")
	}
	ownerC := artifact.Owner{User: "carol", Workflow: "build", Session: "s-1"}
	for round := range gcRaceRounds {
		now := time.Now()
		later := now.Add(40 * 24 * time.Hour)
		bodies := [3][]byte{}
		for i := range bodies {
			bodies[i] = content(uint64(1000+10*round+i), 20_000+i)
			e.wantAttach(e.s, bodies[i], false, attachRec(ownerA, now), workspace.AttachCreated)
		}
		type try struct {
			owner  artifact.Owner
			body   int
			stream bool
			c      workspace.AttachCase
			err    error
		}
		tries := []*try{{owner: ownerB, body: 0}, {owner: ownerA, body: 1}, {owner: ownerC, body: 2, stream: true}}
		if _, ok := e.r.(driver.RecordExpirer); !ok {
			// Without an atomic expiry a touch racing it may be lost
			// (documented): only new owners race the collection.
			tries[1].owner = artifact.Owner{User: "dave", Workflow: "build", Session: "s-1"}
		}
		var gcErr error
		var wg sync.WaitGroup
		wg.Go(func() {
			_, gcErr = e.s.CollectGarbage(e.ctx, &workspace.GCOptions{
				MaxAge: 30 * 24 * time.Hour, Grace: time.Hour, Clock: func() time.Time { return later },
			})
		})
		for _, tr := range tries {
			wg.Go(func() {
				tr.c, tr.err = attach(e.ctx, e.s, bodies[tr.body], tr.stream, attachRec(tr.owner, later))
			})
		}
		wg.Wait()
		if gcErr != nil {
			e.t.Fatalf("round %d: CollectGarbage: %v", round, gcErr)
		}
		for _, tr := range tries {
			switch {
			case tr.err != nil:
				e.t.Fatalf("round %d: Attach for %s: %v (%v)", round, tr.owner.User, tr.err, tr.c)
			case tr.c != workspace.AttachCreated && tr.c != workspace.AttachExisting &&
				tr.c != workspace.AttachReplaced && tr.c != workspace.AttachLostRace:
				e.t.Fatalf("round %d: Attach for %s = %v", round, tr.owner.User, tr.c)
			}
			data := bodies[tr.body]
			if _, err := e.s.GetRecord(e.ctx, tr.owner, artifact.RefOf(data)); err != nil {
				e.t.Fatalf("round %d: acknowledged attach for %s, then its record: %v", round, tr.owner.User, err)
			}
			e.mustRead(artifact.RefOf(data), data)
		}
		e.wantRecordsVerify(fmt.Sprintf("round %d", round))
	}
}

// wantRecordsVerify fails if any record points at a body that is absent or
// does not verify.
func (e *env) wantRecordsVerify(when string) {
	e.t.Helper()
	for rec, err := range e.s.ListRecords(e.ctx, driver.Query{}) {
		if err != nil {
			e.t.Fatalf("%s: ListRecords: %v", when, err)
		}
		if err := e.s.VerifyBody(e.ctx, rec.Ref, rec.Size); err != nil {
			e.t.Fatalf("%s: a record points at a body that does not verify: %v", when, err)
		}
	}
}
