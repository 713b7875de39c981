package redis

import (
	"context"
	"errors"
	"testing"

	"github.com/alexify/mailer/drivers/redis/internal/redistest"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/mailqueue"
)

// TestEnqueueTxRefused: the Redis driver refuses a transaction with
// ErrTransactionUnsupported and stores nothing.
func TestEnqueueTxRefused(t *testing.T) {
	c := redistest.Standalone(t)
	ctx := context.Background()
	d, err := Open(ctx, Options{Client: c, Prefix: redistest.Prefix(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = d.Source().Obliterate(ctx) })
	q, err := mailqueue.New(mailqueue.Config{Driver: d})
	if err != nil {
		t.Fatal(err)
	}
	job := &jobv1.Job{
		Kind: jobv1.KindContent, Subject: "Welcome", Content: &jobv1.Content{Text: "Hello."},
		From: "Shop <shop@example.com>", To: []string{"ada@example.com"}, IdempotencyKey: "welcome:1",
	}
	if _, err := q.EnqueueTx(ctx, struct{}{}, job); !errors.Is(err, mailqueue.ErrTransactionUnsupported) {
		t.Errorf("Queue.EnqueueTx = %v, want ErrTransactionUnsupported", err)
	}
	if st, err := d.Stats(ctx); err != nil || st.Queued != 0 {
		t.Errorf("Stats = %+v, %v; want nothing stored", st, err)
	}
}
