package conformance

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/alexify/mailer/drivers/polling"
	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/mailqueue"
)

// settleReserver returns the source as a polling.SettleReserver, or skips
// the subtest.
func settleReserver(t *testing.T, s *suite) polling.SettleReserver {
	t.Helper()
	sr, ok := s.Source.(polling.SettleReserver)
	if !ok {
		t.Skip("the source is not a polling.SettleReserver: the polling driver settles and reserves in two calls")
	}
	return sr
}

// settleReserve calls SettleAndReserve for the run of l with out, asking
// for limit leases, and checks that it leased no more than limit.
func (s *suite) settleReserve(t *testing.T, sr polling.SettleReserver, l *mailqueue.Lease, out mailqueue.Outcome, limit int) (bool, []*mailqueue.Lease) {
	t.Helper()
	ok, ls, err := sr.SettleAndReserve(s.ctx, polling.SettleParams{ID: l.ID, Token: l.Token, Outcome: out},
		mailqueue.ReserveParams{Limit: limit, LeaseDuration: s.Lease})
	if err != nil {
		t.Fatalf("SettleAndReserve(%s %s, limit %d): %v", out.Action, l.ID, limit, err)
	}
	if len(ls) > limit {
		t.Fatalf("SettleAndReserve(%s %s, limit %d) leased %d jobs: %v", out.Action, l.ID, limit, len(ls), ids(ls))
	}
	return ok, ls
}

// ack is the outcome of an Ack.
var ack = mailqueue.Outcome{Action: mailqueue.Ack}

func retryIn(d time.Duration) mailqueue.Outcome {
	return mailqueue.Outcome{Action: mailqueue.Retry, Delay: d, Code: codes.QueueSendFailed, Reason: "451"}
}

func releaseIn(d time.Duration) mailqueue.Outcome {
	return mailqueue.Outcome{Action: mailqueue.Release, Delay: d, Code: codes.QueueStopped}
}

func failIn(st codes.State) mailqueue.Outcome {
	return mailqueue.Outcome{Action: mailqueue.Fail, State: st, Code: codes.QueueThrown, Reason: "boom"}
}

// testSRStaleToken: a settle with a stale token settles nothing
// (settled false, no error), whatever its action; the reserve that goes
// with it still leases as Reserve would, never the job of the stale
// token, and what it leases is a lease of the caller's to run.
func testSRStaleToken(t *testing.T, s *suite) {
	sr := settleReserver(t, s)
	j, other := s.job(jobv1.PriorityHigh, ""), s.job(jobv1.PriorityNormal, "")
	s.enqueue(t, j)
	stale := s.reserveOne(t)
	s.wait(s.Lease + 50*time.Millisecond)
	fresh := s.reserveOne(t)
	if fresh.ID != j.ID {
		t.Fatalf("leased %s, want %s again", fresh.ID, j.ID)
	}
	s.enqueue(t, other)
	for _, out := range []mailqueue.Outcome{ack, retryIn(0), releaseIn(0), failIn(codes.StateFailed), failIn(codes.StateDeliveryUnknown)} {
		ok, ls := s.settleReserve(t, sr, stale, out, 0)
		if ok || len(ls) != 0 {
			t.Fatalf("SettleAndReserve(%s with a stale token, limit 0) = %t, %v; want false, nothing leased", out.Action, ok, ids(ls))
		}
	}
	gone := *stale
	gone.ID = "no-such-job"
	gone.Token = fresh.Token
	if ok, ls := s.settleReserve(t, sr, &gone, ack, 0); ok || len(ls) != 0 {
		t.Fatalf("SettleAndReserve(ack of another job with the token) = %t, %v; want false, nothing leased", ok, ids(ls))
	}
	ok, ls := s.settleReserve(t, sr, stale, ack, 1)
	if ok {
		t.Fatal("SettleAndReserve(ack with a stale token, limit 1) settled")
	}
	if len(ls) != 1 || ls[0].ID != other.ID || ls[0].Token == "" || ls[0].Attempt != 1 {
		t.Fatalf("SettleAndReserve(ack with a stale token, limit 1) leased %v; want %s, due, as Reserve would (never the fenced job)", ids(ls), other.ID)
	}
	// None of the stale settles changed the job: the fresh lease still
	// holds it, and the lease the reserve made is the caller's.
	s.reserveNone(t, "the stale settles must not free the job, nor the job leased with them")
	ok, err := s.Source.Ack(s.ctx, mailqueue.AckParams{ID: fresh.ID, Token: fresh.Token})
	mustBool(t, "Ack with the fresh token", ok, err, true)
	ok, err = s.Source.Ack(s.ctx, mailqueue.AckParams{ID: ls[0].ID, Token: ls[0].Token})
	mustBool(t, "Ack of the job leased with a stale settle", ok, err, true)
}

