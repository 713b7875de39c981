package conformance

import (
	"testing"
	"time"

	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/mailqueue"
)

// The subtests of the fence: a settle is fenced by its token alone
// (docs/architecture.md, "Fenced by the token"). A run whose lease ran out
// still holds its job while no other run took it: its settles and extends
// apply. Only a run whose token was replaced (another run reserved the
// job) is fenced.

// trySettle settles the lease with the outcome and returns whether the
// store took it.
func (s *suite) trySettle(t *testing.T, l *mailqueue.Lease, out mailqueue.Outcome) bool {
	t.Helper()
	var ok bool
	var err error
	switch out.Action {
	case mailqueue.Ack:
		ok, err = s.Source.Ack(s.ctx, mailqueue.AckParams{ID: l.ID, Token: l.Token})
	case mailqueue.Retry:
		ok, err = s.Source.Retry(s.ctx, mailqueue.RetryParams{ID: l.ID, Token: l.Token, Delay: out.Delay, Code: out.Code, Reason: out.Reason})
	case mailqueue.Fail:
		ok, err = s.Source.Fail(s.ctx, mailqueue.FailParams{ID: l.ID, Token: l.Token, State: out.State, Code: out.Code, Reason: out.Reason})
	case mailqueue.Release:
		ok, err = s.Source.Release(s.ctx, mailqueue.ReleaseParams{ID: l.ID, Token: l.Token, Delay: out.Delay, Code: out.Code, Reason: out.Reason})
	}
	if err != nil {
		t.Fatalf("%s %s: %v", out.Action, l.ID, err)
	}
	return ok
}

// lateRun is a run whose lease runs out, its job and the outcome it
// settles late with.
type lateRun struct {
	j   mailqueue.NewJob
	l   *mailqueue.Lease
	out mailqueue.Outcome
}

// leaseLate enqueues a job for each of lateOutcomes (of the tenants t1, t1,
// none and t3, so that a shared lane is left empty and another not) and
// leases them all.
func (s *suite) leaseLate(t *testing.T) []*lateRun {
	t.Helper()
	tenants := []string{"t1", "t1", "", "t3"}
	runs := make([]*lateRun, len(lateOutcomes))
	jobs := make([]mailqueue.NewJob, len(lateOutcomes))
	for i, out := range lateOutcomes {
		jobs[i] = s.job(jobv1.PriorityNormal, tenants[i%len(tenants)])
		runs[i] = &lateRun{j: jobs[i], out: out}
	}
	s.enqueue(t, jobs...)
	leased := byID(s.reserve(t, len(jobs)))
	for _, r := range runs {
		if r.l = leased[r.j.ID]; r.l == nil {
			t.Fatalf("Reserve(limit %d) leased %v, want every job", len(jobs), leased)
		}
	}
	return runs
}

// checkSettled checks what the late settles did to the jobs of runs, which
// no other run holds: an ack or a fail finished its job (an enqueue again
// is a duplicate), a retry or a release queued it again, due now, with its
// attempt spent or not and no redelivery counted (its run ended settled).
func (s *suite) checkSettled(t *testing.T, runs []*lateRun) {
	t.Helper()
	again := byID(s.reserve(t, 10))
	op, isOp := s.Source.(mailqueue.Operator)
	for _, r := range runs {
		a := again[r.j.ID]
		delete(again, r.j.ID)
		switch r.out.Action {
		case mailqueue.Ack, mailqueue.Fail:
			if a != nil {
				t.Errorf("the job of the late %s was leased again: %s", r.out.Action, describe([]*mailqueue.Lease{a}))
				continue
			}
			if res := s.enqueue(t, r.j); !res[0].Duplicate {
				t.Errorf("enqueue again after the late %s: %+v, want Duplicate", r.out.Action, res[0])
			}
			if !isOp {
				continue
			}
			want := mailqueue.JobAccepted
			if r.out.Action == mailqueue.Fail {
				want = mailqueue.JobFailed
			}
			if row := s.get(t, op, r.j.ID); row.State != want || row.Attempt != r.l.Attempt || row.Redeliveries != r.l.Redeliveries {
				t.Errorf("after the late %s: %s, attempt %d, %d redeliveries; want %s, attempt %d, %d redeliveries", r.out.Action, row.State, row.Attempt, row.Redeliveries, want, r.l.Attempt, r.l.Redeliveries)
			}
		default:
			attempt := r.l.Attempt
			if r.out.Action == mailqueue.Retry {
				attempt++
			}
			if a == nil {
				t.Errorf("after the late %s: %s not leased again, want it due now", r.out.Action, r.j.ID)
				continue
			}
			if a.Attempt != attempt || a.Redeliveries != r.l.Redeliveries || a.Token == r.l.Token {
				t.Errorf("after the late %s: %s; want attempt %d, %d redeliveries (the run ended settled), a new token", r.out.Action, describe([]*mailqueue.Lease{a}), attempt, r.l.Redeliveries)
			}
			s.settle(t, a, ack)
		}
	}
	for _, a := range again {
		t.Errorf("leased %s, a job no late settle queued again", describe([]*mailqueue.Lease{a}))
	}
}

