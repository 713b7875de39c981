// Package conformance holds a mailqueue.Source to the contract of the spec
// (docs/spec/queue.md, "The memory queue and the polling driver": the order of
// priorities, leases and their expiry, redelivery, fencing by the token,
// releases that spend no attempt, scheduled jobs, pauses, retention and
// duplicates), the way testing/fstest.TestFS holds a file system.
//
// A store's own test calls TestSource once:
//
//	func TestSource(t *testing.T) {
//		conformance.TestSource(t, func(t *testing.T) conformance.Harness {
//			fc := clock.NewFake(time.Now())
//			src, err := memory.NewSource(memory.Options{Clock: fc})
//			if err != nil {
//				t.Fatal(err)
//			}
//			return conformance.Harness{Source: src, Now: fc.Now, Advance: fc.Advance}
//		})
//	}
//
// Every subtest gets a fresh, isolated source from the factory; the
// subtests run in a stable order. This package is a public promise: a
// Source that passes it works with the polling driver and the worker.
//
// The optional interfaces a source may have are held to their contract
// too, by subtests that skip, saying why, for a source without them:
// mailqueue.Pauser (Pause/...) and polling.SettleReserver
// (SettleReserver/...).
package conformance

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/alexify/mailer/drivers/polling"
	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/mailqueue"
)

// Harness is a source under test and what the suite needs to drive it.
type Harness struct {
	// Source is the source, fresh and empty.
	Source mailqueue.Source
	// Now is the source's clock; time.Now when nil.
	Now func() time.Time
	// Advance moves the source's clock forward. Nil when the source runs on
	// a real clock (such as a server's): the suite then sleeps, and keeps
	// its leases and delays short (Lease).
	Advance func(d time.Duration)
	// Lease is the lease the suite asks for; 1 minute with Advance, 400
	// milliseconds without.
	Lease time.Duration
	// DedupeWindow and RetainFailed are the source's retention; the
	// retention subtests run only when both are set and Advance is not nil.
	DedupeWindow, RetainFailed time.Duration
	// Close, when set, is called when the subtest ends.
	Close func()
}

// TestSource runs the contract against sources made by newHarness, one per
// subtest.
func TestSource(t *testing.T, newHarness func(t *testing.T) Harness) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			if h.Close != nil {
				t.Cleanup(h.Close)
			}
			if h.Now == nil {
				h.Now = time.Now
			}
			if h.Lease == 0 {
				h.Lease = time.Minute
				if h.Advance == nil {
					h.Lease = 400 * time.Millisecond
				}
			}
			tc.run(t, &suite{Harness: h, ctx: context.Background()})
		})
	}
}

var cases = []struct {
	name string
	run  func(t *testing.T, s *suite)
}{
	{"Enqueue/Reserve", testEnqueueReserve},
	{"Enqueue/Duplicates", testDuplicates},
	{"Reserve/Empty", testReserveEmpty},
	{"Reserve/PriorityThenTime", testPriority},
	{"Reserve/Limit", testLimit},
	{"Reserve/ScheduledNotBeforeDue", testScheduled},
	{"Reserve/EachJobOnce", testReserveOnce},
	{"Lease/ExpiryRedelivers", testLeaseExpiry},
	{"Lease/Extend", testExtend},
	{"Fencing/StaleToken", testFencing},
	{"Settle/Ack", testAck},
	{"Settle/RetrySpendsAnAttempt", testRetry},
	{"Settle/ReleaseSpendsNoAttempt", testRelease},
	{"Settle/Fail", testFail},
	{"SettleReserver/StaleToken", testSRStaleToken},
	{"SettleReserver/Ack", testSRAck},
	{"SettleReserver/RetrySpendsAnAttempt", testSRRetry},
	{"SettleReserver/ReleaseSpendsNoAttempt", testSRRelease},
	{"SettleReserver/Fail", testSRFail},
	{"SettleReserver/Limit", testSRLimit},
	{"SettleReserver/PriorityThenTime", testSRPriority},
	{"SettleReserver/ErrorChangesNothing", testSRError},
	{"Pause/Queue", testPauseQueue},
	{"Pause/Tenant", testPauseTenant},
	{"Retention", testRetention},
}

