package conformance

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/mailqueue"
)

// The subtests of the operations (mailqueue.Operator): a source that has
// them must give the same answers as every other store, so that one tool
// works on all of them.

// operator returns the source as a mailqueue.Operator, or skips the
// subtest.
func operator(t *testing.T, s *suite) mailqueue.Operator {
	t.Helper()
	op, ok := s.Source.(mailqueue.Operator)
	if !ok {
		t.Skip("the source is not a mailqueue.Operator: the operations are not offered")
	}
	return op
}

// near reports whether a and b are at most tol apart.
func near(a, b time.Time, tol time.Duration) bool { return a.Sub(b).Abs() <= tol }

// stats returns the source's stats, failing the test on an error.
func (s *suite) stats(t *testing.T, op mailqueue.Operator) mailqueue.Stats {
	t.Helper()
	st, err := op.Stats(s.ctx)
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	return st
}

// get returns the row of the job of the id, failing the test on an error.
func (s *suite) get(t *testing.T, op mailqueue.Operator, id string) mailqueue.JobRow {
	t.Helper()
	j, err := op.Get(s.ctx, id)
	if err != nil {
		t.Fatalf("Get(%s): %v", id, err)
	}
	return j
}

// counts is what Stats counts, without the clock and the pauses.
func counts(st mailqueue.Stats) string {
	return fmt.Sprintf("queued %d (due %d), running %d, accepted %d, failed %d, delivery_unknown %d",
		st.Queued, st.Due, st.Running, st.Accepted, st.Failed, st.DeliveryUnknown)
}

// settle settles the lease with the outcome.
func (s *suite) settle(t *testing.T, l *mailqueue.Lease, out mailqueue.Outcome) {
	t.Helper()
	if !s.trySettle(t, l, out) {
		t.Fatalf("%s %s = false, want true", out.Action, l.ID)
	}
}

// byID returns the leases by job id.
func byID(ls []*mailqueue.Lease) map[string]*mailqueue.Lease {
	m := map[string]*mailqueue.Lease{}
	for _, l := range ls {
		m[l.ID] = l
	}
	return m
}

// testOpsStats: Stats counts the jobs by state after enqueue, reserve,
// ack and fail; Due is the part of Queued due now; the age of the
// longest-waiting due job grows with the clock; Now is the store's clock.
func testOpsStats(t *testing.T, s *suite) {
	op := operator(t, s)
	if st := s.stats(t, op); counts(st) != counts(mailqueue.Stats{}) || st.Paused || len(st.PausedTenants) != 0 || st.OldestQueuedAge != 0 {
		t.Fatalf("Stats of an empty source = %+v, want all zero", st)
	}
	a, b, c, d, later := s.job(jobv1.PriorityNormal, ""), s.job(jobv1.PriorityNormal, ""), s.job(jobv1.PriorityNormal, ""), s.job(jobv1.PriorityNormal, ""), s.job(jobv1.PriorityNormal, "")
	later.RunAt = s.Now().Add(100 * s.Lease)
	s.enqueue(t, a, b, c, d, later)
	if got, want := counts(s.stats(t, op)), counts(mailqueue.Stats{Queued: 5, Due: 4}); got != want {
		t.Errorf("after the enqueue: %s; want %s", got, want)
	}
	ls := byID(s.reserve(t, 4))
	if len(ls) != 4 {
		t.Fatalf("leased %d jobs, want 4", len(ls))
	}
	if got, want := counts(s.stats(t, op)), counts(mailqueue.Stats{Queued: 1, Running: 4}); got != want {
		t.Errorf("after the reserve: %s; want %s", got, want)
	}
	s.settle(t, ls[a.ID], ack)
	s.settle(t, ls[b.ID], failIn(codes.StateFailed))
	s.settle(t, ls[c.ID], failIn(codes.StateDeliveryUnknown))
	st := s.stats(t, op)
	if got, want := counts(st), counts(mailqueue.Stats{Queued: 1, Running: 1, Accepted: 1, Failed: 1, DeliveryUnknown: 1}); got != want {
		t.Errorf("after ack and fail: %s; want %s", got, want)
	}
	if st.OldestQueuedAge != 0 {
		t.Errorf("OldestQueuedAge = %v with no queued job due, want 0", st.OldestQueuedAge)
	}
	if !near(st.Now, s.Now(), time.Second) {
		t.Errorf("Stats.Now = %v, want the store's clock, about %v", st.Now, s.Now())
	}
	s.settle(t, ls[d.ID], retryIn(0))
	wait := s.Lease / 2
	s.wait(wait)
	st = s.stats(t, op)
	if got, want := counts(st), counts(mailqueue.Stats{Queued: 2, Due: 1, Accepted: 1, Failed: 1, DeliveryUnknown: 1}); got != want {
		t.Errorf("after a retry due now: %s; want %s", got, want)
	}
	if st.OldestQueuedAge < wait-time.Millisecond || st.OldestQueuedAge > wait+5*time.Second {
		t.Errorf("OldestQueuedAge = %v %v after the retried job became due, want about %v", st.OldestQueuedAge, wait, wait)
	}
}

