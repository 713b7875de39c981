package conformance

import (
	"testing"
	"time"

	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/mailqueue"
)

func testLeaseExpiry(t *testing.T, s *suite) {
	j := s.job(jobv1.PriorityNormal, "")
	s.enqueue(t, j)
	first := s.reserveOne(t)
	s.reserveNone(t, "the job is leased")
	s.wait(s.Lease + 50*time.Millisecond)
	second := s.reserveOne(t)
	if second.ID != j.ID || second.Attempt != 1 || second.Redeliveries != 1 || second.Token == first.Token {
		t.Errorf("after the lease ran out: %+v; want the job again, attempt 1 (not spent), 1 redelivery, a new token", second)
	}
	s.wait(s.Lease + 50*time.Millisecond)
	if third := s.reserveOne(t); third.Redeliveries != 2 {
		t.Errorf("a second lease ran out: %d redeliveries, want 2", third.Redeliveries)
	}
}

func testExtend(t *testing.T, s *suite) {
	s.enqueue(t, s.job(jobv1.PriorityNormal, ""))
	l := s.reserveOne(t)
	s.wait(s.Lease * 2 / 3)
	ok, err := s.Source.Extend(s.ctx, mailqueue.ExtendParams{ID: l.ID, Token: l.Token, Duration: s.Lease})
	mustBool(t, "Extend", ok, err, true)
	s.wait(s.Lease * 2 / 3)
	s.reserveNone(t, "the lease was extended")
	ok, err = s.Source.Ack(s.ctx, mailqueue.AckParams{ID: l.ID, Token: l.Token})
	mustBool(t, "Ack after Extend", ok, err, true)
	ok, err = s.Source.Extend(s.ctx, mailqueue.ExtendParams{ID: l.ID, Token: l.Token, Duration: s.Lease})
	mustBool(t, "Extend of a settled job", ok, err, false)
}

func testFencing(t *testing.T, s *suite) {
	s.enqueue(t, s.job(jobv1.PriorityNormal, ""))
	stale := s.reserveOne(t)
	s.wait(s.Lease + 50*time.Millisecond)
	fresh := s.reserveOne(t)
	id, tok := stale.ID, stale.Token
	ok, err := s.Source.Extend(s.ctx, mailqueue.ExtendParams{ID: id, Token: tok, Duration: s.Lease})
	mustBool(t, "Extend with a stale token", ok, err, false)
	ok, err = s.Source.Ack(s.ctx, mailqueue.AckParams{ID: id, Token: tok})
	mustBool(t, "Ack with a stale token", ok, err, false)
	ok, err = s.Source.Retry(s.ctx, mailqueue.RetryParams{ID: id, Token: tok, Code: codes.QueueSendFailed})
	mustBool(t, "Retry with a stale token", ok, err, false)
	ok, err = s.Source.Fail(s.ctx, mailqueue.FailParams{ID: id, Token: tok, State: codes.StateFailed, Code: codes.QueueThrown})
	mustBool(t, "Fail with a stale token", ok, err, false)
	ok, err = s.Source.Release(s.ctx, mailqueue.ReleaseParams{ID: id, Token: tok})
	mustBool(t, "Release with a stale token", ok, err, false)
	ok, err = s.Source.Ack(s.ctx, mailqueue.AckParams{ID: id, Token: ""})
	mustBool(t, "Ack without a token", ok, err, false)
	ok, err = s.Source.Ack(s.ctx, mailqueue.AckParams{ID: "no-such-job", Token: fresh.Token})
	mustBool(t, "Ack of another job with the token", ok, err, false)
	// None of those changed the job: the fresh lease still holds it.
	s.reserveNone(t, "the stale settles must not free the job")
	ok, err = s.Source.Ack(s.ctx, mailqueue.AckParams{ID: fresh.ID, Token: fresh.Token})
	mustBool(t, "Ack with the fresh token", ok, err, true)
	ok, err = s.Source.Ack(s.ctx, mailqueue.AckParams{ID: fresh.ID, Token: fresh.Token})
	mustBool(t, "a second Ack", ok, err, false)
}