// reserveHigh enqueues a high job and reserves one job, which must be it:
// a reserve that may queue again the jobs whose lease ran out, and takes
// none of them.
func (s *suite) reserveHigh(t *testing.T) *mailqueue.Lease {
	t.Helper()
	high := s.job(jobv1.PriorityHigh, "t2")
	s.enqueue(t, high)
	h := s.reserveOne(t)
	if h.ID != high.ID {
		t.Fatalf("Reserve(limit 1) leased %s, want the high job %s", h.ID, high.ID)
	}
	return h
}

var lateOutcomes = []mailqueue.Outcome{ack, retryIn(0), releaseIn(0), failIn(codes.StateFailed)}

// testLateSettle: the leases run out and nobody reserves; the late settle
// of each kind is accepted (true) and does what it says.
func testLateSettle(t *testing.T, s *suite) {
	runs := s.leaseLate(t)
	s.wait(s.Lease + 50*time.Millisecond)
	for _, r := range runs {
		if !s.trySettle(t, r.l, r.out) {
			t.Fatalf("a late %s after the lease ran out, nobody having reserved: false, want true (its token is still the current one)", r.out.Action)
		}
		if s.trySettle(t, r.l, r.out) {
			t.Fatalf("a second late %s: true, want false (the job was settled)", r.out.Action)
		}
	}
	s.checkSettled(t, runs)
}

// testLateSettleAfterReserve: the leases run out and a reserve runs that
// takes another job (of a higher priority, the limit 1) and none of theirs:
// no other run took them, so the late settles are still accepted, and the
// redeliveries the reserve may have counted are not.
func testLateSettleAfterReserve(t *testing.T, s *suite) {
	runs := s.leaseLate(t)
	s.wait(s.Lease + 50*time.Millisecond)
	h := s.reserveHigh(t)
	for _, r := range runs {
		if !s.trySettle(t, r.l, r.out) {
			t.Fatalf("a late %s after a reserve that took another job: false, want true (no other run took this one)", r.out.Action)
		}
	}
	s.settle(t, h, ack)
	if op, ok := s.Source.(mailqueue.Operator); ok {
		// The late settles took their jobs out of the lanes the reserve
		// had queued them in: the retried and the released are queued
		// once each, and nothing is left behind.
		if got, want := counts(s.stats(t, op)), "queued 2 (due 2), running 0, accepted 2, failed 1, delivery_unknown 0"; got != want {
			t.Errorf("Stats after the late settles: %s, want %s", got, want)
		}
	}
	s.checkSettled(t, runs)
	// The lanes are whole after the settles took their jobs out.
	j := s.job(jobv1.PriorityNormal, "t1")
	s.enqueue(t, j)
	if l := s.reserveOne(t); l.ID != j.ID {
		t.Errorf("leased %s, want %s", l.ID, j.ID)
	}
}

// testLateSettleWhilePaused: the lease runs out while the queue, or the
// job's tenant, is paused, and reserves run; the late ack is accepted, and
// the job is not leased when the pause ends.
func testLateSettleWhilePaused(t *testing.T, s *suite) {
	p := pauser(t, s)
	for _, tenant := range []bool{false, true} {
		j := s.job(jobv1.PriorityNormal, "t1")
		s.enqueue(t, j)
		l := s.reserveOne(t)
		pause := mailqueue.Pause{For: time.Hour, Tenant: tenant, TenantID: "t1"}
		if err := p.Pause(s.ctx, pause); err != nil {
			t.Fatal(err)
		}
		s.wait(s.Lease + 50*time.Millisecond)
		s.reserveNone(t, "paused")
		if !s.trySettle(t, l, ack) {
			t.Fatalf("a late ack while paused (tenant %t), nobody having taken the job: false, want true", tenant)
		}
		if err := p.Resume(s.ctx, mailqueue.ResumeParams{Tenant: tenant, TenantID: "t1"}); err != nil {
			t.Fatal(err)
		}
		s.reserveNone(t, "the late ack finished the job")
	}
}

