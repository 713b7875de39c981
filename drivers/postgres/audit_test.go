package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/alexify/mailer/drivers/postgres"
	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/internal/pgtest"
	memtransport "github.com/alexify/mailer/mail/memory"
	"github.com/alexify/mailer/mailqueue"
)

// TestRedeliveredDeliveryUnknownAsksTheAudit: with the audit sink on
// PostgreSQL and Redelivered delivery_unknown, a job whose run died before
// it submitted (no "submitted" event of its attempt in the table) is sent
// when it runs again, and one whose run died after it submitted is failed
// as delivery_unknown, unsent.
func TestRedeliveredDeliveryUnknownAsksTheAudit(t *testing.T) {
	f := newFixture(t, postgres.Options{LeaseDuration: time.Minute})
	ctx := context.Background()
	before, err := f.q.Enqueue(ctx, welcome("died-before", "Hello."))
	if err != nil {
		t.Fatal(err)
	}
	after, err := f.q.Enqueue(ctx, welcome("died-after", "Hello."))
	if err != nil {
		t.Fatal(err)
	}
	// The runs that died: their leases, short, run out; one had told
	// "submitted".
	ls, err := f.pq.Source().Reserve(ctx, mailqueue.ReserveParams{Limit: 2, LeaseDuration: 200 * time.Millisecond})
	if err != nil || len(ls) != 2 {
		t.Fatalf("Reserve = %d, %v", len(ls), err)
	}
	if err := f.audit.Record(ctx, mailqueue.AuditEvent{JobID: after.ID, State: mailqueue.AuditSubmitted, Attempt: 1, At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	tr := memtransport.New()
	w, err := f.q.NewWorker(mailqueue.WorkerConfig{Transport: tr, Redelivered: mailqueue.RedeliveredDeliveryUnknown})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Close(ctx) }()
	waitFor(t, "both jobs finished", 10*time.Second, func() bool {
		st, err := f.pq.Stats(ctx)
		return err == nil && st.Accepted+st.DeliveryUnknown == 2
	})
	if r, err := f.pq.Get(ctx, before.ID); err != nil || r.State != mailqueue.JobAccepted {
		t.Errorf("the job whose run died before the send: %+v, %v; want accepted", r, err)
	}
	if r, err := f.pq.Get(ctx, after.ID); err != nil || r.State != mailqueue.JobDeliveryUnknown || r.Code != codes.QueueRedelivered {
		t.Errorf("the job whose run died after it submitted: %+v, %v; want delivery_unknown, queue.redelivered", r, err)
	}
	if tr.Sent() != 1 {
		t.Errorf("%d messages sent, want 1", tr.Sent())
	}
}

// TestStoreDown: an enqueue on a database that does not answer is
// refused with queue.store_failed, wrapping the driver's error.
func TestStoreDown(t *testing.T) {
	f := newFixture(t, postgres.Options{})
	ctx := context.Background()
	down, err := pgxpool.New(ctx, "postgres://postgres@127.0.0.1:1/postgres?sslmode=disable&connect_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	defer down.Close()
	// A queue whose pool is closed: every statement fails.
	pool, err := pgxpool.New(ctx, pgtest.URL())
	if err != nil {
		t.Fatal(err)
	}
	pq, err := postgres.Open(ctx, postgres.Options{Pool: pool, Schema: f.schema})
	if err != nil {
		t.Fatal(err)
	}
	pool.Close()
	q, err := mailqueue.New(mailqueue.Config{Driver: pq})
	if err != nil {
		t.Fatal(err)
	}
	_, err = q.Enqueue(ctx, welcome("down", "Hello."))
	if mailqueue.CodeOf(err) != codes.QueueStoreFailed || errors.Unwrap(err) == nil {
		t.Errorf("Enqueue on a closed pool: %v, want queue.store_failed wrapping the driver's error", err)
	}
	if _, err := postgres.OpenSource(ctx, postgres.Options{Pool: down}); err == nil {
		t.Error("OpenSource on a database that does not answer: no error")
	}
}
