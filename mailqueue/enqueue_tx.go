package mailqueue

import (
	"context"
	"errors"

	"github.com/alexify/mailer/gen/jobv1"
)

// ErrTransactionUnsupported is returned by Queue.EnqueueTx and
// EnqueueManyTx when the driver cannot store a job in the caller's
// transaction (it is no TxDriver, or refuses that kind of transaction):
// nothing was stored. The memory queue and the Redis driver return it; a
// driver never ignores a transaction it was given.
var ErrTransactionUnsupported = errors.New("mailqueue: the driver cannot enqueue in a transaction")

// TxDriver is a Driver that can store jobs in the caller's database
// transaction (the outbox: a job commits with the rows it tells of, or
// not at all). The PostgreSQL driver is one; it takes a pgx.Tx, or a
// *sql.Tx of pgx's stdlib.
type TxDriver interface {
	Driver
	// EnqueueTx stores jobs as Enqueue does, in tx: they are invisible to
	// workers until tx commits, and gone if it rolls back. Duplicates and
	// conflicts are told inside tx, against what it sees. It returns an
	// error wrapping ErrTransactionUnsupported for a tx of a kind it
	// cannot use, before it writes anything.
	EnqueueTx(ctx context.Context, tx any, jobs []NewJob) ([]EnqueueResult, error)
}

// TxAuditSink is an AuditSink that can write an event in the caller's
// transaction, so that a job's "queued" event commits with the job (the
// PostgreSQL driver's audit table). EnqueueTx calls RecordTx when the
// queue's sink has it; a sink that returns an error wrapping
// ErrTransactionUnsupported (a tx of another database) is then told
// Record, as for Enqueue.
type TxAuditSink interface {
	AuditSink
	RecordTx(ctx context.Context, tx any, e AuditEvent) error
}

// EnqueueTx checks job and stores it in the caller's transaction tx, as
// Enqueue does: the job is invisible to workers until tx commits, and gone
// if it rolls back (the outbox, spec: "Once per key"). A job refused
// (queue.invalid_job, checked before anything is written) writes nothing
// and leaves tx usable; the duplicate check and queue.key_reused hold
// inside tx. The audit's "queued" event is written in tx when the sink is
// a TxAuditSink that takes it. It returns an error wrapping
// ErrTransactionUnsupported when the driver is no TxDriver or cannot use
// tx.
//
// tx is the driver's kind of transaction: for the PostgreSQL driver, a
// pgx.Tx, or a *sql.Tx of pgx's stdlib.
func (q *Queue) EnqueueTx(ctx context.Context, tx any, job *jobv1.Job) (Result, error) {
	rs, err := q.EnqueueManyTx(ctx, tx, []*jobv1.Job{job})
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.Index = -1
		}
		return Result{}, err
	}
	return rs[0], nil
}

// EnqueueManyTx enqueues jobs in the caller's transaction tx, as
// EnqueueMany does in a call of its own; see EnqueueTx.
func (q *Queue) EnqueueManyTx(ctx context.Context, tx any, jobs []*jobv1.Job) ([]Result, error) {
	if tx == nil {
		return nil, errors.New("mailqueue: EnqueueManyTx: the transaction is nil")
	}
	td, ok := q.cfg.Driver.(TxDriver)
	if !ok {
		return nil, ErrTransactionUnsupported
	}
	return q.enqueueMany(ctx, jobs, func(ctx context.Context, e AuditEvent) error {
		if s, ok := q.cfg.Audit.(TxAuditSink); ok {
			err := s.RecordTx(ctx, tx, e)
			if !errors.Is(err, ErrTransactionUnsupported) {
				return err
			}
		}
		return q.cfg.Audit.Record(ctx, e)
	}, func(ctx context.Context, prepared []NewJob) ([]EnqueueResult, error) {
		return td.EnqueueTx(ctx, tx, prepared)
	})
}