// untimed returns the row without its times, which the suite checks
// apart, within the store's precision.
func untimed(r mailqueue.JobRow) mailqueue.JobRow {
	r.EnqueuedAt, r.RunAt, r.FinishedAt, r.LeaseUntil = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	return r
}

// wantRow fails the test when the row of the job of the id is not want,
// its times aside.
func (s *suite) wantRow(t *testing.T, op mailqueue.Operator, what string, want mailqueue.JobRow) mailqueue.JobRow {
	t.Helper()
	got := s.get(t, op, want.ID)
	if untimed(got) != want {
		t.Errorf("Get of %s =\n%+v\nwant\n%+v", what, untimed(got), want)
	}
	return got
}

// testOpsRows: Get tells a job as the operator sees it, at each step: its
// id, hash, version, priority, tenant, attempts, times, lease, last code
// and whether its data is kept; and ErrNotFound for a job not held.
func testOpsRows(t *testing.T, s *suite) {
	op := operator(t, s)
	if _, err := op.Get(s.ctx, "no-such-job"); !errors.Is(err, mailqueue.ErrNotFound) {
		t.Errorf("Get of no job: %v, want ErrNotFound", err)
	}
	j := s.job(jobv1.PriorityHigh, "acme")
	s.enqueue(t, j)
	want := mailqueue.JobRow{
		ID: j.ID, Hash: j.Hash, Version: 1, State: mailqueue.JobQueued, Priority: jobv1.PriorityHigh, TenantID: "acme",
		MaxAttempts: j.MaxAttempts, DataKept: true,
	}
	r := s.wantRow(t, op, "a queued job", want)
	if !near(r.EnqueuedAt, j.EnqueuedAt, time.Millisecond) || !near(r.RunAt, j.RunAt, time.Millisecond) || !r.FinishedAt.IsZero() || !r.LeaseUntil.IsZero() {
		t.Errorf("Get: enqueued at %v, run at %v, finished at %v, lease until %v; want %v, %v and no others", r.EnqueuedAt, r.RunAt, r.FinishedAt, r.LeaseUntil, j.EnqueuedAt, j.RunAt)
	}
	l := s.reserveOne(t)
	want.State = mailqueue.JobRunning
	if r := s.wantRow(t, op, "a running job", want); !near(r.LeaseUntil, l.Until, time.Second) {
		t.Errorf("Get of a running job: lease until %v, want about %v", r.LeaseUntil, l.Until)
	}
	s.settle(t, l, retryIn(0))
	want.State, want.Attempt, want.Code, want.Reason = mailqueue.JobQueued, 1, codes.QueueSendFailed, "451"
	if r := s.wantRow(t, op, "a retried job", want); !r.LeaseUntil.IsZero() {
		t.Errorf("Get of a retried job: lease until %v, want none", r.LeaseUntil)
	}
	s.wait(s.Lease / 4)
	s.settle(t, s.reserveOne(t), failIn(codes.StateFailed))
	want.State, want.Attempt, want.Code, want.Reason = mailqueue.JobFailed, 2, codes.QueueThrown, "boom"
	want.DataKept = s.RetainData != mailqueue.RetainNoData
	if r := s.wantRow(t, op, "a failed job", want); !near(r.FinishedAt, s.Now(), time.Second) {
		t.Errorf("FinishedAt = %v, want about %v", r.FinishedAt, s.Now())
	}
	k := s.job(jobv1.PriorityNormal, "")
	s.enqueue(t, k)
	s.settle(t, s.reserveOne(t), ack)
	s.wantRow(t, op, "an accepted job (RetainData "+string(s.RetainData)+")", mailqueue.JobRow{
		ID: k.ID, Hash: k.Hash, Version: 1, State: mailqueue.JobAccepted, Priority: jobv1.PriorityNormal,
		Attempt: 1, MaxAttempts: k.MaxAttempts, DataKept: s.RetainData == mailqueue.RetainAllData,
	})
}

