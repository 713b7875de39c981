package mailqueue_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/alexify/mailer/audit"
	"github.com/alexify/mailer/clock"
	"github.com/alexify/mailer/drivers/memory"
	"github.com/alexify/mailer/drivers/polling"
	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/mail"
	"github.com/alexify/mailer/mailqueue"
)

// TestDefaultNamespace: a queue given no namespace derives the ids of the
// namespace "mail".
func TestDefaultNamespace(t *testing.T) {
	t.Parallel()
	id := func(ns string) string {
		q, _, _ := newQueue(t, mailqueue.Config{Namespace: ns})
		r, err := q.Enqueue(context.Background(), contentJob())
		if err != nil {
			t.Fatal(err)
		}
		return r.ID
	}
	def, mailNS, other := id(""), id("mail"), id("billing")
	if def != mailNS {
		t.Errorf("no namespace derived %s, the namespace \"mail\" %s", def, mailNS)
	}
	if other == mailNS {
		t.Errorf("the namespace does not change the id: %s", other)
	}
}

// timerClock is a fake clock that remembers the duration of each timer
// made on it, but those of skip (the lease keeper's, a third of the lease).
type timerClock struct {
	*clock.Fake
	skip time.Duration
	mu   sync.Mutex
	made []time.Duration
}

func (c *timerClock) NewTimer(d time.Duration) clock.Timer {
	if d != c.skip {
		c.mu.Lock()
		c.made = append(c.made, d)
		c.mu.Unlock()
	}
	return c.Fake.NewTimer(d)
}

// timers returns the durations of the timers remembered so far.
func (c *timerClock) timers() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.made...)
}

// waitTimers waits until n timers are remembered, and returns them.
func (c *timerClock) waitTimers(t *testing.T, n int) []time.Duration {
	t.Helper()
	waitFor(t, func() bool { return len(c.timers()) >= n })
	return c.timers()
}

// pollingQueue is a queue over a memory source run by a polling driver of
// default options but a lease of 3 hours, whose timers tc remembers but
// the lease keeper's (an hour, a third of the lease).
func pollingQueue(t *testing.T, log *slog.Logger) (*mailqueue.Queue, *timerClock, *audit.Memory) {
	t.Helper()
	fc := clock.NewFake(t0)
	tc := &timerClock{Fake: fc, skip: time.Hour}
	src := mustMemorySource(t, memory.Options{Clock: fc, Logger: log})
	d, err := polling.New(src, polling.Options{Clock: tc, Logger: log, LeaseDuration: 3 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	sink := audit.NewMemory()
	q, err := mailqueue.New(mailqueue.Config{Driver: d, Clock: fc, Logger: log, Audit: sink})
	if err != nil {
		t.Fatal(err)
	}
	return q, tc, sink
}

// TestDefaultPollInterval: an idle runner of the polling driver reserves
// again after a second of its clock when nothing wakes it.
func TestDefaultPollInterval(t *testing.T) {
	t.Parallel()
	fc := clock.NewFake(t0)
	tc := &timerClock{Fake: fc}
	src := mustMemorySource(t, memory.Options{Clock: fc})
	d, err := polling.New(src, polling.Options{Clock: tc})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan string, 1)
	r, err := d.Work(mailqueue.HandlerFunc(func(_ context.Context, l *mailqueue.Lease) mailqueue.Outcome {
		ran <- l.ID
		return mailqueue.Outcome{Action: mailqueue.Ack}
	}), mailqueue.WorkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeSoon(r) })
	// The queue is empty: the runner waits for its poll.
	if got := tc.waitTimers(t, 1); got[0] != time.Second {
		t.Fatalf("the idle runner waits %v, want 1s", got[0])
	}
	// A job written to the source, not through the driver, wakes nothing:
	// the poll finds it.
	if _, err := src.Enqueue(context.Background(), []mailqueue.NewJob{{ID: "j1", Hash: "h1", Data: []byte("{}"), Priority: jobv1.PriorityNormal, RunAt: t0, MaxAttempts: 1, EnqueuedAt: t0}}); err != nil {
		t.Fatal(err)
	}
	fc.Advance(time.Second - time.Millisecond)
	select {
	case id := <-ran:
		t.Fatalf("%s ran before the poll", id)
	default:
	}
	fc.Advance(time.Millisecond)
	select {
	case id := <-ran:
		if id != "j1" {
			t.Errorf("ran %s, want j1", id)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the poll after a second did not run the job")
	}
}

// closeSoon closes r in a cleanup with a deadline on the wall clock: a
// Close whose ctx has no deadline waits on the fake clock, which nobody
// moves once the test has failed.
func closeSoon(r interface{ Close(context.Context) error }) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = r.Close(ctx)
}

