package conformance

import (
	"testing"
	"time"

	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/mailqueue"
)

func testAck(t *testing.T, s *suite) {
	j := s.job(jobv1.PriorityNormal, "")
	s.enqueue(t, j)
	l := s.reserveOne(t)
	ok, err := s.Source.Ack(s.ctx, mailqueue.AckParams{ID: l.ID, Token: l.Token})
	mustBool(t, "Ack", ok, err, true)
	s.wait(s.Lease + 50*time.Millisecond)
	s.reserveNone(t, "an acked job is done")
	if res := s.enqueue(t, j); !res[0].Duplicate {
		t.Errorf("enqueue again after the ack: %+v, want Duplicate (the dedupe window)", res[0])
	}
	s.reserveNone(t, "a duplicate is not stored again")
}

func testRetry(t *testing.T, s *suite) {
	s.enqueue(t, s.job(jobv1.PriorityNormal, ""))
	l := s.reserveOne(t)
	delay := s.Lease
	ok, err := s.Source.Retry(s.ctx, mailqueue.RetryParams{ID: l.ID, Token: l.Token, Delay: delay, Code: codes.QueueSendFailed, Reason: "451"})
	mustBool(t, "Retry", ok, err, true)
	s.reserveNone(t, "a retried job waits its delay")
	s.wait(delay + 50*time.Millisecond)
	again := s.reserveOne(t)
	if again.Attempt != 2 || again.Redeliveries != 0 || again.Token == l.Token {
		t.Errorf("after a retry: %+v, want attempt 2, no redelivery, a new token", again)
	}
}

func testRelease(t *testing.T, s *suite) {
	s.enqueue(t, s.job(jobv1.PriorityNormal, ""))
	l := s.reserveOne(t)
	ok, err := s.Source.Release(s.ctx, mailqueue.ReleaseParams{ID: l.ID, Token: l.Token, Code: codes.QueueStopped})
	mustBool(t, "Release", ok, err, true)
	again := s.reserveOne(t)
	if again.Attempt != 1 || again.Redeliveries != 0 {
		t.Errorf("after a release: attempt %d, redeliveries %d; want 1 and 0 (a release spends no attempt)", again.Attempt, again.Redeliveries)
	}
	ok, err = s.Source.Release(s.ctx, mailqueue.ReleaseParams{ID: again.ID, Token: again.Token, Delay: s.Lease, Code: codes.QueueUnsupportedVersion})
	mustBool(t, "Release with a delay", ok, err, true)
	s.reserveNone(t, "a job released with a delay waits it")
	s.wait(s.Lease + 50*time.Millisecond)
	if third := s.reserveOne(t); third.Attempt != 1 {
		t.Errorf("after two releases: attempt %d, want 1", third.Attempt)
	}
}

func testFail(t *testing.T, s *suite) {
	a, b := s.job(jobv1.PriorityNormal, ""), s.job(jobv1.PriorityNormal, "")
	s.enqueue(t, a, b)
	for _, st := range []codes.State{codes.StateFailed, codes.StateDeliveryUnknown} {
		l := s.reserveOne(t)
		ok, err := s.Source.Fail(s.ctx, mailqueue.FailParams{ID: l.ID, Token: l.Token, State: st, Code: codes.QueueThrown})
		mustBool(t, "Fail "+string(st), ok, err, true)
	}
	s.wait(s.Lease + 50*time.Millisecond)
	s.reserveNone(t, "failed jobs are finished")
	if res := s.enqueue(t, a, b); !res[0].Duplicate || !res[1].Duplicate {
		t.Errorf("enqueue again after a failure: %+v, want Duplicate (kept RetainFailed)", res)
	}
}
