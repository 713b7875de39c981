// Package polling is the polling driver: it turns any mailqueue.Source (a
// store that lends its jobs under leases) into a mailqueue.Driver (spec:
// "The memory queue and the polling driver").
//
// A run holds the lease of its job and extends it every third of
// LeaseDuration. When the store does not answer the extensions, the run's
// context is cancelled (cause mailqueue.ErrLeaseLost) while a third of the
// lease is still left, so that another worker that takes the job does not
// send it beside this one. Settles are fenced by the lease token: a settle
// the store refuses is logged as queue.settle_fenced.
//
// A blip of the store is not a lost run: a settle the store did not answer
// (an error, not a refusal) is tried again after 50 ms, doubling up to 2 s,
// for as long as the run's lease lasts, and only then logged as
// queue.settle_failed and left to run out (a Redis restart of a few
// seconds must not turn the sends in flight into redeliveries). An idle runner whose reserve failed tries again after
// 100 ms, doubling up to PollInterval, instead of waiting a whole poll.
//
// Two optional interfaces of a Source make it faster, and change nothing
// for a source without them: a Notifier wakes idle runners when a job may
// be due, and a SettleReserver settles a run and leases the next job of
// its slot in one call.
package polling

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/alexify/mailer/clock"
	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/mailqueue"
)

// The defaults of the polling driver (spec: "Defaults").
const (
	DefaultPollInterval  = time.Second
	DefaultLeaseDuration = time.Minute
	DefaultCloseTimeout  = 30 * time.Second
	// settleTimeout bounds one call to the store that settles a run.
	settleTimeout = 10 * time.Second
	// invalidOutcomeDelay is how long a job whose handler gave no outcome,
	// or panicked, waits before it is due again.
	invalidOutcomeDelay = mailqueue.BackoffBase
	// settleRetryBase and settleRetryMax bound the waits between the tries
	// of a settle the store did not answer: 50 ms, doubling, at most 2 s,
	// so that a restart of the store of a few seconds is bridged in a few
	// tries, while the lease lasts.
	settleRetryBase = 50 * time.Millisecond
	settleRetryMax  = 2 * time.Second
	// reserveRetryBase is the first wait of an idle runner whose reserve
	// failed; it doubles up to PollInterval.
	reserveRetryBase = 100 * time.Millisecond
)

// Options configure a Driver. A zero field takes the default; New refuses a
// negative duration.
type Options struct {
	// PollInterval is how long an idle worker waits between reserves when
	// it is not woken (1 second). After a reserve that failed it waits
	// 100 ms, then twice as long after each failure, never more than
	// PollInterval, so that a store back from a blip is used at once.
	PollInterval time.Duration
	// LeaseDuration is the length of a lease, extended every third of it
	// (1 minute). Keep it well above the time a store call takes: a run is
	// cancelled when a third of its lease is left unextended, and a
	// transport that ignores its context may still be sending when another
	// worker takes the job.
	LeaseDuration time.Duration
	// CloseTimeout is how long Close waits for the runs in flight when its
	// ctx has no deadline (30 seconds).
	CloseTimeout time.Duration
	// Clock is the time source of the timers; the wall clock when nil.
	Clock clock.Clock
	// Logger hears what the driver does; slog.Default() when nil.
	Logger *slog.Logger
}

// Notifier is an optional interface of a Source whose store can tell idle
// workers that a job may have become due (a Redis pub/sub message, a
// PostgreSQL NOTIFY, a timer for the next scheduled job), so that they
// reserve at once instead of at their next poll. Each runner of the driver
// registers its wake channel while it works.
type Notifier interface {
	// Notify registers wake: the source sends to it, never blocking (a
	// send to a full channel is dropped), whenever a job may have become
	// due. The returned function unregisters it; it may be called more
	// than once.
	Notify(wake chan<- struct{}) (stop func())
}

