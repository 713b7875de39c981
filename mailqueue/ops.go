package mailqueue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/gen/jobv1"
)

// The operations of an operator: the shapes every store answers in, so that
// a tool (mailq, a dashboard) works on any of them through one interface.
// Each driver wraps the errors below with %w and the job's id; test them
// with errors.Is.

// ErrNotFound is returned for a job the store does not hold: never stored,
// or forgotten once its retention ended.
var ErrNotFound = errors.New("mailqueue: no such job")

// ErrNotFailed is returned by RetryFailed for a job that is not failed for
// good (failed or delivery_unknown).
var ErrNotFailed = errors.New("mailqueue: the job is not failed")

// ErrNoData is returned by RetryFailed for a failed job whose message the
// store dropped (RetainData "none", or a memory queue past RetainFinished):
// there is nothing left to run again.
var ErrNoData = errors.New("mailqueue: the job kept no message to run again")

// JobRow is a stored job as an operator sees it. It never holds the job's
// addresses nor its stored bytes: a tool that lists jobs cannot leak a
// message. Times are on the store's clock (a server's, for Redis).
type JobRow struct {
	// ID is the job's id.
	ID string
	// Hash is the job's hash: the SHA-256 of the canonical JSON of its
	// message, without its envelope and delivery parameters (wire format:
	// "The hash"). It is kept after the message is dropped, so that an
	// enqueue again is still told a duplicate.
	Hash string
	// Version is the version of the job's format (its "v"), kept after its
	// message is dropped; 0 when the stored JSON gives no whole number.
	Version int
	// State is where the job is now.
	State JobState
	// Priority and TenantID are those it was enqueued with ("" is no
	// tenant).
	Priority jobv1.Priority
	TenantID string
	// Attempt is the attempts spent so far; MaxAttempts the attempts in
	// all. A release and a lease that ran out spend none.
	Attempt, MaxAttempts int
	// Redeliveries counts the runs that ended unsettled (a lease that ran
	// out).
	Redeliveries int
	// EnqueuedAt is when the job was enqueued; RunAt when a queued job is
	// (or became) due; FinishedAt when a finished job finished (zero
	// otherwise); LeaseUntil when a running job's lease ends (zero
	// otherwise).
	EnqueuedAt, RunAt, FinishedAt, LeaseUntil time.Time
	// Code and Reason tell why the last retry, release or failure happened
	// (empty when there was none). Reason holds no address and no text of
	// the message or of a server's reply (docs/architecture.md, "No message
	// text above debug").
	Code   codes.Code
	Reason string
	// DataKept is true while the store holds the job's message; a finished
	// job may drop it (RetainData), and then RetryFailed cannot run it
	// again.
	DataKept bool
}

// TenantPause is the pause of one tenant's jobs.
type TenantPause struct {
	// TenantID is the tenant ("" is the jobs of no tenant).
	TenantID string
	// Until is when the pause ends, on the store's clock.
	Until time.Time
}

// Stats counts a store's jobs by state, and tells its pauses. A store
// counts its states one by one, so a job that moves meanwhile may be
// counted twice or not at all; the counts of finished jobs leave out those
// whose retention ended.
type Stats struct {
	// Queued counts the jobs waiting, due or not; Due is those of them due
	// now, paused or not (a part of Queued).
	Queued, Due int64
	// Running counts the jobs leased by a run, whether or not the lease has
	// run out yet (a job whose lease ran out is queued again at the next
	// reserve).
	Running int64
	// Accepted, Failed and DeliveryUnknown count the finished jobs still
	// kept (DedupeWindow for the accepted ones, RetainFailed for the
	// others).
	Accepted, Failed, DeliveryUnknown int64
	// Paused is true while the whole queue is paused; PausedUntil is when
	// that pause ends (zero when none).
	Paused      bool
	PausedUntil time.Time
	// PausedTenants are the tenants paused now, sorted by TenantID.
	PausedTenants []TenantPause
	// OldestQueuedAge is how long the longest-waiting due job has waited
	// since it became due, on the store's clock: the lag of the workers.
	// A job scheduled later does not count until it is due; zero when no
	// queued job is due.
	OldestQueuedAge time.Duration
	// Now is the store's clock when it counted.
	Now time.Time
}

// JobsParams say which jobs Inspector.Jobs lists.
type JobsParams struct {
	// State is the state of the jobs to list. Required.
	State JobState
	// Cursor is where to go on from: "" from the start, else the Next of
	// the page before. It is opaque: a store's own format, valid only for
	// the same State on the same store.
	Cursor string
	// Limit is the most jobs of the page; 100 when zero or less.
	Limit int
}

// DefaultJobsLimit is the size of a page of Inspector.Jobs when
// JobsParams.Limit is not set.
const DefaultJobsLimit = 100

// JobPage is a page of Inspector.Jobs.
type JobPage struct {
	// Rows are the jobs of the page, in the order of their state: queued
	// jobs by the time they are due, running ones by the end of their
	// lease, finished ones by the time they finished, the oldest first;
	// ties by the order they were queued (queued) or by id.
	Rows []JobRow
	// Next is the cursor of the page after; "" when there is none.
	Next string
}

// PurgeParams say which finished jobs Operator.Purge forgets.
type PurgeParams struct {
	// State is JobAccepted, JobFailed or JobDeliveryUnknown; any other
	// state is refused.
	State JobState
	// OlderThan is how long ago a job must have finished; 0 purges every
	// finished job of the state. A negative value is refused.
	OlderThan time.Duration
	// ForgetKeys forgets the purged jobs whole, their {v, hash} too, so
	// that an enqueue under the key of one of them is stored and sent
	// again: a producer that retries an enqueue it had made before the
	// purge sends the message a second time. False (the default) keeps
	// each purged job's {v, hash} until its retention would have ended,
	// so that an enqueue under its key is still told a Duplicate (or a
	// Conflict) as it would have been.
	ForgetKeys bool
}

