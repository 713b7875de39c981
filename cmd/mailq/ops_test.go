package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/alexify/mailer/clock"
	"github.com/alexify/mailer/drivers/memory"
	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/mailqueue"
)

// memoryStore returns a memory queue as mailq's store, holding three
// jobs: job-1 failed, job-2 accepted, job-3 queued and due for 90
// seconds, and tenant acme paused for an hour.
func memoryStore(t *testing.T) (*memory.Queue, *store) {
	t.Helper()
	ctx := context.Background()
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	fc := clock.NewFake(t0)
	q, err := memory.New(memory.Options{Clock: fc})
	if err != nil {
		t.Fatal(err)
	}
	src := q.Source()
	jobs := make([]mailqueue.NewJob, 0, 3)
	for _, id := range []string{"job-1", "job-2", "job-3"} {
		jobs = append(jobs, mailqueue.NewJob{ID: id, Hash: "h-" + id, Data: []byte(`{"v":1}`), RunAt: t0, EnqueuedAt: t0, MaxAttempts: 5})
	}
	if _, err := src.Enqueue(ctx, jobs); err != nil {
		t.Fatal(err)
	}
	ls, err := src.Reserve(ctx, mailqueue.ReserveParams{Limit: 2, LeaseDuration: time.Minute})
	if err != nil || len(ls) != 2 {
		t.Fatalf("Reserve: %d, %v", len(ls), err)
	}
	_, _ = src.Fail(ctx, mailqueue.FailParams{ID: ls[0].ID, Token: ls[0].Token, State: codes.StateFailed, Code: codes.QueueAttemptsExhausted, Reason: "451 try later"})
	_, _ = src.Ack(ctx, mailqueue.AckParams{ID: ls[1].ID, Token: ls[1].Token})
	fc.Advance(90 * time.Second)
	if err := q.Pause(ctx, mailqueue.Pause{Tenant: true, TenantID: "acme", For: time.Hour}); err != nil {
		t.Fatal(err)
	}
	return q, &store{op: q, name: "memory", close: func() {}}
}

// op runs the operation name on st and returns its stdout, its stderr and
// its exit status.
func op(st *store, name string, o opArgs) (string, string, int) {
	var out, errOut bytes.Buffer
	code := runOp(context.Background(), name, st, o, &out, &errOut)
	return out.String(), errOut.String(), code
}

// TestOperationsOnAnyStore runs the operations on a memory queue: they
// reach the store through mailqueue.Operator alone, so what holds here
// holds for every store mailq opens.
func TestOperationsOnAnyStore(t *testing.T) {
	t.Parallel()
	t.Run("stats", testStatsOnAnyStore)
	t.Run("failed", testFailedOnAnyStore)
	t.Run("retry", testRetryOnAnyStore)
	t.Run("purge", testPurgeOnAnyStore)
	t.Run("resend", testResendOnAnyStore)
}

func testStatsOnAnyStore(t *testing.T) {
	_, st := memoryStore(t)
	out, errOut, code := op(st, "stats", opArgs{})
	if code != 0 {
		t.Fatalf("stats = %d:\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"queue             memory\n",
		"queued            1  (1 due)\n",
		"accepted          1\n",
		"failed            1\n",
		"oldest_due        1m30s\n",
		"paused            false\n",
		`paused_tenant     "acme"  (until 2026-12-01T10:01:30Z)` + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stats lacks %q:\n%s", want, out)
		}
	}
}

