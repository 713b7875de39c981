package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	redisdriver "github.com/alexify/mailer/drivers/redis"
	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/mailqueue"
)

// redisQueue opens a source of opts on the standalone Redis
// (MAILER_REDIS_ADDR, 127.0.0.1:6379 by default) under a prefix of its
// own, and deletes its keys when the test ends. It skips the test when
// the server cannot be had, unless MAILER_REQUIRE_REDIS is set.
func redisQueue(t *testing.T, opts redisdriver.Options) (*goredis.Client, *redisdriver.Source, string) {
	t.Helper()
	ctx := context.Background()
	addr := os.Getenv("MAILER_REDIS_ADDR")
	if addr == "" {
		addr = "127.0.0.1:6379"
	}
	c := goredis.NewClient(&goredis.Options{Addr: addr})
	// Closed after the cleanup below deletes the queue's keys.
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Ping(ctx).Err(); err != nil {
		if os.Getenv("MAILER_REQUIRE_REDIS") != "" {
			t.Fatalf("Redis at %s is required (MAILER_REQUIRE_REDIS): %v", addr, err)
		}
		t.Skipf("SKIPPED: Redis at %s cannot be had (%v); set MAILER_REQUIRE_REDIS=1 to make this a failure", addr, err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	opts.Client, opts.Prefix = c, "mailertest-"+hex.EncodeToString(b[:])
	src, err := redisdriver.OpenSource(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := src.Obliterate(context.Background()); err != nil {
			t.Errorf("Obliterate: %v", err)
		}
	})
	return c, src, opts.Prefix
}

// TestRedisOperations runs stats, failed, retry and purge on a queue of
// the standalone Redis, under a prefix of its own.
func TestRedisOperations(t *testing.T) {
	ctx := context.Background()
	c, src, prefix := redisQueue(t, redisdriver.Options{})
	addr := c.Options().Addr
	now := time.Now()
	if _, err := src.Enqueue(ctx, []mailqueue.NewJob{
		{ID: "job-1", Hash: "h1", Data: []byte(`{"v":1}`), RunAt: now, EnqueuedAt: now, MaxAttempts: 5},
		{ID: "job-2", Hash: "h2", Data: []byte(`{"v":1}`), RunAt: now, EnqueuedAt: now, MaxAttempts: 5},
	}); err != nil {
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
	url := "redis://" + addr + "/0"
	mailq := func(args ...string) (string, int) {
		var out, errOut bytes.Buffer
		code := run(ctx, append(args, "--redis", url, "--prefix", prefix), nil, &out, &errOut)
		return out.String() + errOut.String(), code
	}
	if out, code := mailq("stats"); code != 0 || !strings.Contains(out, "accepted          1") || !strings.Contains(out, "failed            1") {
		t.Errorf("mailq stats = %d:\n%s", code, out)
	}
	if out, code := mailq("failed"); code != 0 || !strings.Contains(out, "job-1") || !strings.Contains(out, string(codes.QueueAttemptsExhausted)) || strings.Contains(out, "job-2") {
		t.Errorf("mailq failed = %d:\n%s", code, out)
	}
	var out bytes.Buffer
	if code := run(ctx, []string{"retry", "--redis", url, "--prefix", prefix, "job-1"}, nil, &out, &out); code != 0 || !strings.Contains(out.String(), "job-1 queued again") {
		t.Errorf("mailq retry = %d:\n%s", code, out.String())
	}
	out.Reset()
	if code := run(ctx, []string{"retry", "--redis", url, "--prefix", prefix, "job-2"}, nil, &out, &out); code != 1 || !strings.Contains(out.String(), "not failed") {
		t.Errorf("mailq retry of an accepted job = %d:\n%s", code, out.String())
	}
	if st, _ := src.Stats(ctx); st.Queued != 1 || st.Failed != 0 {
		t.Errorf("after mailq retry: %+v, want job-1 queued", st)
	}
	if out, code := mailq("purge", "--state", "accepted"); code != 2 || !strings.Contains(out, "--older-than is required") {
		t.Errorf("mailq purge without --older-than = %d:\n%s; want a mistake of usage", code, out)
	}
	if out, code := mailq("purge", "--state", "accepted", "--older-than", "0s"); code != 1 || !strings.Contains(out, "1 accepted jobs finished before") || !strings.Contains(out, "nothing purged") {
		t.Errorf("mailq purge without --yes and no answer = %d:\n%s; want told, asked, nothing purged", code, out)
	}
	if out, code := mailq("purge", "--state", "accepted", "--older-than", "0s", "--yes"); code != 0 || !strings.Contains(out, "1 accepted jobs purged") {
		t.Errorf("mailq purge --yes = %d:\n%s", code, out)
	}
	if res, err := src.Enqueue(ctx, []mailqueue.NewJob{{ID: "job-2", Hash: "h2", Data: []byte(`{"v":1}`), RunAt: now, EnqueuedAt: now, MaxAttempts: 5}}); err != nil || !res[0].Duplicate {
		t.Errorf("job-2 enqueued again after mailq purge: %+v, %v; want Duplicate", res, err)
	}
	if out, code := mailq("purge", "--state", "queued", "--older-than", "0s"); code != 1 {
		t.Errorf("mailq purge of queued jobs = %d, want 1:\n%s", code, out)
	}
}

// TestRedisRetryResend: mailq retry --resend clears the job's entry in the
// workers' Redis IdempotencyStore (--idempotency-prefix) and queues it
// again; mailq retry alone leaves the entry.
func TestRedisRetryResend(t *testing.T) {
	ctx := context.Background()
	c, src, prefix := redisQueue(t, redisdriver.Options{})
	idemPrefix := prefix + "-idem"
	idem := redisdriver.NewIdempotencyStore(c, idemPrefix)
	t.Cleanup(func() { _ = idem.Forget(ctx, "job-1") })
	now := time.Now()
	if _, err := src.Enqueue(ctx, []mailqueue.NewJob{{ID: "job-1", Hash: "h1", Data: []byte(`{"v":1}`), RunAt: now, EnqueuedAt: now, MaxAttempts: 5}}); err != nil {
		t.Fatal(err)
	}
	unknown := func() {
		t.Helper()
		ls, err := src.Reserve(ctx, mailqueue.ReserveParams{Limit: 1, LeaseDuration: time.Minute})
		if err != nil || len(ls) != 1 {
			t.Fatalf("Reserve: %d, %v", len(ls), err)
		}
		_, _ = src.Fail(ctx, mailqueue.FailParams{ID: ls[0].ID, Token: ls[0].Token, State: codes.StateDeliveryUnknown, Code: codes.DeliveryUnknown})
	}
	unknown()
	if _, err := idem.Reserve(ctx, "job-1", "run-1", time.Hour); err != nil {
		t.Fatal(err)
	}
	mailq := mailqOn(c)
	if out, errOut, code := mailq(prefix, "retry", "--idempotency-prefix", idemPrefix, "job-1"); code != 0 || strings.Contains(out, "cleared") {
		t.Fatalf("mailq retry = %d:\n%s%s", code, out, errOut)
	}
	if e, _ := idem.Reserve(ctx, "job-1", "run-2", time.Hour); e == nil {
		t.Fatal("mailq retry cleared the job's idempotency entry")
	}
	unknown()
	// A prefix that is not the workers': nothing cleared, nothing queued.
	if out, errOut, code := mailq(prefix, "retry", "--resend", "--idempotency-prefix", prefix+"-other", "job-1"); code != 1 || !strings.Contains(errOut, "no idempotency entry") {
		t.Fatalf("mailq retry --resend under another prefix = %d, want 1 and the reason:\n%s%s", code, out, errOut)
	}
	if j, err := src.Get(ctx, "job-1"); err != nil || j.State != mailqueue.JobDeliveryUnknown {
		t.Fatalf("after a resend under another prefix: %+v, %v; want delivery_unknown still", j, err)
	}
	out, errOut, code := mailq(prefix, "retry", "--resend", "--idempotency-prefix", idemPrefix, "job-1")
	if code != 0 || !strings.Contains(out, "job-1 queued again, its idempotency key cleared") || !strings.Contains(out, "twice") {
		t.Fatalf("mailq retry --resend = %d:\n%s%s", code, out, errOut)
	}
	if e, err := idem.Reserve(ctx, "job-1", "run-3", time.Hour); e != nil || err != nil {
		t.Errorf("after mailq retry --resend the job's key holds %+v, %v; want nothing", e, err)
	}
	if j, err := src.Get(ctx, "job-1"); err != nil || j.State != mailqueue.JobQueued {
		t.Errorf("after mailq retry --resend: %+v, %v; want queued", j, err)
	}
}

// mailqOn returns a function that runs mailq on the queue of a prefix on
// the Redis of c, and returns its stdout, its stderr and its exit status.
func mailqOn(c *goredis.Client) func(prefix string, args ...string) (string, string, int) {
	url := "redis://" + c.Options().Addr + "/0"
	return func(prefix string, args ...string) (string, string, int) {
		var out, errOut bytes.Buffer
		code := run(context.Background(), append([]string{args[0], "--redis", url, "--prefix", prefix}, args[1:]...), nil, &out, &errOut)
		return out.String(), errOut.String(), code
	}
}

// TestRedisOperationsOnNoQueue: the operations on a queue that does not
// exist answer zeros and errors of the store, not of usage, and make no
// key.
func TestRedisOperationsOnNoQueue(t *testing.T) {
	c, _, prefix := redisQueue(t, redisdriver.Options{})
	mailq := mailqOn(c)
	none := prefix + "-none"
	out, errOut, code := mailq(none, "stats")
	if code != 0 || !strings.Contains(out, "accepted          0") || !strings.HasSuffix(out, "false\n") {
		t.Errorf("mailq stats of no queue = %d:\n%q\n%s", code, out, errOut)
	}
	for _, cmd := range [][]string{{"failed"}, {"retry", "nope"}, {"purge", "--state", "failed", "--older-than", "0s"}} {
		if out, errOut, code := mailq(none, cmd...); code == 2 {
			t.Errorf("mailq %v on no queue = %d:\n%s%s", cmd, code, out, errOut)
		}
	}
	if keys := c.Keys(context.Background(), "{"+none+":*").Val(); len(keys) != 0 {
		t.Errorf("mailq on a queue that does not exist made %v", keys)
	}
}

// TestRedisOperationsTakeTheQueuesRetention: mailq counts and lists the
// finished jobs by the retention the queue was opened with, not by its
// own defaults; its stats end with a newline.
func TestRedisOperationsTakeTheQueuesRetention(t *testing.T) {
	ctx := context.Background()
	c, src, prefix := redisQueue(t, redisdriver.Options{DedupeWindow: 300 * time.Millisecond, RetainFailed: time.Minute})
	mailq := mailqOn(c)

	now := time.Now()
	jobs := make([]mailqueue.NewJob, 0, 4)
	for _, id := range []string{"ok-1", "ok-2", "ok-3", "ko"} {
		jobs = append(jobs, mailqueue.NewJob{ID: id, Hash: "h-" + id, Data: []byte(`{"v":1}`), RunAt: now, EnqueuedAt: now, MaxAttempts: 5})
	}
	if _, err := src.Enqueue(ctx, jobs); err != nil {
		t.Fatal(err)
	}
	ls, err := src.Reserve(ctx, mailqueue.ReserveParams{Limit: 4, LeaseDuration: time.Minute})
	if err != nil || len(ls) != 4 {
		t.Fatalf("Reserve: %d, %v", len(ls), err)
	}
	for _, l := range ls {
		if l.ID == "ko" {
			_, _ = src.Fail(ctx, mailqueue.FailParams{ID: l.ID, Token: l.Token, State: codes.StateFailed, Code: codes.QueueThrown})
		} else {
			_, _ = src.Ack(ctx, mailqueue.AckParams{ID: l.ID, Token: l.Token})
		}
	}
	if out, errOut, code := mailq(prefix, "stats"); code != 0 || !strings.Contains(out, "accepted          3\n") || !strings.Contains(out, "failed            1\n") {
		t.Errorf("mailq stats = %d:\n%s%s", code, out, errOut)
	}
	time.Sleep(400 * time.Millisecond) // past the queue's dedupe window, within mailq's default day
	out, errOut, code := mailq(prefix, "stats")
	if code != 0 || !strings.Contains(out, "accepted          0\n") || !strings.Contains(out, "failed            1\n") {
		t.Errorf("mailq stats past the queue's dedupe window = %d:\n%s%s; want no accepted job kept", code, out, errOut)
	}
	if !strings.HasSuffix(out, "\n") {
		t.Errorf("mailq stats does not end with a newline: %q", out)
	}
	if out, errOut, code := mailq(prefix, "failed"); code != 0 || !strings.Contains(out, "ko") {
		t.Errorf("mailq failed = %d:\n%s%s", code, out, errOut)
	}
	if out, errOut, code := mailq(prefix, "retry", "ko"); code != 0 || !strings.Contains(out, "ko queued again") {
		t.Errorf("mailq retry = %d:\n%s%s", code, out, errOut)
	}
	if meta := c.HGetAll(ctx, "{"+prefix+":mail}:meta").Val(); meta["dedupe"] != "300" || meta["retainf"] != "60000" {
		t.Errorf("after mailq, meta = %v; want the queue's retention kept", meta)
	}
}
