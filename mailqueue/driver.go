package mailqueue

import (
	"context"
	"time"

	"github.com/alexify/mailer/gen/codes"
)

// Driver moves stored jobs and outcomes. It never renders, sends or
// classifies: one Handler (the Worker) serves every driver, so every store
// settles an attempt the same way. The polling driver (drivers/polling)
// makes a Driver of any Source.
type Driver interface {
	// Enqueue stores jobs as Source.Enqueue does.
	Enqueue(ctx context.Context, jobs []NewJob) ([]EnqueueResult, error)
	// Work starts running h on the driver's jobs, up to opts.Concurrency at
	// once, until the returned Runner is closed.
	Work(h Handler, opts WorkOptions) (Runner, error)
}

// WorkOptions tell a driver how to run a handler.
type WorkOptions struct {
	// Concurrency is the most runs at once; 1 when zero.
	Concurrency int
	// Gate, when set, holds the reserving of jobs: before each reserve
	// (the reserve of its loop, and the one a settle makes for its slot,
	// as polling.SettleReserver does), the driver calls Gate and reserves
	// only once the channel it returns is closed, waiting for it or for its
	// own Close; a closed channel lets the reserve go at once. The worker
	// gates so while its circuit breaker is open: the jobs wait in the
	// store, their attempts unspent, and are due the moment it closes. A
	// driver that ignores Gate still works: the worker gives back, unsent,
	// what it reserves while the breaker is open (queue.transport_unavailable,
	// due again a second later), so an outage costs reserves, never an
	// attempt.
	Gate func() <-chan struct{}
}

// Runner is a driver's running worker.
type Runner interface {
	// Close stops reserving jobs, waits for the runs in flight until ctx is
	// done (a driver's default timeout applies when ctx has no deadline: 30
	// seconds), then aborts them: a run not yet sent is given back, and the
	// attempt is not spent.
	Close(ctx context.Context) error
}

// Handler runs one attempt of a job and says what to do with it.
//
// The run's ctx is cancelled when the driver aborts the run; its cause
// (context.Cause) is ErrLeaseLost or ErrClosing.
type Handler interface {
	Handle(ctx context.Context, lease *Lease) Outcome
}

// HandlerFunc adapts a function to a Handler.
type HandlerFunc func(ctx context.Context, lease *Lease) Outcome

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, lease *Lease) Outcome { return f(ctx, lease) }

// Action is what an outcome does to its job.
type Action int

// The actions of an outcome.
const (
	// ActionNone is the zero value: no outcome (queue.invalid_outcome).
	ActionNone Action = iota
	// Ack settles the job as done: the message was accepted.
	Ack
	// Retry spends an attempt; the job is due again after Delay.
	Retry
	// Fail settles the job for good in State.
	Fail
	// Release gives the job back, and the attempt is not spent; it is due
	// again after Delay.
	Release
)

// String returns the action's name.
func (a Action) String() string {
	switch a {
	case Ack:
		return "ack"
	case Retry:
		return "retry"
	case Fail:
		return "fail"
	case Release:
		return "release"
	}
	return "none"
}

// Outcome is what the handler decided for one run.
type Outcome struct {
	// Action is what the driver does with the job.
	Action Action
	// Delay is, for Retry and Release, how long the job waits.
	Delay time.Duration
	// State is, for Fail, codes.StateFailed or codes.StateDeliveryUnknown.
	State codes.State
	// Code and Reason tell why (not for Ack). Reason holds no address and
	// no text of the message or of a server's reply.
	Code   codes.Code
	Reason string
	// Pause, with Release, pauses the queue or a tenant (a rate limit whose
	// scope is the queue or the tenant).
	Pause *Pause
}

// Pause is a pause of the whole queue or of one tenant's jobs.
type Pause struct {
	// Tenant is true for a pause of the jobs of TenantID alone ("" is the
	// jobs of no tenant); false for the whole queue.
	Tenant   bool
	TenantID string
	// For is how long the pause lasts, from now.
	For time.Duration
}

// Pauser is a Driver or a Source that can pause the queue or a tenant, as a
// rate limit with RateLimitQueue or RateLimitTenant does: while paused, no
// job of the queue (or of the tenant) is reserved. The polling driver is one
// when its source is; the memory and Redis sources are (spec: "What the
// queue does with an attempt", rateLimitScope).
type Pauser interface {
	// Pause pauses the queue, or the tenant when p.Tenant, for p.For. A
	// longer pause already in place is kept.
	Pause(ctx context.Context, p Pause) error
	// Resume ends a pause of the queue, or of a tenant when p.Tenant,
	// before its time. Ending a pause that is not in place does nothing.
	Resume(ctx context.Context, p ResumeParams) error
}
