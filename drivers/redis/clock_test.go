package redis

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/alexify/mailer/drivers/redis/internal/redistest"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/mail"
	mtransport "github.com/alexify/mailer/mail/memory"
	"github.com/alexify/mailer/mailqueue"
)

// TestServerClockDecides runs a producer and a worker whose clock (the
// local one) is two minutes ahead of the server's (the scripts' TIME,
// shifted back): the job, with no scheduledAt, is due at once by the
// server's clock, and with 60 s left by the server's clock (60 s past by
// the worker's), it is sent, not failed as queue.expired
// (docs/architecture.md, "Time is the store's").
func TestServerClockDecides(t *testing.T) {
	c := redistest.Standalone(t)
	prefix := redistest.Prefix(t)
	quiet := slog.New(slog.DiscardHandler)
	rq, err := Open(ctx, Options{Client: c, Prefix: prefix, PollInterval: time.Hour, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = rq.Source().Obliterate(ctx) })
	const skew = 2 * time.Minute
	rq.Source().advance(-skew)
	q, err := mailqueue.New(mailqueue.Config{Driver: rq, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	sent := make(chan struct{}, 1)
	tr := mtransport.New()
	tr.OnSend(func(context.Context, *mail.Message) (mail.Receipt, error) {
		sent <- struct{}{}
		return mail.Receipt{Category: mail.Accepted, Code: 250}, nil
	})
	w, err := q.NewWorker(mailqueue.WorkerConfig{Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	exp := rq.Source().now().Add(time.Minute)
	r, err := q.Enqueue(ctx, &jobv1.Job{
		Kind: jobv1.KindContent, Subject: "Your code", Content: &jobv1.Content{Text: "1234"},
		From: "shop@example.com", To: []string{"ada@example.com"}, IdempotencyKey: "code:1", ExpiresAt: &exp,
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-sent:
	case <-time.After(10 * time.Second):
		t.Fatal("the job was not sent: due at the producer's clock, or expired by the worker's")
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	row, err := rq.Get(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if row.State != mailqueue.JobAccepted || row.Attempt != 1 {
		t.Errorf("the job is %s after %d attempts (%s %s), want accepted after 1", row.State, row.Attempt, row.Code, row.Reason)
	}
}