// pageIDs lists every job of a state, limit a page, and returns their ids
// and the number of pages.
func (s *suite) pageIDs(t *testing.T, op mailqueue.Operator, state mailqueue.JobState, limit int) ([]string, int) {
	t.Helper()
	var out []string
	cursor, pages := "", 0
	for {
		p, err := op.Jobs(s.ctx, mailqueue.JobsParams{State: state, Cursor: cursor, Limit: limit})
		if err != nil {
			t.Fatalf("Jobs(%s, cursor %q): %v", state, cursor, err)
		}
		if len(p.Rows) > limit {
			t.Fatalf("Jobs(%s, limit %d) gave %d rows", state, limit, len(p.Rows))
		}
		pages++
		for _, r := range p.Rows {
			if r.State != state {
				t.Errorf("Jobs(%s) gave %s in state %s", state, r.ID, r.State)
			}
			out = append(out, r.ID)
		}
		if p.Next == "" {
			return out, pages
		}
		if pages > 100 {
			t.Fatalf("Jobs(%s) never ends", state)
		}
		cursor = p.Next
	}
}

// testOpsJobs: Jobs lists the jobs of a state page by page through its
// cursor, in the order of the state (queued by due time, finished by
// finish time, each the oldest first), every job once; and refuses an
// unknown state or a cursor it did not make.
func testOpsJobs(t *testing.T, s *suite) {
	op := operator(t, s)
	var queued []mailqueue.NewJob
	var want []string
	base := s.Now().Add(-time.Minute)
	for i := 0; i < 7; i++ {
		j := s.job(jobv1.PriorityNormal, "")
		j.RunAt = base.Add(time.Duration(6-i) * time.Second) // enqueued in the reverse of their due order
		queued = append(queued, j)
	}
	for i := len(queued) - 1; i >= 0; i-- {
		want = append(want, queued[i].ID)
	}
	s.enqueue(t, queued...)
	got, pages := s.pageIDs(t, op, mailqueue.JobQueued, 3)
	if fmt.Sprint(got) != fmt.Sprint(want) || pages != 3 {
		t.Errorf("Jobs(queued) by pages of 3 = %v in %d pages; want %v in 3 (by due time)", got, pages, want)
	}
	if got, pages := s.pageIDs(t, op, mailqueue.JobQueued, 7); fmt.Sprint(got) != fmt.Sprint(want) || pages != 1 {
		t.Errorf("Jobs(queued, limit 7) = %v in %d pages; want %v in 1, and no Next", got, pages, want)
	}
	if p, err := op.Jobs(s.ctx, mailqueue.JobsParams{State: mailqueue.JobQueued}); err != nil || len(p.Rows) != 7 || p.Next != "" {
		t.Errorf("Jobs(queued, no limit) = %d rows, next %q, %v; want all 7 (the default limit)", len(p.Rows), p.Next, err)
	}
	ls := s.reserve(t, 5)
	if got, _ := s.pageIDs(t, op, mailqueue.JobRunning, 2); len(got) != 5 {
		t.Errorf("Jobs(running) = %v, want the 5 leased", got)
	}
	// Acked one by one, in the order of their ids, the clock moving
	// between: the finish order and the ids agree.
	acked := make([]string, 0, len(ls))
	for _, l := range byID(ls) {
		acked = append(acked, l.ID)
	}
	sort.Strings(acked)
	leases := byID(ls)
	for _, id := range acked {
		s.settle(t, leases[id], ack)
		s.wait(5 * time.Millisecond)
	}
	if got, pages := s.pageIDs(t, op, mailqueue.JobAccepted, 2); fmt.Sprint(got) != fmt.Sprint(acked) || pages != 3 {
		t.Errorf("Jobs(accepted) by pages of 2 = %v in %d pages; want %v in 3 (by finish time)", got, pages, acked)
	}
	if got, _ := s.pageIDs(t, op, mailqueue.JobQueued, 3); len(got) != 2 {
		t.Errorf("Jobs(queued) after the reserve = %v, want the 2 left", got)
	}
	if got, _ := s.pageIDs(t, op, mailqueue.JobFailed, 3); len(got) != 0 {
		t.Errorf("Jobs(failed) = %v, want none", got)
	}
	if _, err := op.Jobs(s.ctx, mailqueue.JobsParams{State: "lost"}); err == nil {
		t.Error("Jobs of an unknown state: no error")
	}
	if _, err := op.Jobs(s.ctx, mailqueue.JobsParams{State: mailqueue.JobQueued, Cursor: "not a cursor"}); err == nil {
		t.Error("Jobs with a cursor the store did not make: no error")
	}
}