// testSRAck: an ack through SettleAndReserve is an Ack: the job is done,
// kept for the dedupe window; the same settle again is fenced.
func testSRAck(t *testing.T, s *suite) {
	sr := settleReserver(t, s)
	j := s.job(jobv1.PriorityNormal, "")
	s.enqueue(t, j)
	l := s.reserveOne(t)
	if ok, ls := s.settleReserve(t, sr, l, ack, 1); !ok || len(ls) != 0 {
		t.Fatalf("SettleAndReserve(ack, limit 1) = %t, %v; want settled, nothing left to lease", ok, ids(ls))
	}
	if ok, _ := s.settleReserve(t, sr, l, ack, 0); ok {
		t.Fatal("a second SettleAndReserve(ack) settled again")
	}
	ok, err := s.Source.Extend(s.ctx, mailqueue.ExtendParams{ID: l.ID, Token: l.Token, Duration: s.Lease})
	mustBool(t, "Extend of a job acked through SettleAndReserve", ok, err, false)
	s.wait(s.Lease + 50*time.Millisecond)
	s.reserveNone(t, "an acked job is done")
	if res := s.enqueue(t, j); !res[0].Duplicate {
		t.Errorf("enqueue again after the ack: %+v, want Duplicate (the dedupe window)", res[0])
	}
}

// testSRRetry: a retry through SettleAndReserve spends an attempt and
// honours its delay; a retry due now is due for the reserve of the same
// call.
func testSRRetry(t *testing.T, s *suite) {
	sr := settleReserver(t, s)
	s.enqueue(t, s.job(jobv1.PriorityNormal, ""))
	l := s.reserveOne(t)
	ok, ls := s.settleReserve(t, sr, l, retryIn(0), 1)
	if !ok || len(ls) != 1 || ls[0].ID != l.ID || ls[0].Attempt != 2 || ls[0].Redeliveries != 0 || ls[0].Token == l.Token {
		t.Fatalf("SettleAndReserve(retry now, limit 1) = %t, %s; want settled, the job again at attempt 2 with a new token", ok, describe(ls))
	}
	again := ls[0]
	if ok, ls = s.settleReserve(t, sr, again, retryIn(s.Lease), 1); !ok || len(ls) != 0 {
		t.Fatalf("SettleAndReserve(retry in %v, limit 1) = %t, %v; want settled, nothing due", s.Lease, ok, ids(ls))
	}
	s.reserveNone(t, "a retried job waits its delay")
	s.wait(s.Lease + 50*time.Millisecond)
	third := s.reserveOne(t)
	if third.Attempt != 3 || third.Redeliveries != 0 {
		t.Errorf("after two retries: attempt %d, redeliveries %d; want 3 and 0", third.Attempt, third.Redeliveries)
	}
}

// testSRRelease: a release through SettleAndReserve spends no attempt
// and honours its delay.
func testSRRelease(t *testing.T, s *suite) {
	sr := settleReserver(t, s)
	s.enqueue(t, s.job(jobv1.PriorityNormal, ""))
	l := s.reserveOne(t)
	ok, ls := s.settleReserve(t, sr, l, releaseIn(0), 1)
	if !ok || len(ls) != 1 || ls[0].ID != l.ID || ls[0].Attempt != 1 || ls[0].Redeliveries != 0 || ls[0].Token == l.Token {
		t.Fatalf("SettleAndReserve(release now, limit 1) = %t, %s; want settled, the job again at attempt 1 (a release spends no attempt)", ok, describe(ls))
	}
	if ok, ls = s.settleReserve(t, sr, ls[0], releaseIn(s.Lease), 1); !ok || len(ls) != 0 {
		t.Fatalf("SettleAndReserve(release in %v, limit 1) = %t, %v; want settled, nothing due", s.Lease, ok, ids(ls))
	}
	s.reserveNone(t, "a job released with a delay waits it")
	s.wait(s.Lease + 50*time.Millisecond)
	if third := s.reserveOne(t); third.Attempt != 1 || third.Redeliveries != 0 {
		t.Errorf("after two releases: attempt %d, redeliveries %d; want 1 and 0", third.Attempt, third.Redeliveries)
	}
}

// testSRFail: a failure through SettleAndReserve finishes the job in its
// state, kept RetainFailed.
func testSRFail(t *testing.T, s *suite) {
	sr := settleReserver(t, s)
	a, b := s.job(jobv1.PriorityNormal, ""), s.job(jobv1.PriorityNormal, "")
	s.enqueue(t, a, b)
	l := s.reserveOne(t)
	for _, st := range []codes.State{codes.StateFailed, codes.StateDeliveryUnknown} {
		ok, ls := s.settleReserve(t, sr, l, failIn(st), 1)
		if !ok {
			t.Fatalf("SettleAndReserve(fail %s) did not settle", st)
		}
		if st == codes.StateFailed {
			if len(ls) != 1 {
				t.Fatalf("SettleAndReserve(fail %s, limit 1) leased %v; want the other job", st, ids(ls))
			}
			l = ls[0]
		} else if len(ls) != 0 {
			t.Fatalf("SettleAndReserve(fail %s, limit 1) leased %v; want none left", st, ids(ls))
		}
	}
	s.wait(s.Lease + 50*time.Millisecond)
	s.reserveNone(t, "failed jobs are finished")
	if res := s.enqueue(t, a, b); !res[0].Duplicate || !res[1].Duplicate {
		t.Errorf("enqueue again after a failure: %+v, want Duplicate (kept RetainFailed)", res)
	}
}