type suite struct {
	Harness
	ctx context.Context
	n   int
}

// wait lets d pass on the source's clock.
func (s *suite) wait(d time.Duration) {
	if s.Advance != nil {
		s.Advance(d)
		return
	}
	time.Sleep(d)
}

// job returns a new job due now, of the priority and tenant.
func (s *suite) job(p jobv1.Priority, tenant string) mailqueue.NewJob {
	s.n++
	now := s.Now()
	id := fmt.Sprintf("job-%03d", s.n)
	return mailqueue.NewJob{
		ID: id, Hash: fmt.Sprintf("%064x", s.n), Data: []byte(fmt.Sprintf(`{"v":1,"n":%d}`, s.n)),
		Priority: p, TenantID: tenant, RunAt: now, MaxAttempts: 2 + s.n%7, EnqueuedAt: now,
	}
}

func (s *suite) enqueue(t *testing.T, jobs ...mailqueue.NewJob) []mailqueue.EnqueueResult {
	t.Helper()
	res, err := s.Source.Enqueue(s.ctx, jobs)
	if err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	if len(res) != len(jobs) {
		t.Fatalf("Enqueue: %d results for %d jobs", len(res), len(jobs))
	}
	return res
}

func (s *suite) reserve(t *testing.T, limit int) []*mailqueue.Lease {
	t.Helper()
	ls, err := s.Source.Reserve(s.ctx, mailqueue.ReserveParams{Limit: limit, LeaseDuration: s.Lease})
	if err != nil {
		t.Fatalf("Reserve: %v", err)
	}
	if len(ls) > limit {
		t.Fatalf("Reserve(limit %d) leased %d jobs", limit, len(ls))
	}
	return ls
}

func (s *suite) reserveOne(t *testing.T) *mailqueue.Lease {
	t.Helper()
	ls := s.reserve(t, 1)
	if len(ls) != 1 {
		t.Fatalf("Reserve: leased %d jobs, want 1", len(ls))
	}
	return ls[0]
}

func (s *suite) reserveNone(t *testing.T, why string) {
	t.Helper()
	if ls := s.reserve(t, 10); len(ls) != 0 {
		t.Fatalf("Reserve leased %s: %s", ids(ls), why)
	}
}

// describe tells the leases' jobs, attempts and redeliveries.
func describe(ls []*mailqueue.Lease) string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = fmt.Sprintf("%s (attempt %d, %d redeliveries)", l.ID, l.Attempt, l.Redeliveries)
	}
	return fmt.Sprint(out)
}

func ids(ls []*mailqueue.Lease) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.ID
	}
	return out
}

func mustBool(t *testing.T, what string, ok bool, err error, want bool) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if ok != want {
		t.Fatalf("%s = %t, want %t", what, ok, want)
	}
}

func testEnqueueReserve(t *testing.T, s *suite) {
	j := s.job(jobv1.PriorityNormal, "t1")
	res := s.enqueue(t, j)
	if res[0].ID != j.ID || res[0].Duplicate || res[0].Conflict {
		t.Fatalf("Enqueue = %+v, want a new job %s", res[0], j.ID)
	}
	l := s.reserveOne(t)
	if l.ID != j.ID || string(l.Data) != string(j.Data) || l.Attempt != 1 || l.MaxAttempts != j.MaxAttempts || l.Redeliveries != 0 || l.Token == "" || l.TenantID != "t1" || l.Priority != jobv1.PriorityNormal {
		t.Errorf("Lease = %+v; want job %s, its data, attempt 1 of %d, no redelivery, a token, tenant t1, priority normal", l, j.ID, j.MaxAttempts)
	}
	if !l.EnqueuedAt.Equal(j.EnqueuedAt) && l.EnqueuedAt.Sub(j.EnqueuedAt).Abs() > time.Millisecond {
		t.Errorf("Lease.EnqueuedAt = %v, want %v", l.EnqueuedAt, j.EnqueuedAt)
	}
	if d := l.Until.Sub(s.Now()); d <= 0 || d > s.Lease+time.Second {
		t.Errorf("the lease runs out in %v, want about %v", d, s.Lease)
	}
	s.reserveNone(t, "the only job is leased")
}

