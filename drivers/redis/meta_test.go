package redis

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	goredis "github.com/redis/go-redis/v9"

	"github.com/alexify/mailer/drivers/redis/internal/redistest"
	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/mailqueue"
)

// queueKeys returns the keys of the queue of s that exist.
func queueKeys(t *testing.T, c goredis.UniversalClient, s *Source) []string {
	t.Helper()
	keys, err := c.Keys(ctx, globEscape(s.pfx)+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// TestRetentionIsTheQueues: the retention is stored in the queue's meta
// key by the Open that sets it; a zero field takes the queue's, a set one
// that differs is refused, and an operator's source (UseStored) counts and
// lists the finished jobs by the queue's retention, not by its own
// defaults.
func TestRetentionIsTheQueues(t *testing.T) {
	c := redistest.Standalone(t)
	producer, worker := checkRetentionStored(t, c, redistest.Prefix(t))
	checkScriptsTakeTheQueuesRetention(t, c, producer, worker)
}

// checkRetentionStored opens a producer that sets no retention, then a
// worker that sets it, on the queue of prefix; it checks that the worker's
// is stored, that a zero field takes the queue's and that another is
// refused, and returns the two sources.
func checkRetentionStored(t *testing.T, c goredis.UniversalClient, prefix string) (producer, worker *Source) {
	t.Helper()
	// A producer that sets nothing, opened first, pins nothing.
	producer = newSource(t, c, Options{Prefix: prefix})
	if producer.opts.DedupeWindow != mailqueue.DefaultDedupeWindow || producer.opts.RetainData != mailqueue.RetainFailedData {
		t.Errorf("a zero Options on a new queue: %+v, want the defaults", producer.opts)
	}
	if n := c.HLen(ctx, producer.keys[keyMeta]).Val(); n != 1 {
		t.Errorf("the meta key holds %d fields after an Open that set no retention, want fairness only", n)
	}
	worker = newSource(t, c, Options{Prefix: prefix, DedupeWindow: time.Hour, RetainFailed: 3 * time.Hour, RetainData: mailqueue.RetainAllData})
	meta := c.HGetAll(ctx, worker.keys[keyMeta]).Val()
	if meta["dedupe"] != "3600000" || meta["retainf"] != "10800000" || meta["retaindata"] != "all" || meta["fairness"] != "none" {
		t.Errorf("meta = %v, want the worker's retention", meta)
	}
	for name, o := range map[string]Options{
		"zero":      {Prefix: prefix},
		"the same":  {Prefix: prefix, DedupeWindow: time.Hour, RetainData: mailqueue.RetainAllData},
		"UseStored": {Prefix: prefix, UseStored: true, DedupeWindow: time.Minute, RetainData: mailqueue.RetainNoData, Fairness: mailqueue.FairnessTenant},
	} {
		s := newSource(t, c, o)
		if s.opts.DedupeWindow != time.Hour || s.opts.RetainFailed != 3*time.Hour || s.opts.RetainData != mailqueue.RetainAllData || s.opts.Fairness != mailqueue.FairnessNone {
			t.Errorf("Open with %s Options: %v %v %v %v, want the queue's", name, s.opts.DedupeWindow, s.opts.RetainFailed, s.opts.RetainData, s.opts.Fairness)
		}
	}
	for name, o := range map[string]Options{
		"DedupeWindow": {DedupeWindow: 2 * time.Hour},
		"RetainFailed": {RetainFailed: time.Minute},
		"RetainData":   {RetainData: mailqueue.RetainNoData},
	} {
		o.Client, o.Prefix = c, prefix
		if _, err := OpenSource(ctx, o); !errors.Is(err, ErrRetentionMismatch) {
			t.Errorf("Open with another %s: %v, want ErrRetentionMismatch", name, err)
		}
	}
	if _, err := OpenSource(ctx, Options{Client: c, Prefix: prefix, Fairness: mailqueue.FairnessTenant}); !errors.Is(err, ErrFairnessMismatch) {
		t.Errorf("Open with another fairness: %v, want ErrFairnessMismatch", err)
	}
	return producer, worker
}

// checkScriptsTakeTheQueuesRetention: the producer opened before the
// retention was stored, with the defaults; its scripts take the queue's
// all the same: RetainData "all" keeps the message, the dedupe window is
// an hour, RetainFailed three hours.
func checkScriptsTakeTheQueuesRetention(t *testing.T, c goredis.UniversalClient, producer, worker *Source) {
	t.Helper()
	enqueue(t, producer, testJob("ok"), testJob("ko"))
	for _, l := range reserve(t, producer, 2) {
		if l.ID == "ok" {
			_, _ = producer.Ack(ctx, mailqueue.AckParams{ID: l.ID, Token: l.Token})
		} else {
			_, _ = producer.Fail(ctx, mailqueue.FailParams{ID: l.ID, Token: l.Token, State: codes.StateFailed, Code: codes.QueueThrown})
		}
	}
	if j, _ := producer.Get(ctx, "ok"); j.State != mailqueue.JobAccepted || !j.DataKept {
		t.Errorf("Get(ok) = %+v; want accepted, its message kept (RetainData all)", j)
	}
	if ttl := c.PTTL(ctx, producer.pfx+"job:ok").Val(); ttl <= 0 || ttl > time.Hour {
		t.Errorf("the accepted job expires in %v, want within the queue's hour", ttl)
	}
	if st, err := worker.Stats(ctx); err != nil || st.Accepted != 1 || st.Failed != 1 {
		t.Errorf("Stats = %+v, %v; want 1 accepted, 1 failed", st, err)
	}
	// Two hours on (the producer's clock): past the queue's hour, within
	// the producer's own default day. The job is forgotten, and enqueued
	// anew.
	producer.advance(2 * time.Hour)
	if st, err := producer.Stats(ctx); err != nil || st.Accepted != 0 || st.Failed != 1 {
		t.Errorf("Stats two hours on = %+v, %v; want the accepted job gone (the queue's hour), the failed one kept", st, err)
	}
	if n := c.ZCard(ctx, producer.keys[keyDoneAccepted]).Val(); n != 0 {
		t.Errorf("Stats left %d stale entries in done:accepted", n)
	}
	if js, err := jobsAt(producer, mailqueue.JobAccepted, 0, 10); err != nil || len(js) != 0 {
		t.Errorf("Jobs(accepted) two hours on = %+v, %v; want none", js, err)
	}
	if res := enqueue(t, producer, testJob("ok")); res[0].Duplicate {
		t.Error("an enqueue past the queue's dedupe window is a duplicate: the producer used its own window")
	}
	producer.advance(2 * time.Hour)
	if failed, err := producer.Failed(ctx, 10); err != nil || len(failed) != 0 {
		t.Errorf("Failed four hours on = %+v, %v; want none (the queue's RetainFailed is 3 hours)", failed, err)
	}
	if st, _ := producer.Stats(ctx); st.Failed != 0 || st.Queued != 1 {
		t.Errorf("Stats four hours on = %+v; want no failed job, the new one queued", st)
	}
}

// TestDoneIndexOutlivesItsJobs: an entry of done:<state> that outlived
// its job's key (finish trims the index only now and then) is not
// counted, nor listed, on the server's own clock.
func TestDoneIndexOutlivesItsJobs(t *testing.T) {
	c := redistest.Standalone(t)
	s := newSource(t, c, Options{DedupeWindow: 200 * time.Millisecond})
	jobs := make([]mailqueue.NewJob, 0, 3)
	for _, id := range []string{"a", "b", "c"} {
		jobs = append(jobs, testJob(id))
	}
	enqueue(t, s, jobs...)
	for _, l := range reserve(t, s, 3) {
		if ok, err := s.Ack(ctx, mailqueue.AckParams{ID: l.ID, Token: l.Token}); !ok || err != nil {
			t.Fatalf("Ack(%s) = %t, %v", l.ID, ok, err)
		}
	}
	// Entries whose finish was long ago, as finish leaves them between
	// two trims.
	old := time.Now().Add(-time.Hour).UnixMilli()
	c.ZAdd(ctx, s.keys[keyDoneAccepted], goredis.Z{Score: float64(old), Member: "gone-1"}, goredis.Z{Score: float64(old), Member: "gone-2"})
	if st, _ := s.Stats(ctx); st.Accepted != 3 {
		t.Errorf("Stats = %+v, want 3 accepted", st)
	}
	if js, _ := jobsAt(s, mailqueue.JobAccepted, 0, 3); len(js) != 3 {
		t.Errorf("Jobs(accepted, 0, 3) = %d jobs, want 3 (the stale entries took the page)", len(js))
	}
	time.Sleep(300 * time.Millisecond)
	if st, _ := s.Stats(ctx); st.Accepted != 0 {
		t.Errorf("past the dedupe window: Stats = %+v, want none accepted", st)
	}
	if n := c.Exists(ctx, s.keys[keyDoneAccepted]).Val(); n != 0 {
		t.Errorf("done:accepted still holds %d entries", c.ZCard(ctx, s.keys[keyDoneAccepted]).Val())
	}
}

// TestUseStoredWritesNothing: an operator's source on a queue that does
// not exist takes the defaults, and neither Open nor the operations make
// a key.
func TestUseStoredWritesNothing(t *testing.T) {
	c := redistest.Standalone(t)
	s := newSource(t, c, Options{UseStored: true, DedupeWindow: time.Second, Fairness: mailqueue.FairnessTenant})
	if s.opts.DedupeWindow != mailqueue.DefaultDedupeWindow || s.opts.RetainFailed != mailqueue.DefaultRetainFailed || s.opts.RetainData != mailqueue.RetainFailedData || s.opts.Fairness != mailqueue.FairnessNone {
		t.Errorf("UseStored on no queue: %+v, want the defaults", s.opts)
	}
	if st, err := s.Stats(ctx); err != nil || !cmp.Equal(st, mailqueue.Stats{Now: st.Now}) {
		t.Errorf("Stats = %+v, %v; want nothing", st, err)
	}
	for _, st := range []mailqueue.JobState{mailqueue.JobQueued, mailqueue.JobRunning, mailqueue.JobAccepted, mailqueue.JobFailed, mailqueue.JobDeliveryUnknown} {
		if js, err := jobsAt(s, st, 0, 10); err != nil || len(js) != 0 {
			t.Errorf("Jobs(%s) = %+v, %v", st, js, err)
		}
	}
	if _, err := s.Failed(ctx, 10); err != nil {
		t.Error(err)
	}
	if err := s.RetryFailed(ctx, "nope"); !errors.Is(err, mailqueue.ErrNotFound) {
		t.Errorf("RetryFailed = %v, want ErrNotFound", err)
	}
	if n, err := s.Purge(ctx, mailqueue.PurgeParams{State: mailqueue.JobFailed}); err != nil || n != 0 {
		t.Errorf("Purge = %d, %v", n, err)
	}
	if keys := queueKeys(t, c, s); len(keys) != 0 {
		t.Errorf("an operator's look at no queue made the keys %v", keys)
	}
}
