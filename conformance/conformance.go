// Package conformance holds a mailqueue.Source to its contract, the way
// testing/fstest.TestFS holds a file system: jobs are leased by priority,
// then by the time they became due; a lease runs out and its job is
// redelivered; every settle is fenced by the lease's token alone (a run
// whose lease ran out still settles while no other run took the job); the
// store's clock decides when a job is due, and each lease tells it; a
// release spends no attempt; a scheduled job waits until it is due; pauses hold
// the jobs of the queue or of a tenant; finished jobs are kept for their
// retention, and an enqueue under a kept job's key is a duplicate (spec:
// "The memory queue and the polling driver").
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
// mailqueue.Pauser (Pause/...), polling.SettleReserver (SettleReserver/...)
// and mailqueue.Operator (Ops/...: the same operations and the same
// answers on every store).
package conformance

import (
	"context"
	"fmt"
	"testing"
	"time"

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
	// RetainData is the source's policy of the messages of finished jobs
	// ("" for the default, mailqueue.RetainFailedData): the operations
	// subtests check DataKept and ErrNoData by it.
	RetainData mailqueue.RetainData
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
	{"Fencing/LateSettleApplies", testLateSettle},
	{"Fencing/LateSettleAfterAReserve", testLateSettleAfterReserve},
	{"Fencing/LateSettleWhilePaused", testLateSettleWhilePaused},
	{"Fencing/ReplacedTokenChangesNothing", testReplacedToken},
	{"Lease/ExtendAfterExpiry", testExtendAfterExpiry},
	{"Clock/DueAtTheStoresNow", testDueAtStoreNow},
	{"Clock/LeaseTellsTheStoresNow", testLeaseNow},
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
	{"SettleReserver/LateSettleApplies", testSRLateSettle},
	{"Pause/Queue", testPauseQueue},
	{"Pause/Tenant", testPauseTenant},
	{"Retention", testRetention},
	{"Ops/Stats", testOpsStats},
	{"Ops/Rows", testOpsRows},
	{"Ops/Jobs", testOpsJobs},
	{"Ops/Failed", testOpsFailed},
	{"Ops/RetryFailed", testOpsRetryFailed},
	{"Ops/Resend", testOpsResend},
	{"Ops/Purge", testOpsPurge},
	{"Ops/PurgeKeepsDuplicates", testOpsPurgeKeepsDuplicates},
	{"Ops/Pause", testOpsPause},
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
