package mailqueue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/alexify/mailer/clock"
	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/mail"
)

// The defaults of BreakerConfig.
const (
	// DefaultBreakerThreshold is the run of outages in a row that opens the
	// breaker.
	DefaultBreakerThreshold = 5
	// DefaultProbeInterval is the wait before the first probe of an open
	// breaker; each failed probe doubles it, up to DefaultMaxProbeInterval.
	DefaultProbeInterval = time.Second
	// DefaultMaxProbeInterval is the longest wait between two probes: once
	// the transport is back, the jobs go at most this long after.
	DefaultMaxProbeInterval = 10 * time.Second
	// outageDelay is how long a job given back for an outage waits. It is
	// short on purpose: while the breaker is open the driver reserves
	// nothing (WorkOptions.Gate), so the jobs wait in the store and are due
	// the moment the breaker closes, not after a backoff; and with a driver
	// that does not honour the gate, a second keeps the worker from
	// spinning on the same jobs.
	outageDelay = time.Second
	// checkTimeout bounds one Check of the transport.
	checkTimeout = 30 * time.Second
)

// BreakerConfig configures the worker's circuit breaker of the transport.
// A send that fails with mail.ErrUnavailable (the
// server could not be reached, the IdempotencyTransport's store failed:
// nothing was sent) is an outage: the job is given back with
// queue.transport_unavailable, and the attempt is not spent. After
// Threshold outages in a row the breaker opens (queue.transport_breaker_open):
// the worker stops reserving jobs, which wait in the store, unspent, and it
// probes the transport, after ProbeInterval and then twice as long after
// each failed probe, up to MaxProbeInterval. A transport that is a
// mail.Checker is probed with Check; any other is probed by letting one job
// through (half-open). When a probe succeeds the breaker closes
// (queue.transport_breaker_closed) and the waiting jobs go at once.
// The probes' waits are on the queue's clock (Config.Clock).
type BreakerConfig struct {
	// Threshold is the run of outages in a row that opens the breaker
	// (DefaultBreakerThreshold, 5).
	Threshold int
	// ProbeInterval is the wait before the first probe
	// (DefaultProbeInterval, 1 second).
	ProbeInterval time.Duration
	// MaxProbeInterval is the longest wait between two probes
	// (DefaultMaxProbeInterval, 10 seconds).
	MaxProbeInterval time.Duration
	// Disabled keeps the breaker closed: an outage still gives its job back
	// without spending the attempt, but the worker goes on reserving.
	Disabled bool
}

// withDefaults returns c with its zero fields set to the defaults. It
// leaves the values out of range to validate.
func (c BreakerConfig) withDefaults() BreakerConfig {
	if c.Threshold == 0 {
		c.Threshold = DefaultBreakerThreshold
	}
	if c.ProbeInterval == 0 {
		c.ProbeInterval = DefaultProbeInterval
	}
	if c.MaxProbeInterval == 0 {
		c.MaxProbeInterval = max(DefaultMaxProbeInterval, c.ProbeInterval)
	}
	return c
}

// validate refuses a breaker config NewWorker cannot honour, naming the
// field and its value; it runs on the config with its defaults.
func (c BreakerConfig) validate() error {
	const pkg = "mailqueue"
	for _, err := range []error{
		CheckNotNegative(pkg, "WorkerConfig.Breaker.Threshold", c.Threshold),
		CheckNotNegative(pkg, "WorkerConfig.Breaker.ProbeInterval", c.ProbeInterval),
		CheckNotNegative(pkg, "WorkerConfig.Breaker.MaxProbeInterval", c.MaxProbeInterval),
	} {
		if err != nil {
			return err
		}
	}
	if c.MaxProbeInterval < c.ProbeInterval {
		return &OptionError{Package: pkg, Option: "WorkerConfig.Breaker.MaxProbeInterval", Value: c.MaxProbeInterval, Rule: "is shorter than ProbeInterval"}
	}
	return nil
}

// breakerState is where the breaker is.
type breakerState int

const (
	// breakerClosed: jobs go; outages are counted.
	breakerClosed breakerState = iota
	// breakerOpen: no job goes; the prober waits, then probes.
	breakerOpen
	// breakerHalfOpen: one job goes, as the probe of a transport without
	// Check; the others wait.
	breakerHalfOpen
)