// SettleReserver is an optional interface of a Source that can settle a
// run and lease the next jobs in one call to its store (one round trip, as
// BullMQ's moveToFinished fetches the next job). When the source has it,
// a run whose outcome carries no pause settles through SettleAndReserve,
// asking for one lease, and runs the job it gets in the same slot; it
// settles through the plain methods (Ack, Retry, Fail, Release) while the
// runner is closing, and when the outcome pauses (the pause must hold
// before the next reserve). The runner's own loop still reserves for the
// slots that are free, so a source without it works as before.
type SettleReserver interface {
	// SettleAndReserve settles the run of p as Ack, Retry, Fail or Release
	// would (fenced by p.Token: settled is false with a nil error when the
	// lease is not the run's any more), then leases up to r.Limit due jobs
	// as Reserve would (none when r.Limit is 0), never more than r.Limit. A
	// non-nil error means the store could not be asked: the run's job is
	// left as it was, and no job is leased that the caller must run (a
	// lease the store made all the same runs out and is redelivered).
	SettleAndReserve(ctx context.Context, p SettleParams, r mailqueue.ReserveParams) (settled bool, leases []*mailqueue.Lease, err error)
}

// SettleParams are the settle of SettleReserver.SettleAndReserve.
type SettleParams struct {
	// ID is the job's id; Token the token of the lease that settles it.
	ID, Token string
	// Outcome is the handler's: its Action is Ack, Retry, Fail or Release,
	// with the Delay, State, Code and Reason of that action. Its Pause is
	// never set: a run whose outcome pauses settles the plain way.
	Outcome mailqueue.Outcome
}

// Driver runs a handler on the jobs of a Source.
type Driver struct {
	src  mailqueue.Source
	opts Options
	log  *slog.Logger

	mu    sync.Mutex
	wakes []chan struct{}
}

// New returns a Driver over src. It returns an error when src is nil, and
// a *mailqueue.OptionError when a duration is negative (see Options).
func New(src mailqueue.Source, opts Options) (*Driver, error) {
	if src == nil {
		return nil, &mailqueue.OptionError{Package: "polling", Option: "the Source", Rule: "is required"}
	}
	if err := opts.validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	return &Driver{src: src, opts: opts, log: opts.Logger}, nil
}

