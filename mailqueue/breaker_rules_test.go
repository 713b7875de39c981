package mailqueue_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/alexify/mailer/clock"
	"github.com/alexify/mailer/drivers/memory"
	"github.com/alexify/mailer/drivers/polling"
	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/mail"
	"github.com/alexify/mailer/mail/idempotency"
	mtransport "github.com/alexify/mailer/mail/memory"
	"github.com/alexify/mailer/mailqueue"
)

func slogOf(l *logRecorder) *slog.Logger { return slog.New(l) }

// unavailable answers a send as a transport whose server cannot be reached.
func unavailable(context.Context, *mail.Message) (mail.Receipt, error) {
	r := mail.Receipt{Category: mail.Retryable, Reason: "connecting: connection refused"}
	return r, &mail.Error{Receipt: r, Err: mail.ErrUnavailable}
}

// runFor moves the fake clock a second at a time for d, letting the worker
// settle between the steps.
func runFor(h *harness, d time.Duration) {
	for end := h.fc.Now().Add(d); h.fc.Now().Before(end); {
		waitQuiet(h, h.w)
		h.fc.Advance(time.Second)
	}
	waitQuiet(h, h.w)
}

// TestBreakerOpens: Threshold outages in a row open the breaker, and the
// worker then sends nothing but its probes; a disabled breaker stays closed
// and the worker goes on trying. No attempt is spent either way.
func TestBreakerOpens(t *testing.T) {
	tests := []struct {
		name    string
		breaker mailqueue.BreakerConfig
		// state is the breaker's after 5 s; sends the most sends tried.
		state    string
		maxSends int
	}{
		// 5 outages, then probes after 1, 2 (and 4) s: half-open, one job.
		{"the default", mailqueue.BreakerConfig{}, "open", 5 + 2},
		{"a threshold of 2", mailqueue.BreakerConfig{Threshold: 2}, "open", 2 + 2},
		{"disabled", mailqueue.BreakerConfig{Disabled: true}, "closed", 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, mailqueue.WorkerConfig{Breaker: tt.breaker}, memory.Options{})
			h.tr.OnSend(unavailable)
			var ids []string
			for i := range 10 {
				j := contentJob()
				j.IdempotencyKey = fmt.Sprintf("opens:%d", i)
				ids = append(ids, h.enqueue(j))
			}
			h.start()
			runFor(h, 5*time.Second)
			if got := mailqueue.BreakerState(h.w); got != tt.state {
				t.Errorf("breaker %s, want %s", got, tt.state)
			}
			if n := h.tr.Attempts(); n > tt.maxSends || n == 0 {
				t.Errorf("%d sends tried, want 1 to %d", n, tt.maxSends)
			}
			for _, id := range ids {
				j := h.job(id)
				if j.State != mailqueue.JobQueued || j.Attempt != 0 || j.Code != "" && j.Code != codes.QueueTransportUnavailable {
					t.Errorf("job %s: %s, %d attempts spent, code %q; want queued, none spent, queue.transport_unavailable or none", id, j.State, j.Attempt, j.Code)
				}
			}
		})
	}
}

