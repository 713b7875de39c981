package mailqueue_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/alexify/mailer/drivers/memory"
	"github.com/alexify/mailer/mail"
	"github.com/alexify/mailer/mailqueue"
)

// TestRetryAfterJitter: a retry told a Retry-After lands at the Retry-After
// plus a jitter of up to a tenth of it and at least up to a second, never
// before it, and not every job at the same time. The backoff is zero, so
// the Retry-After alone decides.
func TestRetryAfterJitter(t *testing.T) {
	t.Parallel()
	const n = 24
	tests := []struct {
		retryAfter time.Duration
		// span is the most jitter above the Retry-After; some of the n
		// jitters must be above low.
		span, low time.Duration
	}{
		{2 * time.Minute, 12 * time.Second, 6 * time.Second},
		// A tenth of 3 s is less than a second: the jitter is up to a second.
		{3 * time.Second, time.Second, 500 * time.Millisecond},
	}
	for _, tc := range tests {
		for _, cat := range []mail.Category{mail.Retryable, mail.RateLimited} {
			t.Run(fmt.Sprintf("%s %v", cat, tc.retryAfter), func(t *testing.T) {
				t.Parallel()
				h := newHarness(t, mailqueue.WorkerConfig{Backoff: func(int) time.Duration { return 0 }}, memory.Options{}).start()
				var ids []string
				for i := range n {
					h.tr.Script(mail.Receipt{Category: cat, Code: 429, RetryAfter: tc.retryAfter})
					j := contentJob()
					j.IdempotencyKey = fmt.Sprintf("invoice:%d", i)
					ids = append(ids, h.enqueue(j))
				}
				h.drain()
				distinct := map[time.Duration]bool{}
				above := 0
				for _, id := range ids {
					got := stored(t, h.mq, id)
					jitter := got.RunAt.Sub(h.fc.Now()) - tc.retryAfter
					if got.State != mailqueue.JobQueued || jitter < 0 || jitter > tc.span {
						t.Errorf("job %s: %s, due %v after its Retry-After; want queued, within [0, %v]", id, got.State, jitter, tc.span)
					}
					distinct[jitter] = true
					if jitter > tc.low {
						above++
					}
				}
				if len(distinct) < n/2 {
					t.Errorf("%d jobs came back at %d times: no jitter", n, len(distinct))
				}
				if above == 0 {
					t.Errorf("no jitter of %d above %v: the jitter does not span [0, %v]", n, tc.low, tc.span)
				}
			})
		}
	}
}