func testFailedOnAnyStore(t *testing.T) {
	_, st := memoryStore(t)
	out, errOut, code := op(st, "failed", opArgs{limit: 10})
	if code != 0 {
		t.Fatalf("failed = %d:\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"job-1", string(codes.QueueAttemptsExhausted), "1/5", "kept", "451 try later"} {
		if !strings.Contains(out, want) {
			t.Errorf("failed lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "job-2") {
		t.Errorf("failed lists the accepted job-2:\n%s", out)
	}
}

func testRetryOnAnyStore(t *testing.T) {
	q, st := memoryStore(t)
	out, errOut, code := op(st, "retry", opArgs{ids: []string{"job-1", "job-2", "nope"}})
	if code != 1 || !strings.Contains(out, "job-1 queued again") || !strings.Contains(errOut, "not failed") || !strings.Contains(errOut, "no such job") {
		t.Errorf("retry = %d:\n%s%s; want job-1 queued again, job-2 not failed, nope not found", code, out, errOut)
	}
	if j, err := q.Get(context.Background(), "job-1"); err != nil || j.State != mailqueue.JobQueued || j.Attempt != 0 {
		t.Errorf("after retry: %+v, %v; want job-1 queued, no attempt spent", j, err)
	}
}

// testPurgeOnAnyStore: purge says how many jobs it will drop and what
// that does, asks, and purges only when told yes (or --yes); a purged
// job enqueued again is still a duplicate, unless --forget-keys.
func testPurgeOnAnyStore(t *testing.T) {
	q, st := memoryStore(t)
	acc := mailqueue.JobAccepted
	tests := []struct {
		name     string
		o        opArgs
		wantCode int
		wantOut  []string
	}{
		{"none old enough", opArgs{state: acc, olderThan: time.Hour}, 0, []string{"nothing to purge"}},
		{"no answer", opArgs{state: acc}, 1, []string{"1 accepted jobs finished before 2026-12-01T09:01:30Z will be purged", "still a duplicate", "[y/N]"}},
		{"answered no", opArgs{state: acc, confirm: strings.NewReader("n\n")}, 1, []string{"[y/N]"}},
		{"not finished", opArgs{state: mailqueue.JobQueued, yes: true}, 1, nil},
		{"answered yes", opArgs{state: acc, confirm: strings.NewReader("yes\n")}, 0, []string{"1 accepted jobs purged"}},
		{"purged already", opArgs{state: acc, yes: true}, 0, []string{"nothing to purge"}},
	}
	for _, tc := range tests {
		out, errOut, code := op(st, "purge", tc.o)
		if code != tc.wantCode {
			t.Errorf("purge, %s = %d:\n%s%s; want %d", tc.name, code, out, errOut, tc.wantCode)
		}
		for _, w := range tc.wantOut {
			if !strings.Contains(out, w) {
				t.Errorf("purge, %s: the output lacks %q:\n%s%s", tc.name, w, out, errOut)
			}
		}
	}
	ctx := context.Background()
	again := mailqueue.NewJob{ID: "job-2", Hash: "h-job-2", Data: []byte(`{"v":1}`), RunAt: time.Now(), EnqueuedAt: time.Now(), MaxAttempts: 5}
	if res, err := q.Source().Enqueue(ctx, []mailqueue.NewJob{again}); err != nil || !res[0].Duplicate {
		t.Errorf("the purged job-2 enqueued again: %+v, %v; want Duplicate", res, err)
	}
	out, errOut, code := op(st, "purge", opArgs{state: mailqueue.JobFailed, forgetKeys: true, yes: true})
	if code != 0 || !strings.Contains(out, "SENT AGAIN") || !strings.Contains(out, "1 failed jobs purged") {
		t.Errorf("purge --forget-keys = %d:\n%s%s; want told of the risk, purged", code, out, errOut)
	}
	again.ID, again.Hash = "job-1", "h-job-1"
	if res, err := q.Source().Enqueue(ctx, []mailqueue.NewJob{again}); err != nil || res[0].Duplicate {
		t.Errorf("job-1 enqueued again after purge --forget-keys: %+v, %v; want stored again", res, err)
	}
}

// testResendOnAnyStore: retry --resend forgets the job's key through the
// store's idempotency store, then queues the job again, saying the
// recipient may get it twice; without an idempotency store it refuses.
func testResendOnAnyStore(t *testing.T) {
	q, st := memoryStore(t)
	out, errOut, code := op(st, "retry", opArgs{resend: true, ids: []string{"job-1"}})
	if code != 1 || !strings.Contains(errOut, "no idempotency store") {
		t.Errorf("retry --resend with no idempotency store = %d:\n%s%s; want refused", code, out, errOut)
	}
	var forgot []string
	st.forget = func(_ context.Context, key string) error { forgot = append(forgot, key); return nil }
	out, errOut, code = op(st, "retry", opArgs{resend: true, ids: []string{"job-1", "job-2"}})
	if code != 1 || !strings.Contains(out, "job-1 queued again, its idempotency key cleared") || !strings.Contains(out, "may get it twice") || !strings.Contains(errOut, "not failed") {
		t.Errorf("retry --resend = %d:\n%s%s; want job-1 resent, job-2 not failed", code, out, errOut)
	}
	if len(forgot) != 1 || forgot[0] != "job-1" {
		t.Errorf("retry --resend forgot %v, want [job-1]", forgot)
	}
	if j, err := q.Get(context.Background(), "job-1"); err != nil || j.State != mailqueue.JobQueued {
		t.Errorf("after retry --resend: %+v, %v; want job-1 queued", j, err)
	}
}

// TestOperationsNeedAStore: without a flag naming a store, or with a
// malformed one, the commands are a mistake of usage (exit status 2).
func TestOperationsNeedAStore(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"stats"},
		{"failed", "--limit", "3"},
		{"retry", "--redis", "redis://127.0.0.1:6379/0"},
		{"purge", "--redis", "redis://127.0.0.1:6379/nodb", "--state", "failed", "--older-than", "1h"},
		{"purge", "--redis", "redis://127.0.0.1:6379/0", "--state", "failed"},
	} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), args, nil, &out, &errOut); code != 2 {
			t.Errorf("mailq %v = %d, want 2:\n%s%s", args, code, out.String(), errOut.String())
		}
	}
}
