package redis

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/alexify/mailer/drivers/redis/internal/redistest"
	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/mail"
	"github.com/alexify/mailer/mailqueue"
)

// TestResendClearsTheIdempotencyEntry: on Redis, Resend of a job of
// unknown delivery with the Forget of the workers' IdempotencyStore
// deletes the job's entry (its key is the job's id), so that the next
// reserve of the key goes, and queues the job again; RetryFailed leaves
// the entry, which answers its receipt.
func TestResendClearsTheIdempotencyEntry(t *testing.T) {
	c := redistest.Standalone(t)
	src := newSource(t, c, Options{})
	store := idemStore(t)
	if err := store.Forget(ctx, "never-held"); err != nil {
		t.Errorf("Forget of a key holding nothing: %v", err)
	}
	job := mailqueue.NewJob{ID: "job-1", Hash: "h", Data: []byte(`{"v":1}`), RunAt: time.Now(), EnqueuedAt: time.Now(), MaxAttempts: 3}
	if _, err := src.Enqueue(ctx, []mailqueue.NewJob{job}); err != nil {
		t.Fatal(err)
	}
	unknown := func() {
		t.Helper()
		ls, err := src.Reserve(ctx, mailqueue.ReserveParams{Limit: 1, LeaseDuration: time.Minute})
		if err != nil || len(ls) != 1 {
			t.Fatalf("Reserve: %d, %v", len(ls), err)
		}
		if ok, err := src.Fail(ctx, mailqueue.FailParams{ID: ls[0].ID, Token: ls[0].Token, State: codes.StateDeliveryUnknown, Code: codes.DeliveryUnknown}); !ok || err != nil {
			t.Fatalf("Fail: %t, %v", ok, err)
		}
	}
	unknown()
	if e, err := store.Reserve(ctx, job.ID, "run-1", time.Hour); e != nil || err != nil {
		t.Fatalf("Reserve of the job's key: %+v, %v", e, err)
	}
	if ok, err := store.Complete(ctx, job.ID, "run-1", mail.Receipt{Category: mail.DeliveryUnknown}, time.Hour); !ok || err != nil {
		t.Fatalf("Complete: %t, %v", ok, err)
	}
	if err := src.RetryFailed(ctx, job.ID); err != nil {
		t.Fatal(err)
	}
	if e, _ := store.Reserve(ctx, job.ID, "run-2", time.Hour); e == nil || e.Receipt == nil {
		t.Fatalf("after RetryFailed the key holds %+v; want its receipt still", e)
	}
	unknown()
	down := errors.New("down")
	if err := src.Resend(ctx, mailqueue.ResendParams{ID: job.ID, Forget: func(context.Context, string) error { return down }}); !errors.Is(err, down) {
		t.Fatalf("Resend whose Forget failed: %v", err)
	}
	if err := src.Resend(ctx, mailqueue.ResendParams{ID: job.ID, Forget: store.Forget}); err != nil {
		t.Fatal(err)
	}
	if j, err := src.Get(ctx, job.ID); err != nil || j.State != mailqueue.JobQueued || j.Attempt != 0 {
		t.Errorf("after Resend: %+v, %v; want queued, no attempt spent", j, err)
	}
	if e, err := store.Reserve(ctx, job.ID, "run-3", time.Hour); e != nil || err != nil {
		t.Errorf("the job's key after Resend holds %+v, %v; want nothing: the next send goes", e, err)
	}
}
