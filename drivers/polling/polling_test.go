package polling_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alexify/mailer/clock"
	"github.com/alexify/mailer/conformance"
	"github.com/alexify/mailer/drivers/memory"
	"github.com/alexify/mailer/drivers/polling"
	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/internal/codetest"
	"github.com/alexify/mailer/mailqueue"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// flakySource is a memory source whose calls can be made to fail or be
// refused, and which counts them.
type flakySource struct {
	*memory.Source
	extendErr  error
	extendFals atomic.Bool
	ackFalse   atomic.Bool
	ackErr     error
	extends    atomic.Int32
	settles    atomic.Int32
	reserveErr atomic.Bool
	reserves   atomic.Int32
	// ackFails is how many Acks fail more (an error: the store did not
	// answer) before they go through.
	ackFails atomic.Int32
}

func (s *flakySource) Reserve(ctx context.Context, p mailqueue.ReserveParams) ([]*mailqueue.Lease, error) {
	s.reserves.Add(1)
	if s.reserveErr.Load() {
		return nil, errors.New("store down")
	}
	return s.Source.Reserve(ctx, p)
}

func (s *flakySource) Extend(ctx context.Context, p mailqueue.ExtendParams) (bool, error) {
	s.extends.Add(1)
	if s.extendErr != nil {
		return false, s.extendErr
	}
	if s.extendFals.Load() {
		return false, nil
	}
	return s.Source.Extend(ctx, p)
}

func (s *flakySource) Ack(ctx context.Context, p mailqueue.AckParams) (bool, error) {
	s.settles.Add(1)
	if s.ackErr != nil {
		return false, s.ackErr
	}
	if s.ackFails.Add(-1) >= 0 {
		return false, errors.New("store unreachable")
	}
	if s.ackFalse.Load() {
		return false, nil
	}
	return s.Source.Ack(ctx, p)
}

type recorder struct {
	mu   sync.Mutex
	msgs []string
	lvls []slog.Level
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *recorder) WithGroup(string) slog.Handler            { return r }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	codetest.Observe(rec)
	r.mu.Lock()
	r.msgs = append(r.msgs, rec.Message)
	r.lvls = append(r.lvls, rec.Level)
	r.mu.Unlock()
	return nil
}

// level returns the level msg was last logged at above debug.
func (r *recorder) level(msg string) (slog.Level, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.msgs) - 1; i >= 0; i-- {
		if r.msgs[i] == msg && r.lvls[i] > slog.LevelDebug {
			return r.lvls[i], true
		}
	}
	return 0, false
}

// count returns how many times msg was logged at lvl.
func (r *recorder) count(msg string, lvl slog.Level) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for i, m := range r.msgs {
		if m == msg && r.lvls[i] == lvl {
			n++
		}
	}
	return n
}

type fixture struct {
	fc  *clock.Fake
	src *flakySource
	d   *polling.Driver
	log *recorder
}

func newFixture(t *testing.T) *fixture {
	fc := clock.NewFake(t0)
	src := &flakySource{Source: mustMemorySource(t, memory.Options{Clock: fc})}
	log := &recorder{}
	d := mustPolling(t, src, polling.Options{Clock: fc, Logger: slog.New(log)})
	job := mailqueue.NewJob{ID: "j1", Hash: "h", Data: []byte(`{}`), RunAt: t0, MaxAttempts: 3, EnqueuedAt: t0}
	if _, err := d.Enqueue(context.Background(), []mailqueue.NewJob{job}); err != nil {
		t.Fatal(err)
	}
	return &fixture{fc: fc, src: src, d: d, log: log}
}

// blockingHandler blocks each run until release is closed or the run's
// context ends, and reports the cause.
type blockingHandler struct {
	started chan struct{}
	release chan struct{}
	cause   chan error
	out     mailqueue.Outcome
}

func newBlocking() *blockingHandler {
	return &blockingHandler{started: make(chan struct{}, 10), release: make(chan struct{}), cause: make(chan error, 10), out: mailqueue.Outcome{Action: mailqueue.Ack}}
}

