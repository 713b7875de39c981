package redis

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	goredis "github.com/redis/go-redis/v9"

	"github.com/alexify/mailer/drivers/redis/internal/redistest"
	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/internal/codetest"
	"github.com/alexify/mailer/mailqueue"
)

type mailqueueNewJob = mailqueue.NewJob

var ctx = context.Background()

// testJob returns a job due now.
func testJob(id string) mailqueue.NewJob {
	now := time.Now()
	return mailqueue.NewJob{
		ID: id, Hash: "h-" + id, Data: []byte(`{"v":1,"id":"` + id + `"}`), Priority: jobv1.PriorityNormal,
		RunAt: now, EnqueuedAt: now, MaxAttempts: 5,
	}
}

func enqueue(t *testing.T, s *Source, jobs ...mailqueue.NewJob) []mailqueue.EnqueueResult {
	t.Helper()
	res, err := s.Enqueue(ctx, jobs)
	if err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	return res
}

func reserve(t *testing.T, s *Source, limit int) []*mailqueue.Lease {
	t.Helper()
	ls, err := s.Reserve(ctx, mailqueue.ReserveParams{Limit: limit, LeaseDuration: time.Minute})
	if err != nil {
		t.Fatalf("Reserve: %v", err)
	}
	return ls
}

func leaseIDs(ls []*mailqueue.Lease) string {
	b := make([]string, 0, len(ls))
	for _, l := range ls {
		b = append(b, l.ID)
	}
	return strings.Join(b, ",")
}

func TestWake(t *testing.T) { testWake(t, redistest.Standalone(t)) }

