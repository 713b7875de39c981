package mailqueue

import (
	"context"
	"errors"
	"fmt"

	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/internal/strictjson"
)

// EnqueueJSON enqueues the job data holds as JSON, the way a gateway for
// producers in other languages or a file hands it: a clear job of version 1
// as schema/job.v1.json says (v, kind, from and to required), which the
// queue then fills in, seals and signs as Enqueue does. Nothing is stored
// when the job is refused.
//
// It refuses what a worker refuses, in the order a worker reads a job
// (docs/wire.md, "What a worker checks"), each refusal an *Error with code
// queue.invalid_job and the JSON pointer of the bad value:
//
//   - data longer than MaxJobBytes, before it is read at all (rule
//     maxJobBytes);
//   - text a strict reader refuses (rule json, internal/strictjson): not
//     JSON, not UTF-8, a \u escape of a lone surrogate, a name twice in one
//     object (RFC 7493), an integer beyond 2^53-1 or a number beyond a
//     double, nesting deeper than a context may;
//   - the schema and the rules it cannot say, on the value as given (so
//     "maxAttempts": 0 is refused, never read as absent), as jobv1.Validate
//     does: the verdicts of jobv1.Validate, mailq validate and EnqueueJSON
//     on a clear job's bytes are the same;
//   - a sealed job (one with enc: rule clear), which only the queue seals;
//   - then every check of Enqueue, such as MaxJobBytes on the stored bytes,
//     which hold the hash, the Message-ID and enqueuedAt besides.
//
// A report lists at most MaxFieldErrors bad values; More counts the rest.
func (q *Queue) EnqueueJSON(ctx context.Context, data []byte) (Result, error) {
	rs, err := q.EnqueueManyJSON(ctx, [][]byte{data})
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.Index = -1
		}
		return Result{}, err
	}
	return rs[0], nil
}

// EnqueueManyJSON enqueues the jobs items hold as JSON in one call to the
// driver, as EnqueueMany does: every item is checked first, as EnqueueJSON
// checks it, and when one is refused none is stored and the *Error's Index
// tells which.
func (q *Queue) EnqueueManyJSON(ctx context.Context, items [][]byte) ([]Result, error) {
	if len(items) == 0 {
		return nil, nil
	}
	jobs := make([]*jobv1.Job, len(items))
	for i, data := range items {
		job, e := q.readJSON(data)
		if e != nil {
			e.Index = i
			return nil, e
		}
		jobs[i] = job
	}
	return q.EnqueueMany(ctx, jobs)
}

// readJSON reads a job given as JSON: its size before anything else, the
// text as a worker reads it, the schema on the value as given, and the
// job decoded from that very value.
func (q *Queue) readJSON(data []byte) (*jobv1.Job, *Error) {
	if len(data) > q.cfg.MaxJobBytes {
		return nil, invalidJob([]FieldError{{
			Rule: "maxJobBytes", Reason: fmt.Sprintf("the job's JSON is %d bytes, more than the %d allowed; it was not read", len(data), q.cfg.MaxJobBytes),
		}})
	}
	if err := strictjson.Check(data); err != nil {
		return nil, strictError(err)
	}
	v, err := strictjson.Decode(data)
	if err != nil { // Check took it: not expected
		return nil, causeError(codes.QueueInvalidJob, "the job is not valid JSON", err)
	}
	if err := jobv1.ValidateValue(v); err != nil {
		return nil, validationError(err)
	}
	obj := v.(map[string]any) // the schema takes only an object
	if _, sealed := obj["enc"]; sealed {
		return nil, invalidJob([]FieldError{{
			Path: "enc", Pointer: "/enc", Rule: "clear",
			Reason: "is the sealed part of a job: give the clear job, which the queue seals with its codec",
		}})
	}
	job, _, err := jobv1.DecodeValue(obj)
	if err != nil || job == nil {
		return nil, causeError(codes.QueueInvalidJob, "the job does not decode", err)
	}
	return job, nil
}

// strictError is the queue.invalid_job of a text strictjson refused, at the
// pointer of the value at fault.
func strictError(err error) *Error {
	var se *strictjson.Error
	if !errors.As(err, &se) {
		return causeError(codes.QueueInvalidJob, "the job is not valid JSON", err)
	}
	e := invalidJob([]FieldError{{Path: se.Path, Pointer: se.Pointer, Rule: "json", Reason: se.Reason}})
	e.Err = err
	return e
}
