package memory_test

import (
	"context"
	"errors"
	"testing"

	"github.com/alexify/mailer/drivers/memory"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/mailqueue"
)

// TestEnqueueTxRefused: the memory queue refuses a transaction with
// ErrTransactionUnsupported, through the queue and the driver alike, and
// stores nothing.
func TestEnqueueTxRefused(t *testing.T) {
	d := mustMemory(t, memory.Options{})
	q, err := mailqueue.New(mailqueue.Config{Driver: d})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	job := &jobv1.Job{
		Kind: jobv1.KindContent, Subject: "Welcome", Content: &jobv1.Content{Text: "Hello."},
		From: "Shop <shop@example.com>", To: []string{"ada@example.com"}, IdempotencyKey: "welcome:1",
	}
	if _, err := q.EnqueueTx(ctx, struct{}{}, job); !errors.Is(err, mailqueue.ErrTransactionUnsupported) {
		t.Errorf("Queue.EnqueueTx = %v, want ErrTransactionUnsupported", err)
	}
	if _, err := d.EnqueueTx(ctx, struct{}{}, nil); !errors.Is(err, mailqueue.ErrTransactionUnsupported) {
		t.Errorf("Queue's driver EnqueueTx = %v, want ErrTransactionUnsupported", err)
	}
	if st, err := d.Stats(ctx); err != nil || st.Queued != 0 {
		t.Errorf("Stats = %+v, %v; want nothing stored", st, err)
	}
}
