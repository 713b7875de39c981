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

// TestOperationsOnAnyStore runs the operations on a memory queue: they
// reach the store through mailqueue.Operator alone, so what holds here
// holds for every store mailq opens.
func TestOperationsOnAnyStore(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	fc := clock.NewFake(t0)
	q, err := memory.New(memory.Options{Clock: fc})
	if err != nil {
		t.Fatal(err)
	}
	src := q.Source()
	var jobs []mailqueue.NewJob
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
	for _, l := range ls {
		if l.ID == "job-1" {
			_, _ = src.Fail(ctx, mailqueue.FailParams{ID: l.ID, Token: l.Token, State: codes.StateFailed, Code: codes.QueueAttemptsExhausted, Reason: "451 try later"})
		} else {
			_, _ = src.Ack(ctx, mailqueue.AckParams{ID: l.ID, Token: l.Token})
		}
	}
	fc.Advance(90 * time.Second)
	if err := q.Pause(ctx, mailqueue.Pause{Tenant: true, TenantID: "acme", For: time.Hour}); err != nil {
		t.Fatal(err)
	}
	st := &store{op: q, name: "memory", close: func() {}}
	op := func(name string, o opArgs) (string, string, int) {
		var out, errOut bytes.Buffer
		code := runOp(ctx, name, st, o, &out, &errOut)
		return out.String(), errOut.String(), code
	}

	out, errOut, code := op("stats", opArgs{})
	for _, want := range []string{
		"queue             memory\n",
		"queued            1  (1 due)\n",
		"accepted          1\n",
		"failed            1\n",
		"oldest_due        1m30s\n",
		"paused            false\n",
		`paused_tenant     "acme"  (until 2026-12-01T10:01:30Z)` + "\n",
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("stats = %d, lacks %q:\n%s%s", code, want, out, errOut)
		}
	}
	out, errOut, code = op("failed", opArgs{limit: 10})
	if code != 0 || !strings.Contains(out, "job-1") || !strings.Contains(out, string(codes.QueueAttemptsExhausted)) || !strings.Contains(out, "1/5") || !strings.Contains(out, "kept") || strings.Contains(out, "job-2") {
		t.Errorf("failed = %d:\n%s%s", code, out, errOut)
	}
	out, errOut, code = op("retry", opArgs{ids: []string{"job-1", "job-2", "nope"}})
	if code != 1 || !strings.Contains(out, "job-1 queued again") || !strings.Contains(errOut, "not failed") || !strings.Contains(errOut, "no such job") {
		t.Errorf("retry = %d:\n%s%s; want job-1 queued again, job-2 not failed, nope not found", code, out, errOut)
	}
	if j, err := q.Get(ctx, "job-1"); err != nil || j.State != mailqueue.JobQueued || j.Attempt != 0 {
		t.Errorf("after retry: %+v, %v; want job-1 queued, no attempt spent", j, err)
	}
	if out, errOut, code := op("purge", opArgs{state: mailqueue.JobAccepted, olderThan: time.Hour}); code != 0 || !strings.Contains(out, "0 accepted jobs forgotten") {
		t.Errorf("purge older than an hour = %d:\n%s%s", code, out, errOut)
	}
	if out, errOut, code := op("purge", opArgs{state: mailqueue.JobAccepted}); code != 0 || !strings.Contains(out, "1 accepted jobs forgotten") {
		t.Errorf("purge = %d:\n%s%s", code, out, errOut)
	}
	if out, errOut, code := op("purge", opArgs{state: mailqueue.JobQueued}); code != 1 {
		t.Errorf("purge of queued jobs = %d, want 1:\n%s%s", code, out, errOut)
	}
}

// TestOperationsNeedAStore: without a flag naming a store, or with a
// malformed one, the commands are a mistake of usage (exit status 2).
func TestOperationsNeedAStore(t *testing.T) {
	for _, args := range [][]string{
		{"stats"},
		{"failed", "--limit", "3"},
		{"retry", "--redis", "redis://127.0.0.1:6379/0"},
		{"purge", "--redis", "redis://127.0.0.1:6379/nodb", "--state", "failed"},
	} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), args, nil, &out, &errOut); code != 2 {
			t.Errorf("mailq %v = %d, want 2:\n%s%s", args, code, out.String(), errOut.String())
		}
	}
}