// testOpsFailed: Failed lists the failed jobs, then those of unknown
// delivery, each the oldest first, up to its limit.
func testOpsFailed(t *testing.T, s *suite) {
	op := operator(t, s)
	x, y, z, ok := s.job(jobv1.PriorityNormal, ""), s.job(jobv1.PriorityNormal, ""), s.job(jobv1.PriorityNormal, ""), s.job(jobv1.PriorityNormal, "")
	s.enqueue(t, x, y, z, ok)
	ls := byID(s.reserve(t, 4))
	s.settle(t, ls[y.ID], failIn(codes.StateDeliveryUnknown))
	s.wait(5 * time.Millisecond)
	s.settle(t, ls[x.ID], failIn(codes.StateFailed))
	s.wait(5 * time.Millisecond)
	s.settle(t, ls[z.ID], failIn(codes.StateFailed))
	s.settle(t, ls[ok.ID], ack)
	rows, err := op.Failed(s.ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]string, 0, len(rows))
	for _, r := range rows {
		got = append(got, r.ID)
	}
	if want := []string{x.ID, z.ID, y.ID}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Failed(10) = %v; want %v (failed by finish time, then delivery_unknown)", got, want)
	}
	if rows, err := op.Failed(s.ctx, 2); err != nil || len(rows) != 2 || rows[0].ID != x.ID || rows[1].ID != z.ID {
		t.Errorf("Failed(2) = %+v, %v; want %s and %s", rows, err, x.ID, z.ID)
	}
}

