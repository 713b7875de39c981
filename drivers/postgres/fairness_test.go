package postgres

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/internal/pgtest"
	"github.com/alexify/mailer/mailqueue"
)

func testJob(id string, n int) mailqueue.NewJob {
	return mailqueue.NewJob{
		ID: id, Hash: fmt.Sprintf("%064x", n), Data: []byte(fmt.Sprintf(`{"v":1,"n":%d}`, n)),
		MaxAttempts: 3, RunAt: time.Now().Add(time.Duration(n) * time.Millisecond), EnqueuedAt: time.Now(),
	}
}

func leaseIDs(ls []*mailqueue.Lease) string {
	ids := make([]string, len(ls))
	for i, l := range ls {
		ids[i] = l.ID
	}
	return strings.Join(ids, ",")
}

// TestFairness: with tenant fairness, a high job of any tenant goes first,
// then the tenants in turn, a job each, the jobs of no tenant as one more,
// as on the memory and Redis drivers; the turns carry over from one
// reserve to the next.
func TestFairness(t *testing.T) {
	s := newSource(t, pgtest.Pool(t), Options{Fairness: mailqueue.FairnessTenant})
	ctx := context.Background()
	var jobs []mailqueue.NewJob
	add := func(id, tenant string, p jobv1.Priority) {
		j := testJob(id, len(jobs))
		j.TenantID, j.Priority = tenant, p
		jobs = append(jobs, j)
	}
	for i := 1; i <= 4; i++ {
		add(fmt.Sprintf("a%d", i), "a", jobv1.PriorityNormal)
	}
	add("b1", "b", jobv1.PriorityNormal)
	add("b2", "b", jobv1.PriorityNormal)
	add("n1", "", jobv1.PriorityNormal)
	add("c-high", "c", jobv1.PriorityHigh)
	add("a-low", "a", jobv1.PriorityLow)
	if _, err := s.Enqueue(ctx, jobs); err != nil {
		t.Fatal(err)
	}
	time.Sleep(15 * time.Millisecond)
	var got []string
	for _, limit := range []int{3, 20} {
		ls, err := s.Reserve(ctx, mailqueue.ReserveParams{Limit: limit, LeaseDuration: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, leaseIDs(ls))
	}
	if got, want := strings.Join(got, ","), "c-high,a1,b1,n1,a2,b2,a3,a4,a-low"; got != want {
		t.Errorf("leased %s, want %s", got, want)
	}
}

// TestQueuesShareASchema: two queues in one schema keep their jobs,
// pauses and settings apart.
func TestQueuesShareASchema(t *testing.T) {
	p := pgtest.Pool(t)
	schema := newSchema(t, p)
	a := newSource(t, p, Options{Schema: schema, Queue: "a"})
	b := newSource(t, p, Options{Schema: schema, Queue: "b", Fairness: mailqueue.FairnessTenant})
	if a.QueueName() == b.QueueName() || a.opts.Fairness == b.opts.Fairness {
		t.Fatalf("the queues share a name or settings: %s %+v, %s %+v", a.QueueName(), a.opts, b.QueueName(), b.opts)
	}
	if _, err := a.Enqueue(ctx, []mailqueue.NewJob{testJob("same-id", 1)}); err != nil {
		t.Fatal(err)
	}
	res, err := b.Enqueue(ctx, []mailqueue.NewJob{testJob("same-id", 2)})
	if err != nil || res[0].Duplicate || res[0].Conflict {
		t.Fatalf("the same id in the other queue: %+v, %v; want stored", res, err)
	}
	if err := a.Pause(ctx, mailqueue.Pause{For: time.Hour}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	if ls, err := a.Reserve(ctx, mailqueue.ReserveParams{Limit: 5}); err != nil || len(ls) != 0 {
		t.Errorf("the paused queue a leased %d, %v", len(ls), err)
	}
	ls, err := b.Reserve(ctx, mailqueue.ReserveParams{Limit: 5})
	if err != nil || len(ls) != 1 || string(ls[0].Data) != string(testJob("same-id", 2).Data) {
		t.Fatalf("queue b leased %v, %v; want its own job", ls, err)
	}
}