// testReplacedToken: the lease runs out and another run reserves the job
// (a redelivery counted, the attempt unchanged, a new token); the late
// settles of the first run, of every kind, return false and change
// nothing.
func testReplacedToken(t *testing.T, s *suite) {
	j := s.job(jobv1.PriorityNormal, "")
	s.enqueue(t, j)
	first := s.reserveOne(t)
	s.wait(s.Lease + 50*time.Millisecond)
	second := s.reserveOne(t)
	if second.ID != j.ID || second.Attempt != first.Attempt || second.Redeliveries != first.Redeliveries+1 || second.Token == first.Token {
		t.Fatalf("the reserve after the lease ran out: %s; want %s, attempt %d, %d redelivery, a new token", describe([]*mailqueue.Lease{second}), j.ID, first.Attempt, first.Redeliveries+1)
	}
	var row mailqueue.JobRow
	op, isOp := s.Source.(mailqueue.Operator)
	if isOp {
		row = s.get(t, op, j.ID)
	}
	for _, out := range append(lateOutcomes, failIn(codes.StateDeliveryUnknown)) {
		if s.trySettle(t, first, out) {
			t.Fatalf("a late %s of the run whose token was replaced: true, want false", out.Action)
		}
	}
	ok, err := s.Source.Extend(s.ctx, mailqueue.ExtendParams{ID: first.ID, Token: first.Token, Duration: s.Lease})
	mustBool(t, "a late Extend of the run whose token was replaced", ok, err, false)
	if isOp {
		if got := s.get(t, op, j.ID); untimed(got) != untimed(row) || !got.LeaseUntil.Equal(row.LeaseUntil) {
			t.Errorf("the fenced settles changed the job: %+v, want %+v", got, row)
		}
	}
	s.reserveNone(t, "the second run holds the job")
	mustBool(t, "Ack of the second run", s.trySettle(t, second, ack), nil, true)
}

// testExtendAfterExpiry: the lease runs out and nobody took the job: an
// Extend with its token is accepted and the run holds the job again, for
// the new lease from now; so too after a reserve that took another job.
func testExtendAfterExpiry(t *testing.T, s *suite) {
	for _, reserved := range []bool{false, true} {
		j := s.job(jobv1.PriorityNormal, "t1")
		s.enqueue(t, j)
		l := s.reserveOne(t)
		s.wait(s.Lease + 50*time.Millisecond)
		var h *mailqueue.Lease
		if reserved {
			h = s.reserveHigh(t)
		}
		ok, err := s.Source.Extend(s.ctx, mailqueue.ExtendParams{ID: l.ID, Token: l.Token, Duration: s.Lease})
		mustBool(t, "Extend after the lease ran out, nobody having taken the job", ok, err, true)
		if h != nil {
			s.settle(t, h, ack)
		}
		s.wait(s.Lease * 2 / 3)
		s.reserveNone(t, "the extended run holds the job")
		if !s.trySettle(t, l, ack) {
			t.Fatal("Ack after the late Extend: false, want true")
		}
		s.checkSettled(t, []*lateRun{{j: j, l: l, out: ack}})
	}
}

// testSRLateSettle: a settle through SettleAndReserve whose lease ran out,
// nobody having reserved, is accepted too, before the reserve of the same
// call: a late retry due now is leased again by it (attempt 2, no
// redelivery), and a late ack's job is not, the call leasing another.
func testSRLateSettle(t *testing.T, s *suite) {
	sr := settleReserver(t, s)
	a := s.job(jobv1.PriorityNormal, "t1")
	s.enqueue(t, a)
	first := s.reserveOne(t)
	s.wait(s.Lease + 50*time.Millisecond)
	ok, ls := s.settleReserve(t, sr, first, retryIn(0), 1)
	if !ok || len(ls) != 1 || ls[0].ID != a.ID || ls[0].Attempt != 2 || ls[0].Redeliveries != 0 || ls[0].Token == first.Token {
		t.Fatalf("a late SettleAndReserve(retry now, limit 1) = %t, %s; want settled, %s leased again, attempt 2, no redelivery, a new token", ok, describe(ls), a.ID)
	}
	second := ls[0]
	s.wait(s.Lease + 50*time.Millisecond)
	b := s.job(jobv1.PriorityNormal, "")
	s.enqueue(t, b)
	ok, ls = s.settleReserve(t, sr, second, ack, 1)
	if !ok || len(ls) != 1 || ls[0].ID != b.ID {
		t.Fatalf("a late SettleAndReserve(ack, limit 1) = %t, %v; want settled, %s leased (the acked job is done)", ok, ids(ls), b.ID)
	}
	s.settle(t, ls[0], ack)
	s.reserveNone(t, "both jobs are done")
}
