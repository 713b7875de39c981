package postgres

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/alexify/mailer/mailqueue"
)

// EnqueueTx stores jobs in the caller's transaction tx, a pgx.Tx (of a
// pgx.Conn or a pgxpool.Pool) or a *sql.Tx of pgx's stdlib
// (github.com/jackc/pgx/v5/stdlib), with the one statement Enqueue runs:
// the jobs are invisible to workers until tx commits and gone if it rolls
// back; the duplicate check and the conflict (queue.key_reused) are told
// against what tx sees (a job of the id that another transaction is
// storing makes the statement wait for its end, as a unique index does);
// the NOTIFY that wakes the workers is sent at the commit, and never for a
// rollback. See mailqueue.TxDriver.
//
// A tx of any other kind is refused with an error wrapping
// mailqueue.ErrTransactionUnsupported, before anything is written. The
// jobs are checked before (Queue.EnqueueManyTx), so a job refused writes
// nothing and leaves tx usable; an error of the statement itself (the
// database down, a *sql.Tx of another driver) aborts tx, as any failed
// statement does in PostgreSQL.
func (s *Source) EnqueueTx(ctx context.Context, tx any, jobs []mailqueue.NewJob) ([]mailqueue.EnqueueResult, error) {
	q, err := txQuerier(tx)
	if err != nil {
		return nil, err
	}
	return s.enqueueOn(ctx, q, jobs)
}

// txQuerier returns the querier of a caller's transaction.
func txQuerier(tx any) (querier, error) {
	switch t := tx.(type) {
	case pgx.Tx:
		if t == nil {
			break
		}
		return pgxTx{t}, nil
	case *sql.Tx:
		if t == nil {
			break
		}
		return sqlTx{t}, nil
	}
	return nil, fmt.Errorf("postgres: %w: a %T is neither a pgx.Tx nor a *sql.Tx", mailqueue.ErrTransactionUnsupported, tx)
}

// pgxTx runs the enqueue in a pgx.Tx.
type pgxTx struct{ tx pgx.Tx }

func (t pgxTx) query(ctx context.Context, sql string, args []any, scan func(int, bool, string) error) error {
	rows, err := t.tx.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	return scanTriples(rows, scan)
}

// sqlTx runs the enqueue in a *sql.Tx of pgx's stdlib, which passes pgx's
// arguments (arrays, pgtype values) through to pgx as they are.
type sqlTx struct{ tx *sql.Tx }

func (t sqlTx) query(ctx context.Context, q string, args []any, scan func(int, bool, string) error) error {
	rows, err := t.tx.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var n int64
		var stored bool
		var hash string
		if err := rows.Scan(&n, &stored, &hash); err != nil {
			return err
		}
		if err := scan(int(n), stored, hash); err != nil {
			return err
		}
	}
	return rows.Err()
}

func (t sqlTx) exec(ctx context.Context, q string, args ...any) error {
	_, err := t.tx.ExecContext(ctx, q, args...)
	return err
}
