package mailqueue

import (
	"context"
	"errors"

	"github.com/alexify/mailer/internal/jcs"
	"github.com/alexify/mailer/internal/sign"
)

// Codec seals and opens the message of a job, so that the store holds only
// what the codec made of it (spec: "Sealed jobs"). A sealed job keeps in
// clear only its envelope: v, hash (a duplicate is still told by it),
// enqueuedAt, correlationId, kid, mac and trace; its other fields are enc.
// Encode turns the canonical JSON of the sealed fields into the text of enc;
// Decode turns it back into those bytes. Encode is given the context of the
// Enqueue call, Decode that of the worker's run.
//
// Both are given the associated data ad: the canonical JSON of
// ["mailer/enc", namespace, queue, id], where the job is stored
// (docs/wire.md, "Sealed jobs"). A codec must bind it, as an AEAD's
// additional data does, so that Decode fails for an enc copied under
// another id, into another queue or another namespace: NewAESGCMCodec uses
// it as GCM's additional data. A codec that ignores ad leaves the binding
// to the mac alone.
//
// An error of Encode refuses the enqueue with queue.codec_failed, and
// nothing is stored. An error of Decode retries the job
// (queue.codec_failed), as a key out of reach comes back. An error that is
// not retryable fails the job at once: wrap it with PermanentError, or give
// it a method Retryable() bool that returns false (errors.As finds either in
// the chain). A worker without a codec gives a sealed job back, the attempt
// not spent, for a worker that can open it (queue.codec_missing).
//
// Sealing is not signing: whoever can seal a job can forge one, so seal with
// SigningKeys too. The mac covers the envelope and enc, and the worker
// verifies it before the codec sees enc.
type Codec interface {
	Encode(ctx context.Context, plain, ad []byte) (string, error)
	Decode(ctx context.Context, enc string, ad []byte) ([]byte, error)
}

// PermanentError marks err, an error of a Codec's Decode, as not retryable:
// the job fails at once with queue.codec_failed instead of being retried.
// It returns nil when err is nil.
func PermanentError(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

type permanentError struct{ err error }

func (e *permanentError) Error() string   { return e.err.Error() }
func (e *permanentError) Unwrap() error   { return e.err }
func (e *permanentError) Retryable() bool { return false }

// retryable reports whether a codec's error may be retried: unless some
// error in its chain says Retryable() false.
func retryable(err error) bool {
	var r interface{ Retryable() bool }
	if errors.As(err, &r) {
		return r.Retryable()
	}
	return true
}

// envelope are the fields a sealed job keeps in clear (spec: "Sealed
// jobs"); enc holds the others.
var envelope = []string{"v", "hash", "enqueuedAt", "correlationId", "kid", "mac", "trace"}

func isEnvelope(name string) bool {
	for _, e := range envelope {
		if e == name {
			return true
		}
	}
	return false
}

// seal turns a clear job, hashed and without kid and mac, into the sealed
// envelope: the envelope's fields stay, the others go into enc as the
// codec encodes their canonical JSON under the associated data of where the
// job is stored.
func seal(ctx context.Context, codec Codec, at sign.Binding, job map[string]any) (map[string]any, error) {
	inner := make(map[string]any, len(job))
	out := make(map[string]any, len(envelope)+1)
	for k, v := range job {
		if isEnvelope(k) {
			out[k] = v
		} else {
			inner[k] = v
		}
	}
	plain, err := jcs.Marshal(inner)
	if err != nil {
		return nil, err
	}
	ad, err := sign.AD(at)
	if err != nil {
		return nil, err
	}
	enc, err := codec.Encode(ctx, plain, ad)
	if err != nil {
		return nil, err
	}
	if enc == "" {
		return nil, errors.New("the codec encoded the job as an empty text")
	}
	out["enc"] = enc
	return out, nil
}
