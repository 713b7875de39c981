package redis

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alexify/mailer/clock"
	"github.com/alexify/mailer/drivers/redis/internal/redistest"
	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/internal/codetest"
)

// logRecorder keeps the records logged to it.
type logRecorder struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *logRecorder) WithGroup(string) slog.Handler            { return r }
func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	codetest.Observe(rec)
	r.mu.Lock()
	r.recs = append(r.recs, rec.Clone())
	r.mu.Unlock()
	return nil
}

// count returns how many records of msg were logged at lvl whose
// attributes hold text.
func (r *logRecorder) count(msg string, lvl slog.Level, text string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, rec := range r.recs {
		if rec.Message != msg || rec.Level != lvl {
			continue
		}
		var attrs strings.Builder
		rec.Attrs(func(a slog.Attr) bool { attrs.WriteString(a.String() + " "); return true })
		if strings.Contains(attrs.String(), text) {
			n++
		}
	}
	return n
}

// waitUntil waits until cond holds, failing the test after 5 seconds.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 5s: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestEvictionPolicyReadAgainWhileWorking: while a runner listens, the
// source reads maxmemory-policy every minute and logs queue.store_unsafe
// once when it changes away from noeviction, again at the next change
// away; the watch stops with the listening.
func TestEvictionPolicyReadAgainWhileWorking(t *testing.T) {
	c := redistest.StartServer(t)
	rec := &logRecorder{}
	src := newSource(t, c, Options{Logger: slog.New(rec)})
	fc := clock.NewFake(time.Now())
	src.clk = fc
	unsafe := func() int { return rec.count(string(codes.QueueStoreUnsafe), slog.LevelWarn, "not noeviction") }
	tick := func() {
		t.Helper()
		waitUntil(t, "the watch waits for its minute", func() bool { return fc.Timers() > 0 })
		fc.Advance(EvictionCheckInterval)
		// The watch arms its next minute once it has read the policy.
		waitUntil(t, "the watch read the policy", func() bool { return fc.Timers() > 0 })
	}
	stop := src.Notify(make(chan struct{}, 1))
	tick()
	if n := unsafe(); n != 0 {
		t.Fatalf("queue.store_unsafe logged %d times under noeviction", n)
	}
	for i, policy := range []string{"allkeys-lru", "allkeys-lru", "noeviction", "volatile-ttl"} {
		if err := c.ConfigSet(ctx, "maxmemory-policy", policy).Err(); err != nil {
			t.Fatal(err)
		}
		tick()
		want := []int{1, 1, 1, 2}[i]
		if n := unsafe(); n != want {
			t.Errorf("after a minute under %s (step %d): queue.store_unsafe logged %d times, want %d", policy, i, n, want)
		}
	}
	stop()
	if n := fc.Timers(); n != 0 {
		t.Errorf("%d timers left once no runner listens: the watch did not stop", n)
	}
}

// TestIdempotencyStoreReadsThePolicy: OpenIdempotencyStore refuses a
// server that may evict (or warns, told to); the store reads the policy at
// its first Reserve and at most once a minute after, logging a change
// away from noeviction once.
func TestIdempotencyStoreReadsThePolicy(t *testing.T) {
	lru := redistest.StartServer(t, "--maxmemory-policy", "allkeys-lru")
	rec := &logRecorder{}
	if _, err := OpenIdempotencyStore(ctx, lru, IdempotencyOptions{Logger: slog.New(rec)}); !errors.Is(err, ErrEvictionPolicy) {
		t.Errorf("OpenIdempotencyStore on allkeys-lru: %v, want ErrEvictionPolicy", err)
	}
	if _, err := OpenIdempotencyStore(ctx, lru, IdempotencyOptions{Logger: slog.New(rec), EvictionPolicyWarnOnly: true}); err != nil {
		t.Errorf("OpenIdempotencyStore on allkeys-lru, warn only: %v", err)
	}
	if n := rec.count(string(codes.QueueStoreUnsafe), slog.LevelWarn, "allkeys-lru"); n != 1 {
		t.Errorf("warn only: queue.store_unsafe logged %d times, want 1", n)
	}

	c := redistest.StartServer(t)
	rec = &logRecorder{}
	s := NewIdempotencyStore(c, redistest.Prefix(t))
	fc := clock.NewFake(time.Now())
	s.log, s.clk = slog.New(rec), fc
	unsafe := func() int { return rec.count(string(codes.QueueStoreUnsafe), slog.LevelWarn, "allkeys-lru") }
	reserve := func(key string) {
		t.Helper()
		if _, err := s.Reserve(ctx, key, "t", time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	reserve("a")
	if err := c.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err(); err != nil {
		t.Fatal(err)
	}
	reserve("b")
	if n := unsafe(); n != 0 {
		t.Errorf("the policy was read again within the minute: %d logs", n)
	}
	fc.Advance(EvictionCheckInterval)
	reserve("c")
	fc.Advance(EvictionCheckInterval)
	reserve("d")
	if n := unsafe(); n != 1 {
		t.Errorf("a minute after the change: queue.store_unsafe logged %d times, want once", n)
	}
}

// TestClientLogGoesToTheLogger: go-redis's own lines (here, a duration it
// truncates) go to the driver's Logger at debug, not to stderr.
func TestClientLogGoesToTheLogger(t *testing.T) {
	c := redistest.Standalone(t)
	rec := &logRecorder{}
	src := newSource(t, c, Options{Logger: slog.New(rec)})
	if err := c.Set(ctx, src.pfx+"truncated", "x", time.Microsecond).Err(); err != nil {
		t.Fatal(err)
	}
	if n := rec.count(clientLogMessage, slog.LevelDebug, "truncating to 1ms"); n != 1 {
		t.Errorf("go-redis's line logged %d times at debug to the driver's Logger, want once", n)
	}
}
