package mailqueue_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/alexify/mailer/clock"
	"github.com/alexify/mailer/drivers/memory"
	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/mail"
	mtransport "github.com/alexify/mailer/mail/memory"
	"github.com/alexify/mailer/mailqueue"
)

// TestStoreClockDecides gives the producer and the worker a clock skewed
// from the store's (the memory queue's own fake clock): the store's clock
// decides when the job is due, whether it expired, and whether its retry
// would come after its expiresAt (docs/architecture.md, "Time is the
// store's"). The fault runs found a worker clock 120 s ahead failing jobs
// with 60 s left as queue.expired, and a producer clock 120 s ahead making
// every job wait 120 s.
func TestStoreClockDecides(t *testing.T) {
	const skew = 120 * time.Second
	retryable := mail.Receipt{Category: mail.Retryable, Code: 451, Reason: "try later"}
	tests := []struct {
		name string
		// skew is the producer's and the worker's clock minus the store's.
		skew time.Duration
		// expiresIn is the job's expiresAt minus the store's now.
		expiresIn time.Duration
		// backoff is the worker's backoff; receipts the transport's.
		backoff  time.Duration
		receipts []mail.Receipt
		want     outcome
		sent     int
	}{
		{"a worker ahead sends a job with 60 s left", skew, time.Minute, time.Second, nil,
			outcome{mailqueue.JobAccepted, 1, ""}, 1},
		{"a worker behind fails a job expired by the store's clock", -skew, -time.Second, time.Second, nil,
			outcome{mailqueue.JobFailed, 1, codes.QueueExpired}, 0},
		{"a worker ahead retries a job whose retry comes before its expiresAt", skew, time.Minute, 30 * time.Second, []mail.Receipt{retryable},
			outcome{mailqueue.JobQueued, 1, codes.QueueSendFailed}, 0},
		{"a worker behind fails a job whose retry would come after its expiresAt", -skew, time.Minute, 90 * time.Second, []mail.Receipt{retryable},
			outcome{mailqueue.JobFailed, 1, codes.QueueExpired}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store, own := clock.NewFake(t0), clock.NewFake(t0.Add(tc.skew))
			quiet := slog.New(slog.DiscardHandler)
			mq := mustMemory(t, memory.Options{Clock: store, Logger: quiet, RetainData: mailqueue.RetainAllData})
			q, err := mailqueue.New(mailqueue.Config{Driver: mq, Clock: own, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			tr := mtransport.New()
			tr.Script(tc.receipts...)
			startWorker(t, q, mailqueue.WorkerConfig{Transport: tr, Backoff: func(int) time.Duration { return tc.backoff }})
			j := contentJob()
			exp := t0.Add(tc.expiresIn)
			j.ExpiresAt = &exp
			r, err := q.Enqueue(context.Background(), j)
			if err != nil {
				t.Fatal(err)
			}
			// The job is due at the store's now: Drain waits for the due
			// jobs only, so a job due at the producer's enqueuedAt would
			// still be queued, unsent.
			drain(t, mq)
			row, err := mq.Get(context.Background(), r.ID)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, outcome{row.State, row.Attempt, row.Code}); diff != "" {
				t.Errorf("job (-want +got):\n%s\nreason: %s", diff, row.Reason)
			}
			if got := tr.Sent(); got != tc.sent {
				t.Errorf("sent %d, want %d", got, tc.sent)
			}
			if !row.EnqueuedAt.Equal(t0.Add(tc.skew)) {
				t.Errorf("EnqueuedAt = %v, want the producer's %v", row.EnqueuedAt, t0.Add(tc.skew))
			}
			if tc.want.State == mailqueue.JobQueued {
				if d := row.RunAt.Sub(store.Now()); d != tc.backoff {
					t.Errorf("the retry is due in %v by the store's clock, want %v", d, tc.backoff)
				}
			}
		})
	}
}
