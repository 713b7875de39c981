package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/alexify/mailer/drivers/postgres"
	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/internal/pgtest"
	"github.com/alexify/mailer/mailqueue"
)

// fixture is a queue on a schema of its own, with the driver's audit sink.
type fixture struct {
	pool   *pgxpool.Pool
	schema string
	pq     *postgres.Queue
	q      *mailqueue.Queue
	audit  *postgres.Audit
}

func newFixture(t *testing.T, opts postgres.Options) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{pool: pgtest.Pool(t), schema: pgtest.SchemaName()}
	pgtest.DropSchema(t, f.pool, f.schema)
	if err := postgres.MigrateSchema(ctx, f.pool, f.schema); err != nil {
		t.Fatal(err)
	}
	opts.Pool, opts.Schema = f.pool, f.schema
	var err error
	if f.pq, err = postgres.Open(ctx, opts); err != nil {
		t.Fatal(err)
	}
	if f.audit, err = postgres.OpenAudit(ctx, f.pool, f.schema); err != nil {
		t.Fatal(err)
	}
	if f.q, err = mailqueue.New(mailqueue.Config{Driver: f.pq, Audit: f.audit}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.pool.Exec(ctx, fmt.Sprintf(`CREATE TABLE %s.users (email text PRIMARY KEY)`, pgx.Identifier{f.schema}.Sanitize())); err != nil {
		t.Fatal(err)
	}
	return f
}

func welcome(key, text string) *jobv1.Job {
	return &jobv1.Job{
		Kind: jobv1.KindContent, Subject: "Welcome", Content: &jobv1.Content{Text: text},
		From: "Shop <shop@example.com>", To: []string{"ada@example.com"}, IdempotencyKey: key,
	}
}

func (f *fixture) queued(t *testing.T) int64 {
	t.Helper()
	st, err := f.pq.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st.Queued
}

