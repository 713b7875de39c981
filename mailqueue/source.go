package mailqueue

import (
	"context"
	"time"

	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/gen/jobv1"
)

// Source is the smallest store contract (the spec's QueueSource): a store
// that keeps jobs and lends them out under leases. The polling driver
// (drivers/polling) turns any Source into a Driver; the memory queue
// (drivers/memory) and the Redis driver (drivers/redis) are Sources, and
// conformance.TestSource (package conformance) holds each to the same
// semantics.
//
// This interface is a public promise: outsiders implement it. Every method
// takes ctx first and a params struct, so fields can be added without
// breaking implementations.
//
// Settles (Ack, Retry, Fail, Release) and Extend are fenced by the lease
// token alone: when the token is not the job's current one (another run took
// the job since, or the job was settled already) they change nothing and
// return false with a nil error. A lease that ran out does not fence its
// run: while no other run took the job, its token is still the current one,
// and a settle or an extend with it applies (docs/architecture.md, "Fenced
// by the token"). A non-nil error means the store could not be asked; the
// job must then be left as it was.
//
// Time is the store's (docs/architecture.md, "Time is the store's"): when a
// job is due, when a lease runs out and when a retention ends are decided on
// the store's clock, never on a producer's or a worker's. A NewJob with no
// RunAt is due at the store's now, and a Lease tells the store's now
// (Lease.Now), so that a worker decides expiry on the store's clock.
type Source interface {
	// Enqueue stores jobs, each atomically. A job whose ID is stored already
	// (in any state, including finished jobs still retained) is not stored
	// again: its result is Duplicate when the stored hash equals Hash, and
	// Conflict otherwise. The results are in the order of jobs.
	Enqueue(ctx context.Context, jobs []NewJob) ([]EnqueueResult, error)
	// Reserve leases up to p.Limit jobs that are due, by priority (high,
	// normal, low) then by the time they became due, for p.LeaseDuration,
	// each with a fresh token. A job whose lease ran out is due again (as of
	// the end of that lease) and counts a redelivery when a run takes it;
	// its new token fences the run before. It returns no jobs and a nil
	// error when none is due.
	Reserve(ctx context.Context, p ReserveParams) ([]*Lease, error)
	// Extend moves the end of a lease to now + p.Duration, by the store's
	// clock. A lease that ran out is extended while its token is current
	// (no other run took the job): the run holds the job again.
	Extend(ctx context.Context, p ExtendParams) (bool, error)
	// Ack settles a run as accepted: the job is done, an attempt spent.
	Ack(ctx context.Context, p AckParams) (bool, error)
	// Retry spends an attempt and makes the job due again after p.Delay.
	Retry(ctx context.Context, p RetryParams) (bool, error)
	// Fail settles the job for good in p.State (failed or delivery_unknown),
	// an attempt spent.
	Fail(ctx context.Context, p FailParams) (bool, error)
	// Release gives the job back without spending an attempt, due again
	// after p.Delay.
	Release(ctx context.Context, p ReleaseParams) (bool, error)
}

// NewJob is a job as a producer hands it to a store.
type NewJob struct {
	// ID is the job's id, derived from its namespace, tenant and key.
	ID string
	// Hash is the job's hash (docs/wire.md); duplicates are told by it.
	Hash string
	// Data is the job's JSON as stored: the clear or the sealed shape.
	Data []byte
	// Priority orders the job; the zero value is normal.
	Priority jobv1.Priority
	// TenantID is the job's tenant, for fairness and pauses; empty for none.
	TenantID string
	// RunAt is when the job becomes due: its scheduledAt, an instant the
	// store compares with its own clock. The zero value means now by the
	// store's clock, when the store receives the job: a job with no
	// scheduledAt never waits for a producer's clock that is ahead (Queue's
	// enqueue gives zero then).
	RunAt time.Time
	// MaxAttempts is the attempts in all.
	MaxAttempts int
	// EnqueuedAt is when the producer enqueued it, by the producer's clock:
	// kept and told back as given (Lease.EnqueuedAt, JobRow.EnqueuedAt),
	// never used to decide when the job is due. The zero value takes the
	// store's now.
	EnqueuedAt time.Time
}

