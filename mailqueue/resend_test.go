package mailqueue_test

import (
	"context"
	"errors"
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

// lostReply fails its first send without a receipt, as a connection
// dropped after DATA does: the message may have gone. Then it sends.
type lostReply struct {
	calls atomic.Int32
	next  mmail.Transport
}

func (l *lostReply) Send(ctx context.Context, m *mmail.Message) (mmail.Receipt, error) {
	if l.calls.Add(1) == 1 {
		return mmail.Receipt{}, errors.New("connection reset by peer after DATA")
	}
	return l.next.Send(ctx, m)
}

// TestResendOfDeliveryUnknown: a job of unknown delivery under an
// IdempotencyTransport is not sent again by RetryFailed (its key answers
// the stored receipt: delivery_unknown again), and is sent again, once,
// by Resend, which clears its key first.
func TestResendOfDeliveryUnknown(t *testing.T) {
	ctx := context.Background()
	srv := smtptest.Start(t, smtptest.Script{})
	quiet := slog.New(&plRecords{})
	q, mq, fc := newQueueWith(t, mailqueue.Config{Logger: quiet}, memory.Options{Logger: quiet})
	store := idempotency.NewMemoryStore(fc)
	inner := &lostReply{next: smtpTransport(t, srv)}
	tr, err := idempotency.New(inner, store, idempotency.Options{Clock: fc})
	if err != nil {
		t.Fatal(err)
	}
	startWorker(t, q, mailqueue.WorkerConfig{Transport: tr})
	r, err := q.Enqueue(ctx, contentJob())
	if err != nil {
		t.Fatal(err)
	}
	drain(t, mq)
	if got, _ := mq.Get(ctx, r.ID); got.State != mailqueue.JobDeliveryUnknown {
		t.Fatalf("after the lost reply: %s (%s), want delivery_unknown", got.State, got.Code)
	}

	// Retry: accepted as the safe side, the stored receipt answers.
	if err := mq.RetryFailed(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	drain(t, mq)
	if got, _ := mq.Get(ctx, r.ID); got.State != mailqueue.JobDeliveryUnknown || got.Code != codes.DeliveryUnknown {
		t.Fatalf("after RetryFailed: %s (%s), want delivery_unknown again", got.State, got.Code)
	}
	if n := inner.calls.Load(); n != 1 {
		t.Fatalf("RetryFailed sent: %d calls of the transport, want 1", n)
	}

	// Resend: the key is cleared, the job goes once more.
	if err := mq.Resend(ctx, mailqueue.ResendParams{ID: r.ID, Forget: store.Forget}); err != nil {
		t.Fatal(err)
	}
	drain(t, mq)
	got, _ := mq.Get(ctx, r.ID)
	if got.State != mailqueue.JobAccepted || got.Attempt != 1 {
		t.Errorf("after Resend: %s on attempt %d, want accepted on its first", got.State, got.Attempt)
	}
	if n, m := inner.calls.Load(), len(srv.Messages()); n != 2 || m != 1 {
		t.Errorf("after Resend: %d calls of the transport, %d messages arrived; want 2 calls, 1 message", n, m)
	}
	if e, ok := store.Get(r.ID); !ok || e.Receipt == nil || e.Receipt.Category != mmail.Accepted {
		t.Errorf("the key after Resend: %+v, %t; want the accepted receipt", e, ok)
	}
}