func (f *fixture) users(t *testing.T) int {
	t.Helper()
	var n int
	if err := f.pool.QueryRow(context.Background(), fmt.Sprintf("SELECT count(*) FROM %s.users", pgx.Identifier{f.schema}.Sanitize())).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestEnqueueTx: a job enqueued in a pgx transaction is invisible to a
// reserve until the commit and gone after a rollback; its "queued" audit
// event commits (or rolls back) with it; a duplicate and a reused key are
// told inside the transaction, and a job refused (invalid, key reused)
// leaves the transaction usable.
func TestEnqueueTx(t *testing.T) {
	f := newFixture(t, postgres.Options{})
	ctx := context.Background()
	users := pgx.Identifier{f.schema}.Sanitize() + ".users"

	// Rolled back: neither the user nor the job nor its audit event.
	tx, err := f.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO "+users+" VALUES ('bob@example.com')"); err != nil {
		t.Fatal(err)
	}
	rolled, err := f.q.EnqueueTx(ctx, tx, welcome("welcome:bob", "Hello Bob."))
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if n, q := f.users(t), f.queued(t); n != 0 || q != 0 {
		t.Fatalf("after the rollback: %d users, %d jobs; want none", n, q)
	}
	if n, err := f.audit.Count(ctx, rolled.ID, mailqueue.AuditQueued); err != nil || n != 0 {
		t.Errorf("the rolled-back job's queued events: %d, %v; want none", n, err)
	}

	// Committed: invisible until the commit.
	tx, err = f.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO "+users+" VALUES ('ada@example.com')"); err != nil {
		t.Fatal(err)
	}
	res, err := f.q.EnqueueTx(ctx, tx, welcome("welcome:ada", "Hello Ada."))
	if err != nil {
		t.Fatal(err)
	}
	if ls, err := f.pq.Source().Reserve(ctx, mailqueue.ReserveParams{Limit: 10, LeaseDuration: time.Minute}); err != nil || len(ls) != 0 {
		t.Fatalf("Reserve before the commit = %d leases, %v; want none", len(ls), err)
	}
	if again, err := f.q.EnqueueTx(ctx, tx, welcome("welcome:ada", "Hello Ada.")); err != nil || !again.Duplicate {
		t.Errorf("the same job again in the transaction: %+v, %v; want Duplicate", again, err)
	}
	_, err = f.q.EnqueueTx(ctx, tx, welcome("welcome:ada", "Another message."))
	if c := mailqueue.CodeOf(err); c != codes.QueueKeyReused {
		t.Errorf("another message under the key in the transaction: %v, want queue.key_reused", err)
	}
	if _, err := f.q.EnqueueTx(ctx, tx, &jobv1.Job{Kind: jobv1.KindContent}); mailqueue.CodeOf(err) != codes.QueueInvalidJob {
		t.Errorf("an invalid job: %v, want queue.invalid_job", err)
	}
	// The refusals left the transaction usable.
	if _, err := tx.Exec(ctx, "INSERT INTO "+users+" VALUES ('eve@example.com')"); err != nil {
		t.Fatalf("the transaction after the refusals: %v", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if n := f.users(t); n != 2 {
		t.Errorf("%d users committed, want 2", n)
	}
	ls, err := f.pq.Source().Reserve(ctx, mailqueue.ReserveParams{Limit: 10, LeaseDuration: time.Minute})
	if err != nil || len(ls) != 1 || ls[0].ID != res.ID {
		t.Fatalf("Reserve after the commit = %v, %v; want %s", ls, err, res.ID)
	}
	// The queue tells "queued" before the store answers, so the duplicate
	// and the reused key were told too: three events, all committed.
	if n, err := f.audit.Count(ctx, res.ID, mailqueue.AuditQueued); err != nil || n != 3 {
		t.Errorf("the committed job's queued events: %d, %v; want 3", n, err)
	}
	if ok, err := f.audit.Has(ctx, res.ID, 0, mailqueue.AuditQueued); err != nil || !ok {
		t.Errorf("Has(queued, attempt 0) = %t, %v; want true", ok, err)
	}
}

// TestEnqueueTxSQL: a *sql.Tx of pgx's stdlib is taken too.
func TestEnqueueTxSQL(t *testing.T) {
	f := newFixture(t, postgres.Options{})
	ctx := context.Background()
	db := stdlib.OpenDBFromPool(f.pool)
	t.Cleanup(func() { _ = db.Close() })
	for _, commit := range []bool{false, true} {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.q.EnqueueTx(ctx, tx, welcome(fmt.Sprintf("welcome:%t", commit), "Hello.")); err != nil {
			t.Fatal(err)
		}
		if commit {
			err = tx.Commit()
		} else {
			err = tx.Rollback()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if q := f.queued(t); q != 1 {
		t.Errorf("%d jobs queued, want the committed one", q)
	}
}

// TestEnqueueTxRefused: a transaction of another kind is refused with
// ErrTransactionUnsupported, and nothing is stored.
func TestEnqueueTxRefused(t *testing.T) {
	f := newFixture(t, postgres.Options{})
	for _, tx := range []any{struct{}{}, "tx", (*pgxpool.Pool)(nil)} {
		if _, err := f.q.EnqueueTx(context.Background(), tx, welcome("k", "Hello.")); !errors.Is(err, mailqueue.ErrTransactionUnsupported) {
			t.Errorf("EnqueueTx(%T) = %v, want ErrTransactionUnsupported", tx, err)
		}
	}
	if q := f.queued(t); q != 0 {
		t.Errorf("%d jobs stored", q)
	}
}

// TestEnqueueTxAuditFails: when the audit table cannot take the event (a
// warning: the queue is not AuditStrict), the job is stored all the same
// in the caller's transaction, which stays usable.
func TestEnqueueTxAuditFails(t *testing.T) {
	f := newFixture(t, postgres.Options{})
	ctx := context.Background()
	if _, err := f.pool.Exec(ctx, "ALTER TABLE "+pgx.Identifier{f.schema}.Sanitize()+".audit ADD CONSTRAINT never CHECK (false) NOT VALID"); err != nil {
		t.Fatal(err)
	}
	users := pgx.Identifier{f.schema}.Sanitize() + ".users"
	err := pgx.BeginFunc(ctx, f.pool, func(tx pgx.Tx) error {
		if _, err := f.q.EnqueueTx(ctx, tx, welcome("welcome:ada", "Hello.")); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "INSERT INTO "+users+" VALUES ('ada@example.com')")
		return err
	})
	if err != nil {
		t.Fatalf("the transaction after an audit that failed: %v", err)
	}
	if q, n := f.queued(t), f.users(t); q != 1 || n != 1 {
		t.Errorf("%d jobs and %d users committed, want 1 and 1", q, n)
	}
}