// ErrNoForget is returned by Operator.Resend when ResendParams.Forget is
// nil: a resend that does not clear the job's idempotency entry would
// replay its stored receipt, as RetryFailed does, and send nothing.
var ErrNoForget = errors.New("mailqueue: ResendParams.Forget is required")

// ResendParams say which failed job Operator.Resend sends again, and how
// to clear its idempotency entry.
type ResendParams struct {
	// ID is the job's id.
	ID string
	// Forget clears the entry of the job's idempotency key in the store
	// the workers' transport dedupes by, so that the next send goes: the
	// Forget method of the mail/idempotency.Store of the workers'
	// IdempotencyTransport (the key is the job's id: the worker sets
	// mail.Message.IdempotencyKey to it). A key that holds no entry is no
	// error. Required (ErrNoForget): workers with no such store have
	// nothing to forget; give a func that returns nil.
	Forget func(ctx context.Context, key string) error
}

// ResumeParams say which pause Pauser.Resume ends.
type ResumeParams struct {
	// Tenant is true to end the pause of the jobs of TenantID alone ("" is
	// the jobs of no tenant); false to end the pause of the whole queue.
	Tenant   bool
	TenantID string
}

// Inspector reads what a store holds, for an operator's tool. Its methods
// change nothing a worker would see, and are safe for concurrent use.
type Inspector interface {
	// Stats counts the jobs by state and tells the pauses in place.
	Stats(ctx context.Context) (Stats, error)
	// Jobs lists a page of the jobs of p.State, in the order JobPage
	// tells. A job that moves between the pages may be left out or listed
	// twice. It returns an error for an unknown state or a cursor it did
	// not make.
	Jobs(ctx context.Context, p JobsParams) (JobPage, error)
	// Get returns the job of the id, or an error wrapping ErrNotFound.
	Get(ctx context.Context, id string) (JobRow, error)
	// Failed returns up to limit jobs failed for good: the failed ones,
	// then those of unknown delivery, each the oldest first.
	Failed(ctx context.Context, limit int) ([]JobRow, error)
}

// Operator is an Inspector that can also repair a store: run a failed job
// again, forget finished jobs, and pause or resume the queue or a tenant.
// The memory queue and the Redis driver are both Operators, as their
// Sources are.
type Operator interface {
	Inspector
	Pauser
	// RetryFailed queues a failed job (failed or delivery_unknown) again,
	// due now, its attempts and redeliveries reset. It returns an error
	// wrapping ErrNotFound, ErrNotFailed or ErrNoData when it cannot.
	//
	// Under an IdempotencyTransport (mail/idempotency), a job whose key
	// holds a receipt (a send accepted, or of unknown delivery) or a
	// reservation (a run that died mid-send) is not sent again: its run
	// answers the stored receipt for as long as it is kept (a day), and
	// a job of unknown delivery ends delivery_unknown again. That is the
	// safe side, as the message may have been accepted; to send it again
	// all the same, use Resend.
	RetryFailed(ctx context.Context, id string) error
	// Resend sends a failed job (failed or delivery_unknown) again: it
	// clears the job's idempotency entry through p.Forget, then queues
	// the job again as RetryFailed does. The recipient may get the
	// message twice: a job of unknown delivery may have been accepted.
	// It returns an error wrapping ErrNoForget, ErrNotFound, ErrNotFailed
	// or ErrNoData, checked before anything is forgotten, or the error
	// of p.Forget, the job then left as it was. Between Forget and the
	// queueing, the entry is gone and the job still failed: a crash there
	// leaves a job that RetryFailed sends (its key now holds nothing).
	Resend(ctx context.Context, p ResendParams) error
	// Purge drops the finished jobs of p.State that finished at least
	// p.OlderThan ago, and returns how many. Queued and running jobs are
	// never purged. A purged job is gone for every other operation
	// (ErrNotFound), but keeps its {v, hash} until its retention would
	// have ended (DedupeWindow for an accepted job, RetainFailed for the
	// others), so that an enqueue under its key is still a Duplicate;
	// with p.ForgetKeys it is forgotten whole, and an enqueue under its
	// key stores it and sends it again.
	Purge(ctx context.Context, p PurgeParams) (int, error)
}

// ResendByRetry is Operator.Resend made of an operator's Get and its
// RetryFailed (retry), for a driver: it checks the job (ErrNoForget,
// ErrNotFound, ErrNotFailed, ErrNoData) before it forgets anything, then
// forgets the job's idempotency entry, then queues the job again. The
// entry is cleared before the job is queued, so that no run of the job
// can answer the old receipt.
func ResendByRetry(ctx context.Context, in Inspector, retry func(ctx context.Context, id string) error, p ResendParams) error {
	if p.Forget == nil {
		return ErrNoForget
	}
	j, err := in.Get(ctx, p.ID)
	if err != nil {
		return err
	}
	switch {
	case j.State != JobFailed && j.State != JobDeliveryUnknown:
		return fmt.Errorf("mailqueue: resend: %w: %s is %s", ErrNotFailed, p.ID, j.State)
	case !j.DataKept:
		return fmt.Errorf("mailqueue: resend: %w: %s", ErrNoData, p.ID)
	}
	if err := p.Forget(ctx, p.ID); err != nil {
		return fmt.Errorf("mailqueue: resend %s: clearing its idempotency entry (the job is left as it was): %w", p.ID, err)
	}
	return retry(ctx, p.ID)
}
