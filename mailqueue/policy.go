package mailqueue

// RetainData says which finished jobs keep their message in the store
// (docs/spec/queue.md, "What a job holds": retainData). A job that drops it
// keeps its id, version and hash, so an enqueue again is still told a
// duplicate. Every driver takes it; the zero value is RetainFailedData.
type RetainData string

// The retention policies.
const (
	// RetainFailedData keeps the message of the failed jobs only, for a retry
	// by hand. The default.
	RetainFailedData RetainData = "failed"
	// RetainAllData keeps the message of every finished job.
	RetainAllData RetainData = "all"
	// RetainNoData keeps no message of a finished job.
	RetainNoData RetainData = "none"
)

// Fairness is how a store shares its workers among tenants
// (docs/spec/queue.md, "Tenants in turn"). The zero value is FairnessNone.
type Fairness string

// The fairness policies.
const (
	// FairnessNone takes jobs by priority, then time. The default.
	FairnessNone Fairness = "none"
	// FairnessTenant takes a high job of any tenant first, then the tenants
	// in turn, a job each, the jobs of no tenant as one more.
	FairnessTenant Fairness = "tenant"
)

// JobState is where a stored job is, as a store's operations tell it (its
// List, Jobs, Stats). A job moves queued -> running -> (accepted | failed |
// delivery_unknown), or back to queued on a retry, a release or a lease
// that ran out; RetryFailed moves a failed job back to queued.
type JobState string

// The states of a stored job.
const (
	// JobQueued: waiting to be due, or due and waiting for a worker. An
	// enqueue, a retry, a release, a lease that ran out and RetryFailed move
	// a job here; a reserve moves it to running.
	JobQueued JobState = "queued"
	// JobRunning: leased by a run. Its settle moves it on.
	JobRunning JobState = "running"
	// JobAccepted: done, the message accepted (Ack); kept for the dedupe
	// window.
	JobAccepted JobState = "accepted"
	// JobFailed: failed for good (Fail); kept RetainFailed.
	JobFailed JobState = "failed"
	// JobDeliveryUnknown: failed for good, the message may have gone
	// (Fail); kept RetainFailed.
	JobDeliveryUnknown JobState = "delivery_unknown"
)
