package redis

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/alexify/mailer/drivers/polling"
	"github.com/alexify/mailer/drivers/redis/internal/redistest"
	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/mailqueue"
)

// TestSettleAndReserve: a settle leases the next jobs in the same script,
// fenced by its own token; a fenced settle still leases; a retry due now
// is leased again by the same call.
func TestSettleAndReserve(t *testing.T) {
	s := newSource(t, redistest.Standalone(t), Options{})
	enqueue(t, s, testJob("a"), testJob("b"), testJob("c"))
	first := reserve(t, s, 1)
	if len(first) != 1 || first[0].ID != "a" {
		t.Fatalf("leased %s, want a", leaseIDs(first))
	}
	ok, ls, err := s.SettleAndReserve(ctx, polling.SettleParams{ID: "a", Token: first[0].Token, Outcome: mailqueue.Outcome{Action: mailqueue.Ack}},
		mailqueue.ReserveParams{Limit: 1, LeaseDuration: time.Minute})
	if err != nil || !ok || leaseIDs(ls) != "b" || ls[0].Attempt != 1 || ls[0].Token == first[0].Token {
		t.Fatalf("SettleAndReserve(ack a) = %t, %s, %v; want true, b", ok, leaseIDs(ls), err)
	}
	if until := time.Until(ls[0].Until); until > time.Minute || until < 50*time.Second {
		t.Errorf("the lease's Until is %v away, want about a minute", until)
	}
	// The same token again: fenced, nothing changed, and c is still leased.
	ok, ls2, err := s.SettleAndReserve(ctx, polling.SettleParams{ID: "a", Token: first[0].Token, Outcome: mailqueue.Outcome{Action: mailqueue.Ack}},
		mailqueue.ReserveParams{Limit: 5, LeaseDuration: time.Minute})
	if err != nil || ok || leaseIDs(ls2) != "c" {
		t.Fatalf("SettleAndReserve(ack a again) = %t, %s, %v; want false, c", ok, leaseIDs(ls2), err)
	}
	// A retry due now: queued again, then leased by the same call.
	ok, ls3, err := s.SettleAndReserve(ctx, polling.SettleParams{ID: "b", Token: ls[0].Token,
		Outcome: mailqueue.Outcome{Action: mailqueue.Retry, Code: codes.QueueThrown, Reason: "again"}},
		mailqueue.ReserveParams{Limit: 1, LeaseDuration: time.Minute})
	if err != nil || !ok || leaseIDs(ls3) != "b" || ls3[0].Attempt != 2 {
		t.Fatalf("SettleAndReserve(retry b) = %t, %+v, %v; want true, b at attempt 2", ok, ls3, err)
	}
	// A release with a delay, limit 0: settled, nothing leased.
	ok, ls4, err := s.SettleAndReserve(ctx, polling.SettleParams{ID: "b", Token: ls3[0].Token,
		Outcome: mailqueue.Outcome{Action: mailqueue.Release, Delay: time.Hour, Code: codes.QueueThrown}},
		mailqueue.ReserveParams{Limit: 0})
	if err != nil || !ok || len(ls4) != 0 {
		t.Fatalf("SettleAndReserve(release b, limit 0) = %t, %s, %v; want true, none", ok, leaseIDs(ls4), err)
	}
	ok, _, err = s.SettleAndReserve(ctx, polling.SettleParams{ID: "c", Token: ls2[0].Token,
		Outcome: mailqueue.Outcome{Action: mailqueue.Fail, State: codes.StateDeliveryUnknown, Code: codes.DeliveryUnknown}},
		mailqueue.ReserveParams{Limit: 1})
	if err != nil || !ok {
		t.Fatalf("SettleAndReserve(fail c) = %t, %v", ok, err)
	}
	if _, _, err := s.SettleAndReserve(ctx, polling.SettleParams{ID: "c", Token: "x"}, mailqueue.ReserveParams{Limit: 1}); err == nil {
		t.Error("SettleAndReserve with no action: no error")
	}
	// b queued not due, a accepted, c delivery_unknown.
	wantCounts(t, s, "after the settles", mailqueue.Stats{Queued: 1, Accepted: 1, DeliveryUnknown: 1})
	// b queued, 1 attempt spent (the release spent none).
	jb, _ := s.Get(ctx, "b")
	if got := (mailqueue.JobRow{State: jb.State, Attempt: jb.Attempt, Redeliveries: jb.Redeliveries}); got != (mailqueue.JobRow{State: mailqueue.JobQueued, Attempt: 1}) {
		t.Errorf("Get(b) = %+v; want queued, 1 attempt spent (the release spent none)", jb)
	}
}

