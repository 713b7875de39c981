package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/alexify/mailer/mailqueue"
)

// Audit is an audit sink on the audit table of the driver's schema: a
// mailqueue.AuditSink, a mailqueue.AuditHistory (Has: the sink a worker's
// RedeliveredDeliveryUnknown asks whether a run that died had submitted)
// and a mailqueue.TxAuditSink (RecordTx: Queue.EnqueueTx writes a job's
// "queued" event in the caller's transaction, so that it commits with
// the job). Every worker and producer of the schema may share it. An event
// holds no address: the job's id, its state, the attempt, code and reason.
type Audit struct {
	pool                  *pgxpool.Pool
	insert, has, countSQL string
}

var (
	_ mailqueue.AuditSink    = (*Audit)(nil)
	_ mailqueue.AuditHistory = (*Audit)(nil)
	_ mailqueue.TxAuditSink  = (*Audit)(nil)
)

// OpenAudit returns the audit sink of schema ("mailer" when empty) on
// pool. It returns an error wrapping ErrNotMigrated when the schema is not
// migrated.
func OpenAudit(ctx context.Context, pool *pgxpool.Pool, schema string) (*Audit, error) {
	if pool == nil {
		return nil, &mailqueue.OptionError{Package: "postgres", Option: "OpenAudit's pool", Rule: "is required"}
	}
	schema = cmp.Or(schema, DefaultSchema)
	if err := checkMigrated(ctx, pool, schema); err != nil {
		return nil, err
	}
	return &Audit{
		pool: pool,
		insert: inSchema(`INSERT INTO {schema}.audit (job_id, state, attempt, code, reason, tenant, correlation_id, at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, schema),
		has:      inSchema(`SELECT EXISTS (SELECT 1 FROM {schema}.audit WHERE job_id = $1 AND attempt = $2 AND state = $3)`, schema),
		countSQL: inSchema(`SELECT count(*) FROM {schema}.audit WHERE job_id = $1 AND state = $2`, schema),
	}, nil
}

func (a *Audit) args(e mailqueue.AuditEvent) []any {
	return []any{e.JobID, string(e.State), e.Attempt, string(e.Code), e.Reason, e.TenantID, e.CorrelationID, e.At}
}

// Record writes the event, in a statement of its own.
func (a *Audit) Record(ctx context.Context, e mailqueue.AuditEvent) error {
	if _, err := a.pool.Exec(ctx, a.insert, a.args(e)...); err != nil {
		return fmt.Errorf("postgres: audit: %w", err)
	}
	return nil
}

// RecordTx writes the event in the caller's transaction tx (a pgx.Tx or a
// *sql.Tx of pgx's stdlib): it commits with the rest of tx, or not at all.
// The insert runs under a savepoint, so that a failure of the sink (a
// warning unless the queue is AuditStrict) leaves tx usable for the job
// and the caller's rows. A tx of another kind is refused with an error
// wrapping mailqueue.ErrTransactionUnsupported, and nothing is written.
func (a *Audit) RecordTx(ctx context.Context, tx any, e mailqueue.AuditEvent) error {
	q, err := txQuerier(tx)
	if err != nil {
		return err
	}
	switch t := q.(type) {
	case pgxTx:
		// The savepoint, the insert and its release in one round trip; a
		// second one to roll back to the savepoint when the insert failed.
		b := &pgx.Batch{}
		b.Queue("SAVEPOINT mailer_audit")
		b.Queue(a.insert, a.args(e)...)
		b.Queue("RELEASE SAVEPOINT mailer_audit")
		err = t.tx.SendBatch(ctx, b).Close()
		if err != nil {
			_, _ = t.tx.Exec(ctx, "ROLLBACK TO SAVEPOINT mailer_audit")
		}
	case sqlTx:
		err = t.exec(ctx, "SAVEPOINT mailer_audit")
		if err == nil {
			err = t.exec(ctx, a.insert, a.args(e)...)
			if err != nil {
				_ = t.exec(ctx, "ROLLBACK TO SAVEPOINT mailer_audit")
			} else {
				err = t.exec(ctx, "RELEASE SAVEPOINT mailer_audit")
			}
		}
	default:
		err = errors.New("no querier")
	}
	if err != nil {
		return fmt.Errorf("postgres: audit: %w", err)
	}
	return nil
}

// Has reports whether the sink holds the event of state for the attempt
// of the job; see mailqueue.AuditHistory.
func (a *Audit) Has(ctx context.Context, jobID string, attempt int, state mailqueue.AuditState) (bool, error) {
	var ok bool
	if err := a.pool.QueryRow(ctx, a.has, jobID, attempt, string(state)).Scan(&ok); err != nil {
		return false, fmt.Errorf("postgres: audit: %w", err)
	}
	return ok, nil
}

// Count returns how many events of state the sink holds for the job, of
// every attempt: for tests and tools.
func (a *Audit) Count(ctx context.Context, jobID string, state mailqueue.AuditState) (int, error) {
	var n int
	if err := a.pool.QueryRow(ctx, a.countSQL, jobID, string(state)).Scan(&n); err != nil {
		return 0, fmt.Errorf("postgres: audit: %w", err)
	}
	return n, nil
}
