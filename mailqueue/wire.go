package mailqueue

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/gen/jobv1"
)

// SigningKey is a key of Config.SigningKeys.
type SigningKey struct {
	// ID names the key in the job's kid.
	ID string
	// Secret is the HMAC-SHA256 key, at least 32 bytes.
	Secret []byte
}

// Codec seals and opens the message of a job (spec/queue.md, "Sealed
// jobs"). Encode turns the JSON of the sealed fields into the text of enc;
// Decode turns it back.
type Codec interface {
	Encode(ctx context.Context, plain []byte) (string, error)
	Decode(ctx context.Context, enc string) ([]byte, error)
}

// open reads the stored job: its version, shape, hash and schema.
func (w *Worker) open(ctx context.Context, r *run) (Outcome, bool) {
	v, err := decodeJSON(r.lease.Data)
	obj, isObj := v.(map[string]any)
	if err != nil || !isObj {
		return w.fail(ctx, r, codes.QueueInvalidJob, codes.StateFailed, "the stored job is not a JSON object"), false
	}
	if ver, _ := obj["v"].(json.Number); string(ver) != "1" {
		return w.unreadable(ctx, r, codes.QueueUnsupportedVersion, "written by a later version of the job format")
	}
	if _, sealed := obj["enc"]; sealed {
		return w.unreadable(ctx, r, codes.QueueCodecMissing, "sealed, and this worker has no codec")
	}
	if err := jobv1.ValidateValue(v); err != nil {
		var ve *jobv1.ValidationError
		if errors.As(err, &ve) {
			for _, f := range ve.Errors {
				if f.Rule == "additionalProperties" {
					return w.unreadable(ctx, r, codes.QueueUnsupportedVersion, "it has a field version 1 does not know")
				}
			}
			return w.fail(ctx, r, codes.QueueInvalidJob, codes.StateFailed, "the stored job is not valid: "+ve.Errors[0].Path+": "+ve.Errors[0].Message), false
		}
		return w.fail(ctx, r, codes.QueueInvalidJob, codes.StateFailed, "the stored job is not valid"), false
	}
	want, _ := obj["hash"].(string)
	got, err := hashOf(obj)
	if err != nil || want == "" || got != want {
		return w.fail(ctx, r, codes.QueueHashMismatch, codes.StateFailed, "the job is not what was enqueued: its hash does not match"), false
	}
	job, _, err := jobv1.Decode(r.lease.Data)
	if err != nil || job == nil {
		return w.fail(ctx, r, codes.QueueInvalidJob, codes.StateFailed, "the stored job does not decode"), false
	}
	r.job = job
	return Outcome{}, true
}

// unreadable gives back a job this worker cannot read yet, its attempt not
// spent, and fails it once it expired or waited MaxReleaseWait.
func (w *Worker) unreadable(ctx context.Context, r *run, code codes.Code, reason string) (Outcome, bool) {
	if !r.lease.EnqueuedAt.IsZero() && r.now.Sub(r.lease.EnqueuedAt) > MaxReleaseWait {
		return w.fail(ctx, r, code, codes.StateFailed, reason+"; waited more than a week"), false
	}
	return w.release(r, code, w.cfg.OperatorDelay, reason), false
}
