package mailqueue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/google/uuid"

	"github.com/alexify/mailer/clock"
	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/internal/sign"
	"github.com/alexify/mailer/mail"
)

// The defaults a zero field of Config takes (spec: "Defaults").
const (
	DefaultNamespace                = "mail"
	DefaultMaxAttempts              = 5
	DefaultMaxJobBytes              = 256 << 10
	DefaultMaxInlineAttachmentBytes = 256 << 10
)

// Config configures a Queue. A zero field takes the spec's default.
type Config struct {
	// Driver stores the jobs. Required.
	Driver Driver
	// Namespace scopes the ids of the jobs; "mail" when empty. Producers and
	// workers of one queue share it; the mac and the codec's associated
	// data bind it, so a job of another namespace is refused.
	Namespace string
	// MaxAttempts is the attempts of a job that sets none (5).
	MaxAttempts int
	// MaxJobBytes is the most bytes of a job's stored JSON (256 KiB), sealed
	// and signed. EnqueueJSON refuses JSON longer than it before reading
	// it; a worker fails unread a stored job longer than twice it
	// (docs/wire.md, "What a worker checks").
	MaxJobBytes int
	// MaxInlineAttachmentBytes is the most bytes of a job's inline
	// attachments, decoded, in all (256 KiB).
	MaxInlineAttachmentBytes int
	// IDSecret, when set (at least 32 bytes), derives job ids with an
	// HMAC-SHA256 instead of a SHA-256, so an id cannot be found again by
	// hashing the keys one can guess. It must be the same on every producer
	// and every worker (a worker derives the id of each job it reads and
	// refuses one stored under another, queue.job_tampered) and is never
	// rotated: another secret derives other ids, and the same
	// message enqueued again would be another job, sent twice (spec: "Once
	// per key").
	IDSecret []byte
	// GenerateID draws the identifiers a job draws: its idempotency key when
	// it gives none. A random UUID (version 4) by default.
	GenerateID func() string
	// DeriveID makes the identifiers a job derives from a seed (a SHA-256 in
	// hexadecimal): its id, Message-ID and Content-IDs. It must give the same
	// identifier for the same seed; New checks it. DeriveUUID by default.
	// Producers and workers must share it: a worker derives each job's id
	// with it.
	DeriveID func(kind, seed string) string
	// SigningKeys sign every job with an HMAC-SHA256 (kid, mac): the first
	// key signs, every key verifies; each secret is at least 32 bytes. A
	// worker given keys fails a job none of them signed with
	// queue.signature_invalid, unsent, so that whoever can write to the
	// store cannot send mail from your domain. To rotate, put the new key
	// first, deploy the workers, then the producers, and drop the old key
	// once no job it signed is left; give every worker the keys before any
	// producer, as a worker without keys checks the hash alone (spec:
	// "Signed jobs").
	SigningKeys []SigningKey
	// Codec, when set, seals each job: the store keeps in clear only v,
	// hash, enqueuedAt, correlationId, kid, mac and trace, and the rest
	// (addresses, context, attachments) is enc. A worker without a codec
	// gives a sealed job back for a worker that has one, and the attempt is
	// not spent (queue.codec_missing). Sealing is not a signature: seal with
	// SigningKeys too (spec: "Sealed jobs").
	Codec Codec
	// Audit hears "queued" at each enqueue; nil for none.
	Audit AuditSink
	// AuditStrict refuses an enqueue whose "queued" event the sink failed,
	// before anything is stored.
	AuditStrict bool
	// OnWarning, when set, hears each warning (MAILER_AUDIT_FAILED, ...)
	// besides the log's warn record: the spec's process warnings.
	OnWarning func(code codes.Code, err error)
	// Logger hears what the queue does; never an address. slog.Default()
	// when nil.
	Logger *slog.Logger
	// Clock is the time source; the wall clock when nil.
	Clock clock.Clock
}

// Queue enqueues mail jobs and makes workers for them.
type Queue struct {
	cfg Config
	log *slog.Logger
	// name is the Driver's queue name (QueueNamer), read once by New: the
	// mac and the codec's associated data bind it.
	name string
}

// New returns a Queue. It returns an *OptionError when Driver is nil,
// MaxAttempts is not within 1 to 100, a size is negative or IDSecret is
// shorter than 32 bytes, or the Namespace or the Driver's queue name
// (QueueNamer) is not valid UTF-8; and an error when a signing key is
// refused or DeriveID does not give the same id for the same seed.
func New(cfg Config) (*Queue, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	name := queueNameOf(cfg.Driver)
	if err := CheckQueueName("mailqueue", "Config.Driver's QueueName", name); err != nil {
		return nil, err
	}
	return &Queue{cfg: cfg, log: cfg.Logger, name: name}, nil
}