// TestBreakerClosesOnAnAnswer: a Check that reaches the transport closes
// the breaker even when it refuses (a wrong password is no outage: the jobs
// will say so), and the jobs held go.
func TestBreakerClosesOnAnAnswer(t *testing.T) {
	refused := errors.New("535 5.7.8 authentication failed")
	tests := []struct {
		name  string
		check error // Check's answer once the server is back
		want  string
	}{
		{"Check succeeds", nil, "Check succeeded"},
		{"Check is refused", refused, "Check reached the transport: 535 5.7.8 authentication failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var down atomic.Bool
			down.Store(true)
			tr := &answeringTransport{Transport: mtransport.New(), down: &down, whenUp: tt.check}
			h := newHarness(t, mailqueue.WorkerConfig{Transport: tr}, memory.Options{})
			tr.Transport.OnSend(func(ctx context.Context, m *mail.Message) (mail.Receipt, error) {
				if down.Load() {
					return unavailable(ctx, m)
				}
				return mail.Receipt{Category: mail.Accepted, Code: 250}, nil
			})
			var ids []string
			for i := range 6 {
				j := contentJob()
				j.IdempotencyKey = fmt.Sprintf("closes:%d", i)
				ids = append(ids, h.enqueue(j))
			}
			h.start()
			runFor(h, 30*time.Second)
			if got := mailqueue.BreakerState(h.w); got != "open" {
				t.Fatalf("breaker %s after 30 s of outage, want open", got)
			}
			down.Store(false)
			runFor(h, mailqueue.DefaultMaxProbeInterval+time.Second)
			if got := mailqueue.BreakerState(h.w); got != "closed" {
				t.Fatalf("breaker %s once the server is back, want closed", got)
			}
			closed := h.logs.find(string(codes.QueueTransportBreakerClosed))
			if len(closed) != 1 || closed[0].Attrs["reason"] != tt.want {
				t.Errorf("closed records %v, want one with reason %q", closed, tt.want)
			}
			for _, id := range ids {
				h.check(id, outcome{State: mailqueue.JobAccepted, Attempts: 1})
			}
		})
	}
}

// answeringTransport is a memory transport with a Check: unavailable while
// down, whenUp after.
type answeringTransport struct {
	*mtransport.Transport
	down   *atomic.Bool
	whenUp error
}

func (a *answeringTransport) Check(context.Context) error {
	if a.down.Load() {
		return fmt.Errorf("dial: %w", mail.ErrUnavailable)
	}
	return a.whenUp
}

// TestBreakerConfigRefused: a breaker option out of range is an
// *OptionError naming it.
func TestBreakerConfigRefused(t *testing.T) {
	q, _, _ := newQueue(t, mailqueue.Config{})
	tests := []struct {
		breaker mailqueue.BreakerConfig
		option  string
	}{
		{mailqueue.BreakerConfig{Threshold: -1}, "WorkerConfig.Breaker.Threshold"},
		{mailqueue.BreakerConfig{ProbeInterval: -time.Second}, "WorkerConfig.Breaker.ProbeInterval"},
		{mailqueue.BreakerConfig{MaxProbeInterval: -time.Second}, "WorkerConfig.Breaker.MaxProbeInterval"},
		{mailqueue.BreakerConfig{ProbeInterval: time.Minute, MaxProbeInterval: time.Second}, "WorkerConfig.Breaker.MaxProbeInterval"},
	}
	for _, tt := range tests {
		_, err := q.NewWorker(mailqueue.WorkerConfig{Transport: mtransport.New(), Breaker: tt.breaker})
		var oe *mailqueue.OptionError
		if !errors.As(err, &oe) || oe.Option != tt.option {
			t.Errorf("Breaker %+v: %v, want an *OptionError of %s", tt.breaker, err, tt.option)
		}
	}
	// ProbeInterval alone above the default maximum raises the maximum.
	if _, err := q.NewWorker(mailqueue.WorkerConfig{Transport: mtransport.New(), Breaker: mailqueue.BreakerConfig{ProbeInterval: time.Minute}}); err != nil {
		t.Errorf("ProbeInterval of a minute: %v", err)
	}
}

// deduper is a memory transport that says whether it dedupes.
type deduper struct {
	*mtransport.Transport
	dedupes bool
}

func (d deduper) Dedupes() bool { return d.dedupes }