func (s breakerState) String() string {
	switch s {
	case breakerOpen:
		return "open"
	case breakerHalfOpen:
		return "half_open"
	}
	return "closed"
}

// breaker is the worker's circuit breaker of its transport. Its gate is a
// channel closed while the driver may reserve (WorkOptions.Gate).
type breaker struct {
	cfg     BreakerConfig
	clock   clock.Clock
	log     *slog.Logger
	checker mail.Checker // nil when the transport cannot check

	ctx     context.Context // cancelled by stop, for the prober
	cancel  context.CancelFunc
	probers sync.WaitGroup // the prober running, which stop waits for

	mu       sync.Mutex
	state    breakerState
	outages  int           // outages in a row while closed
	interval time.Duration // the prober's next wait
	gate     chan struct{} // closed while the driver may reserve
	probing  bool          // half-open: the probe job is taken
	openedAt time.Time
	probes   int // probes since the breaker opened, for the log
	gen      int // counts the openings, so a prober of an earlier one stops
	// probeAt is when the prober's wait ends; zero while no prober waits
	// (it is starting, or probing).
	probeAt time.Time
}

// closedGate is a gate that never holds.
var closedGate = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

func newBreaker(cfg BreakerConfig, c clock.Clock, log *slog.Logger, t mail.Transport) *breaker {
	ctx, cancel := context.WithCancel(context.Background())
	b := &breaker{cfg: cfg, clock: c, log: log, ctx: ctx, cancel: cancel, gate: closedGate, interval: cfg.ProbeInterval}
	if ch, ok := t.(mail.Checker); ok {
		b.checker = ch
	}
	return b
}

// Gate returns a channel closed while the driver may reserve jobs: at once
// while the breaker is closed, when it closes (or lets a probe job through)
// while it is open.
func (b *breaker) Gate() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.gate
}

// admit reports whether a run may send: always while closed; while
// half-open, the first run (the probe, probe true), which holds the gate
// until it ends (probeDone). A run not admitted gives its job back.
func (b *breaker) admit() (ok, probe bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.state {
	case breakerClosed:
		return true, false
	case breakerHalfOpen:
		if b.probing {
			return false, false
		}
		b.probing = true
		b.holdGate()
		return true, true
	}
	return false, false
}

// probeDone ends the run of a probe job. A probe that came to neither an
// outage nor a send (the job was refused before it was sent, the worker
// stopped) proved nothing: the next job is let through in its place.
func (b *breaker) probeDone() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == breakerHalfOpen && b.probing {
		b.probing = false
		b.openGate()
	}
}

// holdGate makes the driver wait; openGate lets it reserve, waking a driver
// that waits.
func (b *breaker) holdGate() {
	if b.gate == closedGate {
		b.gate = make(chan struct{})
	}
}

func (b *breaker) openGate() {
	if b.gate != closedGate {
		close(b.gate)
		b.gate = closedGate
	}
}