// binding is where a job of this queue is stored under id: the namespace,
// the queue's name and the id, which the mac and the codec's associated
// data bind.
func (q *Queue) binding(id string) sign.Binding {
	return sign.Binding{Namespace: q.cfg.Namespace, Queue: q.name, ID: id}
}

// withDefaults returns a copy of the config whose zero fields take their
// defaults. It leaves the values out of range to validate.
func (c Config) withDefaults() Config {
	if c.Namespace == "" {
		c.Namespace = DefaultNamespace
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.MaxJobBytes == 0 {
		c.MaxJobBytes = DefaultMaxJobBytes
	}
	if c.MaxInlineAttachmentBytes == 0 {
		c.MaxInlineAttachmentBytes = DefaultMaxInlineAttachmentBytes
	}
	if c.GenerateID == nil {
		c.GenerateID = uuid.NewString
	}
	if c.DeriveID == nil {
		c.DeriveID = DeriveUUID
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Clock == nil {
		c.Clock = clock.Real()
	}
	return c
}

// validate refuses a config New cannot honour, naming the field and its
// value (never a secret's bytes).
func (c Config) validate() error {
	const pkg = "mailqueue"
	if c.Driver == nil {
		return &OptionError{Package: pkg, Option: "Config.Driver", Rule: "is required"}
	}
	if err := CheckQueueName(pkg, "Config.Namespace", c.Namespace); err != nil {
		return err
	}
	if c.MaxAttempts < 1 || c.MaxAttempts > 100 {
		return &OptionError{Package: pkg, Option: "Config.MaxAttempts", Value: c.MaxAttempts, Rule: "is not within 1 to 100"}
	}
	if err := CheckNotNegative(pkg, "Config.MaxJobBytes", c.MaxJobBytes); err != nil {
		return err
	}
	if err := CheckNotNegative(pkg, "Config.MaxInlineAttachmentBytes", c.MaxInlineAttachmentBytes); err != nil {
		return err
	}
	if c.IDSecret != nil && len(c.IDSecret) < 32 {
		return &OptionError{Package: pkg, Option: "Config.IDSecret", Rule: fmt.Sprintf("is %d bytes, shorter than 32", len(c.IDSecret))}
	}
	if err := checkSigningKeys(c.SigningKeys); err != nil {
		return err
	}
	return checkDeriveID(c.DeriveID)
}

// Result is what an enqueue did.
type Result struct {
	// ID is the job's id.
	ID string
	// MessageID is the Message-ID its message is sent with.
	MessageID string
	// Hash is the job's hash.
	Hash string
	// Duplicate is true when the same message was enqueued before under the
	// same key: nothing new was stored.
	Duplicate bool
	// KeyReused is true, in the results EnqueueMany returns with a
	// queue.key_reused error, for a job refused because its key was
	// enqueued before for another message: nothing was stored for it.
	KeyReused bool
}

// Enqueue checks job and stores it. Nothing is stored when the job is
// refused.
//
// The job is checked before anything is stored: against schema/job.v1.json;
// its context must round-trip through JSON; its stored JSON is at most
// MaxJobBytes and its inline attachments at most MaxInlineAttachmentBytes.
// A refusal is an *Error with code queue.invalid_job and the path of the bad
// value (the first MaxFieldErrors bad values, More counting the rest). The job's id derives from the namespace, the tenant and the
// idempotency key, so the same message enqueued again under the same key
// answers Duplicate with the same id and stores nothing; another message
// under the key is refused with queue.key_reused (spec: "Once per key").
//
// Enqueue fills in, on a copy, what the job leaves out: v, the idempotency
// key (drawn), the Message-ID and the Content-IDs (derived from the job's
// id), maxAttempts, priority and enqueuedAt; times are stored in UTC to the
// millisecond.
func (q *Queue) Enqueue(ctx context.Context, job *jobv1.Job) (Result, error) {
	rs, err := q.EnqueueMany(ctx, []*jobv1.Job{job})
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.Index = -1
		}
		return Result{}, err
	}
	return rs[0], nil
}

// EnqueueMany enqueues jobs in one call to the driver. Every job is checked
// first: when one is refused, none is stored and the *Error's Index tells
// which. A job refused for queue.key_reused is refused only once every other
// job of the call is stored; the results of all are then returned with the
// error.
//
// When the store fails (it is down, full, or answers an error), the error
// is an *Error with code queue.store_failed and Index -1, wrapping the
// driver's error (errors.Is finds it, such as memory.ErrFull): the jobs of
// the call may or may not be stored, and enqueuing them again under the
// same keys is safe (a job stored already answers Duplicate).
func (q *Queue) EnqueueMany(ctx context.Context, jobs []*jobv1.Job) ([]Result, error) {
	return q.enqueueMany(ctx, jobs, func(ctx context.Context, e AuditEvent) error {
		return q.cfg.Audit.Record(ctx, e)
	}, q.cfg.Driver.Enqueue)
}

