package mailqueue_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/alexify/mailer/drivers/memory"
	"github.com/alexify/mailer/gen/codes"
	mmail "github.com/alexify/mailer/mail"
	"github.com/alexify/mailer/mail/idempotency"
	"github.com/alexify/mailer/mail/smtptest"
	"github.com/alexify/mailer/mailqueue"
)

// plDiesOnce panics on its first send, after the IdempotencyTransport
// reserved the key and before any receipt: a worker killed mid-send.
type plDiesOnce struct {
	calls atomic.Int32
	next  mmail.Transport
}

func (d *plDiesOnce) Send(ctx context.Context, m *mmail.Message) (mmail.Receipt, error) {
	if d.calls.Add(1) == 1 {
		panic("the worker process died mid-send")
	}
	return d.next.Send(ctx, m)
}

// TestPipelineIdempotencyKilledMidSend: a send killed between the
// reservation and the receipt leaves the job's key reserved; run again (an
// operator's retry, another worker sharing the store), the job is of
// unknown delivery and is not sent a second time.
func TestPipelineIdempotencyKilledMidSend(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := smtptest.Start(t, smtptest.Script{})
	quiet := slog.New(&plRecords{})
	q, mq, fc := newQueueWith(t, mailqueue.Config{Logger: quiet}, memory.Options{Logger: quiet})
	store := idempotency.NewMemoryStore(fc)
	inner := &plDiesOnce{next: smtpTransport(t, srv)}
	tr, err := idempotency.New(inner, store, idempotency.Options{})
	if err != nil {
		t.Fatal(err)
	}
	startWorker(t, q, mailqueue.WorkerConfig{Transport: tr})

	r, err := q.Enqueue(ctx, contentJob())
	if err != nil {
		t.Fatal(err)
	}
	drain(t, mq)
	got, _ := mq.Get(context.Background(), r.ID)
	if got.State != mailqueue.JobFailed || got.Code != codes.QueueThrown {
		t.Fatalf("the killed run: state %s, code %s; want failed, queue.thrown", got.State, got.Code)
	}
	if e, ok := store.Get(r.ID); !ok || e.Receipt != nil {
		t.Fatalf("the key after the kill: %+v, %t; want reserved under the job id, no receipt", e, ok)
	}
	// The operator retries the job by hand.
	if err := mq.RetryFailed(context.Background(), r.ID); err != nil {
		t.Fatal(err)
	}
	mq.Wake()
	drain(t, mq)
	got, _ = mq.Get(context.Background(), r.ID)
	if got.State != mailqueue.JobDeliveryUnknown || got.Code != codes.DeliveryUnknown {
		t.Errorf("the run again: state %s, code %s; want delivery_unknown", got.State, got.Code)
	}
	if n := inner.calls.Load(); n != 1 || len(srv.Messages()) != 0 {
		t.Errorf("the inner transport was called %d times, %d messages arrived; want 1 call, no second send", n, len(srv.Messages()))
	}
}

// TestPipelineIdempotencyRetryAfterProvablyUnsent: a 451 releases the key,
// so the retry sends; once accepted, the job's key answers the stored
// receipt.
func TestPipelineIdempotencyRetryAfterProvablyUnsent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	busy := smtptest.Start(t, smtptest.Script{Data: smtptest.Reply(451, "4.3.0", "try again later")})
	ok := smtptest.Start(t, smtptest.Script{})
	quiet := slog.New(&plRecords{})
	q, mq, fc := newQueueWith(t, mailqueue.Config{Logger: quiet}, memory.Options{Logger: quiet})
	store := idempotency.NewMemoryStore(fc)
	tr, err := idempotency.New(&switchTransport{next: []mmail.Transport{smtpTransport(t, busy), smtpTransport(t, ok)}}, store, idempotency.Options{})
	if err != nil {
		t.Fatal(err)
	}
	startWorker(t, q, mailqueue.WorkerConfig{Transport: tr})
	r, err := q.Enqueue(ctx, contentJob())
	if err != nil {
		t.Fatal(err)
	}
	drain(t, mq)
	got, _ := mq.Get(context.Background(), r.ID)
	if got.State != mailqueue.JobQueued || got.Code != codes.QueueSendFailed {
		t.Fatalf("after the 451: state %s, code %s", got.State, got.Code)
	}
	if _, held := store.Get(r.ID); held {
		t.Fatal("the key is still held after a failure that provably did not send")
	}
	fc.Set(got.RunAt)
	mq.Wake()
	drain(t, mq)
	if got, _ = mq.Get(context.Background(), r.ID); got.State != mailqueue.JobAccepted || len(ok.Messages()) != 1 {
		t.Fatalf("after the retry: state %s, %d messages", got.State, len(ok.Messages()))
	}
	e, held := store.Get(r.ID)
	if !held || e.Receipt == nil || e.Receipt.Category != mmail.Accepted {
		t.Errorf("the key after the accepted send: %+v, %t", e, held)
	}
}