// testOpsRetryFailed: RetryFailed queues a failed job again, due now, its
// attempts and redeliveries reset; it refuses a job it does not hold
// (ErrNotFound), one not failed (ErrNotFailed) and one whose message was
// dropped (ErrNoData).
func testOpsRetryFailed(t *testing.T, s *suite) {
	op := operator(t, s)
	f, u, running := s.job(jobv1.PriorityNormal, "t"), s.job(jobv1.PriorityNormal, ""), s.job(jobv1.PriorityNormal, "")
	s.enqueue(t, f, u, running)
	ls := byID(s.reserve(t, 3))
	s.settle(t, ls[f.ID], failIn(codes.StateFailed))
	s.settle(t, ls[u.ID], failIn(codes.StateDeliveryUnknown))
	if err := op.RetryFailed(s.ctx, "no-such-job"); !errors.Is(err, mailqueue.ErrNotFound) {
		t.Errorf("RetryFailed of no job: %v, want ErrNotFound", err)
	}
	if err := op.RetryFailed(s.ctx, running.ID); !errors.Is(err, mailqueue.ErrNotFailed) {
		t.Errorf("RetryFailed of a running job: %v, want ErrNotFailed", err)
	}
	if s.RetainData == mailqueue.RetainNoData {
		if err := op.RetryFailed(s.ctx, f.ID); !errors.Is(err, mailqueue.ErrNoData) {
			t.Errorf("RetryFailed of a job whose message was dropped: %v, want ErrNoData", err)
		}
		return
	}
	for _, id := range []string{f.ID, u.ID} {
		if err := op.RetryFailed(s.ctx, id); err != nil {
			t.Fatalf("RetryFailed(%s): %v", id, err)
		}
	}
	if err := op.RetryFailed(s.ctx, f.ID); !errors.Is(err, mailqueue.ErrNotFailed) {
		t.Errorf("RetryFailed of a job retried already: %v, want ErrNotFailed", err)
	}
	if st := s.stats(t, op); st.Failed != 0 || st.DeliveryUnknown != 0 || st.Queued != 2 || st.Due != 2 {
		t.Errorf("after RetryFailed: %s; want the 2 jobs queued and due", counts(st))
	}
	if r := s.get(t, op, f.ID); r.State != mailqueue.JobQueued || r.Attempt != 0 || r.Redeliveries != 0 || !r.FinishedAt.IsZero() {
		t.Errorf("Get after RetryFailed = %+v; want queued, no attempt spent, no redelivery, no finish time", r)
	}
	again := byID(s.reserve(t, 10))
	for _, j := range []mailqueue.NewJob{f, u} {
		l, ok := again[j.ID]
		if !ok || l.Attempt != 1 || l.Redeliveries != 0 || string(l.Data) != string(j.Data) || l.TenantID != j.TenantID {
			t.Errorf("after RetryFailed, %s leased as %+v; want attempt 1, no redelivery, its data and tenant", j.ID, l)
		}
	}
}

