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

// prepare checks a job and makes what the driver stores.
func (q *Queue) prepare(in *jobv1.Job) (NewJob, Result, *Error) {
	if in == nil {
		return NewJob{}, Result{}, newError(codes.QueueInvalidJob, "the job is nil")
	}
	job := *in // a shallow copy: the slices we change are copied below
	if fe := checkValues(&job); len(fe) > 0 {
		return NewJob{}, Result{}, fieldsError(codes.QueueInvalidJob, fe)
	}
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
	now := q.cfg.Clock.Now()
	job.EnqueuedAt = utcMillis(now)
	job.ScheduledAt = utcMillisPtr(job.ScheduledAt)
	job.ExpiresAt = utcMillisPtr(job.ExpiresAt)
	id := q.cfg.DeriveID(IDKindJob, q.jobIDSeed(job.TenantID, job.IdempotencyKey))
	if job.MessageID == "" {
		job.MessageID = q.messageID(id, job.From)
	}
	inline := 0
	if len(job.Attachments) > 0 {
		job.Attachments = append([]jobv1.Attachment(nil), job.Attachments...)
		for i := range job.Attachments {
			if job.Attachments[i].ContentID == "" {
				job.Attachments[i].ContentID = q.contentID(id, job.From, i)
			}
			inline += len(job.Attachments[i].Content)
		}
	}
	// Check the job as it will be stored, in its JSON form: turned into
	// JSON values directly (jobv1.EncodeValue), or through encoding/json
	// when its context holds what only encoding/json knows how to write.
	var generic any
	if v, ok := jobv1.EncodeValue(&job); ok {
		generic = v
	} else {
		raw, err := json.Marshal(&job)
		if err != nil {
			e := newError(codes.QueueInvalidJob, "the job does not encode as JSON")
			e.Err = err
			return NewJob{}, Result{}, e
		}
		if generic, err = strictjson.Decode(raw); err != nil {
			e := newError(codes.QueueInvalidJob, "the job does not decode from its JSON")
			e.Err = err
			return NewJob{}, Result{}, e
		}
	}
	if err := jobv1.ValidateValue(generic); err != nil {
		return NewJob{}, Result{}, validationError(err)
	}
	if inline > q.cfg.MaxInlineAttachmentBytes {
		return NewJob{}, Result{}, fieldsError(codes.QueueInvalidJob, []FieldError{{
			Path: "attachments", Pointer: "/attachments", Rule: "maxInlineAttachmentBytes",
			Reason: fmt.Sprintf("the inline attachments hold %d bytes, more than the %d allowed", inline, q.cfg.MaxInlineAttachmentBytes),
		}})
	}
	obj := generic.(map[string]any)
	hash, err := hashOf(obj)
	if err != nil {
		e := newError(codes.QueueInvalidJob, "the job has no canonical JSON")
		e.Err = err
		return NewJob{}, Result{}, e
	}
	obj["hash"] = hash
	// The queue owns kid and mac: a producer's are dropped, then the job is
	// sealed and signed, the mac over what is stored (docs/wire.md).
	delete(obj, "kid")
	delete(obj, "mac")
	if q.cfg.Codec != nil {
		// prepare has no ctx of its caller yet (queue.go); the codec's
		// Encode gets one that is never cancelled.
		sealed, err := seal(context.Background(), q.cfg.Codec, obj)
		if err != nil {
			e := newError(codes.QueueCodecFailed, "the codec could not seal the job")
			e.Err = err
			return NewJob{}, Result{}, e
		}
		obj = sealed
	}
	if err := signJob(q.cfg.SigningKeys, obj); err != nil {
		e := newError(codes.QueueInvalidJob, "the job has no canonical JSON")
		e.Err = err
		return NewJob{}, Result{}, e
	}
	data, err := jcs.Marshal(obj)
	if err != nil {
		e := newError(codes.QueueInvalidJob, "the job has no canonical JSON")
		e.Err = err
		return NewJob{}, Result{}, e
	}
	if len(data) > q.cfg.MaxJobBytes {
		return NewJob{}, Result{}, fieldsError(codes.QueueInvalidJob, []FieldError{{
			Rule: "maxJobBytes", Reason: fmt.Sprintf("the job is %d bytes, more than the %d allowed", len(data), q.cfg.MaxJobBytes),
		}})
	}
	runAt := *job.EnqueuedAt
	if job.ScheduledAt != nil && job.ScheduledAt.After(runAt) {
		runAt = *job.ScheduledAt
	}
	nj := NewJob{
		ID: id, Hash: hash, Data: data, Priority: job.Priority, TenantID: job.TenantID,
		RunAt: runAt, MaxAttempts: job.MaxAttempts, EnqueuedAt: *job.EnqueuedAt,
	}
	return nj, Result{ID: id, MessageID: job.MessageID, Hash: hash}, nil
}

// validationError turns the validator's error into a queue.invalid_job.
func validationError(err error) *Error {
	var ve *jobv1.ValidationError
	if !errors.As(err, &ve) {
		e := newError(codes.QueueInvalidJob, "the job is not valid")
		e.Err = err
		return e
	}
	fields := make([]FieldError, len(ve.Errors))
	for i, f := range ve.Errors {
		fields[i] = FieldError{Path: f.Path, Pointer: f.Pointer, Rule: f.Rule, Reason: f.Message}
	}
	e := fieldsError(codes.QueueInvalidJob, fields)
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
