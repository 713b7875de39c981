package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/alexify/mailer/mailqueue"
)

// batcher sends the settles of concurrent runs together, as the Redis
// driver's does: a settle that comes while a batch is on the wire waits
// for it, then goes with every other that came meanwhile; a lone one goes
// at once, so batching adds no delay. A batch is one pgx.Batch (one round
// trip, one implicit transaction, one commit): one settle statement for
// all its settles (settleMany, each row fenced by its own token: a settle
// applied is one whose ordinal comes back), then one reserve of the leases
// its runs' slots ask for (SettleAndReserve), summed, shared out among
// them in the reserve's order, and (with a runner listening) the µs until
// the next job is due, for the wake-up timer.
type batcher struct {
	src     *Source
	mu      sync.Mutex
	pending []*settleOp
	running int // the batches on the wire, at most maxInFlight
}

// maxInFlight is the most batches on the wire at once: a second batch goes
// while the server runs the first, so that it is not idle while the
// client reads an answer.
const maxInFlight = 2

// settleOp is a settle waiting for its batch.
type settleOp struct {
	ctx  context.Context
	what string // "ack", "retry", "fail" or "release", for errors

	id, token    string
	state        int16
	spent        int32
	code, reason string
	delay, keep  time.Duration
	keepData     bool
	wake         time.Duration // the wake-up of a job queued again, -1 for none
	limit        int           // the leases the run's slot asks for after it
	lease        time.Duration // of LeaseDuration each
	before       time.Time     // the local clock before the call: the leases' Until start
	ok           bool
	leases       []*mailqueue.Lease
	err          error
	done         chan struct{}
}

// run sends o in the next batch and waits for its answer.
func (b *batcher) run(o *settleOp) (bool, []*mailqueue.Lease, error) {
	o.done = make(chan struct{})
	b.mu.Lock()
	b.pending = append(b.pending, o)
	start := b.running < maxInFlight
	if start {
		b.running++
	}
	b.mu.Unlock()
	if start {
		go b.flush()
	}
	select {
	case <-o.done:
		if o.err != nil {
			return false, nil, fmt.Errorf("postgres: %s: %w", o.what, o.err)
		}
		return o.ok, o.leases, nil
	case <-o.ctx.Done():
		// The batch may still run it: a settle then counts, a lease made
		// for it runs out and is redelivered.
		return false, nil, fmt.Errorf("postgres: %s: %w", o.what, context.Cause(o.ctx))
	}
}