// testOpsPurge: Purge drops the finished jobs of a state that finished
// at least OlderThan ago, says how many, never touches the jobs of other
// states, and refuses a state that is not finished. A purged job is gone
// (ErrNotFound), but an enqueue under its key is still a Duplicate (or a
// Conflict for another hash): a purge keeps duplicates told.
func testOpsPurge(t *testing.T, s *suite) {
	op := operator(t, s)
	old1, old2, fresh, failed, queued := s.job(jobv1.PriorityNormal, ""), s.job(jobv1.PriorityNormal, ""), s.job(jobv1.PriorityNormal, ""), s.job(jobv1.PriorityNormal, ""), s.job(jobv1.PriorityNormal, "")
	s.enqueue(t, old1, old2, failed)
	ls := byID(s.reserve(t, 3))
	s.settle(t, ls[old1.ID], ack)
	s.settle(t, ls[old2.ID], ack)
	s.settle(t, ls[failed.ID], failIn(codes.StateFailed))
	s.wait(2 * s.Lease)
	s.enqueue(t, fresh)
	s.settle(t, s.reserveOne(t), ack)
	s.enqueue(t, queued)
	n, err := op.Purge(s.ctx, mailqueue.PurgeParams{State: mailqueue.JobAccepted, OlderThan: s.Lease})
	if err != nil || n != 2 {
		t.Errorf("Purge(accepted, older than %v) = %d, %v; want the 2 old ones", s.Lease, n, err)
	}
	for _, id := range []string{old1.ID, old2.ID} {
		if _, err := op.Get(s.ctx, id); !errors.Is(err, mailqueue.ErrNotFound) {
			t.Errorf("Get of the purged %s: %v, want ErrNotFound", id, err)
		}
	}
	if st := s.stats(t, op); st.Accepted != 1 || st.Failed != 1 || st.Queued != 1 {
		t.Errorf("after the purge: %s; want 1 accepted, 1 failed and 1 queued kept", counts(st))
	}
	if res := s.enqueue(t, old1); !res[0].Duplicate {
		t.Errorf("an enqueue under the key of a purged job: %+v, want Duplicate: the purge kept its hash", res[0])
	}
	other := old2
	other.Hash = fmt.Sprintf("%064x", 1<<40)
	if res := s.enqueue(t, other); !res[0].Conflict {
		t.Errorf("an enqueue under the key of a purged job, another hash: %+v, want Conflict", res[0])
	}
	if err := op.RetryFailed(s.ctx, old1.ID); !errors.Is(err, mailqueue.ErrNotFound) {
		t.Errorf("RetryFailed of a purged job: %v, want ErrNotFound", err)
	}
	if got, _ := s.pageIDs(t, op, mailqueue.JobAccepted, 10); len(got) != 1 || got[0] != fresh.ID {
		t.Errorf("Jobs(accepted) after the purge = %v, want only %s", got, fresh.ID)
	}
	if st := s.stats(t, op); st.Queued != 1 {
		t.Errorf("the enqueues under the purged keys stored jobs: %s", counts(st))
	}
	if n, err := op.Purge(s.ctx, mailqueue.PurgeParams{State: mailqueue.JobAccepted}); err != nil || n != 1 {
		t.Errorf("Purge(accepted) = %d, %v; want the 1 left", n, err)
	}
	if n, err := op.Purge(s.ctx, mailqueue.PurgeParams{State: mailqueue.JobDeliveryUnknown}); err != nil || n != 0 {
		t.Errorf("Purge(delivery_unknown) = %d, %v; want 0", n, err)
	}
	if n, err := op.Purge(s.ctx, mailqueue.PurgeParams{State: mailqueue.JobFailed}); err != nil || n != 1 {
		t.Errorf("Purge(failed) = %d, %v; want 1", n, err)
	}
	for _, st := range []mailqueue.JobState{mailqueue.JobQueued, mailqueue.JobRunning, "lost"} {
		if _, err := op.Purge(s.ctx, mailqueue.PurgeParams{State: st}); err == nil {
			t.Errorf("Purge(%s): no error", st)
		}
	}
	if _, err := op.Purge(s.ctx, mailqueue.PurgeParams{State: mailqueue.JobFailed, OlderThan: -time.Second}); err == nil {
		t.Error("Purge with a negative OlderThan: no error")
	}
	if st := s.stats(t, op); st.Queued != 1 {
		t.Errorf("the purges touched the queued jobs: %s", counts(st))
	}
}

// testOpsPause: the pauses of the queue and of a tenant show in Stats
// until they are resumed or run out.
func testOpsPause(t *testing.T, s *suite) {
	op := operator(t, s)
	var oe *mailqueue.OptionError
	if err := op.Pause(s.ctx, mailqueue.Pause{For: -time.Minute}); !errors.As(err, &oe) {
		t.Errorf("Pause for a negative duration: %v; want a *mailqueue.OptionError", err)
	}
	if err := op.Pause(s.ctx, mailqueue.Pause{For: s.Lease}); err != nil {
		t.Fatal(err)
	}
	if err := op.Pause(s.ctx, mailqueue.Pause{Tenant: true, TenantID: "b", For: 3 * s.Lease}); err != nil {
		t.Fatal(err)
	}
	if err := op.Pause(s.ctx, mailqueue.Pause{Tenant: true, TenantID: "a", For: 3 * s.Lease}); err != nil {
		t.Fatal(err)
	}
	st := s.stats(t, op)
	if !st.Paused || !near(st.PausedUntil, s.Now().Add(s.Lease), time.Second) {
		t.Errorf("Stats with the queue paused: paused %t until %v; want until about %v", st.Paused, st.PausedUntil, s.Now().Add(s.Lease))
	}
	if len(st.PausedTenants) != 2 || st.PausedTenants[0].TenantID != "a" || st.PausedTenants[1].TenantID != "b" ||
		!near(st.PausedTenants[0].Until, s.Now().Add(3*s.Lease), time.Second) {
		t.Errorf("PausedTenants = %+v; want a then b, until about %v", st.PausedTenants, s.Now().Add(3*s.Lease))
	}
	if err := op.Resume(s.ctx, mailqueue.ResumeParams{}); err != nil {
		t.Fatal(err)
	}
	if err := op.Resume(s.ctx, mailqueue.ResumeParams{Tenant: true, TenantID: "b"}); err != nil {
		t.Fatal(err)
	}
	st = s.stats(t, op)
	if st.Paused || !st.PausedUntil.IsZero() || len(st.PausedTenants) != 1 || st.PausedTenants[0].TenantID != "a" {
		t.Errorf("after Resume of the queue and of b: paused %t until %v, tenants %+v; want only a paused", st.Paused, st.PausedUntil, st.PausedTenants)
	}
	s.wait(3*s.Lease + 50*time.Millisecond)
	if st := s.stats(t, op); st.Paused || len(st.PausedTenants) != 0 {
		t.Errorf("after the pauses ran out: paused %t, tenants %+v; want none", st.Paused, st.PausedTenants)
	}
}