// newWorker starts a worker of q closed at the end of the test with a
// deadline on the wall clock.
func newWorker(t *testing.T, q *mailqueue.Queue, cfg mailqueue.WorkerConfig) *mailqueue.Worker {
	t.Helper()
	w, err := q.NewWorker(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeSoon(w) })
	return w
}

// closeResult returns what a Close in flight returned, failing the test
// when it has not returned within 5 s of the wall clock: the fake clock
// was moved past its timeouts, so it must return at once.
func closeResult(t *testing.T, closed <-chan error) error {
	t.Helper()
	select {
	case err := <-closed:
		return err
	case <-time.After(30 * time.Second): // a bound for a loaded machine, not a measure
		t.Fatal("Close did not return once the fake clock passed its timeouts")
		return nil
	}
}

// ctxTransport blocks each send until its context is done, or, when
// ignoreCtx, until release is closed.
type ctxTransport struct {
	started   chan context.Context
	release   chan struct{}
	ignoreCtx bool
}

func (c *ctxTransport) Send(ctx context.Context, m *mail.Message) (mail.Receipt, error) {
	c.started <- ctx
	if c.ignoreCtx {
		<-c.release
	} else {
		<-ctx.Done()
	}
	r := mail.Receipt{Category: mail.DeliveryUnknown}
	return r, &mail.Error{Receipt: r, Err: ctx.Err()}
}

// TestDefaultCloseTimeout: Close with a ctx without a deadline waits 30
// seconds of the driver's clock for a run in flight, then aborts it (a send
// under way is of unknown delivery); a run that still does not end within as
// long again is abandoned (queue.close_abandoned) and Close says so.
func TestDefaultCloseTimeout(t *testing.T) {
	t.Parallel()
	t.Run("aborted after 30 s", func(t *testing.T) {
		t.Parallel()
		q, tc, sink := pollingQueue(t, slog.New(&logRecorder{}))
		tr := &ctxTransport{started: make(chan context.Context, 1)}
		w := newWorker(t, q, mailqueue.WorkerConfig{Transport: tr})
		r, err := q.Enqueue(context.Background(), contentJob())
		if err != nil {
			t.Fatal(err)
		}
		sendCtx := <-tr.started
		// The runner made its poll timers before it leased the job; the
		// timers from now on are Close's.
		before := len(tc.timers())
		closed := make(chan error, 1)
		go func() { closed <- w.Close(context.Background()) }()
		if got := tc.waitTimers(t, before+1)[before]; got != 30*time.Second {
			t.Fatalf("Close waits %v, want 30s", got)
		}
		tc.Advance(30*time.Second - time.Millisecond)
		if err := sendCtx.Err(); err != nil {
			t.Fatalf("the send was aborted before 30 s: %v", err)
		}
		tc.Advance(time.Millisecond)
		if err := closeResult(t, closed); err != nil {
			t.Fatalf("Close: %v", err)
		}
		events := sink.Events(r.ID)
		if last := events[len(events)-1]; last.State != mailqueue.AuditDeliveryUnknown || last.Code != codes.QueueAborted {
			t.Errorf("last audit event %+v; want delivery_unknown, queue.aborted", last)
		}
	})
	t.Run("abandoned after 30 s more", func(t *testing.T) {
		t.Parallel()
		logs := &logRecorder{}
		q, tc, _ := pollingQueue(t, slog.New(logs))
		tr := &ctxTransport{started: make(chan context.Context, 1), release: make(chan struct{}), ignoreCtx: true}
		w := newWorker(t, q, mailqueue.WorkerConfig{Transport: tr})
		t.Cleanup(func() { close(tr.release) })
		if _, err := q.Enqueue(context.Background(), contentJob()); err != nil {
			t.Fatal(err)
		}
		<-tr.started
		before := len(tc.timers())
		closed := make(chan error, 1)
		go func() { closed <- w.Close(context.Background()) }()
		tc.waitTimers(t, before+1)
		tc.Advance(30 * time.Second)
		if got := tc.waitTimers(t, before+2)[before+1]; got != 30*time.Second {
			t.Fatalf("after the abort, Close waits %v more, want 30s", got)
		}
		tc.Advance(30 * time.Second)
		if err := closeResult(t, closed); err == nil {
			t.Error("Close returned no error with a run still going")
		}
		recs := logs.find(string(codes.QueueCloseAbandoned))
		if diff := cmp.Diff(1, len(recs)); diff != "" {
			t.Errorf("queue.close_abandoned records (-want +got):\n%s", diff)
		}
		logs.checkLevels(t)
	})
}
