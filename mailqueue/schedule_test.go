package mailqueue_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/alexify/mailer/mailqueue"
)

// TestScheduledAtHoldsTheJobBack: a job with a scheduledAt is not due, and
// not sent, before it; it is sent once the clock reaches it.
func TestScheduledAtHoldsTheJobBack(t *testing.T) {
	t.Parallel()
	for _, ahead := range []time.Duration{time.Hour, time.Second} {
		t.Run(ahead.String(), func(t *testing.T) {
			t.Parallel()
			testScheduledAt(t, ahead)
		})
	}
}

// testScheduledAt is TestScheduledAtHoldsTheJobBack for a job scheduled
// ahead of now.
func testScheduledAt(t *testing.T, ahead time.Duration) {
	h := newHarness(t, mailqueue.WorkerConfig{}).start()
	j := contentJob()
	at := t0.Add(ahead)
	j.ScheduledAt = &at
	id := h.enqueue(j)
	h.drain()
	if got := stored(t, h.mq, id); got.State != mailqueue.JobQueued || !got.RunAt.Equal(at) {
		t.Errorf("stored %+v; want queued, due at %v", got, at)
	}
	h.fc.Set(at.Add(-time.Millisecond))
	h.mq.Wake()
	h.drain()
	if n := h.tr.Attempts(); n != 0 {
		t.Fatalf("sent %d times before its scheduledAt", n)
	}
	if diff := cmp.Diff([]mailqueue.AuditState{"queued"}, h.sink.States(id)); diff != "" {
		t.Errorf("audit before its scheduledAt (-want +got):\n%s", diff)
	}
	h.fc.Set(at)
	h.mq.Wake()
	h.drain()
	if n := h.tr.Sent(); n != 1 {
		t.Errorf("sent %d times at its scheduledAt, want 1", n)
	}
}