// testOpsPurgeKeepsDuplicates: after a purge of accepted jobs, the same
// job enqueued again is a Duplicate until the dedupe window ends, and a
// new job after it; a purge with ForgetKeys forgets the keys, and the
// same job enqueued again is stored (and would be sent) again.
func testOpsPurgeKeepsDuplicates(t *testing.T, s *suite) {
	op := operator(t, s)
	kept, forgotten, failed := s.job(jobv1.PriorityNormal, ""), s.job(jobv1.PriorityNormal, ""), s.job(jobv1.PriorityNormal, "")
	s.enqueue(t, kept, failed)
	ls := byID(s.reserve(t, 2))
	s.settle(t, ls[kept.ID], ack)
	s.settle(t, ls[failed.ID], failIn(codes.StateDeliveryUnknown))
	for _, st := range []mailqueue.JobState{mailqueue.JobAccepted, mailqueue.JobDeliveryUnknown} {
		if n, err := op.Purge(s.ctx, mailqueue.PurgeParams{State: st}); err != nil || n != 1 {
			t.Fatalf("Purge(%s) = %d, %v; want 1", st, n, err)
		}
	}
	for _, j := range []mailqueue.NewJob{kept, failed} {
		if res := s.enqueue(t, j); !res[0].Duplicate {
			t.Errorf("%s enqueued again after the purge: %+v, want Duplicate", j.ID, res[0])
		}
		if _, err := op.Get(s.ctx, j.ID); !errors.Is(err, mailqueue.ErrNotFound) {
			t.Errorf("Get of the purged %s: %v, want ErrNotFound", j.ID, err)
		}
	}
	if n, err := op.Purge(s.ctx, mailqueue.PurgeParams{State: mailqueue.JobAccepted}); err != nil || n != 0 {
		t.Errorf("Purge(accepted) again = %d, %v; want 0: a purged job is purged once", n, err)
	}
	s.enqueue(t, forgotten)
	s.settle(t, s.reserveOne(t), ack)
	if n, err := op.Purge(s.ctx, mailqueue.PurgeParams{State: mailqueue.JobAccepted, ForgetKeys: true}); err != nil || n != 1 {
		t.Fatalf("Purge(accepted, ForgetKeys) = %d, %v; want 1", n, err)
	}
	if res := s.enqueue(t, forgotten); res[0].Duplicate || res[0].Conflict {
		t.Errorf("enqueued again after a purge with ForgetKeys: %+v, want stored again", res[0])
	}
	if s.Advance == nil || s.DedupeWindow == 0 {
		return
	}
	s.wait(s.DedupeWindow + time.Second)
	if res := s.enqueue(t, kept); res[0].Duplicate || res[0].Conflict {
		t.Errorf("enqueued again after the dedupe window of a purged job: %+v, want stored again", res[0])
	}
}

// forgetter records the keys a Resend forgets, failing with err when set.
type forgetter struct {
	keys []string
	err  error
}