// TestRedeliveryUnsafeWarning: a worker whose transport does not dedupe and
// whose Redelivered is send warns once at start, naming the two remedies
// (issue 10, point 8); one that dedupes, or fails a redelivered run as of
// unknown delivery, does not.
func TestRedeliveryUnsafeWarning(t *testing.T) {
	idem, err := idempotency.New(mtransport.New(), idempotency.NewMemoryStore(clock.NewFake(t0)), idempotency.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		transport   mail.Transport
		redelivered mailqueue.RedeliveredPolicy
		warnings    int
	}{
		{"SMTP-like transport, send", mtransport.New(), "", 1},
		{"SMTP-like transport, delivery_unknown", mtransport.New(), mailqueue.RedeliveredDeliveryUnknown, 0},
		{"IdempotencyTransport, send", idem, mailqueue.RedeliveredSend, 0},
		{"a provider that dedupes by the key, send", deduper{mtransport.New(), true}, mailqueue.RedeliveredSend, 0},
		{"a Deduper that says it does not, send", deduper{mtransport.New(), false}, mailqueue.RedeliveredSend, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, mailqueue.WorkerConfig{Transport: tt.transport, Redelivered: tt.redelivered}, memory.Options{})
			if n := len(h.logs.find(string(codes.QueueRedeliveryUnsafe))); n != 0 {
				t.Fatalf("%d warnings before Start", n)
			}
			h.start()
			got := h.logs.find(string(codes.QueueRedeliveryUnsafe))
			if len(got) != tt.warnings {
				t.Fatalf("%d warnings, want %d", len(got), tt.warnings)
			}
			if tt.warnings > 0 {
				want := "wrap the transport in an IdempotencyTransport (mail/idempotency), or set WorkerConfig.Redelivered to delivery_unknown"
				if diff := cmp.Diff(want, got[0].Attrs["remedies"]); diff != "" {
					t.Errorf("remedies (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// extendRefused is a memory source whose leases cannot be extended: the
// store says the lease is not the run's any more.
type extendRefused struct{ *memory.Source }

func (extendRefused) Extend(context.Context, mailqueue.ExtendParams) (bool, error) { return false, nil }

// TestLeaseLostLogsNoCompleted: a run that lost its lease during the send
// does not log queue.job.completed, though the transport accepted the
// message: the driver drops its ack, and another run may take the job
// (issue 10, point 8).
func TestLeaseLostLogsNoCompleted(t *testing.T) {
	logs := &logRecorder{}
	fc := clock.NewFake(t0)
	src := mustMemorySource(t, memory.Options{Clock: fc, Logger: slogOf(logs)})
	d, err := polling.New(extendRefused{src}, polling.Options{Clock: fc, Logger: slogOf(logs)})
	if err != nil {
		t.Fatal(err)
	}
	q, err := mailqueue.New(mailqueue.Config{Driver: d, Clock: fc, Logger: slogOf(logs)})
	if err != nil {
		t.Fatal(err)
	}
	entered := make(chan struct{})
	tr := mtransport.New()
	tr.OnSend(func(ctx context.Context, _ *mail.Message) (mail.Receipt, error) {
		close(entered)
		<-ctx.Done() // the lease is lost; the server accepts all the same
		return mail.Receipt{Category: mail.Accepted, Code: 250}, nil
	})
	w := startWorker(t, q, mailqueue.WorkerConfig{Transport: tr, Redelivered: mailqueue.RedeliveredDeliveryUnknown})
	if _, err := q.Enqueue(context.Background(), contentJob()); err != nil {
		t.Fatal(err)
	}
	<-entered
	// The run's keeper extends at a third of the lease (20 s): wait for its
	// timer, then move past it; the store refuses, and the run is cancelled
	// with ErrLeaseLost.
	for {
		changed := fc.Changed()
		if fc.Timers() > 0 {
			break
		}
		<-changed
	}
	fc.Advance(polling.DefaultLeaseDuration / 3)
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := logs.find(string(codes.QueueJobCompleted)); len(got) != 0 {
		t.Errorf("a run that lost its lease logged queue.job.completed: %v", got)
	}
	if got := logs.find(string(codes.QueueLeaseLost)); len(got) == 0 {
		t.Error("no queue.lease.lost record")
	}
}
