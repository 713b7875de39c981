package mailqueue_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/alexify/mailer/audit"
	"github.com/alexify/mailer/clock"
	"github.com/alexify/mailer/drivers/memory"
	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/internal/codetest"
	mtransport "github.com/alexify/mailer/mail/memory"
	"github.com/alexify/mailer/mailqueue"
)

// TestAuditEventsCarryTheCorrelationID: every event of a job, the queue's
// "queued" at the enqueue and each of the worker's, carries the job's
// correlationId and tenant.
func TestAuditEventsCarryTheCorrelationID(t *testing.T) {
	t.Parallel()
	h := newHarness(t, mailqueue.WorkerConfig{}, memory.Options{}).start()
	j := contentJob()
	j.CorrelationID, j.TenantID = "req-42", "acme"
	id := h.enqueue(j)
	h.drain()
	type ids struct {
		State                   mailqueue.AuditState
		CorrelationID, TenantID string
	}
	var got []ids
	for _, e := range h.sink.Events(id) {
		got = append(got, ids{e.State, e.CorrelationID, e.TenantID})
	}
	want := []ids{{"queued", "req-42", "acme"}, {"rendered", "req-42", "acme"}, {"submitted", "req-42", "acme"}, {"accepted", "req-42", "acme"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("audit events (-want +got):\n%s", diff)
	}
}

// failingSink fails the events fail selects and keeps the others.
type failingSink struct {
	*audit.Memory
	fail func(mailqueue.AuditEvent) bool
}

func (s failingSink) Record(ctx context.Context, e mailqueue.AuditEvent) error {
	if s.fail(e) {
		return errors.New("audit store down")
	}
	return s.Memory.Record(ctx, e)
}

// TestAuditFailedWarnsFromEachSide: a sink that fails at the enqueue alone
// makes the queue warn MAILER_AUDIT_FAILED once; one that fails at the
// worker alone makes the worker warn it for each of its events. Neither
// stops the job.
func TestAuditFailedWarnsFromEachSide(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		fail func(mailqueue.AuditEvent) bool
		// want is the warnings told to OnWarning; wantStates the states
		// the sink kept.
		want       []codes.Code
		wantStates []mailqueue.AuditState
	}{
		{
			"at the enqueue only", func(e mailqueue.AuditEvent) bool { return e.Attempt == 0 },
			[]codes.Code{codes.MailerAuditFailed}, []mailqueue.AuditState{"rendered", "submitted", "accepted"},
		},
		{
			"at the worker only", func(e mailqueue.AuditEvent) bool { return e.Attempt > 0 },
			[]codes.Code{codes.MailerAuditFailed, codes.MailerAuditFailed, codes.MailerAuditFailed}, []mailqueue.AuditState{"queued"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fc := clock.NewFake(t0)
			logs := &logRecorder{}
			logger := slog.New(logs)
			mq := mustMemory(t, memory.Options{Clock: fc, Logger: logger})
			sink := failingSink{audit.NewMemory(), tc.fail}
			var mu sync.Mutex
			var warned []codes.Code
			q, err := mailqueue.New(mailqueue.Config{Driver: mq, Clock: fc, Logger: logger, Audit: codetest.Sink(sink), OnWarning: func(c codes.Code, err error) {
				mu.Lock()
				defer mu.Unlock()
				warned = append(warned, c)
			}})
			if err != nil {
				t.Fatal(err)
			}
			tr := mtransport.New()
			startWorker(t, q, mailqueue.WorkerConfig{Transport: tr})
			r, err := q.Enqueue(context.Background(), contentJob())
			if err != nil {
				t.Fatal(err)
			}
			drain(t, mq)
			if tr.Sent() != 1 {
				t.Errorf("sent %d, want 1: a failing sink is a warning", tr.Sent())
			}
			mu.Lock()
			if diff := cmp.Diff(tc.want, warned); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			mu.Unlock()
			if diff := cmp.Diff(tc.wantStates, sink.States(r.ID)); diff != "" {
				t.Errorf("states kept (-want +got):\n%s", diff)
			}
			for _, code := range []codes.Code{codes.MailerAuditFailed, codes.QueueAuditFailed} {
				recs := logs.find(string(code))
				if len(recs) != len(tc.want) {
					t.Errorf("%d %s records, want %d", len(recs), code, len(tc.want))
				}
				for _, rec := range recs {
					if rec.Level != slog.LevelWarn || rec.Attrs["job_id"] != r.ID {
						t.Errorf("%s record %+v: want a warning naming the job", code, rec)
					}
				}
			}
			logs.checkLevels(t)
		})
	}
}