func (h *blockingHandler) Handle(ctx context.Context, l *mailqueue.Lease) mailqueue.Outcome {
	h.started <- struct{}{}
	select {
	case <-h.release:
		return h.out
	case <-ctx.Done():
		h.cause <- context.Cause(ctx)
		return mailqueue.Outcome{Action: mailqueue.Release, Code: codes.QueueStopped}
	}
}

// waitTimers waits until the fake clock has at least n timers: the runner
// and the lease keeper are waiting on it.
func waitTimers(t *testing.T, fc *clock.Fake, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for fc.Timers() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d timers, want %d", fc.Timers(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestLeaseIsExtendedEveryThird(t *testing.T) {
	f := newFixture(t)
	h := newBlocking()
	r, _ := f.d.Work(h, mailqueue.WorkOptions{})
	defer func() { _ = r.Close(context.Background()) }()
	<-h.started
	for i := 1; i <= 3; i++ {
		waitTimers(t, f.fc, 1) // the lease keeper (the runner waits for a free slot)
		f.fc.Advance(20 * time.Second)
		waitFor(t, func() bool { return f.src.extends.Load() == int32(i) })
	}
	// Three minutes in, well past the first lease: the run still holds it.
	if ls, _ := f.src.Source.Reserve(context.Background(), mailqueue.ReserveParams{Limit: 1, LeaseDuration: time.Minute}); len(ls) != 0 {
		t.Fatal("the job was leased again while its run extended the lease")
	}
	close(h.release)
	waitFor(t, func() bool { j, _ := f.src.Get(context.Background(), "j1"); return j.State == mailqueue.JobAccepted })
}

func TestLeaseLostWhenTheStoreDoesNotAnswer(t *testing.T) {
	f := newFixture(t)
	f.src.extendErr = errors.New("store unreachable")
	h := newBlocking()
	r, _ := f.d.Work(h, mailqueue.WorkOptions{})
	defer func() { _ = r.Close(context.Background()) }()
	<-h.started
	waitTimers(t, f.fc, 1)
	f.fc.Advance(20 * time.Second) // the first extension fails: 40 s are left
	waitFor(t, func() bool { return f.src.extends.Load() == 1 })
	select {
	case err := <-h.cause:
		t.Fatalf("the run was cancelled (%v) with two thirds of its lease left", err)
	default:
	}
	waitTimers(t, f.fc, 1)
	f.fc.Advance(20 * time.Second) // the second fails: a third is left
	if err := <-h.cause; !errors.Is(err, mailqueue.ErrLeaseLost) {
		t.Fatalf("the run's cause is %v, want ErrLeaseLost", err)
	}
	if now := f.fc.Now(); !now.Before(t0.Add(time.Minute)) {
		t.Errorf("the run was cancelled at %v, not before its lease ran out", now.Sub(t0))
	}
	waitFor(t, func() bool { _, ok := f.log.level(string(codes.QueueLeaseLost)); return ok })
	if n := f.src.settles.Load(); n != 0 {
		t.Errorf("a run that lost its lease settled %d times; its result must be dropped", n)
	}
}

func TestLeaseLostAtOnceWhenTheStoreSaysSo(t *testing.T) {
	f := newFixture(t)
	f.src.extendFals.Store(true)
	h := newBlocking()
	r, _ := f.d.Work(h, mailqueue.WorkOptions{})
	defer func() { _ = r.Close(context.Background()) }()
	<-h.started
	waitTimers(t, f.fc, 1)
	f.fc.Advance(20 * time.Second)
	if err := <-h.cause; !errors.Is(err, mailqueue.ErrLeaseLost) {
		t.Fatalf("cause %v, want ErrLeaseLost", err)
	}
}