// TestBatchedSettles: settles, extends and settles that reserve from many
// goroutines at once share batches (more than a script's chunk); each is
// fenced by its own token, and no job is leased twice.
func TestBatchedSettles(t *testing.T) {
	s := newSource(t, redistest.Standalone(t), Options{})
	const n = 300
	var jobs []mailqueue.NewJob
	for i := 0; i < n; i++ {
		jobs = append(jobs, testJob(fmt.Sprintf("j%03d", i)))
	}
	enqueue(t, s, jobs...)
	ls := reserve(t, s, 200)
	if len(ls) != 200 {
		t.Fatalf("leased %d", len(ls))
	}
	var mu sync.Mutex
	seen := map[string]int{}
	for _, l := range ls {
		seen[l.ID]++
	}
	var wg sync.WaitGroup
	for i, l := range ls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := s.Extend(ctx, mailqueue.ExtendParams{ID: l.ID, Token: l.Token, Duration: time.Minute})
			if !ok || err != nil {
				t.Errorf("Extend(%s) = %t, %v", l.ID, ok, err)
			}
			if i%2 == 0 {
				ok, err = s.Ack(ctx, mailqueue.AckParams{ID: l.ID, Token: l.Token})
				if !ok || err != nil {
					t.Errorf("Ack(%s) = %t, %v", l.ID, ok, err)
				}
				if ok, _ := s.Ack(ctx, mailqueue.AckParams{ID: l.ID, Token: l.Token}); ok {
					t.Errorf("Ack(%s) twice: settled twice", l.ID)
				}
				return
			}
			ok, more, err := s.SettleAndReserve(ctx, polling.SettleParams{ID: l.ID, Token: l.Token, Outcome: mailqueue.Outcome{Action: mailqueue.Ack}},
				mailqueue.ReserveParams{Limit: 1, LeaseDuration: time.Minute})
			if !ok || err != nil || len(more) > 1 {
				t.Errorf("SettleAndReserve(%s) = %t, %d leases, %v", l.ID, ok, len(more), err)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, m := range more {
				seen[m.ID]++
			}
		}()
	}
	wg.Wait()
	for id, k := range seen {
		if k != 1 {
			t.Errorf("%s leased %d times", id, k)
		}
	}
	st, _ := s.Stats(ctx)
	if st.Accepted != 200 || st.Running+st.Queued != n-200 || st.Running != int64(len(seen)-200) {
		t.Errorf("Stats = %+v; want 200 accepted, %d leased by the settles, the rest queued", st, len(seen)-200)
	}
}