// EnqueueResult is what a store did with one NewJob.
type EnqueueResult struct {
	// ID is the job's id.
	ID string
	// Duplicate is true when the job was stored already with the same hash.
	Duplicate bool
	// Conflict is true when a job of that id was stored with another hash:
	// the key was used before for another message (queue.key_reused).
	Conflict bool
}

// ReserveParams are the arguments of Source.Reserve.
type ReserveParams struct {
	// Limit is the most jobs to lease; at least 1.
	Limit int
	// LeaseDuration is how long each lease lasts unless extended.
	LeaseDuration time.Duration
}

// Lease is a job lent to one run.
type Lease struct {
	// ID is the job's id.
	ID string
	// Token fences the run's settles: a fresh value per lease.
	Token string
	// Data is the job's JSON as stored.
	Data []byte
	// Attempt is the number of this attempt, from 1: the attempts spent
	// before it, plus one.
	Attempt int
	// MaxAttempts is the attempts in all, as the store records them; 0
	// when the store does not tell. The worker decides on the job's own
	// maxAttempts and refuses a lease whose non-zero value differs
	// (queue.job_tampered), as it does for Priority and TenantID.
	MaxAttempts int
	// Redeliveries counts the runs of the job that ended unsettled (their
	// lease ran out), this one excluded.
	Redeliveries int
	// Priority is the job's priority, as the store records it; the zero
	// value when the store does not tell.
	Priority jobv1.Priority
	// TenantID is the job's tenant, as the store records it; empty for
	// none. A source always tells it: the worker refuses a lease whose
	// tenant is not the job's.
	TenantID string
	// EnqueuedAt is when the job was enqueued, as the producer told it.
	EnqueuedAt time.Time
	// Until is when the lease runs out unless extended, on the clock of the
	// driver that keeps it (the polling driver's Clock): a store in the
	// process gives its own clock's; a store over the network may give the
	// local time before the call plus the lease, so that Until never comes
	// later than the end the store holds.
	Until time.Time
	// Now is the store's clock when it made the lease. A worker measures
	// its offset to the store by it (Now minus its own clock's now when it
	// gets the lease) and decides expiry on the store's clock. The zero
	// value, from a source that does not tell, leaves the worker on its own
	// clock.
	Now time.Time
}

// ExtendParams are the arguments of Source.Extend.
type ExtendParams struct {
	// ID is the job's id; Token the token of the lease that settles it.
	ID, Token string
	// Duration is the new length of the lease, from now.
	Duration time.Duration
}

// AckParams are the arguments of Source.Ack.
type AckParams struct {
	// ID is the job's id; Token the token of the lease that settles it.
	ID, Token string
}

// RetryParams are the arguments of Source.Retry.
type RetryParams struct {
	// ID is the job's id; Token the token of the lease that settles it.
	ID, Token string
	// Delay is how long from now the job waits before it is due again.
	Delay time.Duration
	// Code and Reason tell why; stored as the job's last error. Reason
	// holds no address and no text of the message or of a server's reply.
	Code   codes.Code
	Reason string
}

// FailParams are the arguments of Source.Fail.
type FailParams struct {
	// ID is the job's id; Token the token of the lease that settles it.
	ID, Token string
	// State is codes.StateFailed or codes.StateDeliveryUnknown.
	State codes.State
	// Code and Reason tell why; stored as the job's last error. Reason
	// holds no address and no text of the message or of a server's reply.
	Code   codes.Code
	Reason string
}

// ReleaseParams are the arguments of Source.Release.
type ReleaseParams struct {
	// ID is the job's id; Token the token of the lease that settles it.
	ID, Token string
	// Delay is how long from now the job waits before it is due again.
	Delay time.Duration
	// Code and Reason tell why; stored as the job's last error. Reason
	// holds no address and no text of the message or of a server's reply.
	Code   codes.Code
	Reason string
}