// withDefaults returns a copy of the options whose zero fields take their
// defaults.
func (o Options) withDefaults() Options {
	if o.PollInterval == 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.LeaseDuration == 0 {
		o.LeaseDuration = DefaultLeaseDuration
	}
	if o.CloseTimeout == 0 {
		o.CloseTimeout = DefaultCloseTimeout
	}
	if o.Clock == nil {
		o.Clock = clock.Real()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// validate refuses the options New cannot honour: a negative duration is
// a mistake, not a request for the default.
func (o Options) validate() error {
	for _, err := range []error{
		mailqueue.CheckNotNegative("polling", "Options.PollInterval", o.PollInterval),
		mailqueue.CheckNotNegative("polling", "Options.LeaseDuration", o.LeaseDuration),
		mailqueue.CheckNotNegative("polling", "Options.CloseTimeout", o.CloseTimeout),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

// Source returns the source the driver runs.
func (d *Driver) Source() mailqueue.Source { return d.src }

// QueueName returns the name of the source's queue when the source is a
// mailqueue.QueueNamer, and "" when it is not; see mailqueue.QueueNamer.
func (d *Driver) QueueName() string {
	if n, ok := d.src.(mailqueue.QueueNamer); ok {
		return n.QueueName()
	}
	return ""
}

// Enqueue stores jobs in the source and wakes the idle runners of this
// driver.
func (d *Driver) Enqueue(ctx context.Context, jobs []mailqueue.NewJob) ([]mailqueue.EnqueueResult, error) {
	res, err := d.src.Enqueue(ctx, jobs)
	if err == nil {
		d.Wake()
	}
	return res, err
}

// Wake makes the idle runners of this driver reserve at once instead of at
// their next poll.
func (d *Driver) Wake() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.wakes {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

// Work starts a runner of h. It returns at once.
func (d *Driver) Work(h mailqueue.Handler, opts mailqueue.WorkOptions) (mailqueue.Runner, error) {
	if h == nil {
		return nil, errors.New("polling: nil handler")
	}
	n := opts.Concurrency
	if n <= 0 {
		n = 1
	}
	base, cancel := context.WithCancelCause(context.Background())
	r := &runner{
		d: d, h: h, gate: opts.Gate, slots: make(chan struct{}, n), wake: make(chan struct{}, 1),
		closing: make(chan struct{}), done: make(chan struct{}), base: base, abort: cancel,
	}
	d.mu.Lock()
	d.wakes = append(d.wakes, r.wake)
	d.mu.Unlock()
	if n, ok := d.src.(Notifier); ok {
		r.unnotify = n.Notify(r.wake)
	}
	go r.loop()
	return r, nil
}

type runner struct {
	d     *Driver
	h     mailqueue.Handler
	gate  func() <-chan struct{} // WorkOptions.Gate; nil never holds
	slots chan struct{}
	wake  chan struct{}

	closeOnce sync.Once
	closing   chan struct{}
	done      chan struct{} // closed when the loop has stopped reserving
	runs      sync.WaitGroup
	base      context.Context
	abort     context.CancelCauseFunc
	unnotify  func() // unregisters wake from a Notifier source; nil for none
}

func (r *runner) loop() {
	defer close(r.done)
	// backoff is the wait after a failed reserve: reserveRetryBase,
	// doubling up to the poll interval; zero after a reserve that worked.
	var backoff time.Duration
	for {
		if r.gate != nil {
			select {
			case <-r.gate():
			case <-r.closing:
				return
			}
		}
		// Take a slot first: reserve only what can run now.
		select {
		case r.slots <- struct{}{}:
		case <-r.closing:
			return
		}
		free := 1
	fill:
		for free < cap(r.slots) {
			select {
			case r.slots <- struct{}{}:
				free++
			default:
				break fill
			}
		}
		leases, err := r.d.src.Reserve(r.base, mailqueue.ReserveParams{Limit: free, LeaseDuration: r.d.opts.LeaseDuration})
		wait := r.d.opts.PollInterval
		if err != nil {
			r.d.log.Error(string(codes.QueueReserveFailed), "err", err)
			backoff = nextReserveBackoff(backoff, r.d.opts.PollInterval)
			wait = backoff
		} else {
			backoff = 0
		}
		// Reserve again at once only when the reserve filled every slot
		// it had (more may be due); with fewer, the queue held no more,
		// and a Notifier source wakes the runner for a job stored
		// meanwhile. A source without one is asked again while it gives.
		again := err == nil && len(leases) > 0 && (len(leases) >= free || !r.notified())
		for _, l := range leases {
			free--
			r.runs.Add(1)
			go r.run(l)
		}
		for ; free > 0; free-- {
			<-r.slots
		}
		if again {
			continue
		}
		t := r.d.opts.Clock.NewTimer(wait)
		select {
		case <-t.C():
		case <-r.wake:
			t.Stop()
		case <-r.closing:
			t.Stop()
			return
		}
	}
}

// notified reports whether the runner's source wakes it (Notifier).
func (r *runner) notified() bool { return r.unnotify != nil }

// nextReserveBackoff returns the wait after a failed reserve that follows
// a wait of prev (0 after a reserve that worked): reserveRetryBase, then
// twice the last, never more than poll.
func nextReserveBackoff(prev, poll time.Duration) time.Duration {
	if prev <= 0 {
		return min(reserveRetryBase, poll)
	}
	return min(2*prev, poll)
}

// run runs the handler on one lease, keeps the lease and settles; with a
// SettleReserver source, it goes on in the same slot with the lease its
// settle got, until one gets none.
func (r *runner) run(l *mailqueue.Lease) {
	defer r.runs.Done()
	defer func() { <-r.slots }()
	for l != nil {
		l = r.runOne(l)
	}
}

// runOne runs the handler on one lease, keeps the lease and settles. It
// returns the lease the settle got for the slot (SettleReserver), or nil.
func (r *runner) runOne(l *mailqueue.Lease) *mailqueue.Lease {
	ctx, cancel := context.WithCancelCause(r.base)
	defer cancel(nil)
	stop := make(chan struct{})
	kept := make(chan struct{})
	until := l.Until // the end of the lease as last extended, once kept is closed
	go func() {
		defer close(kept)
		until = r.keep(ctx, cancel, l, stop)
	}()
	out := r.handle(ctx, l)
	close(stop)
	<-kept
	if errors.Is(context.Cause(ctx), mailqueue.ErrLeaseLost) {
		r.d.log.Error(string(codes.QueueLeaseLost), "job_id", l.ID, "attempt", l.Attempt, "dropped", out.Action.String())
		return nil
	}
	if sr, ok := r.d.src.(SettleReserver); ok && out.Pause == nil && r.reserving() {
		return r.settleAndReserve(sr, l, out, until)
	}
	r.settle(l, out, until)
	return nil
}

// persist calls the store through call until it answers (a nil error),
// waiting settleRetryBase, then twice as long each time up to
// settleRetryMax, between the tries. It gives up, returning the last
// error, when the next try would come at or after until (the end of the
// run's lease: past it the job is another run's to take), or when the
// runner is aborted. Each try gets settleTimeout.
func (r *runner) persist(l *mailqueue.Lease, what string, until time.Time, call func(ctx context.Context) error) error {
	c := r.d.opts.Clock
	wait := settleRetryBase
	for {
		ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
		err := call(ctx)
		cancel()
		if err == nil {
			return nil
		}
		if !c.Now().Add(wait).Before(until) || r.base.Err() != nil {
			return err
		}
		// Below error: the store may answer the next try; only a settle
		// given up is the code's error.
		r.d.log.Debug(string(codes.QueueSettleFailed), "job_id", l.ID, "action", what, "retry_in", wait, "err", err)
		t := c.NewTimer(wait)
		select {
		case <-t.C():
		case <-r.base.Done():
			t.Stop()
			return err
		}
		wait = min(2*wait, settleRetryMax)
	}
}

// reserving reports whether the runner may still lease jobs: it is not
// closing, nor aborted, and its gate (WorkOptions.Gate) is open.
func (r *runner) reserving() bool {
	select {
	case <-r.closing:
		return false
	default:
	}
	if r.gate != nil {
		select {
		case <-r.gate():
		default:
			return false
		}
	}
	return r.base.Err() == nil
}

// settleAndReserve settles the run through a SettleReserver and returns
// the lease it got for the slot, or nil.
func (r *runner) settleAndReserve(sr SettleReserver, l *mailqueue.Lease, out mailqueue.Outcome, until time.Time) *mailqueue.Lease {
	var ok bool
	var leases []*mailqueue.Lease
	err := r.persist(l, out.Action.String(), until, func(ctx context.Context) error {
		limit := 1
		if !r.reserving() {
			// The runner began to close between two tries: settle only.
			limit = 0
		}
		var err error
		ok, leases, err = sr.SettleAndReserve(ctx, SettleParams{ID: l.ID, Token: l.Token, Outcome: out},
			mailqueue.ReserveParams{Limit: limit, LeaseDuration: r.d.opts.LeaseDuration})
		return err
	})
	switch {
	case err != nil:
		r.d.log.Error(string(codes.QueueSettleFailed), "job_id", l.ID, "action", out.Action.String(), "err", err)
		return nil
	case !ok:
		r.d.log.Warn(string(codes.QueueSettleFenced), "job_id", l.ID, "action", out.Action.String())
	}
	if len(leases) == 0 {
		return nil
	}
	if len(leases) > 1 {
		// A source that broke its contract: the slot runs one; the others
		// are redelivered when their leases run out.
		r.d.log.Error(string(codes.QueueReserveFailed), "err", fmt.Sprintf("SettleAndReserve leased %d jobs for 1 slot", len(leases)))
	}
	return leases[0]
}

// handle calls the handler, recovering a panic.
func (r *runner) handle(ctx context.Context, l *mailqueue.Lease) (out mailqueue.Outcome) {
	defer func() {
		if p := recover(); p != nil {
			r.d.log.Error(string(codes.QueueHandlerThrew), "job_id", l.ID, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			r.d.log.Warn(string(codes.MailerQueueHandlerThrew), "job_id", l.ID)
			out = mailqueue.Outcome{Action: mailqueue.Retry, Delay: invalidOutcomeDelay, Code: codes.QueueHandlerThrew, Reason: "the handler panicked"}
		}
	}()
	out = r.h.Handle(ctx, l)
	if out.Action == mailqueue.ActionNone {
		r.d.log.Error(string(codes.QueueInvalidOutcome), "job_id", l.ID)
		out = mailqueue.Outcome{Action: mailqueue.Retry, Delay: invalidOutcomeDelay, Code: codes.QueueInvalidOutcome, Reason: "the handler gave no outcome"}
	}
	return out
}

// keep extends the lease every third of its length until stop is closed.
// When the store does not extend it, the run is cancelled with ErrLeaseLost
// once no more than a third of the lease is left, or at once when the store
// says the lease is not this run's any more. It returns the end of the
// lease as last extended, on the driver's clock.
func (r *runner) keep(ctx context.Context, cancel context.CancelCauseFunc, l *mailqueue.Lease, stop <-chan struct{}) time.Time {
	ld := r.d.opts.LeaseDuration
	c := r.d.opts.Clock
	until := l.Until
	for {
		t := c.NewTimer(ld / 3)
		select {
		case <-stop:
			t.Stop()
			return until
		case <-ctx.Done():
			t.Stop()
			return until
		case <-t.C():
		}
		ectx, ecancel := context.WithTimeout(context.WithoutCancel(ctx), ld/6)
		ok, err := r.d.src.Extend(ectx, mailqueue.ExtendParams{ID: l.ID, Token: l.Token, Duration: ld})
		ecancel()
		switch {
		case err == nil && ok:
			until = c.Now().Add(ld)
			continue
		case err == nil && !ok:
			r.d.log.Warn(string(codes.QueueLeaseExtendFailed), "job_id", l.ID, "reason", "the lease is not this run's any more")
			cancel(mailqueue.ErrLeaseLost)
			return until
		default:
			r.d.log.Warn(string(codes.QueueLeaseExtendFailed), "job_id", l.ID, "err", err)
			if until.Sub(c.Now()) <= ld/3 {
				cancel(mailqueue.ErrLeaseLost)
				return until
			}
		}
	}
}

// settle tells the store the outcome, fenced by the lease token, trying
// again while the store does not answer and the lease lasts (persist).
func (r *runner) settle(l *mailqueue.Lease, out mailqueue.Outcome, until time.Time) {
	var ok bool
	err := r.persist(l, out.Action.String(), until, func(ctx context.Context) error {
		var err error
		switch out.Action {
		case mailqueue.Ack:
			ok, err = r.d.src.Ack(ctx, mailqueue.AckParams{ID: l.ID, Token: l.Token})
		case mailqueue.Retry:
			ok, err = r.d.src.Retry(ctx, mailqueue.RetryParams{ID: l.ID, Token: l.Token, Delay: out.Delay, Code: out.Code, Reason: out.Reason})
		case mailqueue.Fail:
			ok, err = r.d.src.Fail(ctx, mailqueue.FailParams{ID: l.ID, Token: l.Token, State: out.State, Code: out.Code, Reason: out.Reason})
		case mailqueue.Release:
			ok, err = r.d.src.Release(ctx, mailqueue.ReleaseParams{ID: l.ID, Token: l.Token, Delay: out.Delay, Code: out.Code, Reason: out.Reason})
		}
		return err
	})
	switch {
	case err != nil:
		r.d.log.Error(string(codes.QueueSettleFailed), "job_id", l.ID, "action", out.Action.String(), "err", err)
	case !ok:
		r.d.log.Warn(string(codes.QueueSettleFenced), "job_id", l.ID, "action", out.Action.String())
	}
	if out.Pause != nil {
		ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
		defer cancel()
		if err := r.d.Pause(ctx, *out.Pause); err != nil {
			r.d.log.Error(string(codes.QueueWorkerError), "job_id", l.ID, "err", err)
		}
	}
}

// ErrPauseUnsupported is returned by Pause and Resume when the source
// cannot pause.
var ErrPauseUnsupported = errors.New("polling: the source cannot pause")

// CanPause reports whether the source can pause (it is a
// mailqueue.Pauser).
func (d *Driver) CanPause() bool {
	_, ok := d.src.(mailqueue.Pauser)
	return ok
}

// Pause pauses the queue or a tenant in the source; see mailqueue.Pauser.
func (d *Driver) Pause(ctx context.Context, p mailqueue.Pause) error {
	ps, ok := d.src.(mailqueue.Pauser)
	if !ok {
		return ErrPauseUnsupported
	}
	return ps.Pause(ctx, p)
}

// Resume ends a pause in the source and wakes the idle runners; see
// mailqueue.Pauser.
func (d *Driver) Resume(ctx context.Context, p mailqueue.ResumeParams) error {
	ps, ok := d.src.(mailqueue.Pauser)
	if !ok {
		return ErrPauseUnsupported
	}
	if err := ps.Resume(ctx, p); err != nil {
		return err
	}
	d.Wake()
	return nil
}

// Close stops reserving, waits for the runs in flight until ctx is done (or
// CloseTimeout when ctx has no deadline), then aborts them (cause
// mailqueue.ErrClosing) and waits as long again for them to settle. Runs
// still going past that are logged (queue.close_abandoned) and left.
func (r *runner) Close(ctx context.Context) error {
	r.closeOnce.Do(func() { close(r.closing) })
	<-r.done
	if r.unnotify != nil {
		r.unnotify()
	}
	r.d.mu.Lock()
	for i, c := range r.d.wakes {
		if c == r.wake {
			r.d.wakes = append(r.d.wakes[:i], r.d.wakes[i+1:]...)
			break
		}
	}
	r.d.mu.Unlock()
	finished := make(chan struct{})
	go func() {
		r.runs.Wait()
		close(finished)
	}()
	timeout := r.d.opts.CloseTimeout
	if dl, ok := ctx.Deadline(); ok {
		// The caller's deadline is on the wall clock: wait for ctx itself.
		timeout = time.Until(dl)
		select {
		case <-finished:
			return nil
		case <-ctx.Done():
		}
	} else {
		t := r.d.opts.Clock.NewTimer(timeout)
		select {
		case <-finished:
			t.Stop()
			return nil
		case <-t.C():
		case <-ctx.Done():
			t.Stop()
		}
	}
	r.abort(mailqueue.ErrClosing)
	if timeout < time.Second {
		timeout = time.Second
	}
	t2 := r.d.opts.Clock.NewTimer(timeout)
	defer t2.Stop()
	select {
	case <-finished:
		return nil
	case <-t2.C():
		r.d.log.Error(string(codes.QueueCloseAbandoned), "timeout", timeout)
		return errors.New("polling: runs still going past twice the timeout of Close")
	}
}