// testSRLimit: the reserve of SettleAndReserve leases up to its limit,
// as Reserve would, and nothing with a limit of 0.
func testSRLimit(t *testing.T, s *suite) {
	sr := settleReserver(t, s)
	for i := 0; i < 6; i++ {
		s.enqueue(t, s.job(jobv1.PriorityNormal, ""))
	}
	l := s.reserveOne(t)
	if ok, ls := s.settleReserve(t, sr, l, ack, 0); !ok || len(ls) != 0 {
		t.Fatalf("SettleAndReserve(limit 0) = %t, %v; want settled, nothing leased", ok, ids(ls))
	}
	l = s.reserveOne(t)
	ok, ls := s.settleReserve(t, sr, l, ack, 3)
	if !ok || len(ls) != 3 {
		t.Fatalf("SettleAndReserve(limit 3) = %t, %v; want settled, 3 leased", ok, ids(ls))
	}
	ok, more := s.settleReserve(t, sr, ls[0], ack, 3)
	if !ok || len(more) != 1 {
		t.Fatalf("then SettleAndReserve(limit 3) = %t, %v; want settled, the 1 left", ok, ids(more))
	}
	s.reserveNone(t, "every job is leased or done")
}

// testSRPriority: the reserve of SettleAndReserve goes by priority, then
// time, as Reserve does: a slot that chains its settles runs high, then
// normal by time, then low.
func testSRPriority(t *testing.T, s *suite) {
	sr := settleReserver(t, s)
	first := s.job(jobv1.PriorityHigh, "")
	s.enqueue(t, first)
	l := s.reserveOne(t)
	low := s.job(jobv1.PriorityLow, "")
	n1 := s.job(jobv1.PriorityNormal, "")
	n2 := s.job(jobv1.PriorityNormal, "")
	high := s.job(jobv1.PriorityHigh, "")
	n2.RunAt = n1.RunAt.Add(time.Millisecond)
	s.enqueue(t, low, n2)
	s.enqueue(t, n1, high)
	s.wait(10 * time.Millisecond)
	var got []string
	for i := 0; i < 4; i++ {
		ok, ls := s.settleReserve(t, sr, l, ack, 1)
		if !ok || len(ls) != 1 {
			t.Fatalf("SettleAndReserve(ack %s, limit 1) = %t, %v; want settled, one leased", l.ID, ok, ids(ls))
		}
		l = ls[0]
		got = append(got, l.ID)
	}
	want := []string{high.ID, n1.ID, n2.ID, low.ID}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("SettleAndReserve leased in the order %v, want %v (high, normal by time, low)", got, want)
	}
	if ok, ls := s.settleReserve(t, sr, l, ack, 1); !ok || len(ls) != 0 {
		t.Errorf("the last SettleAndReserve = %t, %v; want settled, nothing left", ok, ids(ls))
	}
}

// testSRError: a SettleAndReserve that returns an error (here, called with
// a context already cancelled; a source may also go on and answer) left
// the run's job as it was: its lease still holds, and settles.
func testSRError(t *testing.T, s *suite) {
	sr := settleReserver(t, s)
	s.enqueue(t, s.job(jobv1.PriorityNormal, ""), s.job(jobv1.PriorityNormal, ""))
	l := s.reserveOne(t)
	ctx, cancel := context.WithCancel(s.ctx)
	cancel()
	ok, ls, err := sr.SettleAndReserve(ctx, polling.SettleParams{ID: l.ID, Token: l.Token, Outcome: ack},
		mailqueue.ReserveParams{Limit: 1, LeaseDuration: s.Lease})
	if err == nil {
		if !ok || len(ls) > 1 {
			t.Fatalf("SettleAndReserve with a cancelled context and no error = %t, %v; want settled, at most 1 leased", ok, ids(ls))
		}
		t.Skip("the source answered a cancelled context: no error to check")
	}
	if ok || len(ls) != 0 {
		t.Errorf("SettleAndReserve failed (%v) and still answered %t, %v", err, ok, ids(ls))
	}
	ok, err = s.Source.Ack(s.ctx, mailqueue.AckParams{ID: l.ID, Token: l.Token})
	mustBool(t, "Ack after a SettleAndReserve that failed", ok, err, true)
}