// enqueueMany checks and prepares jobs, tells the audit sink through record,
// and stores them through store: the body of EnqueueMany and
// EnqueueManyTx.
func (q *Queue) enqueueMany(ctx context.Context, jobs []*jobv1.Job, record func(context.Context, AuditEvent) error,
	store func(context.Context, []NewJob) ([]EnqueueResult, error)) ([]Result, error) {
	if len(jobs) == 0 {
		return nil, nil // nothing to store: the driver is not asked
	}
	prepared := make([]NewJob, len(jobs))
	results := make([]Result, len(jobs))
	for i, job := range jobs {
		nj, r, err := q.prepare(ctx, job)
		if err != nil {
			err.Index = i
			return nil, err
		}
		prepared[i], results[i] = nj, r
	}
	if q.cfg.Audit != nil {
		for i := range prepared {
			err := record(ctx, AuditEvent{JobID: prepared[i].ID, State: AuditQueued, At: q.cfg.Clock.Now(), TenantID: prepared[i].TenantID, CorrelationID: jobs[i].CorrelationID})
			if err != nil {
				q.log.Warn(string(codes.QueueAuditFailed), "job_id", prepared[i].ID, "err", err)
				q.warn(codes.MailerAuditFailed, err, "job_id", prepared[i].ID)
				if q.cfg.AuditStrict {
					e := newError(codes.AuditFailed, "the audit sink failed; nothing was enqueued")
					e.Err, e.Index = err, i
					return nil, e
				}
			}
		}
	}
	stored, err := store(ctx, prepared)
	if errors.Is(err, ErrTransactionUnsupported) {
		return nil, err
	}
	if err != nil {
		// A refusal the driver coded itself (queue.invalid_job of a job the
		// store cannot hold) keeps its code; any other failure of the store
		// is queue.store_failed, wrapping the driver's error (issue 10,
		// point 9).
		var e *Error
		if errors.As(err, &e) {
			return nil, err
		}
		reason := "the store failed the enqueue: " + mail.Redact(err.Error())
		q.log.Error(string(codes.QueueStoreFailed), "job_id", prepared[0].ID, "jobs", len(prepared), "reason", reason)
		return nil, causeError(codes.QueueStoreFailed, reason, err)
	}
	if len(stored) != len(prepared) {
		reason := fmt.Sprintf("the driver answered %d results for %d jobs", len(stored), len(prepared))
		q.log.Error(string(codes.QueueStoreFailed), "job_id", prepared[0].ID, "jobs", len(prepared), "reason", reason)
		return nil, newError(codes.QueueStoreFailed, reason)
	}
	var reused []string
	for i, s := range stored {
		switch {
		case s.Conflict:
			reused = append(reused, s.ID)
			results[i].KeyReused = true
			q.log.Warn(string(codes.QueueKeyReused), "job_id", s.ID)
		case s.Duplicate:
			results[i].Duplicate = true
			q.log.Debug(string(codes.QueueDuplicate), "job_id", s.ID)
		default:
			q.log.Debug(string(codes.QueueEnqueued), "job_id", s.ID, "priority", string(prepared[i].Priority))
		}
	}
	if len(reused) > 0 {
		e := newError(codes.QueueKeyReused, "the idempotency key was enqueued before for another message")
		e.JobIDs = reused
		return results, e
	}
	return results, nil
}

// warn logs a warning with its code and tells OnWarning.
func (q *Queue) warn(code codes.Code, err error, attrs ...any) {
	q.log.Warn(string(code), append(attrs, "err", err)...)
	if q.cfg.OnWarning != nil {
		q.cfg.OnWarning(code, err)
	}
}

// canPause reports whether the driver can pause: it is a Pauser, and when
// it says whether it can (CanPause, as the polling driver does for its
// source), it can.
func (q *Queue) canPause() bool {
	if _, ok := q.cfg.Driver.(Pauser); !ok {
		return false
	}
	if c, ok := q.cfg.Driver.(interface{ CanPause() bool }); ok {
		return c.CanPause()
	}
	return true
}

// Resume ends a pause of the whole queue before its time. It returns an
// error when the driver cannot pause.
func (q *Queue) Resume(ctx context.Context) error {
	p, ok := q.cfg.Driver.(Pauser)
	if !ok {
		return errors.New("mailqueue: the driver cannot pause")
	}
	return p.Resume(ctx, ResumeParams{})
}

// ResumeTenant ends a pause of a tenant's jobs before its time ("" is the
// jobs of no tenant).
func (q *Queue) ResumeTenant(ctx context.Context, tenantID string) error {
	p, ok := q.cfg.Driver.(Pauser)
	if !ok {
		return errors.New("mailqueue: the driver cannot pause")
	}
	return p.Resume(ctx, ResumeParams{Tenant: true, TenantID: tenantID})
}