// outage counts a send that found the transport unavailable: the run of
// Threshold of them opens a closed breaker, and the failed probe of a
// half-open one opens it again.
func (b *breaker) outage() {
	if b.cfg.Disabled {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.state {
	case breakerClosed:
		b.outages++
		if b.outages >= b.cfg.Threshold {
			b.openLocked()
		}
	case breakerHalfOpen:
		b.probing = false
		b.failedProbeLocked()
		b.reopenLocked()
	}
}

// reached counts a send that reached the transport (it answered, whatever
// it answered): it ends a run of outages, and closes an open breaker.
func (b *breaker) reached() {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.state {
	case breakerClosed:
		b.outages = 0
	default:
		b.closeLocked("a send reached the transport")
	}
}

// openLocked opens a closed breaker and starts the prober.
func (b *breaker) openLocked() {
	b.state, b.outages, b.probes = breakerOpen, 0, 0
	b.interval = b.cfg.ProbeInterval
	b.openedAt = b.clock.Now()
	b.holdGate()
	b.gen++
	b.probeAt = time.Time{}
	b.log.Warn(string(codes.QueueTransportBreakerOpen), "outages", b.cfg.Threshold, "probe_in", b.interval)
	b.startProber()
}

// reopenLocked goes back from half-open to open and starts the prober.
func (b *breaker) reopenLocked() {
	b.state = breakerOpen
	b.holdGate()
	b.gen++
	b.probeAt = time.Time{}
	b.startProber()
}

// startProber starts the prober of the opening b.gen, unless the breaker
// is stopped (the worker closed).
func (b *breaker) startProber() {
	if b.ctx.Err() != nil {
		return
	}
	b.probers.Add(1)
	go func(gen int) {
		defer b.probers.Done()
		b.probe(gen)
	}(b.gen)
}

// failedProbeLocked counts a failed probe and doubles the wait.
func (b *breaker) failedProbeLocked() {
	b.probes++
	b.interval = min(2*b.interval, b.cfg.MaxProbeInterval)
}

// closeLocked closes the breaker and opens the gate.
func (b *breaker) closeLocked(why string) {
	if b.state == breakerClosed {
		return
	}
	b.log.Info(string(codes.QueueTransportBreakerClosed), "open_for", b.clock.Now().Sub(b.openedAt), "probes", b.probes+1, "reason", why)
	b.state, b.outages, b.probing = breakerClosed, 0, false
	b.interval = b.cfg.ProbeInterval
	b.openGate()
}

// probe waits the probe interval on the clock, then probes: with Check when
// the transport has one (nil, or an error that is not an outage, closes the
// breaker: the transport answered), else by going half-open. It returns
// when the breaker is closed, half-open or stopped, or opened again since
// gen (another prober then probes).
func (b *breaker) probe(gen int) {
	for {
		b.mu.Lock()
		wait := b.interval
		t := b.clock.NewTimer(wait)
		if b.gen == gen {
			b.probeAt = b.clock.Now().Add(wait)
		}
		b.mu.Unlock()
		select {
		case <-t.C():
		case <-b.ctx.Done():
			t.Stop()
			return
		}
		b.mu.Lock()
		stale := b.state != breakerOpen || b.gen != gen
		if !stale {
			b.probeAt = time.Time{}
		}
		b.mu.Unlock()
		if stale {
			return
		}
		if b.checker != nil {
			ctx, cancel := context.WithTimeout(b.ctx, checkTimeout)
			err := b.check(ctx)
			cancel()
			if b.ctx.Err() != nil {
				return
			}
			if !errors.Is(err, errors.ErrUnsupported) {
				b.mu.Lock()
				if b.state != breakerOpen || b.gen != gen {
					b.mu.Unlock()
					return
				}
				if err != nil && errors.Is(err, mail.ErrUnavailable) {
					b.failedProbeLocked()
					b.mu.Unlock()
					continue
				}
				why := "Check succeeded"
				if err != nil {
					// The transport answered and refused (a wrong password):
					// not an outage, and the jobs will say so.
					why = "Check reached the transport: " + mail.Redact(err.Error())
				}
				b.closeLocked(why)
				b.mu.Unlock()
				return
			}
		}
		b.mu.Lock()
		if b.state == breakerOpen && b.gen == gen {
			b.state, b.probing = breakerHalfOpen, false
			b.openGate()
		}
		b.mu.Unlock()
		return
	}
}

// check calls the transport's Check, recovering a panic (a bug of the
// transport) as an error that reached nothing.
func (b *breaker) check(ctx context.Context) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: the transport's Check panicked: %s", mail.ErrUnavailable, mail.Redact(fmt.Sprint(p)))
		}
	}()
	return b.checker.Check(ctx)
}

// stop ends the prober and waits for it, or for ctx. It holds the lock
// while it cancels, so no prober starts after it.
func (b *breaker) stop(ctx context.Context) {
	b.mu.Lock()
	b.cancel()
	b.mu.Unlock()
	done := make(chan struct{})
	go func() {
		b.probers.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// stateName returns the breaker's state, for tests.
func (b *breaker) stateName() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state.String()
}

// waiting reports whether the breaker is open and its prober waits for the
// clock (its next probe is later than now), for tests that move a fake
// clock only once nothing else can happen.
func (b *breaker) waiting() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state == breakerOpen && b.probeAt.After(b.clock.Now())
}
