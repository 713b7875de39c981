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
// (github.com/jackc/pgx/v5/stdlib), with the statements Enqueue runs (the
// insert and its NOTIFY: one round trip on a pgx.Tx, two on a *sql.Tx; a
// third reads the stored hashes when some ids were not stored): the jobs
// are invisible to workers until tx commits and gone if it rolls back;
// the duplicate check and the conflict (queue.key_reused) are told
// against what tx sees (a job of the id that another transaction is
// storing makes the statement wait for its end, as a unique index does);
// the NOTIFY that wakes the workers is sent at the commit, and never for a
// rollback (at most one every NotifyWindow per queue and process: see the
// package's doc). See mailqueue.TxDriver.
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

// pgxTx runs the enqueue in a pgx.Tx: the insert and its NOTIFY in one
// pgx.Batch (tx.SendBatch), one round trip.
type pgxTx struct{ tx pgx.Tx }

func (t pgxTx) insert(ctx context.Context, ins string, args []any, wake string, wakeArgs []any) ([]string, error) {
	return pgxQuerier{t.tx}.insert(ctx, ins, args, wake, wakeArgs)
}

func (t pgxTx) hashes(ctx context.Context, q string, args []any) (map[string]string, error) {
	return pgxQuerier{t.tx}.hashes(ctx, q, args)
}

// sqlTx runs the enqueue in a *sql.Tx of pgx's stdlib, which passes pgx's
// arguments (arrays, pgtype values) through to pgx as they are; the
// insert and its NOTIFY are two round trips (database/sql has no batch).
type sqlTx struct{ tx *sql.Tx }

func (t sqlTx) insert(ctx context.Context, ins string, args []any, wake string, wakeArgs []any) ([]string, error) {
	rows, err := t.tx.QueryContext(ctx, ins, args...)
	if err != nil {
		return nil, err
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			_ = rows.Close()
			return nil, err
		}
		ids = append(ids, id)
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if wake != "" {
		if err := t.exec(ctx, wake, wakeArgs...); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

func (t sqlTx) hashes(ctx context.Context, q string, args []any) (map[string]string, error) {
	rows, err := t.tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	m := map[string]string{}
	for rows.Next() {
		var id, h string
		if err := rows.Scan(&id, &h); err != nil {
			return nil, err
		}
		m[id] = h
	}
	return m, rows.Err()
}

func (t sqlTx) exec(ctx context.Context, q string, args ...any) error {
	_, err := t.tx.ExecContext(ctx, q, args...)
	return err
}
