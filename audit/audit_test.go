package audit_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/alexify/mailer/audit"
	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/internal/codetest"
	"github.com/alexify/mailer/mailqueue"
)

func TestMemory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := audit.NewMemory()
	for _, e := range []mailqueue.AuditEvent{
		{JobID: "a", State: mailqueue.AuditQueued},
		{JobID: "a", State: mailqueue.AuditSubmitted, Attempt: 1},
		{JobID: "b", State: mailqueue.AuditQueued},
		{JobID: "a", State: mailqueue.AuditAccepted, Attempt: 1},
	} {
		if err := m.Record(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]mailqueue.AuditState{"queued", "submitted", "accepted"}, m.States("a")); diff != "" {
		t.Errorf("States (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		attempt int
		want    bool
	}{{1, true}, {2, false}} {
		if got, err := m.Has(ctx, "a", tc.attempt, mailqueue.AuditSubmitted); err != nil || got != tc.want {
			t.Errorf("Has(a, %d, submitted) = %t, %v; want %t", tc.attempt, got, err, tc.want)
		}
	}
	m.SetFailing(errors.New("down"))
	if err := m.Record(ctx, mailqueue.AuditEvent{JobID: "c"}); err == nil || len(m.Events("c")) != 0 {
		t.Error("a failing sink recorded")
	}
}

func TestSlog(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	s := audit.NewSlog(slog.New(codetest.Wrap(slog.NewTextHandler(&b, nil))))
	err := s.Record(context.Background(), mailqueue.AuditEvent{
		JobID: "j1", State: mailqueue.AuditFailed, At: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), Attempt: 2,
		Code: codes.QueueMessageRefused, Reason: "rejected 550", TenantID: "acme", CorrelationID: "c-1",
	})
	if err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"level=INFO", "msg=" + string(codes.AuditEvent), "job_id=j1", "state=failed", "attempt=2", "code=queue.message_refused", "tenant_id=acme", "correlation_id=c-1"} {
		if !strings.Contains(out, want) {
			t.Errorf("the record lacks %q: %s", want, out)
		}
	}
}
