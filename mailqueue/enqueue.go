package mailqueue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/internal/jcs"
	"github.com/alexify/mailer/internal/strictjson"
)

// prepare checks a job and makes what the driver stores. ctx is the
// caller's, for the codec's Encode.
func (q *Queue) prepare(ctx context.Context, in *jobv1.Job) (NewJob, Result, *Error) {
	if in == nil {
		return NewJob{}, Result{}, newError(codes.QueueInvalidJob, "the job is nil")
	}
	job := *in // a shallow copy: the slices fillIn changes are copied there
	if fe := checkValues(&job); len(fe) > 0 {
		return NewJob{}, Result{}, invalidJob(fe)
	}
	id, inline := q.fillIn(&job)
	obj, e := jobObject(&job)
	if e != nil {
		return NewJob{}, Result{}, e
	}
	if inline > q.cfg.MaxInlineAttachmentBytes {
		return NewJob{}, Result{}, invalidJob([]FieldError{{
			Path: "attachments", Pointer: "/attachments", Rule: "maxInlineAttachmentBytes",
			Reason: fmt.Sprintf("the inline attachments hold %d bytes, more than the %d allowed", inline, q.cfg.MaxInlineAttachmentBytes),
		}})
	}
	hash, data, e := q.stored(ctx, id, obj)
	if e != nil {
		return NewJob{}, Result{}, e
	}
	// A job not scheduled later is due at the store's now, told by a zero
	// RunAt: never at this process's enqueuedAt, whose clock may be ahead of
	// the store's (docs/architecture.md, "Time is the store's"). A
	// scheduledAt is an instant, and the store compares it with its clock.
	var runAt time.Time
	if job.ScheduledAt != nil && job.ScheduledAt.After(*job.EnqueuedAt) {
		runAt = *job.ScheduledAt
	}
	nj := NewJob{
		ID: id, Hash: hash, Data: data, Priority: job.Priority, TenantID: job.TenantID,
		RunAt: runAt, MaxAttempts: job.MaxAttempts, EnqueuedAt: *job.EnqueuedAt,
	}
	return nj, Result{ID: id, MessageID: job.MessageID, Hash: hash}, nil
}

// fillIn fills in, on the copy job, what the job leaves out: v,
// maxAttempts, priority, the idempotency key (drawn), enqueuedAt, the
// Message-ID and the Content-IDs (derived from the job's id); its times go
// to UTC, to the millisecond. It returns the job's id and the bytes of its
// inline attachments.
func (q *Queue) fillIn(job *jobv1.Job) (id string, inline int) {
	if job.V == 0 {
		job.V = jobv1.Version
	}
	if job.MaxAttempts == 0 {
		job.MaxAttempts = q.cfg.MaxAttempts
	}
	if job.Priority == "" {
		job.Priority = jobv1.PriorityNormal
	}
	if job.IdempotencyKey == "" {
		job.IdempotencyKey = q.cfg.GenerateID()
	}
	job.EnqueuedAt = utcMillis(q.cfg.Clock.Now())
	job.ScheduledAt = utcMillisPtr(job.ScheduledAt)
	job.ExpiresAt = utcMillisPtr(job.ExpiresAt)
	id = q.cfg.DeriveID(IDKindJob, q.jobIDSeed(job.TenantID, job.IdempotencyKey))
	if job.MessageID == "" {
		job.MessageID = q.messageID(id, job.From)
	}
	if len(job.Attachments) > 0 {
		job.Attachments = append([]jobv1.Attachment(nil), job.Attachments...)
		for i := range job.Attachments {
			if job.Attachments[i].ContentID == "" {
				job.Attachments[i].ContentID = q.contentID(id, job.From, i)
			}
			inline += len(job.Attachments[i].Content)
		}
	}
	return id, inline
}

// jobObject returns the job as it will be stored, in its JSON form, checked
// against the schema: turned into JSON values directly (jobv1.EncodeValue),
// or through encoding/json when its context holds what only encoding/json
// knows how to write.
func jobObject(job *jobv1.Job) (map[string]any, *Error) {
	var generic any
	if v, ok := jobv1.EncodeValue(job); ok {
		generic = v
	} else {
		raw, err := json.Marshal(job)
		if err != nil {
			return nil, causeError(codes.QueueInvalidJob, "the job does not encode as JSON", err)
		}
		if generic, err = strictjson.Decode(raw); err != nil {
			return nil, causeError(codes.QueueInvalidJob, "the job does not decode from its JSON", err)
		}
	}
	if err := jobv1.ValidateValue(generic); err != nil {
		return nil, validationError(err)
	}
	return generic.(map[string]any), nil
}

// stored returns the hash of a checked job and the bytes the store keeps:
// the job with its hash, sealed when the queue has a codec, then signed
// when it has keys (the mac over what is stored, docs/wire.md), in
// canonical JSON, at most MaxJobBytes. The codec's associated data and the
// mac bind the job to its id, the queue's name and the namespace. The
// queue owns kid and mac: a producer's are dropped.
func (q *Queue) stored(ctx context.Context, id string, obj map[string]any) (string, []byte, *Error) {
	hash, err := hashOf(obj)
	if err != nil {
		return "", nil, causeError(codes.QueueInvalidJob, "the job has no canonical JSON", err)
	}
	obj["hash"] = hash
	delete(obj, "kid")
	delete(obj, "mac")
	if q.cfg.Codec != nil {
		sealed, err := seal(ctx, q.cfg.Codec, q.binding(id), obj)
		if err != nil {
			return "", nil, causeError(codes.QueueCodecFailed, "the codec could not seal the job", err)
		}
		obj = sealed
	}
	if err := signJob(q.cfg.SigningKeys, q.binding(id), obj); err != nil {
		return "", nil, causeError(codes.QueueInvalidJob, "the job has no canonical JSON", err)
	}
	data, err := jcs.Marshal(obj)
	if err != nil {
		return "", nil, causeError(codes.QueueInvalidJob, "the job has no canonical JSON", err)
	}
	if len(data) > q.cfg.MaxJobBytes {
		return "", nil, invalidJob([]FieldError{{
			Rule: "maxJobBytes", Reason: fmt.Sprintf("the job is %d bytes, more than the %d allowed", len(data), q.cfg.MaxJobBytes),
		}})
	}
	return hash, data, nil
}

// validationError turns the validator's error into a queue.invalid_job.
func validationError(err error) *Error {
	var ve *jobv1.ValidationError
	if !errors.As(err, &ve) {
		return causeError(codes.QueueInvalidJob, "the job is not valid", err)
	}
	fields := make([]FieldError, len(ve.Errors))
	for i, f := range ve.Errors {
		fields[i] = FieldError{Path: f.Path, Pointer: f.Pointer, Rule: f.Rule, Reason: f.Message}
	}
	e := invalidJob(fields)
	e.More += ve.More
	e.Err = err
	return e
}

func utcMillis(t time.Time) *time.Time {
	u := t.UTC().Truncate(time.Millisecond)
	return &u
}

func utcMillisPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	return utcMillis(*t)
}
