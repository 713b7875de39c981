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

// TestRedisOperations runs stats, failed, retry and purge on a queue of
// the standalone Redis, under a prefix of its own.
func TestRedisOperations(t *testing.T) {
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
	prefix := "mailertest-" + hex.EncodeToString(b[:])
	src, err := redisdriver.OpenSource(ctx, redisdriver.Options{Client: c, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := src.Obliterate(context.Background()); err != nil {
			t.Errorf("Obliterate: %v", err)
		}
	})
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
	if out, code := mailq("purge", "--state", "accepted"); code != 0 || !strings.Contains(out, "1 accepted jobs forgotten") {
		t.Errorf("mailq purge = %d:\n%s", code, out)
	}
	if out, code := mailq("purge", "--state", "queued"); code != 1 {
		t.Errorf("mailq purge of queued jobs = %d, want 1:\n%s", code, out)
	}
}
