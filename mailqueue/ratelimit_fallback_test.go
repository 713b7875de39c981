package mailqueue_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/alexify/mailer/audit"
	"github.com/alexify/mailer/clock"
	"github.com/alexify/mailer/drivers/memory"
	"github.com/alexify/mailer/drivers/polling"
	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/internal/codetest"
	"github.com/alexify/mailer/mail"
	mtransport "github.com/alexify/mailer/mail/memory"
	"github.com/alexify/mailer/mailqueue"
)

// notAPauser is a driver that cannot pause: it hides the Pauser of the
// memory queue it runs on.
type notAPauser struct{ d mailqueue.Driver }

func (n notAPauser) Enqueue(ctx context.Context, jobs []mailqueue.NewJob) ([]mailqueue.EnqueueResult, error) {
	return n.d.Enqueue(ctx, jobs)
}

func (n notAPauser) Work(h mailqueue.Handler, opts mailqueue.WorkOptions) (mailqueue.Runner, error) {
	return n.d.Work(h, opts)
}

// sourceOnly is a source that cannot pause: only the methods of
// mailqueue.Source of the memory source it wraps.
type sourceOnly struct{ mailqueue.Source }

// TestRateLimitFallsBackToTheJobScope: with a queue or tenant scope and a
// driver that cannot pause (no Pauser, or a polling driver whose source
// cannot), a rate limit gives the job alone back, as the job scope does:
// the attempt not spent, due no sooner than its Retry-After, nothing paused.
func TestRateLimitFallsBackToTheJobScope(t *testing.T) {
	t.Parallel()
	drivers := []struct {
		name string
		make func(t *testing.T, fc *clock.Fake, log *slog.Logger) (mailqueue.Driver, jobGetter, func())
	}{
		{"a driver that is no Pauser", func(t *testing.T, fc *clock.Fake, log *slog.Logger) (mailqueue.Driver, jobGetter, func()) {
			mq := mustMemory(t, memory.Options{Clock: fc, Logger: log})
			return notAPauser{mq}, mq, func() { drain(t, mq) }
		}},
		{"a polling driver whose source cannot pause", func(t *testing.T, fc *clock.Fake, log *slog.Logger) (mailqueue.Driver, jobGetter, func()) {
			src := mustMemorySource(t, memory.Options{Clock: fc, Logger: log})
			d, err := polling.New(sourceOnly{src}, polling.Options{Clock: fc, Logger: log})
			if err != nil {
				t.Fatal(err)
			}
			return d, src, func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if err := src.Drain(ctx); err != nil {
					t.Fatal(err)
				}
			}
		}},
	}
	for _, scope := range []mailqueue.RateLimitScope{mailqueue.RateLimitQueue, mailqueue.RateLimitTenant} {
		for _, dc := range drivers {
			t.Run(string(scope)+"/"+dc.name, func(t *testing.T) {
				t.Parallel()
				fc := clock.NewFake(t0)
				logs := &logRecorder{}
				log := slog.New(logs)
				d, get, drainAll := dc.make(t, fc, log)
				sink := audit.NewMemory()
				q, err := mailqueue.New(mailqueue.Config{Driver: d, Clock: fc, Logger: log, Audit: codetest.Sink(sink)})
				if err != nil {
					t.Fatal(err)
				}
				tr := mtransport.New()
				tr.Script(mail.Receipt{Category: mail.RateLimited, Code: 429, RetryAfter: time.Minute})
				startWorker(t, q, mailqueue.WorkerConfig{Transport: tr, RateLimitScope: scope, Backoff: func(int) time.Duration { return 0 }})
				enqueue := func(tenant, key string) string {
					j := contentJob()
					j.TenantID, j.IdempotencyKey = tenant, key
					r, err := q.Enqueue(context.Background(), j)
					if err != nil {
						t.Fatal(err)
					}
					return r.ID
				}
				first := enqueue("a", "1")
				drainAll()
				got := stored(t, get, first)
				if got.State != mailqueue.JobQueued || got.Attempt != 0 || got.Code != codes.QueueRateLimited {
					t.Errorf("the rate-limited job: %+v; want queued, no attempt spent, queue.rate_limited", got)
				}
				if d := got.RunAt.Sub(fc.Now()); d < time.Minute || d > time.Minute+6*time.Second {
					t.Errorf("due in %v; want within [1m, 1m6s]: its Retry-After and a jitter", d)
				}
				events := sink.Events(first)
				if n := len(events); n == 0 || events[n-1].State != mailqueue.AuditQueued || events[n-1].Code != codes.QueueRateLimited || events[n-1].Attempt != 1 {
					t.Errorf("audit %+v; want queued again (queue.rate_limited, the run's attempt 1) last", events)
				}
				// Nothing paused: a job of the same tenant goes at once.
				other := enqueue("a", "2")
				drainAll()
				if diff := cmp.Diff([]mailqueue.AuditState{"queued", "rendered", "submitted", "accepted"}, sink.States(other)); diff != "" {
					t.Errorf("another job of the tenant (-want +got):\n%s", diff)
				}
				if recs := logs.find(string(codes.QueueWorkerError)); len(recs) != 0 {
					t.Errorf("the driver was asked to pause: %+v", recs)
				}
			})
		}
	}
}