func TestSettleFencedAndFailedAreLogged(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(*flakySource)
		code  codes.Code
		level slog.Level
	}{
		{"fenced", func(s *flakySource) { s.ackFalse.Store(true) }, codes.QueueSettleFenced, slog.LevelWarn},
		// A store that never answers is tried until the lease ends, then
		// given up: the clock is moved on until it is.
		{"failed", func(s *flakySource) { s.ackErr = errors.New("store down") }, codes.QueueSettleFailed, slog.LevelError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			tc.setup(f.src)
			r, _ := f.d.Work(mailqueue.HandlerFunc(func(context.Context, *mailqueue.Lease) mailqueue.Outcome {
				return mailqueue.Outcome{Action: mailqueue.Ack}
			}), mailqueue.WorkOptions{})
			defer func() { _ = r.Close(context.Background()) }()
			waitFor(t, func() bool {
				if _, ok := f.log.level(string(tc.code)); ok {
					return true
				}
				if f.src.settles.Load() > 0 && f.fc.Timers() > 0 {
					f.fc.Advance(time.Second) // the next try of the settle
				}
				return false
			})
			if lvl, _ := f.log.level(string(tc.code)); lvl != tc.level {
				t.Errorf("%s logged at %v, want %v", tc.code, lvl, tc.level)
			}
		})
	}
}

func TestHandlerPanicAndNoOutcomeRetry(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    mailqueue.HandlerFunc
		code codes.Code
	}{
		{"panic", func(context.Context, *mailqueue.Lease) mailqueue.Outcome { panic("bug") }, codes.QueueHandlerThrew},
		{"no outcome", func(context.Context, *mailqueue.Lease) mailqueue.Outcome { return mailqueue.Outcome{} }, codes.QueueInvalidOutcome},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			r, _ := f.d.Work(tc.h, mailqueue.WorkOptions{})
			defer func() { _ = r.Close(context.Background()) }()
			waitFor(t, func() bool { j, _ := f.src.Get(context.Background(), "j1"); return j.Code == tc.code })
			j, _ := f.src.Get(context.Background(), "j1")
			if j.State != mailqueue.JobQueued || j.Attempt != 1 {
				t.Errorf("after a %s: %s with %d attempts; want queued, retried", tc.name, j.State, j.Attempt)
			}
		})
	}
}

func TestReserveFailureIsLoggedAndPolledAgain(t *testing.T) {
	f := newFixture(t)
	f.src.reserveErr.Store(true)
	r, _ := f.d.Work(mailqueue.HandlerFunc(func(context.Context, *mailqueue.Lease) mailqueue.Outcome {
		return mailqueue.Outcome{Action: mailqueue.Ack}
	}), mailqueue.WorkOptions{})
	defer func() { _ = r.Close(context.Background()) }()
	waitFor(t, func() bool { _, ok := f.log.level(string(codes.QueueReserveFailed)); return ok })
	f.src.reserveErr.Store(false)
	waitTimers(t, f.fc, 1)
	f.fc.Advance(polling.DefaultPollInterval)
	waitFor(t, func() bool { j, _ := f.src.Get(context.Background(), "j1"); return j.State == mailqueue.JobAccepted })
}