// flush sends the pending settles until none is left.
func (b *batcher) flush() {
	for {
		b.mu.Lock()
		batch := b.pending
		b.pending = nil
		if len(batch) == 0 {
			b.running--
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		b.send(batch)
	}
}

// batchContext is the context a batch runs under: none of its settles'
// cancellation (one cancelled must not fail the others), and the latest of
// their deadlines when each has one.
func batchContext(batch []*settleOp) (context.Context, context.CancelFunc) {
	ctx := context.WithoutCancel(batch[0].ctx)
	var last time.Time
	for _, o := range batch {
		d, ok := o.ctx.Deadline()
		if !ok {
			return ctx, func() {}
		}
		if d.After(last) {
			last = d
		}
	}
	return context.WithDeadline(ctx, last)
}

// reserveGroup is the reserve of a batch for the settles of one lease
// length.
type reserveGroup struct {
	lease time.Duration
	limit int
	ops   []*settleOp
}

// send runs one batch and answers its settles.
func (b *batcher) send(batch []*settleOp) {
	live := batch[:0:0]
	for _, o := range batch {
		if err := o.ctx.Err(); err != nil {
			o.err = context.Cause(o.ctx)
			close(o.done)
			continue
		}
		live = append(live, o)
	}
	if len(live) == 0 {
		return
	}
	err := b.sendLive(live)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && len(live) > 1 {
		// The server refused the statement (a value it cannot store):
		// each settle goes alone, so that one cannot fail the others.
		for _, o := range live {
			if e := b.sendLive([]*settleOp{o}); e != nil {
				o.err = e
			}
		}
	} else if err != nil {
		for _, o := range live {
			o.err = err
		}
	}
	for _, o := range live {
		close(o.done)
	}
}

// sendLive runs the settles of batch and their reserves in one pgx.Batch,
// setting each settle's ok and leases; the error fails them all (the
// batch is one transaction: nothing of it applied).
func (b *batcher) sendLive(batch []*settleOp) error {
	s := b.src
	n := len(batch)
	ids, tokens, codes, reasons := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	states, spent := make([]int16, n), make([]int32, n)
	delays, keeps := make([]int64, n), make([]int64, n)
	keepData := make([]bool, n)
	var groups []*reserveGroup
	for i, o := range batch {
		ids[i], tokens[i], codes[i], reasons[i] = o.id, o.token, o.code, o.reason
		states[i], spent[i], delays[i], keeps[i], keepData[i] = o.state, o.spent, o.delay.Microseconds(), o.keep.Microseconds(), o.keepData
		o.ok, o.leases = false, nil
		if o.limit <= 0 {
			continue
		}
		k := slices.IndexFunc(groups, func(g *reserveGroup) bool { return g.lease == o.lease })
		if k < 0 {
			groups = append(groups, &reserveGroup{lease: o.lease})
			k = len(groups) - 1
		}
		groups[k].limit += o.limit
		groups[k].ops = append(groups[k].ops, o)
	}
	ctx, cancel := batchContext(batch)
	defer cancel()
	before := s.now()
	pb := &pgx.Batch{}
	pb.Queue(s.q.settleMany, s.us(), s.opts.Queue, ids, tokens, states, spent, codes, reasons, delays, keeps, keepData)
	for _, g := range groups {
		pb.Queue(s.reserveSQL(), s.us(), s.opts.Queue, g.limit, g.lease.Microseconds())
	}
	// With a runner listening, the µs until the next job is due come in
	// the same round trip, for the wake-up timer when the reserve leased
	// fewer than asked.
	local := len(groups) > 0 && s.n.local()
	if local {
		pb.Queue(s.q.nextDue, s.us(), s.opts.Queue)
	}
	br := s.pool.SendBatch(ctx, pb)
	err := b.read(br, batch, groups, before)
	var next pgtype.Int8
	if err == nil && local {
		err = br.QueryRow().Scan(&next)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		for _, o := range batch {
			o.ok, o.leases = false, nil
		}
		return err
	}
	limit, leased := 0, []*mailqueue.Lease(nil)
	for _, o := range batch {
		if o.ok && o.wake >= 0 {
			s.n.wakeIn(o.wake)
		}
		limit += o.limit
		leased = append(leased, o.leases...)
	}
	if limit > 0 && s.opts.Fairness == mailqueue.FairnessTenant {
		s.takeTurns(ctx, leased)
	}
	if next.Valid && len(leased) < limit {
		s.n.wakeIn(time.Duration(next.Int64) * time.Microsecond)
	}
	return nil
}

// read reads the answers of a batch: the settles applied, then each
// group's leases, shared out in the reserve's order.
func (b *batcher) read(br pgx.BatchResults, batch []*settleOp, groups []*reserveGroup, before time.Time) error {
	rows, err := br.Query()
	if err != nil {
		return err
	}
	for rows.Next() {
		var k int64
		if err := rows.Scan(&k); err != nil {
			rows.Close()
			return err
		}
		if k < 1 || int(k) > len(batch) {
			rows.Close()
			return fmt.Errorf("settle row %d of %d settles", k, len(batch))
		}
		batch[k-1].ok = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, g := range groups {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		leases, err := b.src.scanLeases(rows, before.Add(g.lease))
		if err != nil {
			return err
		}
		for _, o := range g.ops {
			k := min(o.limit, len(leases))
			o.leases, leases = leases[:k:k], leases[k:]
		}
	}
	return nil
}