// TestQueuedJobs: the queued jobs are counted and listed from the lanes,
// the scheduled jobs, the tenants' lanes and the held jobs of a paused
// tenant, by due time.
func TestQueuedJobs(t *testing.T) {
	for _, f := range []mailqueue.Fairness{mailqueue.FairnessNone, mailqueue.FairnessTenant} {
		t.Run(string(f), func(t *testing.T) {
			s := newSource(t, redistest.Standalone(t), Options{Fairness: f})
			now := time.Now()
			var jobs []mailqueue.NewJob
			add := func(id, tenant string, p jobv1.Priority, at time.Duration) {
				j := testJob(id)
				j.TenantID, j.Priority, j.RunAt = tenant, p, now.Add(at)
				jobs = append(jobs, j)
			}
			add("later", "", jobv1.PriorityNormal, time.Hour)
			add("n-a", "a", jobv1.PriorityNormal, -3*time.Second)
			add("h-b", "b", jobv1.PriorityHigh, -2*time.Second)
			add("l-none", "", jobv1.PriorityLow, -4*time.Second)
			add("n-b", "b", jobv1.PriorityNormal, -1*time.Second)
			add("h-a", "a", jobv1.PriorityHigh, -5*time.Second)
			enqueue(t, s, jobs...)
			// Tenant a paused: a reserve holds its high job (a lane not
			// shared), and takes h-b.
			if err := s.Pause(ctx, mailqueue.Pause{Tenant: true, TenantID: "a", For: time.Hour}); err != nil {
				t.Fatal(err)
			}
			if ls := reserve(t, s, 1); leaseIDs(ls) != "h-b" {
				t.Fatalf("leased %s, want h-b", leaseIDs(ls))
			}
			st, err := s.Stats(ctx)
			if err != nil || st.Queued != 5 || st.Due != 4 || st.Running != 1 {
				t.Fatalf("Stats = %+v, %v; want 5 queued, 4 due, 1 running", st, err)
			}
			list := func(offset, limit int) string {
				js, err := jobsAt(s, mailqueue.JobQueued, offset, limit)
				if err != nil {
					t.Fatal(err)
				}
				var ids []string
				for _, j := range js {
					ids = append(ids, j.ID)
				}
				return fmt.Sprint(ids)
			}
			if got, want := list(0, 10), "[h-a l-none n-a n-b later]"; got != want {
				t.Errorf("Jobs(queued) = %s, want %s", got, want)
			}
			if got, want := list(1, 2), "[l-none n-a]"; got != want {
				t.Errorf("Jobs(queued, 1, 2) = %s, want %s", got, want)
			}
			if got := list(5, 2); got != "[]" {
				t.Errorf("Jobs(queued, 5, 2) = %s, want none", got)
			}
		})
	}
}

// TestWorkerChainsAndCloses: a worker through the polling driver runs each
// slot's next job from its settle (SettleAndReserve), runs every job once,
// and once closed leaves no job leased: a closing runner settles the plain
// way and leases nothing more.
func TestWorkerChainsAndCloses(t *testing.T) {
	c := redistest.Standalone(t)
	q, err := Open(ctx, Options{Client: c, Prefix: redistest.Prefix(t), PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = q.Source().Obliterate(ctx) })
	const n = 400
	var jobs []mailqueue.NewJob
	for i := 0; i < n; i++ {
		jobs = append(jobs, testJob(fmt.Sprintf("w%03d", i)))
	}
	if _, err := q.Enqueue(ctx, jobs); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	runs := map[string]int{}
	halfway := make(chan struct{})
	r, err := q.Work(mailqueue.HandlerFunc(func(ctx context.Context, l *mailqueue.Lease) mailqueue.Outcome {
		mu.Lock()
		runs[l.ID]++
		if len(runs) == n/2 {
			close(halfway)
		}
		mu.Unlock()
		time.Sleep(time.Millisecond)
		return mailqueue.Outcome{Action: mailqueue.Ack}
	}), mailqueue.WorkOptions{Concurrency: 8})
	if err != nil {
		t.Fatal(err)
	}
	<-halfway
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	st, _ := q.Stats(ctx)
	mu.Lock()
	defer mu.Unlock()
	if st.Running != 0 || st.Accepted != int64(len(runs)) || st.Queued != int64(n-len(runs)) {
		t.Errorf("after Close: Stats = %+v, %d run; want none running, each run accepted, the rest queued", st, len(runs))
	}
	for id, k := range runs {
		if k != 1 {
			t.Errorf("%s ran %d times", id, k)
		}
	}
}
