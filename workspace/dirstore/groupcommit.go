package dirstore

import (
	"context"
	"database/sql"
	"slices"
	"sync"
)

// maxBatch bounds how many record creations one transaction commits.
const maxBatch = 128

// insertRecord creates a record unless its owner already has one for its
// digest.
const insertRecord = `INSERT INTO records (` + recordCols + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT DO NOTHING`

// createReq is one record creation waiting for its commit.
type createReq struct {
	ctx     context.Context
	args    []any
	created bool
	err     error
	// lead: instead of a result, the request was handed the turn to
	// commit the next batch (itself first).
	lead bool
	done chan struct{} // closed when created and err, or lead, are set
}

// creates joins the record creations of concurrent callers into one
// transaction, committed with one fsync of the write-ahead log (group
// commit). One caller at a time, the leader, commits a batch: its own
// request and those queued while the previous batch was committing. Then
// it hands the turn to the first request still queued, or ends the turn
// when none is. A caller alone commits its own record at once, exactly as
// without batching.
//
// Each caller returns only after the transaction holding its own record
// committed (synchronous=FULL: durable) or failed. When a batch fails, it
// is rolled back and each of its requests is retried alone, so that an
// error reaches exactly the callers it concerns. The INSERTs of one batch
// run in order inside one transaction, so two requests for the same owner
// and digest still have exactly one winner.
type creates struct {
	mu      sync.Mutex
	queue   []*createReq
	leading bool   // a leader holds the turn
	taken   int    // requests in the batch being committed (for tests)
	batches uint64 // transactions of more than one record committed (for tests)
}

// create commits the record whose INSERT arguments are args and reports
// whether this call created it.
func (r *records) create(ctx context.Context, args []any) (bool, error) {
	if r.noGroup {
		return r.createOne(ctx, args)
	}
	req := &createReq{ctx: ctx, args: args, done: make(chan struct{})}
	c := &r.creates
	c.mu.Lock()
	if !c.leading {
		c.leading = true
		c.mu.Unlock()
		return r.lead(req)
	}
	c.queue = append(c.queue, req)
	c.mu.Unlock()
	select {
	case <-req.done:
	case <-ctx.Done():
		c.mu.Lock()
		if i := slices.Index(c.queue, req); i >= 0 {
			// Not taken into a batch yet: withdraw, nothing written.
			c.queue = slices.Delete(c.queue, i, i+1)
			c.mu.Unlock()
			return false, ctx.Err()
		}
		c.mu.Unlock()
		// Taken: its transaction decides; wait for it.
		<-req.done
	}
	if req.lead {
		return r.lead(req)
	}
	return req.created, req.err
}

// lead commits first and the requests queued behind it, delivers their
// results, and passes the turn on.
func (r *records) lead(first *createReq) (bool, error) {
	c := &r.creates
	c.mu.Lock()
	n := min(len(c.queue), maxBatch-1)
	batch := append([]*createReq{first}, c.queue[:n]...)
	c.queue = slices.Delete(c.queue, 0, n)
	c.taken = len(batch)
	c.mu.Unlock()

	r.commitBatch(batch)
	for _, q := range batch[1:] {
		close(q.done)
	}

	c.mu.Lock()
	c.taken = 0
	if len(c.queue) == 0 {
		c.leading = false
	} else {
		next := c.queue[0]
		c.queue = slices.Delete(c.queue, 0, 1)
		next.lead = true
		close(next.done)
	}
	c.mu.Unlock()
	return first.created, first.err
}

// commitBatch sets the result of every request of batch. A request whose
// context ended before its batch began fails with the context's error.
func (r *records) commitBatch(batch []*createReq) {
	live := batch[:0:0]
	for _, q := range batch {
		if err := q.ctx.Err(); err != nil {
			q.err = err
			continue
		}
		live = append(live, q)
	}
	switch {
	case len(live) == 1:
		live[0].created, live[0].err = r.createOne(live[0].ctx, live[0].args)
		return
	case len(live) == 0:
		return
	}
	// The batch's transaction must not end with one caller's context:
	// the others' records are in it too.
	if err := r.createAll(context.WithoutCancel(live[0].ctx), live); err == nil {
		return
	}
	for _, q := range live {
		q.created, q.err = r.createOne(q.ctx, q.args)
	}
}

// createOne commits one record in its own transaction.
func (r *records) createOne(ctx context.Context, args []any) (bool, error) {
	res, err := r.ins.ExecContext(ctx, args...)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, err
	}
	return n == 1, nil
}

// createAll commits the records of batch in one immediate transaction and
// sets their results; on any error it rolls back and sets none.
func (r *records) createAll(ctx context.Context, batch []*createReq) (err error) {
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	stmt := tx.StmtContext(ctx, r.ins)
	defer stmt.Close()
	created := make([]bool, len(batch))
	for i, q := range batch {
		var res sql.Result
		if res, err = stmt.ExecContext(ctx, q.args...); err != nil {
			return err
		}
		var n int64
		if n, err = res.RowsAffected(); err != nil {
			return err
		}
		created[i] = n == 1
	}
	if err = tx.Commit(); err != nil {
		return err
	}
	r.creates.mu.Lock()
	r.creates.batches++
	r.creates.mu.Unlock()
	for i, q := range batch {
		q.created = created[i]
	}
	return nil
}