// testWake: an idle worker whose poll interval is an hour starts a job
// enqueued by another source (another process) at once, and a scheduled
// job when it is due: the server wakes it, not a poll.
func testWake(t *testing.T, c goredis.UniversalClient) {
	prefix := redistest.Prefix(t)
	q, err := Open(ctx, Options{Client: c, Prefix: prefix, PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	producer := newSource(t, c, Options{Prefix: prefix})
	started := make(chan time.Time, 10)
	r, err := q.Work(mailqueue.HandlerFunc(func(ctx context.Context, l *mailqueue.Lease) mailqueue.Outcome {
		started <- time.Now()
		return mailqueue.Outcome{Action: mailqueue.Ack}
	}), mailqueue.WorkOptions{Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close(ctx) }()
	time.Sleep(100 * time.Millisecond) // the worker subscribes and goes idle

	var worst time.Duration
	for i := 0; i < 20; i++ {
		enqueue(t, producer, testJob(fmt.Sprintf("now-%d", i)))
		done := time.Now()
		select {
		case at := <-started:
			if d := at.Sub(done); d > worst {
				worst = d
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("job %d did not start within 5 s of its enqueue: no wake-up", i)
		}
	}
	if worst > 200*time.Millisecond {
		t.Errorf("the slowest start came %v after its enqueue returned; want a few ms", worst)
	}

	j := testJob("later")
	j.RunAt = time.Now().Add(300 * time.Millisecond)
	enqueue(t, producer, j)
	select {
	case at := <-started:
		if early := j.RunAt.Sub(at); early > 5*time.Millisecond {
			t.Errorf("the scheduled job started %v before it was due", early)
		}
		if late := at.Sub(j.RunAt); late > 200*time.Millisecond {
			t.Errorf("the scheduled job started %v after it was due; want the timer to wake the worker", late)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the scheduled job did not start: no timer for the next scheduled job")
	}
}

func TestOperations(t *testing.T) { testOperations(t, redistest.Standalone(t)) }

// counts is what Stats counts, without the clock and the pauses.
func counts(st mailqueue.Stats) mailqueue.Stats {
	return mailqueue.Stats{Queued: st.Queued, Due: st.Due, Running: st.Running, Accepted: st.Accepted, Failed: st.Failed, DeliveryUnknown: st.DeliveryUnknown}
}

// wantCounts fails the test when the source's counts are not want.
func wantCounts(t *testing.T, s *Source, what string, want mailqueue.Stats) {
	t.Helper()
	st, err := s.Stats(ctx)
	if err != nil {
		t.Fatalf("Stats %s: %v", what, err)
	}
	if diff := cmp.Diff(want, counts(st)); diff != "" {
		t.Errorf("Stats %s (-want +got):\n%s", what, diff)
	}
}

// testOperations: jobs by state, counts, the failed jobs, a retry by hand
// and a purge; RetainData drops the message and keeps v and hash.
func testOperations(t *testing.T, c goredis.UniversalClient) {
	s := newSource(t, c, Options{})
	a, b, d, later := testJob("a"), testJob("b"), testJob("d"), testJob("later")
	later.RunAt = time.Now().Add(time.Hour)
	enqueue(t, s, a, b, d, later)
	wantCounts(t, s, "after the enqueue", mailqueue.Stats{Queued: 4, Due: 3})
	ls := reserve(t, s, 3)
	if len(ls) != 3 {
		t.Fatalf("leased %d", len(ls))
	}
	byID := map[string]*mailqueue.Lease{}
	for _, l := range ls {
		byID[l.ID] = l
	}
	mustOK := func(ok bool, err error) {
		t.Helper()
		if err != nil || !ok {
			t.Fatalf("settle: %t, %v", ok, err)
		}
	}
	mustOK(s.Ack(ctx, mailqueue.AckParams{ID: "a", Token: byID["a"].Token}))
	mustOK(s.Fail(ctx, mailqueue.FailParams{ID: "b", Token: byID["b"].Token, State: codes.StateFailed, Code: codes.QueueThrown, Reason: "boom"}))
	wantCounts(t, s, "after ack and fail", mailqueue.Stats{Queued: 1, Running: 1, Accepted: 1, Failed: 1})
	mustOK(s.Fail(ctx, mailqueue.FailParams{ID: "d", Token: byID["d"].Token, State: codes.StateDeliveryUnknown, Code: codes.DeliveryUnknown}))
	checkFinishedRows(t, c, s, a, b)
	checkRetryAndPurge(t, c, s, b)
}

// checkFinishedRows: under RetainData "failed", the accepted job dropped
// its message and kept v and hash; the failed one kept its message, code
// and reason; Failed lists b then d, Jobs(queued) the job scheduled later.
func checkFinishedRows(t *testing.T, c goredis.UniversalClient, s *Source, a, b mailqueue.NewJob) {
	t.Helper()
	ignoreTimes := cmpopts.IgnoreFields(mailqueue.JobRow{}, "EnqueuedAt", "RunAt", "FinishedAt", "LeaseUntil")
	ja, err := s.Get(ctx, "a")
	want := mailqueue.JobRow{ID: "a", Hash: "h-a", Version: 1, State: mailqueue.JobAccepted, Priority: jobv1.PriorityNormal, Attempt: 1, MaxAttempts: 5}
	if diff := cmp.Diff(want, ja, ignoreTimes); err != nil || diff != "" {
		t.Errorf("Get(a): %v (-want +got):\n%s", err, diff)
	}
	if res := enqueue(t, s, a); !res[0].Duplicate {
		t.Errorf("the accepted job enqueued again: %+v, want Duplicate", res[0])
	}
	jb, _ := s.Get(ctx, "b")
	want = mailqueue.JobRow{ID: "b", Hash: "h-b", Version: 1, State: mailqueue.JobFailed, Priority: jobv1.PriorityNormal, Attempt: 1, MaxAttempts: 5,
		Code: codes.QueueThrown, Reason: "boom", DataKept: true}
	if diff := cmp.Diff(want, jb, ignoreTimes); diff != "" || string(dataOf(t, s, "b")) != string(b.Data) {
		t.Errorf("Get(b) (-want +got):\n%s\ndata %s", diff, dataOf(t, s, "b"))
	}
	if ttl := c.PTTL(ctx, s.pfx+"job:a").Val(); ttl <= 0 || ttl > mailqueue.DefaultDedupeWindow {
		t.Errorf("the accepted job's key expires in %v, want within the dedupe window", ttl)
	}
	failed, err := s.Failed(ctx, 10)
	if err != nil || len(failed) != 2 || failed[0].ID != "b" || failed[1].ID != "d" {
		t.Fatalf("Failed = %+v, %v; want b then d", failed, err)
	}
	queued, _ := jobsAt(s, mailqueue.JobQueued, 0, 10)
	if len(queued) != 1 || queued[0].ID != "later" {
		t.Errorf("Jobs(queued) = %+v", queued)
	}
}

// checkRetryAndPurge: RetryFailed refuses an accepted job and no job,
// queues b again with its data and no expiry; Purge forgets d alone.
func checkRetryAndPurge(t *testing.T, c goredis.UniversalClient, s *Source, b mailqueue.NewJob) {
	t.Helper()
	if err := s.RetryFailed(ctx, "a"); !errors.Is(err, mailqueue.ErrNotFailed) {
		t.Errorf("RetryFailed of an accepted job: %v, want ErrNotFailed", err)
	}
	if err := s.RetryFailed(ctx, "nope"); !errors.Is(err, mailqueue.ErrNotFound) {
		t.Errorf("RetryFailed of no job: %v, want ErrNotFound", err)
	}
	if err := s.RetryFailed(ctx, "b"); err != nil {
		t.Fatalf("RetryFailed(b): %v", err)
	}
	l := reserve(t, s, 10)
	if len(l) != 1 || l[0].ID != "b" || l[0].Attempt != 1 || string(l[0].Data) != string(b.Data) {
		t.Fatalf("after RetryFailed: leased %+v; want b, attempt 1, its data", l)
	}
	if ttl := c.PTTL(ctx, s.pfx+"job:b").Val(); ttl != -1*time.Nanosecond && ttl >= 0 {
		t.Errorf("a retried job still expires (%v)", ttl)
	}
	n, err := s.Purge(ctx, mailqueue.PurgeParams{State: mailqueue.JobDeliveryUnknown})
	if err != nil || n != 1 {
		t.Errorf("Purge(delivery_unknown) = %d, %v; want 1", n, err)
	}
	if _, err := s.Get(ctx, "d"); !errors.Is(err, mailqueue.ErrNotFound) {
		t.Error("the purged job is still there")
	}
	if n, _ := s.Purge(ctx, mailqueue.PurgeParams{State: mailqueue.JobAccepted, OlderThan: time.Hour}); n != 0 {
		t.Errorf("Purge(accepted older than an hour) forgot %d", n)
	}
	if _, err := s.Purge(ctx, mailqueue.PurgeParams{State: mailqueue.JobQueued}); err == nil {
		t.Error("Purge of queued jobs: no error")
	}
}

// TestRetainData: "all" keeps every message, "none" drops the failed
// ones too; both keep v and hash, so the id still dedupes.
func TestRetainData(t *testing.T) {
	c := redistest.Standalone(t)
	for _, rd := range []mailqueue.RetainData{mailqueue.RetainAllData, mailqueue.RetainNoData} {
		s := newSource(t, c, Options{RetainData: rd})
		enqueue(t, s, testJob("ok"), testJob("ko"))
		for _, l := range reserve(t, s, 2) {
			if l.ID == "ok" {
				_, _ = s.Ack(ctx, mailqueue.AckParams{ID: l.ID, Token: l.Token})
			} else {
				_, _ = s.Fail(ctx, mailqueue.FailParams{ID: l.ID, Token: l.Token, State: codes.StateFailed, Code: codes.QueueThrown})
			}
		}
		for _, id := range []string{"ok", "ko"} {
			j, _ := s.Get(ctx, id)
			if kept := j.DataKept; kept != (rd == mailqueue.RetainAllData) {
				t.Errorf("RetainData %s: job %s kept its data: %t", rd, id, kept)
			}
			if j.Version != 1 || j.Hash != "h-"+id {
				t.Errorf("RetainData %s: job %s kept v %d and hash %q", rd, id, j.Version, j.Hash)
			}
		}
		if err := s.RetryFailed(ctx, "ko"); rd == mailqueue.RetainNoData && !errors.Is(err, mailqueue.ErrNoData) {
			t.Errorf("RetryFailed of a job without data: %v, want ErrNoData", err)
		}
		if res := enqueue(t, s, testJob("ok"), testJob("ko")); !res[0].Duplicate || rd == mailqueue.RetainNoData && !res[1].Duplicate {
			t.Errorf("RetainData %s: enqueue again = %+v, want duplicates", rd, res)
		}
	}
}

// TestRetentionOnServerClock: the dedupe window and RetainFailed, short,
// on the server's own clock.
func TestRetentionOnServerClock(t *testing.T) {
	c := redistest.Standalone(t)
	s := newSource(t, c, Options{DedupeWindow: 300 * time.Millisecond, RetainFailed: 600 * time.Millisecond})
	enqueue(t, s, testJob("done"), testJob("failed"))
	for _, l := range reserve(t, s, 2) {
		if l.ID == "done" {
			_, _ = s.Ack(ctx, mailqueue.AckParams{ID: l.ID, Token: l.Token})
		} else {
			_, _ = s.Fail(ctx, mailqueue.FailParams{ID: l.ID, Token: l.Token, State: codes.StateFailed, Code: codes.QueueThrown})
		}
	}
	if res := enqueue(t, s, testJob("done"), testJob("failed")); !res[0].Duplicate || !res[1].Duplicate {
		t.Fatalf("within the windows: %+v, want duplicates", res)
	}
	time.Sleep(350 * time.Millisecond)
	if res := enqueue(t, s, testJob("done"), testJob("failed")); res[0].Duplicate || !res[1].Duplicate {
		t.Fatalf("after the dedupe window: %+v, want done new and failed a duplicate", res)
	}
	time.Sleep(300 * time.Millisecond)
	if res := enqueue(t, s, testJob("failed")); res[0].Duplicate {
		t.Fatalf("after RetainFailed: %+v, want a new job", res)
	}
	if st, _ := s.Stats(ctx); st.Accepted != 0 || st.Failed != 0 || st.Queued != 2 {
		t.Errorf("Stats = %+v; want the two jobs queued again, none finished", st)
	}
}

// TestLostLease: a lease whose entry or job vanished is lost: Extend and
// the settles answer false, and a run through the polling driver is
// cancelled with ErrLeaseLost instead of going on.
func TestLostLease(t *testing.T) {
	c := redistest.Standalone(t)
	s := newSource(t, c, Options{})
	enqueue(t, s, testJob("gone-lease"), testJob("gone-job"))
	ls := reserve(t, s, 2)
	if len(ls) != 2 {
		t.Fatalf("leased %d", len(ls))
	}
	c.ZRem(ctx, s.pfx+"leased", "gone-lease")
	c.Del(ctx, s.pfx+"job:gone-job")
	for _, l := range ls {
		ok, err := s.Extend(ctx, mailqueue.ExtendParams{ID: l.ID, Token: l.Token, Duration: time.Minute})
		if err != nil || ok {
			t.Errorf("Extend of %s = %t, %v; want false", l.ID, ok, err)
		}
		ok, err = s.Ack(ctx, mailqueue.AckParams{ID: l.ID, Token: l.Token})
		if err != nil || ok {
			t.Errorf("Ack of %s = %t, %v; want false", l.ID, ok, err)
		}
	}

	prefix := redistest.Prefix(t)
	q, err := Open(ctx, Options{Client: c, Prefix: prefix, LeaseDuration: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = q.Source().Obliterate(ctx) })
	cause := make(chan error, 1)
	r, err := q.Work(mailqueue.HandlerFunc(func(ctx context.Context, l *mailqueue.Lease) mailqueue.Outcome {
		c.ZRem(context.Background(), q.Source().pfx+"leased", l.ID)
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return mailqueue.Outcome{Action: mailqueue.Ack}
	}), mailqueue.WorkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close(ctx) }()
	if _, err := q.Enqueue(ctx, []mailqueue.NewJob{testJob("run")}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-cause:
		if !errors.Is(err, mailqueue.ErrLeaseLost) {
			t.Errorf("the run was cancelled with %v, want ErrLeaseLost", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the run went on with a lease that vanished")
	}
}

// TestFairness: a high job of any tenant first, then the tenants in turn,
// a job each, the jobs of no tenant as one more.
func TestFairness(t *testing.T) {
	c := redistest.Standalone(t)
	s := newSource(t, c, Options{Fairness: mailqueue.FairnessTenant})
	var jobs []mailqueue.NewJob
	add := func(id, tenant string, p jobv1.Priority) {
		j := testJob(id)
		j.TenantID, j.Priority = tenant, p
		j.RunAt = j.RunAt.Add(time.Duration(len(jobs)) * time.Millisecond)
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
	enqueue(t, s, jobs...)
	time.Sleep(15 * time.Millisecond)
	got := leaseIDs(reserve(t, s, 3)) + "," + leaseIDs(reserve(t, s, 20))
	if want := "c-high,a1,b1,n1,a2,b2,a3,a4,a-low"; got != want {
		t.Errorf("leased %s, want %s", got, want)
	}

	if _, err := OpenSource(ctx, Options{Client: c, Prefix: s.opts.Prefix}); !errors.Is(err, ErrFairnessMismatch) {
		t.Errorf("Open with another fairness: %v, want ErrFairnessMismatch", err)
	}
}

// TestBatchEnqueue: a batch larger than a script's chunk goes in one
// pipeline, its results in order, duplicates and conflicts told.
func TestBatchEnqueue(t *testing.T) {
	c := redistest.Standalone(t)
	s := newSource(t, c, Options{})
	var jobs []mailqueue.NewJob
	for i := 0; i < 300; i++ {
		jobs = append(jobs, testJob(fmt.Sprintf("j%03d", i)))
	}
	enqueue(t, s, jobs[:10]...)
	conflict := jobs[5]
	conflict.Hash = "other"
	jobs = append(jobs, conflict)
	res := enqueue(t, s, jobs...)
	for i, r := range res {
		wantDup := i < 10
		wantConflict := i == len(jobs)-1
		if r.ID != jobs[i].ID || r.Duplicate != (wantDup && !wantConflict) || r.Conflict != wantConflict {
			t.Fatalf("result %d = %+v", i, r)
		}
	}
	if st, _ := s.Stats(ctx); st.Queued != 300 {
		t.Errorf("%d queued, want 300", st.Queued)
	}
}

// TestServerChecks runs on a server of its own: Open refuses a server that
// may evict keys, or whose policy it cannot read, unless told to warn; and
// the scripts are loaded again after the server lost them.
func TestServerChecks(t *testing.T) {
	lru := redistest.StartServer(t, "--maxmemory-policy", "allkeys-lru")
	if _, err := OpenSource(ctx, Options{Client: lru}); !errors.Is(err, ErrEvictionPolicy) {
		t.Errorf("Open on allkeys-lru: %v, want ErrEvictionPolicy", err)
	}
	var logs bytes.Buffer
	var mu sync.Mutex
	log := slog.New(codetest.Wrap(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil)))
	if _, err := OpenSource(ctx, Options{Client: lru, EvictionPolicyWarnOnly: true, Logger: log}); err != nil {
		t.Errorf("Open on allkeys-lru, warn only: %v", err)
	}
	mu.Lock()
	if !strings.Contains(logs.String(), "level=WARN msg="+string(codes.QueueStoreUnsafe)+" ") {
		t.Errorf("no warning logged: %s", logs.String())
	}
	mu.Unlock()

	hidden := redistest.StartServer(t, "--rename-command", "CONFIG", "")
	if _, err := OpenSource(ctx, Options{Client: hidden}); !errors.Is(err, ErrEvictionPolicy) {
		t.Errorf("Open where CONFIG is hidden: %v, want ErrEvictionPolicy", err)
	}
	s, err := OpenSource(ctx, Options{Client: hidden, EvictionPolicyWarnOnly: true, Logger: log})
	if err != nil {
		t.Fatalf("Open where CONFIG is hidden, warn only: %v", err)
	}
	if err := hidden.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	var jobs []mailqueue.NewJob
	for i := 0; i < 100; i++ {
		jobs = append(jobs, testJob(fmt.Sprintf("j%d", i)))
	}
	if res := enqueue(t, s, jobs...); len(res) != 100 || res[0].Duplicate {
		t.Fatalf("the pipelined enqueue after SCRIPT FLUSH: %+v", res[:1])
	}
	hidden.ScriptFlush(ctx)
	if ls := reserve(t, s, 100); len(ls) != 100 {
		t.Errorf("Reserve after SCRIPT FLUSH leased %d", len(ls))
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestPauseThroughTheDriver: a queue paused by a worker's rate limit takes
// nothing; Resume wakes the idle worker at once.
func TestPauseThroughTheDriver(t *testing.T) {
	c := redistest.Standalone(t)
	q, err := Open(ctx, Options{Client: c, Prefix: redistest.Prefix(t), PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = q.Source().Obliterate(ctx) })
	if !q.CanPause() {
		t.Fatal("the Redis queue cannot pause")
	}
	if err := q.Pause(ctx, mailqueue.Pause{For: time.Hour}); err != nil {
		t.Fatal(err)
	}
	started := make(chan string, 1)
	r, err := q.Work(mailqueue.HandlerFunc(func(ctx context.Context, l *mailqueue.Lease) mailqueue.Outcome {
		started <- l.ID
		return mailqueue.Outcome{Action: mailqueue.Ack}
	}), mailqueue.WorkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close(ctx) }()
	if _, err := q.Enqueue(ctx, []mailqueue.NewJob{testJob("p")}); err != nil {
		t.Fatal(err)
	}
	select {
	case id := <-started:
		t.Fatalf("%s started while the queue was paused", id)
	case <-time.After(200 * time.Millisecond):
	}
	if st, _ := q.Stats(ctx); !st.Paused {
		t.Errorf("Stats.Paused = false while paused")
	}
	if err := q.Resume(ctx, mailqueue.ResumeParams{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(2 * time.Second):
		t.Fatal("Resume did not wake the worker")
	}
}