func testDuplicates(t *testing.T, s *suite) {
	j := s.job(jobv1.PriorityNormal, "")
	s.enqueue(t, j)
	other := j
	other.Hash = fmt.Sprintf("%064x", 999)
	fresh := s.job(jobv1.PriorityNormal, "")
	res := s.enqueue(t, j, other, fresh)
	if !res[0].Duplicate || res[0].Conflict {
		t.Errorf("the same id and hash again: %+v, want Duplicate", res[0])
	}
	if res[1].Duplicate || !res[1].Conflict {
		t.Errorf("the same id with another hash: %+v, want Conflict", res[1])
	}
	if res[2].Duplicate || res[2].Conflict {
		t.Errorf("a new job in the same call: %+v, want stored", res[2])
	}
	got := ids(s.reserve(t, 10))
	sort.Strings(got)
	if fmt.Sprint(got) != fmt.Sprint([]string{j.ID, fresh.ID}) {
		t.Errorf("leased %v, want each job once: %v", got, []string{j.ID, fresh.ID})
	}
}

func testReserveEmpty(t *testing.T, s *suite) {
	s.reserveNone(t, "the source is empty")
}

func testPriority(t *testing.T, s *suite) {
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
		got = append(got, s.reserveOne(t).ID)
	}
	want := []string{high.ID, n1.ID, n2.ID, low.ID}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("leased in the order %v, want %v (high, normal by time, low)", got, want)
	}
}

func testLimit(t *testing.T, s *suite) {
	for i := 0; i < 5; i++ {
		s.enqueue(t, s.job(jobv1.PriorityNormal, ""))
	}
	if n := len(s.reserve(t, 3)); n != 3 {
		t.Errorf("Reserve(limit 3) leased %d", n)
	}
	if n := len(s.reserve(t, 3)); n != 2 {
		t.Errorf("then Reserve(limit 3) leased %d, want the 2 left", n)
	}
}

func testScheduled(t *testing.T, s *suite) {
	j := s.job(jobv1.PriorityHigh, "")
	j.RunAt = s.Now().Add(s.Lease)
	s.enqueue(t, j)
	s.reserveNone(t, "a job scheduled later is not due")
	s.wait(s.Lease / 2)
	s.reserveNone(t, "a job scheduled later is not due yet")
	s.wait(s.Lease/2 + 50*time.Millisecond)
	if l := s.reserveOne(t); l.ID != j.ID {
		t.Errorf("leased %s", l.ID)
	}
}