func (f *forgetter) forget(_ context.Context, key string) error {
	f.keys = append(f.keys, key)
	return f.err
}

// testOpsResend: Resend clears the job's idempotency entry (its key is the
// job's id) and then queues the job again as RetryFailed does; it checks
// the job first, forgetting nothing for a job it does not hold
// (ErrNotFound), one not failed (ErrNotFailed), one whose message was
// dropped (ErrNoData) or when Forget is missing (ErrNoForget), and leaves
// the job as it was when Forget fails.
func testOpsResend(t *testing.T, s *suite) {
	op := operator(t, s)
	u, f, running := s.job(jobv1.PriorityNormal, "t"), s.job(jobv1.PriorityNormal, ""), s.job(jobv1.PriorityNormal, "")
	s.enqueue(t, u, f, running)
	ls := byID(s.reserve(t, 3))
	s.settle(t, ls[u.ID], failIn(codes.StateDeliveryUnknown))
	s.settle(t, ls[f.ID], failIn(codes.StateFailed))
	fg := &forgetter{}
	for _, tc := range []struct {
		id   string
		want error
	}{
		{"no-such-job", mailqueue.ErrNotFound},
		{running.ID, mailqueue.ErrNotFailed},
	} {
		if err := op.Resend(s.ctx, mailqueue.ResendParams{ID: tc.id, Forget: fg.forget}); !errors.Is(err, tc.want) {
			t.Errorf("Resend(%s): %v, want %v", tc.id, err, tc.want)
		}
	}
	if err := op.Resend(s.ctx, mailqueue.ResendParams{ID: u.ID}); !errors.Is(err, mailqueue.ErrNoForget) {
		t.Errorf("Resend without Forget: %v, want ErrNoForget", err)
	}
	if len(fg.keys) != 0 {
		t.Fatalf("Resend refused, yet forgot %v", fg.keys)
	}
	if s.RetainData == mailqueue.RetainNoData {
		if err := op.Resend(s.ctx, mailqueue.ResendParams{ID: u.ID, Forget: fg.forget}); !errors.Is(err, mailqueue.ErrNoData) || len(fg.keys) != 0 {
			t.Errorf("Resend of a job whose message was dropped: %v, forgot %v; want ErrNoData, nothing forgotten", err, fg.keys)
		}
		return
	}
	down := errors.New("the idempotency store is down")
	failing := &forgetter{err: down}
	if err := op.Resend(s.ctx, mailqueue.ResendParams{ID: u.ID, Forget: failing.forget}); !errors.Is(err, down) {
		t.Errorf("Resend whose Forget failed: %v, want its error", err)
	}
	if r := s.get(t, op, u.ID); r.State != mailqueue.JobDeliveryUnknown {
		t.Errorf("after a Resend whose Forget failed: %s, want delivery_unknown, as it was", r.State)
	}
	for _, id := range []string{u.ID, f.ID} {
		if err := op.Resend(s.ctx, mailqueue.ResendParams{ID: id, Forget: fg.forget}); err != nil {
			t.Fatalf("Resend(%s): %v", id, err)
		}
	}
	if fmt.Sprint(fg.keys) != fmt.Sprint([]string{u.ID, f.ID}) {
		t.Errorf("Resend forgot the keys %v, want the jobs' ids %v", fg.keys, []string{u.ID, f.ID})
	}
	if err := op.Resend(s.ctx, mailqueue.ResendParams{ID: u.ID, Forget: fg.forget}); !errors.Is(err, mailqueue.ErrNotFailed) || len(fg.keys) != 2 {
		t.Errorf("Resend of a job queued again already: %v, forgot %v; want ErrNotFailed, nothing more forgotten", err, fg.keys)
	}
	again := byID(s.reserve(t, 10))
	for _, j := range []mailqueue.NewJob{u, f} {
		if l, ok := again[j.ID]; !ok || l.Attempt != 1 || string(l.Data) != string(j.Data) {
			t.Errorf("after Resend, %s leased as %+v; want attempt 1, its data", j.ID, l)
		}
	}
}
