package conformance

import (
	"testing"
	"time"

	"github.com/alexify/mailer/drivers/polling"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/mailqueue"
)

// The subtests of time: the store's clock decides when a job is due and
// tells the workers its now, never a producer's or a worker's clock
// (docs/architecture.md, "Time is the store's"). A producer's clock is
// skewed through the NewJob it hands over (its EnqueuedAt); a worker's
// needs no skew here, since the store tells it the store's now (Lease.Now)
// and the worker's own test corrects its clock by it.

// producerSkew is how far the suite puts a producer's clock ahead of the
// store's, and behind it: the two minutes of the fault runs.
const producerSkew = 2 * time.Minute

// skewedJob returns a new job with no RunAt (due now, by the store's
// clock) from a producer whose clock is skew off the store's.
func (s *suite) skewedJob(skew time.Duration) mailqueue.NewJob {
	j := s.job(jobv1.PriorityNormal, "")
	j.RunAt = time.Time{}
	j.EnqueuedAt = s.Now().Add(skew).Truncate(time.Millisecond)
	return j
}

// testDueAtStoreNow: a job with no RunAt is due at once, whether the
// producer's clock is ahead of the store's or behind it, and its
// EnqueuedAt is kept as the producer told it; jobs with no RunAt go in the
// order the store received them, not by their producers' EnqueuedAt.
func testDueAtStoreNow(t *testing.T, s *suite) {
	for _, skew := range []time.Duration{producerSkew, -producerSkew} {
		j := s.skewedJob(skew)
		s.enqueue(t, j)
		ls := s.reserve(t, 10)
		if len(ls) != 1 || ls[0].ID != j.ID {
			t.Fatalf("a job with no RunAt from a producer %v off the store's clock: leased %v, want %s at once (due at the store's now)", skew, ids(ls), j.ID)
		}
		if !near(ls[0].EnqueuedAt, j.EnqueuedAt, time.Millisecond) {
			t.Errorf("Lease.EnqueuedAt = %v, want the producer's %v", ls[0].EnqueuedAt, j.EnqueuedAt)
		}
		s.settle(t, ls[0], ack)
	}
	ahead, behind := s.skewedJob(producerSkew), s.skewedJob(-producerSkew)
	s.enqueue(t, ahead)
	s.wait(10 * time.Millisecond)
	s.enqueue(t, behind)
	s.wait(10 * time.Millisecond)
	got := make([]string, 0, 2)
	for range 2 {
		l := s.reserveOne(t)
		got = append(got, l.ID)
		s.settle(t, l, ack)
	}
	if want := []string{ahead.ID, behind.ID}; got[0] != want[0] || got[1] != want[1] {
		t.Errorf("leased in the order %v, want %v: due when the store received them, not by the producers' EnqueuedAt", got, want)
	}
	op, ok := s.Source.(mailqueue.Operator)
	if !ok {
		return
	}
	j := s.skewedJob(producerSkew)
	before := s.Now()
	s.enqueue(t, j)
	r := s.get(t, op, j.ID)
	if !near(r.RunAt, before, time.Second) || !near(r.EnqueuedAt, j.EnqueuedAt, time.Millisecond) {
		t.Errorf("Get of a job with no RunAt: run at %v, enqueued at %v; want about %v (the store's now) and %v (the producer's)", r.RunAt, r.EnqueuedAt, before, j.EnqueuedAt)
	}
}

// checkLeaseNow checks that a lease tells the store's clock when it was
// made: between before and after on the store's clock, give or take the
// second a store over the network may round to.
func checkLeaseNow(t *testing.T, what string, l *mailqueue.Lease, before, after time.Time) {
	t.Helper()
	if l.Now.IsZero() {
		t.Fatalf("%s: Lease.Now is zero; want the store's clock when it made the lease", what)
	}
	if l.Now.Before(before.Add(-time.Second)) || l.Now.After(after.Add(time.Second)) {
		t.Errorf("%s: Lease.Now = %v, want the store's clock, within [%v, %v]", what, l.Now, before, after)
	}
}

// testLeaseNow: a lease tells the store's now (Lease.Now), and it follows
// the store's clock; the leases of SettleAndReserve tell it too.
func testLeaseNow(t *testing.T, s *suite) {
	s.enqueue(t, s.job(jobv1.PriorityNormal, ""), s.job(jobv1.PriorityNormal, ""))
	before := s.Now()
	l := s.reserveOne(t)
	checkLeaseNow(t, "Reserve", l, before, s.Now())
	if d := l.Until.Sub(l.Now); d <= 0 || d > s.Lease+time.Second {
		t.Errorf("Lease.Until - Lease.Now = %v, want about the lease, %v", d, s.Lease)
	}
	if s.Advance != nil {
		// The store's clock jumps an hour: the lease tells the store's
		// now, whatever the clock of the process that asks.
		s.settle(t, l, releaseIn(0))
		s.Advance(time.Hour)
		before = s.Now()
		l = s.reserveOne(t)
		checkLeaseNow(t, "Reserve after the store's clock moved an hour", l, before, s.Now())
	}
	sr, ok := s.Source.(polling.SettleReserver)
	if !ok {
		return
	}
	before = s.Now()
	settled, ls := s.settleReserve(t, sr, l, ack, 1)
	if !settled || len(ls) != 1 {
		t.Fatalf("SettleAndReserve(ack, limit 1) = %t, %v; want settled, the other job leased", settled, ids(ls))
	}
	checkLeaseNow(t, "SettleAndReserve", ls[0], before, s.Now())
}
