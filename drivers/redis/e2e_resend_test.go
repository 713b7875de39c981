package redis_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	redisdriver "github.com/alexify/mailer/drivers/redis"
	"github.com/alexify/mailer/drivers/redis/internal/redistest"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/mail"
	"github.com/alexify/mailer/mail/idempotency"
	"github.com/alexify/mailer/mailqueue"
)

// lostReply fails its first send without a receipt (a connection dropped
// after DATA: the message may have gone), then accepts; it counts its
// calls.
type lostReply struct{ calls atomic.Int32 }

func (l *lostReply) Send(context.Context, *mail.Message) (mail.Receipt, error) {
	if l.calls.Add(1) == 1 {
		return mail.Receipt{}, errors.New("connection reset by peer after DATA")
	}
	return mail.Receipt{Category: mail.Accepted, Code: 250}, nil
}

// TestResendOnRedis: a worker on Redis with an IdempotencyTransport over
// the Redis IdempotencyStore. A send whose reply was lost ends
// delivery_unknown; RetryFailed replays the stored receipt and sends
// nothing; Resend with the store's Forget sends it again, once.
func TestResendOnRedis(t *testing.T) {
	ctx := context.Background()
	c := redistest.Standalone(t)
	prefix := redistest.Prefix(t)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	q, err := redisdriver.Open(ctx, redisdriver.Options{Client: c, Prefix: prefix, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = q.Source().Obliterate(context.Background()) })
	store, err := redisdriver.OpenIdempotencyStore(ctx, c, redisdriver.IdempotencyOptions{Prefix: prefix, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	mq, err := mailqueue.New(mailqueue.Config{Driver: q, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	inner := &lostReply{}
	tr, err := idempotency.New(inner, store, idempotency.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := mq.NewWorker(mailqueue.WorkerConfig{Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close(context.Background()) })
	res, err := mq.Enqueue(ctx, &jobv1.Job{
		Kind: jobv1.KindContent, Subject: "Your invoice", Content: &jobv1.Content{Text: "Hello"},
		From: "Shop <shop@example.com>", To: []string{"ada@example.com"}, IdempotencyKey: "invoice:1",
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Forget(context.Background(), res.ID) })
	// finished waits until the job is finished, and returns its row.
	finished := func() mailqueue.JobRow {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			j, err := q.Get(ctx, res.ID)
			if err != nil {
				t.Fatal(err)
			}
			if j.State != mailqueue.JobQueued && j.State != mailqueue.JobRunning {
				return j
			}
			if time.Now().After(deadline) {
				t.Fatalf("the job is still %s after 10s", j.State)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if j := finished(); j.State != mailqueue.JobDeliveryUnknown {
		t.Fatalf("after the lost reply: %s (%s), want delivery_unknown", j.State, j.Code)
	}
	if err := q.RetryFailed(ctx, res.ID); err != nil {
		t.Fatal(err)
	}
	if j := finished(); j.State != mailqueue.JobDeliveryUnknown || inner.calls.Load() != 1 {
		t.Fatalf("after RetryFailed: %s, %d sends; want delivery_unknown again, no send", j.State, inner.calls.Load())
	}
	if err := q.Resend(ctx, mailqueue.ResendParams{ID: res.ID, Forget: store.Forget}); err != nil {
		t.Fatal(err)
	}
	if j := finished(); j.State != mailqueue.JobAccepted || inner.calls.Load() != 2 {
		t.Errorf("after Resend: %s, %d calls of the transport; want accepted, 2 calls (one send again)", j.State, inner.calls.Load())
	}
}