func testReserveOnce(t *testing.T, s *suite) {
	const jobs, workers = 60, 12
	for i := 0; i < jobs; i++ {
		s.enqueue(t, s.job(jobv1.PriorityNormal, ""))
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				ls, err := s.Source.Reserve(s.ctx, mailqueue.ReserveParams{Limit: 2, LeaseDuration: time.Hour})
				if err != nil {
					t.Errorf("Reserve: %v", err)
					return
				}
				if len(ls) == 0 {
					return
				}
				mu.Lock()
				for _, l := range ls {
					seen[l.ID]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != jobs {
		t.Errorf("%d of %d jobs leased", len(seen), jobs)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("job %s leased %d times by concurrent reserves", id, n)
		}
	}
}

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

func pauser(t *testing.T, s *suite) mailqueue.Pauser {
	t.Helper()
	p, ok := s.Source.(mailqueue.Pauser)
	if !ok {
		t.Skip("the source is not a mailqueue.Pauser: pauses are not offered")
	}
	return p
}

func testPauseQueue(t *testing.T, s *suite) {
	p := pauser(t, s)
	s.enqueue(t, s.job(jobv1.PriorityHigh, "a"))
	if err := p.Pause(s.ctx, mailqueue.Pause{For: s.Lease}); err != nil {
		t.Fatal(err)
	}
	s.reserveNone(t, "the queue is paused")
	if err := p.Resume(s.ctx, mailqueue.ResumeParams{}); err != nil {
		t.Fatal(err)
	}
	s.reserveOne(t)
	s.enqueue(t, s.job(jobv1.PriorityNormal, ""))
	if err := p.Pause(s.ctx, mailqueue.Pause{For: s.Lease}); err != nil {
		t.Fatal(err)
	}
	s.reserveNone(t, "the queue is paused again")
	s.wait(s.Lease + 50*time.Millisecond)
	s.reserveOne(t) // the pause ran out
}

func testPauseTenant(t *testing.T, s *suite) {
	p := pauser(t, s)
	a1, b1, a2, none := s.job(jobv1.PriorityNormal, "a"), s.job(jobv1.PriorityNormal, "b"), s.job(jobv1.PriorityHigh, "a"), s.job(jobv1.PriorityNormal, "")
	s.enqueue(t, a1, b1, a2, none)
	if err := p.Pause(s.ctx, mailqueue.Pause{Tenant: true, TenantID: "a", For: s.Lease}); err != nil {
		t.Fatal(err)
	}
	got := ids(s.reserve(t, 10))
	sort.Strings(got)
	want := []string{b1.ID, none.ID}
	sort.Strings(want)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("with tenant a paused, leased %v; want the jobs of b and of no tenant %v", got, want)
	}
	if err := p.Resume(s.ctx, mailqueue.ResumeParams{Tenant: true, TenantID: "a"}); err != nil {
		t.Fatal(err)
	}
	got = ids(s.reserve(t, 10))
	if fmt.Sprint(got) != fmt.Sprint([]string{a2.ID, a1.ID}) {
		t.Errorf("after Resume of a, leased %v; want %v (high first)", got, []string{a2.ID, a1.ID})
	}
}

func testRetention(t *testing.T, s *suite) {
	if s.Advance == nil || s.DedupeWindow == 0 || s.RetainFailed == 0 {
		t.Skip("retention needs Advance, DedupeWindow and RetainFailed in the harness")
	}
	done, failed := s.job(jobv1.PriorityNormal, ""), s.job(jobv1.PriorityNormal, "")
	s.enqueue(t, done, failed)
	for i := 0; i < 2; i++ {
		l := s.reserveOne(t)
		var ok bool
		var err error
		if l.ID == done.ID {
			ok, err = s.Source.Ack(s.ctx, mailqueue.AckParams{ID: l.ID, Token: l.Token})
		} else {
			ok, err = s.Source.Fail(s.ctx, mailqueue.FailParams{ID: l.ID, Token: l.Token, State: codes.StateFailed, Code: codes.QueueThrown})
		}
		mustBool(t, "settle", ok, err, true)
	}
	s.wait(s.DedupeWindow - time.Second)
	if res := s.enqueue(t, done); !res[0].Duplicate {
		t.Errorf("within the dedupe window: %+v, want Duplicate", res[0])
	}
	s.wait(2 * time.Second)
	if res := s.enqueue(t, done); res[0].Duplicate || res[0].Conflict {
		t.Errorf("after the dedupe window: %+v, want a new job", res[0])
	}
	if s.RetainFailed > s.DedupeWindow {
		if res := s.enqueue(t, failed); !res[0].Duplicate {
			t.Errorf("a failed job within RetainFailed: %+v, want Duplicate", res[0])
		}
	}
	s.wait(s.RetainFailed)
	if res := s.enqueue(t, failed); res[0].Duplicate || res[0].Conflict {
		t.Errorf("a failed job after RetainFailed: %+v, want a new job", res[0])
	}
}

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
