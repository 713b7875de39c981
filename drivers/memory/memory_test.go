package memory_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/alexify/mailer/clock"
	"github.com/alexify/mailer/drivers/memory"
	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/mailqueue"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func newJob(id string, p jobv1.Priority, tenant string, at time.Time) mailqueue.NewJob {
	return mailqueue.NewJob{ID: id, Hash: "h-" + id, Data: []byte(`{"id":"` + id + `"}`), Priority: p, TenantID: tenant, RunAt: at, MaxAttempts: 3, EnqueuedAt: at}
}

// TestFairnessTenant is the test: tenant A enqueues 5 000 normal
// jobs, then tenant B one normal and one high job; with concurrency 1, B's
// high job is the next one run and B's normal job runs within two
// reservations.
func TestFairnessTenant(t *testing.T) {
	ctx := context.Background()
	fc := clock.NewFake(t0)
	q := mustMemory(t, memory.Options{Clock: fc, Fairness: mailqueue.FairnessTenant})
	var batch []mailqueue.NewJob
	for i := 0; i < 5000; i++ {
		batch = append(batch, newJob(fmt.Sprintf("a-%04d", i), jobv1.PriorityNormal, "A", t0))
	}
	if _, err := q.Enqueue(ctx, batch); err != nil {
		t.Fatal(err)
	}
	fc.Advance(time.Second)
	if _, err := q.Enqueue(ctx, []mailqueue.NewJob{newJob("b-normal", jobv1.PriorityNormal, "B", fc.Now()), newJob("b-high", jobv1.PriorityHigh, "B", fc.Now())}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []string
	done := make(chan struct{})
	r, err := q.Work(mailqueue.HandlerFunc(func(ctx context.Context, l *mailqueue.Lease) mailqueue.Outcome {
		mu.Lock()
		order = append(order, l.ID)
		if len(order) == 4 {
			close(done)
		}
		mu.Unlock()
		return mailqueue.Outcome{Action: mailqueue.Ack}
	}), mailqueue.WorkOptions{Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	<-done
	_ = r.Close(ctx)
	mu.Lock()
	defer mu.Unlock()
	if order[0] != "b-high" {
		t.Errorf("the first job run is %s, want B's high job", order[0])
	}
	if order[1] != "b-normal" && order[2] != "b-normal" {
		t.Errorf("runs %v: B's normal job is not within the next two", order[:4])
	}
}

func TestFairnessNoneIsPriorityThenTime(t *testing.T) {
	ctx := context.Background()
	fc := clock.NewFake(t0)
	src := mustMemorySource(t, memory.Options{Clock: fc})
	_, _ = src.Enqueue(ctx, []mailqueue.NewJob{newJob("a1", jobv1.PriorityNormal, "A", t0), newJob("a2", jobv1.PriorityNormal, "A", t0.Add(time.Millisecond))})
	fc.Advance(time.Second)
	_, _ = src.Enqueue(ctx, []mailqueue.NewJob{newJob("b1", jobv1.PriorityNormal, "B", fc.Now()), newJob("b0", jobv1.PriorityLow, "", fc.Now())})
	var got []string
	for i := 0; i < 4; i++ {
		ls, _ := src.Reserve(ctx, mailqueue.ReserveParams{Limit: 1, LeaseDuration: time.Minute})
		got = append(got, ls[0].ID)
	}
	if diff := cmp.Diff([]string{"a1", "a2", "b1", "b0"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestMaxJobs(t *testing.T) {
	ctx := context.Background()
	src := mustMemorySource(t, memory.Options{MaxJobs: 2})
	if _, err := src.Enqueue(ctx, []mailqueue.NewJob{newJob("1", "", "", t0), newJob("2", "", "", t0)}); err != nil {
		t.Fatal(err)
	}
	_, err := src.Enqueue(ctx, []mailqueue.NewJob{newJob("3", "", "", t0)})
	if !errors.Is(err, memory.ErrFull) {
		t.Fatalf("a third job: %v, want ErrFull", err)
	}
	if _, err := src.Get(context.Background(), "3"); !errors.Is(err, mailqueue.ErrNotFound) {
		t.Error("a refused job was stored")
	}
	// A duplicate is not a new job: it is answered, not refused.
	res, err := src.Enqueue(ctx, []mailqueue.NewJob{newJob("1", "", "", t0)})
	if err != nil || !res[0].Duplicate {
		t.Errorf("a duplicate at MaxJobs: %+v %v", res, err)
	}
	// The default is the spec's 100 000.
	if memory.DefaultMaxJobs != 100_000 || memory.DefaultRetainFinished != 10_000 {
		t.Error("defaults differ from the spec's")
	}
}

// settleAll reserves every due job and settles it with f.
func settleAll(t *testing.T, src *memory.Source, f func(l *mailqueue.Lease) (bool, error)) {
	t.Helper()
	for {
		ls, err := src.Reserve(context.Background(), mailqueue.ReserveParams{Limit: 10, LeaseDuration: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if len(ls) == 0 {
			return
		}
		for _, l := range ls {
			if ok, err := f(l); !ok || err != nil {
				t.Fatalf("settle %s: %t %v", l.ID, ok, err)
			}
		}
	}
}

func TestRetention(t *testing.T) {
	ctx := context.Background()
	ack := func(src *memory.Source) func(l *mailqueue.Lease) (bool, error) {
		return func(l *mailqueue.Lease) (bool, error) {
			return src.Ack(ctx, mailqueue.AckParams{ID: l.ID, Token: l.Token})
		}
	}
	fail := func(src *memory.Source) func(l *mailqueue.Lease) (bool, error) {
		return func(l *mailqueue.Lease) (bool, error) {
			return src.Fail(ctx, mailqueue.FailParams{ID: l.ID, Token: l.Token, State: codes.StateFailed, Code: codes.QueueThrown})
		}
	}
	tests := []struct {
		policy              mailqueue.RetainData
		keepAccepted, keepF bool
	}{
		{"", false, true}, // the default, "failed"
		{mailqueue.RetainAllData, true, true},
		{mailqueue.RetainNoData, false, false},
	}
	for _, tc := range tests {
		t.Run("RetainData="+string(tc.policy), func(t *testing.T) {
			fc := clock.NewFake(t0)
			src := mustMemorySource(t, memory.Options{Clock: fc, RetainData: tc.policy})
			_, _ = src.Enqueue(ctx, []mailqueue.NewJob{newJob("ok", "", "", t0)})
			settleAll(t, src, ack(src))
			_, _ = src.Enqueue(ctx, []mailqueue.NewJob{newJob("bad", "", "", t0)})
			settleAll(t, src, fail(src))
			okJob, _ := src.Get(context.Background(), "ok")
			badJob, _ := src.Get(context.Background(), "bad")
			if okJob.DataKept != tc.keepAccepted || badJob.DataKept != tc.keepF {
				t.Errorf("data kept: accepted %t, failed %t; want %t, %t", okJob.DataKept, badJob.DataKept, tc.keepAccepted, tc.keepF)
			}
			if okJob.Hash != "h-ok" || badJob.Hash != "h-bad" {
				t.Error("the hash was dropped with the data")
			}
			// Without its data, an enqueue again is still a duplicate...
			fc.Advance(23 * time.Hour)
			res, _ := src.Enqueue(ctx, []mailqueue.NewJob{newJob("ok", "", "", t0), newJob("bad", "", "", t0)})
			if !res[0].Duplicate || !res[1].Duplicate {
				t.Errorf("within the windows: %+v, want duplicates", res)
			}
			// ...until the dedupe window (a day) for a completed job...
			fc.Advance(time.Hour)
			res, _ = src.Enqueue(ctx, []mailqueue.NewJob{newJob("ok", "", "", t0), newJob("bad", "", "", t0)})
			if res[0].Duplicate || !res[1].Duplicate {
				t.Errorf("after a day: %+v, want the completed job forgotten, the failed one kept", res)
			}
			// ...and a week for a failed one.
			fc.Advance(6 * 24 * time.Hour)
			res, _ = src.Enqueue(ctx, []mailqueue.NewJob{newJob("bad", "", "", t0)})
			if res[0].Duplicate {
				t.Errorf("after a week: %+v, want the failed job forgotten", res)
			}
		})
	}
}

func TestRetainFinished(t *testing.T) {
	ctx := context.Background()
	src := mustMemorySource(t, memory.Options{RetainFinished: 2, RetainData: mailqueue.RetainAllData})
	for i := 0; i < 3; i++ {
		_, _ = src.Enqueue(ctx, []mailqueue.NewJob{newJob(fmt.Sprint(i), "", "", t0)})
		settleAll(t, src, func(l *mailqueue.Lease) (bool, error) {
			return src.Ack(ctx, mailqueue.AckParams{ID: l.ID, Token: l.Token})
		})
	}
	first, _ := src.Get(context.Background(), "0")
	last, _ := src.Get(context.Background(), "2")
	if first.DataKept || !last.DataKept {
		t.Errorf("with RetainFinished 2, the oldest of 3 keeps its data (%t) or the newest lost it (%t)", first.DataKept, !last.DataKept)
	}
	if res, _ := src.Enqueue(ctx, []mailqueue.NewJob{newJob("0", "", "", t0)}); !res[0].Duplicate {
		t.Error("a job past RetainFinished is no longer a duplicate")
	}
}

func TestOperations(t *testing.T) {
	ctx := context.Background()
	fc := clock.NewFake(t0)
	q := mustMemory(t, memory.Options{Clock: fc})
	_, _ = q.Enqueue(ctx, []mailqueue.NewJob{newJob("1", "", "", t0), newJob("2", "", "", t0), newJob("3", "", "", t0.Add(time.Hour))})
	src := q.Source()
	ls, _ := src.Reserve(ctx, mailqueue.ReserveParams{Limit: 1, LeaseDuration: time.Minute})
	if diff := cmp.Diff(mailqueue.Stats{Queued: 2, Due: 1, Running: 1, Now: t0}, stats(t, q)); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
	_, _ = src.Fail(ctx, mailqueue.FailParams{ID: ls[0].ID, Token: ls[0].Token, State: codes.StateDeliveryUnknown, Code: codes.DeliveryUnknown})
	failed, err := q.Failed(ctx, 10)
	if err != nil || len(failed) != 1 || failed[0].ID != "1" || failed[0].State != mailqueue.JobDeliveryUnknown || failed[0].Attempt != 1 {
		t.Fatalf("Failed() = %+v", failed)
	}
	if err := q.RetryFailed(ctx, "2"); !errors.Is(err, mailqueue.ErrNotFailed) {
		t.Errorf("RetryFailed of a queued job: %v, want ErrNotFailed", err)
	}
	if err := q.RetryFailed(ctx, "1"); err != nil {
		t.Fatal(err)
	}
	j, _ := q.Get(ctx, "1")
	if j.State != mailqueue.JobQueued || j.Attempt != 0 {
		t.Errorf("after RetryFailed: %s, %d attempts", j.State, j.Attempt)
	}
	if page, err := q.Jobs(ctx, mailqueue.JobsParams{State: mailqueue.JobQueued}); err != nil || len(page.Rows) != 3 {
		t.Errorf("Jobs(queued): %d jobs, %v", len(page.Rows), err)
	}
	// Drain waits for the due jobs, not the scheduled one.
	r, _ := q.Work(mailqueue.HandlerFunc(func(ctx context.Context, l *mailqueue.Lease) mailqueue.Outcome {
		return mailqueue.Outcome{Action: mailqueue.Ack}
	}), mailqueue.WorkOptions{Concurrency: 2})
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := q.Drain(dctx); err != nil {
		t.Fatal(err)
	}
	_ = r.Close(ctx)
	if diff := cmp.Diff(mailqueue.Stats{Queued: 1, Accepted: 2, Now: t0}, stats(t, q)); diff != "" {
		t.Errorf("after Drain (-want +got):\n%s", diff)
	}
}

// stats returns the queue's counts, failing the test on an error.
func stats(t testing.TB, q mailqueue.Inspector) mailqueue.Stats {
	t.Helper()
	st, err := q.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st
}
