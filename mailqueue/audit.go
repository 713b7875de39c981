package mailqueue

import (
	"context"
	"time"

	"github.com/alexify/mailer/gen/codes"
)

// AuditState is a state the audit sink is told of. The queue tells queued at
// the enqueue, before the job is stored; the worker tells rendered,
// submitted just before the send, then accepted, failed or
// delivery_unknown, and queued again for a retry (spec: "The audit and the
// log").
type AuditState string

// The states told to the audit sink, in the order a job goes through them.
const (
	// AuditQueued: enqueued, or queued again for a retry.
	AuditQueued AuditState = "queued"
	// AuditRendered: the message was rendered and built.
	AuditRendered AuditState = "rendered"
	// AuditSubmitted: told just before the send.
	AuditSubmitted AuditState = "submitted"
	// AuditAccepted: the transport accepted the message.
	AuditAccepted AuditState = "accepted"
	// AuditFailed: failed for good.
	AuditFailed AuditState = "failed"
	// AuditDeliveryUnknown: the message may have gone.
	AuditDeliveryUnknown AuditState = "delivery_unknown"
)

// AuditEvent is one state of one job. It holds no address.
type AuditEvent struct {
	// JobID is the job's id.
	JobID string
	// State is the state the job is in.
	State AuditState
	// At is when, on the queue's clock.
	At time.Time
	// Attempt is the attempt's number (0 at the enqueue).
	Attempt int
	// Code is the code of a failure or a retry, and Reason what it said
	// (never an address, nor a text of the message or of a server's
	// reply).
	Code   codes.Code
	Reason string
	// TenantID and CorrelationID are the job's, when it has them.
	TenantID, CorrelationID string
}

// AuditSink hears every state of every job. A sink that fails is a warning
// (MAILER_AUDIT_FAILED), unless the queue or the worker is strict
// (Config.AuditStrict refuses the enqueue, WorkerConfig.AuditStrict retries
// the job before the send), so that no message goes unrecorded.
type AuditSink interface {
	Record(ctx context.Context, e AuditEvent) error
}

// AuditHistory is an audit sink that can tell what it heard: the memory sink
// and a sink over a database can. With the Redelivered policy
// RedeliveredDeliveryUnknown, a run again of an attempt whose run died is
// sent when Has shows that run never submitted the message, since it cannot
// have sent it; otherwise it is failed as of unknown delivery (spec: "Once
// per key").
type AuditHistory interface {
	// Has reports whether the sink heard state for the attempt of the job.
	Has(ctx context.Context, jobID string, attempt int, state AuditState) (bool, error)
}