func TestConcurrencyIsABound(t *testing.T) {
	fc := clock.NewFake(t0)
	src := mustMemorySource(t, memory.Options{Clock: fc})
	d := mustPolling(t, src, polling.Options{Clock: fc})
	var jobs []mailqueue.NewJob
	for i := 0; i < 20; i++ {
		jobs = append(jobs, mailqueue.NewJob{ID: string(rune('a' + i)), Hash: "h", Data: []byte(`{}`), RunAt: t0, MaxAttempts: 1, EnqueuedAt: t0})
	}
	_, _ = d.Enqueue(context.Background(), jobs)
	var running, most atomic.Int32
	var done atomic.Int32
	r, _ := d.Work(mailqueue.HandlerFunc(func(context.Context, *mailqueue.Lease) mailqueue.Outcome {
		n := running.Add(1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(2 * time.Millisecond)
		running.Add(-1)
		done.Add(1)
		return mailqueue.Outcome{Action: mailqueue.Ack}
	}), mailqueue.WorkOptions{Concurrency: 4})
	waitFor(t, func() bool { return done.Load() == 20 })
	_ = r.Close(context.Background())
	if m := most.Load(); m > 4 || m < 2 {
		t.Errorf("at most %d runs at once with Concurrency 4", m)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(time.Millisecond)
	}
}

// srSource is a memory source with a SettleAndReserve of its own: the
// settle through the memory source's methods, then its Reserve. It counts
// the calls of each kind, and keeps the leases its SettleAndReserve made.
type srSource struct {
	*memory.Source
	mu             sync.Mutex
	reserves       int                // the runner loop's reserves
	loopLeases     []string           // the jobs they leased
	plainSettles   []string           // the settles through Ack, Retry, Fail, Release
	settleReserves []string           // the settles through SettleAndReserve
	chained        []*mailqueue.Lease // the leases SettleAndReserve made
}

var _ polling.SettleReserver = (*srSource)(nil)

func (s *srSource) Reserve(ctx context.Context, p mailqueue.ReserveParams) ([]*mailqueue.Lease, error) {
	ls, err := s.Source.Reserve(ctx, p)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reserves++
	for _, l := range ls {
		s.loopLeases = append(s.loopLeases, l.ID)
	}
	return ls, err
}

func (s *srSource) plain(id string) {
	s.mu.Lock()
	s.plainSettles = append(s.plainSettles, id)
	s.mu.Unlock()
}

func (s *srSource) Ack(ctx context.Context, p mailqueue.AckParams) (bool, error) {
	s.plain(p.ID)
	return s.Source.Ack(ctx, p)
}

func (s *srSource) Retry(ctx context.Context, p mailqueue.RetryParams) (bool, error) {
	s.plain(p.ID)
	return s.Source.Retry(ctx, p)
}

func (s *srSource) Fail(ctx context.Context, p mailqueue.FailParams) (bool, error) {
	s.plain(p.ID)
	return s.Source.Fail(ctx, p)
}

func (s *srSource) Release(ctx context.Context, p mailqueue.ReleaseParams) (bool, error) {
	s.plain(p.ID)
	return s.Source.Release(ctx, p)
}

func (s *srSource) SettleAndReserve(ctx context.Context, p polling.SettleParams, r mailqueue.ReserveParams) (bool, []*mailqueue.Lease, error) {
	if err := ctx.Err(); err != nil {
		return false, nil, err
	}
	out := p.Outcome
	var ok bool
	var err error
	switch out.Action {
	case mailqueue.Ack:
		ok, err = s.Source.Ack(ctx, mailqueue.AckParams{ID: p.ID, Token: p.Token})
	case mailqueue.Retry:
		ok, err = s.Source.Retry(ctx, mailqueue.RetryParams{ID: p.ID, Token: p.Token, Delay: out.Delay, Code: out.Code, Reason: out.Reason})
	case mailqueue.Fail:
		ok, err = s.Source.Fail(ctx, mailqueue.FailParams{ID: p.ID, Token: p.Token, State: out.State, Code: out.Code, Reason: out.Reason})
	case mailqueue.Release:
		ok, err = s.Source.Release(ctx, mailqueue.ReleaseParams{ID: p.ID, Token: p.Token, Delay: out.Delay, Code: out.Code, Reason: out.Reason})
	default:
		return false, nil, errors.New("no action")
	}
	if err != nil {
		return false, nil, err
	}
	s.mu.Lock()
	s.settleReserves = append(s.settleReserves, p.ID)
	s.mu.Unlock()
	if r.Limit <= 0 {
		return ok, nil, nil
	}
	ls, err := s.Source.Reserve(ctx, r)
	if err != nil {
		// The settle counted; the reserve did not lease (the memory
		// source leases nothing when it fails).
		return ok, nil, nil
	}
	s.mu.Lock()
	s.chained = append(s.chained, ls...)
	s.mu.Unlock()
	return ok, ls, nil
}

// TestSettleReserverWrapper holds the wrapper to the public contract,
// the SettleReserver subtests with it: a SettleReserver made of a
// source's own methods passes them.
func TestSettleReserverWrapper(t *testing.T) {
	conformance.TestSource(t, func(t *testing.T) conformance.Harness {
		fc := clock.NewFake(t0)
		src := &srSource{Source: mustMemorySource(t, memory.Options{Clock: fc})}
		return conformance.Harness{Source: src, Now: fc.Now, Advance: fc.Advance,
			DedupeWindow: mailqueue.DefaultDedupeWindow, RetainFailed: mailqueue.DefaultRetainFailed}
	})
}

// TestSettleReserverChainsInTheSlot: with a SettleReserver source, a slot
// runs the job its settle leased, in the same slot, until a settle leases
// none; the runner's loop reserved only the first.
func TestSettleReserverChainsInTheSlot(t *testing.T) {
	fc := clock.NewFake(t0)
	src := &srSource{Source: mustMemorySource(t, memory.Options{Clock: fc})}
	d := mustPolling(t, src, polling.Options{Clock: fc, Logger: slog.New(&recorder{})})
	jobs := make([]mailqueue.NewJob, 0, 3)
	for _, id := range []string{"j1", "j2", "j3"} {
		jobs = append(jobs, mailqueue.NewJob{ID: id, Hash: "h", Data: []byte(`{}`), RunAt: t0, MaxAttempts: 3, EnqueuedAt: t0})
	}
	if _, err := d.Enqueue(context.Background(), jobs); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var ran []*mailqueue.Lease
	r, err := d.Work(mailqueue.HandlerFunc(func(_ context.Context, l *mailqueue.Lease) mailqueue.Outcome {
		mu.Lock()
		ran = append(ran, l)
		mu.Unlock()
		if l.ID == "j2" && l.Attempt == 1 {
			// Retried now: the settle of j2 leases j3 (due first), then j2 again.
			return mailqueue.Outcome{Action: mailqueue.Retry, Code: codes.QueueSendFailed}
		}
		return mailqueue.Outcome{Action: mailqueue.Ack}
	}), mailqueue.WorkOptions{Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		for _, id := range []string{"j1", "j2", "j3"} {
			if j, _ := src.Get(context.Background(), id); j.State != mailqueue.JobAccepted {
				return false
			}
		}
		return true
	})
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	order := make([]string, 0, len(ran))
	for _, l := range ran {
		order = append(order, l.ID)
	}
	if got, want := strings.Join(order, ","), "j1,j2,j3,j2"; got != want {
		t.Errorf("ran %s, want %s", got, want)
	}
	if got := strings.Join(src.loopLeases, ","); got != "j1" {
		t.Errorf("the runner's loop leased %s, want j1 only: the slot's next jobs come from its settles", got)
	}
	if got := strings.Join(src.settleReserves, ","); got != "j1,j2,j3,j2" {
		t.Errorf("settled through SettleAndReserve: %s, want each run", got)
	}
	if len(src.plainSettles) != 0 {
		t.Errorf("settled the plain way: %v, want none", src.plainSettles)
	}
	// The slot ran the very leases its settles got.
	if len(src.chained) != 3 || len(ran) != 4 {
		t.Fatalf("%d leases from the settles, %d runs", len(src.chained), len(ran))
	}
	for i, l := range src.chained {
		if ran[i+1] != l {
			t.Errorf("run %d was of lease %+v, not of the lease %+v its slot's settle got", i+2, ran[i+1], l)
		}
	}
}

// TestSettleReserverClosingSettlesPlain: a run that ends while its
// runner closes settles through the plain method, and leases nothing
// more.
func TestSettleReserverClosingSettlesPlain(t *testing.T) {
	fc := clock.NewFake(t0)
	src := &srSource{Source: mustMemorySource(t, memory.Options{Clock: fc})}
	d := mustPolling(t, src, polling.Options{Clock: fc, Logger: slog.New(&recorder{})})
	jobs := make([]mailqueue.NewJob, 0, 2)
	for _, id := range []string{"j1", "j2"} {
		jobs = append(jobs, mailqueue.NewJob{ID: id, Hash: "h", Data: []byte(`{}`), RunAt: t0, MaxAttempts: 3, EnqueuedAt: t0})
	}
	if _, err := d.Enqueue(context.Background(), jobs); err != nil {
		t.Fatal(err)
	}
	h := newBlocking()
	r, err := d.Work(h, mailqueue.WorkOptions{Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	<-h.started
	waitTimers(t, fc, 1) // the lease keeper
	closed := make(chan error, 1)
	go func() { closed <- r.Close(context.Background()) }()
	waitTimers(t, fc, 2) // and Close, waiting for the run
	close(h.release)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	if fmt.Sprint(src.plainSettles) != "[j1]" || len(src.settleReserves) != 0 {
		t.Errorf("plain settles %v, SettleAndReserve %v; want j1 settled the plain way", src.plainSettles, src.settleReserves)
	}
	if j, _ := src.Get(context.Background(), "j1"); j.State != mailqueue.JobAccepted {
		t.Errorf("j1 is %s, want accepted", j.State)
	}
	if j, _ := src.Get(context.Background(), "j2"); j.State != mailqueue.JobQueued {
		t.Errorf("j2 is %s, want queued: a closing runner leases nothing more", j.State)
	}
}

// TestSettleRetriedThroughABlip: a settle the store does not answer twice
// is tried again after 50 ms, then 100 ms, and applied once: the job is
// accepted on its first attempt, never redelivered, and no
// queue.settle_failed is logged above debug.
func TestSettleRetriedThroughABlip(t *testing.T) {
	f := newFixture(t)
	f.src.ackFails.Store(2)
	var runs atomic.Int32
	r, _ := f.d.Work(mailqueue.HandlerFunc(func(context.Context, *mailqueue.Lease) mailqueue.Outcome {
		runs.Add(1)
		return mailqueue.Outcome{Action: mailqueue.Ack}
	}), mailqueue.WorkOptions{})
	defer func() { _ = r.Close(context.Background()) }()
	for i, wait := range []time.Duration{50 * time.Millisecond, 100 * time.Millisecond} {
		waitFor(t, func() bool { return f.src.settles.Load() == int32(i+1) })
		waitTimers(t, f.fc, 1) // the wait before the next try
		f.fc.Advance(wait - time.Millisecond)
		if n := f.src.settles.Load(); n != int32(i+1) {
			t.Fatalf("try %d of the settle came before %v", n, wait)
		}
		f.fc.Advance(time.Millisecond)
	}
	waitFor(t, func() bool { j, _ := f.src.Get(context.Background(), "j1"); return j.State == mailqueue.JobAccepted })
	j, _ := f.src.Get(context.Background(), "j1")
	if j.Attempt != 1 || j.Redeliveries != 0 || runs.Load() != 1 || f.src.settles.Load() != 3 {
		t.Errorf("after a blip: attempt %d, %d redeliveries, %d runs, %d settles; want 1, 0, 1, 3", j.Attempt, j.Redeliveries, runs.Load(), f.src.settles.Load())
	}
	if n := f.log.count(string(codes.QueueSettleFailed), slog.LevelError); n != 0 {
		t.Errorf("queue.settle_failed logged %d times at error for a settle that went through", n)
	}
}

// TestSettleGivenUpAtTheLeaseEnd: a store that never answers is tried
// until the next try would come past the lease, then the settle is given
// up (queue.settle_failed, once) and the job is left to its lease.
func TestSettleGivenUpAtTheLeaseEnd(t *testing.T) {
	f := newFixture(t)
	f.src.ackErr = errors.New("store down")
	r, _ := f.d.Work(mailqueue.HandlerFunc(func(context.Context, *mailqueue.Lease) mailqueue.Outcome {
		return mailqueue.Outcome{Action: mailqueue.Ack}
	}), mailqueue.WorkOptions{})
	defer func() { _ = r.Close(context.Background()) }()
	waitFor(t, func() bool {
		if f.log.count(string(codes.QueueSettleFailed), slog.LevelError) > 0 {
			return true
		}
		if f.src.settles.Load() > 0 && f.fc.Timers() > 0 {
			f.fc.Advance(settleRetryMax)
		}
		return false
	})
	if now := f.fc.Now(); now.After(t0.Add(polling.DefaultLeaseDuration)) {
		t.Errorf("the settle was tried until %v, past the lease (%v)", now.Sub(t0), polling.DefaultLeaseDuration)
	}
	// 50 ms doubling to 2 s within a minute: 6 waits to 1.6 s, then 2 s each.
	if n := f.src.settles.Load(); n < 20 || n > 40 {
		t.Errorf("%d tries of the settle in a minute's lease; want about 33", n)
	}
	if n := f.log.count(string(codes.QueueSettleFailed), slog.LevelError); n != 1 {
		t.Errorf("queue.settle_failed logged %d times at error, want once", n)
	}
}

// settleRetryMax is the longest wait between two tries of a settle.
const settleRetryMax = 2 * time.Second

// TestReserveBacksOff: an idle runner whose reserve fails tries again
// after 100 ms, 200 ms, 400 ms, 800 ms, then every poll interval (1 s);
// once the store answers, the job runs.
func TestReserveBacksOff(t *testing.T) {
	f := newFixture(t)
	f.src.reserveErr.Store(true)
	r, _ := f.d.Work(mailqueue.HandlerFunc(func(context.Context, *mailqueue.Lease) mailqueue.Outcome {
		return mailqueue.Outcome{Action: mailqueue.Ack}
	}), mailqueue.WorkOptions{})
	defer func() { _ = r.Close(context.Background()) }()
	ms := time.Millisecond
	for i, wait := range []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, time.Second, time.Second} {
		waitFor(t, func() bool { return f.src.reserves.Load() == int32(i+1) })
		waitTimers(t, f.fc, 1)
		f.fc.Advance(wait - ms)
		if n := f.src.reserves.Load(); n != int32(i+1) {
			t.Fatalf("reserve %d came before its wait of %v", n, wait)
		}
		f.fc.Advance(ms)
	}
	waitFor(t, func() bool { return f.src.reserves.Load() == 7 })
	f.src.reserveErr.Store(false)
	waitTimers(t, f.fc, 1)
	f.fc.Advance(time.Second)
	waitFor(t, func() bool { j, _ := f.src.Get(context.Background(), "j1"); return j.State == mailqueue.JobAccepted })
}

// unnamed hides the name of a memory source: a Source that is no
// mailqueue.QueueNamer.
type unnamed struct{ mailqueue.Source }

// TestQueueNameIsTheSources: the driver forwards its source's name, and
// has "" over a source that tells none.
func TestQueueNameIsTheSources(t *testing.T) {
	t.Parallel()
	src, err := memory.NewSource(memory.Options{Queue: "billing"})
	if err != nil {
		t.Fatal(err)
	}
	for want, s := range map[string]mailqueue.Source{"billing": src, "": unnamed{src}} {
		d, err := polling.New(s, polling.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := d.QueueName(); got != want {
			t.Errorf("QueueName %q, want %q", got, want)
		}
	}
}

// notifySource is a flakySource that is a Notifier which never wakes: the
// runner is woken by its poll alone.
type notifySource struct{ *flakySource }

func (notifySource) Notify(chan<- struct{}) func() { return func() {} }

// TestReserveAgainOnlyWhenFull: with a Notifier source, a reserve that
// leased fewer jobs than the free slots is not followed by another at
// once (the source wakes the runner for a job stored meanwhile); a source
// without a Notifier is asked again while it gives. (One that filled every
// slot is followed by another as soon as a slot frees:
// TestConcurrencyIsABound.)
func TestReserveAgainOnlyWhenFull(t *testing.T) {
	for _, tc := range []struct {
		name     string
		notifier bool
		jobs     int
		want     int32 // the reserves before the runner waits for its poll
	}{
		{"notifier, fewer than the slots", true, 1, 1},
		{"no notifier, fewer than the slots", false, 1, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := clock.NewFake(t0)
			fs := &flakySource{Source: mustMemorySource(t, memory.Options{Clock: fc})}
			var src mailqueue.Source = fs
			if tc.notifier {
				src = notifySource{fs}
			}
			d := mustPolling(t, src, polling.Options{Clock: fc})
			var jobs []mailqueue.NewJob
			for i := range tc.jobs {
				jobs = append(jobs, mailqueue.NewJob{ID: fmt.Sprint("j", i), Hash: "h", Data: []byte(`{}`), RunAt: t0, MaxAttempts: 1, EnqueuedAt: t0})
			}
			if _, err := fs.Enqueue(context.Background(), jobs); err != nil {
				t.Fatal(err)
			}
			h := newBlocking()
			r, err := d.Work(h, mailqueue.WorkOptions{Concurrency: 2})
			if err != nil {
				t.Fatal(err)
			}
			for range tc.jobs {
				<-h.started
			}
			// The runner's poll timer and each run's lease keeper.
			waitTimers(t, fc, 1+tc.jobs)
			if got := fs.reserves.Load(); got != tc.want {
				t.Errorf("%d reserves before the runner waited, want %d", got, tc.want)
			}
			close(h.release)
			_ = r.Close(context.Background())
		})
	}
}
