package mailqueue

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"time"

	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/gen/jobv1"
)

// MinSigningKeyBytes is the shortest secret a SigningKey may have.
const MinSigningKeyBytes = 32

// SigningKey is a key of Config.SigningKeys.
type SigningKey struct {
	// ID names the key in the job's kid: 1 to 64 of A-Z a-z 0-9 . _ : -,
	// unique among the keys.
	ID string
	// Secret is the HMAC-SHA256 key, at least 32 bytes.
	Secret []byte
}

// kidPattern is the schema's pattern of kid (schema/job.v1.json).
var kidPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`)

// checkSigningKeys checks Config.SigningKeys: every ID non-empty, fit for
// the job's kid and unique; every secret at least MinSigningKeyBytes. No key
// at all is fine: the jobs are then neither signed nor verified. New calls
// it.
func checkSigningKeys(keys []SigningKey) error {
	seen := make(map[string]bool, len(keys))
	for i, k := range keys {
		if k.ID == "" {
			return fmt.Errorf("mailqueue: SigningKeys[%d] has no ID", i)
		}
		if !kidPattern.MatchString(k.ID) {
			return fmt.Errorf("mailqueue: SigningKeys[%d].ID must be 1 to 64 of A-Z a-z 0-9 . _ : -", i)
		}
		if seen[k.ID] {
			return fmt.Errorf("mailqueue: SigningKeys[%d].ID is the ID of another key", i)
		}
		seen[k.ID] = true
		if len(k.Secret) < MinSigningKeyBytes {
			return fmt.Errorf("mailqueue: SigningKeys[%d] (%s) has a secret of %d bytes; at least %d are needed", i, k.ID, len(k.Secret), MinSigningKeyBytes)
		}
	}
	return nil
}

// Codec seals and opens the message of a job (docs/spec/queue.md, "Sealed
// jobs"). Encode turns the canonical JSON of the sealed fields into the text
// of enc; Decode turns it back into those bytes.
//
// An error of Decode retries the job (queue.codec_failed): a key out of
// reach comes back. An error that is not retryable fails it at once: wrap it
// with PermanentError, or give it a method Retryable() bool that returns
// false (errors.As finds either in the chain).
type Codec interface {
	Encode(ctx context.Context, plain []byte) (string, error)
	Decode(ctx context.Context, enc string) ([]byte, error)
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

// envelope are the fields a sealed job keeps in clear (docs/spec/queue.md,
// "Sealed jobs"); enc holds the others.
var envelope = []string{"v", "hash", "enqueuedAt", "correlationId", "kid", "mac", "trace"}

func isEnvelope(name string) bool {
	for _, e := range envelope {
		if e == name {
			return true
		}
	}
	return false
}

// macOf returns the mac of a stored job given as its decoded JSON object:
// the HMAC-SHA256 under secret of the canonical JSON (RFC 8785) of the
// object without its mac (its kid included), in unpadded base64url
// (docs/wire.md, "The mac"). For a sealed job the object is the envelope
// with enc, so a worker verifies it before it opens enc.
func macOf(secret []byte, job map[string]any) (string, error) {
	m := make(map[string]any, len(job))
	for k, v := range job {
		if k != "mac" {
			m[k] = v
		}
	}
	c, err := canonicalJSON(m)
	if err != nil {
		return "", err
	}
	h := hmac.New(sha256.New, secret)
	h.Write(c)
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)), nil
}

// sign sets kid and mac on a stored job with the first key; it does
// nothing without keys.
func sign(keys []SigningKey, job map[string]any) error {
	delete(job, "kid")
	delete(job, "mac")
	if len(keys) == 0 {
		return nil
	}
	job["kid"] = keys[0].ID
	mac, err := macOf(keys[0].Secret, job)
	if err != nil {
		return err
	}
	job["mac"] = mac
	return nil
}

// verify reports whether a key of keys made the job's mac.
func verify(keys []SigningKey, job map[string]any) bool {
	kid, _ := job["kid"].(string)
	got, _ := job["mac"].(string)
	if kid == "" || got == "" {
		return false
	}
	for _, k := range keys {
		if k.ID != kid {
			continue
		}
		want, err := macOf(k.Secret, job)
		// Compare the texts: base64 with unused trailing bits has several
		// texts for one mac, and only the one a producer writes is valid.
		return err == nil && hmac.Equal([]byte(want), []byte(got))
	}
	return false
}

// seal turns a clear job, hashed and without kid and mac, into the sealed
// envelope: the envelope's fields stay, the others go into enc as the
// codec encodes their canonical JSON.
func seal(ctx context.Context, codec Codec, job map[string]any) (map[string]any, error) {
	inner := make(map[string]any, len(job))
	out := make(map[string]any, len(envelope)+1)
	for k, v := range job {
		if isEnvelope(k) {
			out[k] = v
		} else {
			inner[k] = v
		}
	}
	plain, err := canonicalJSON(inner)
	if err != nil {
		return nil, err
	}
	enc, err := codec.Encode(ctx, plain)
	if err != nil {
		return nil, err
	}
	if enc == "" {
		return nil, errors.New("the codec encoded the job as an empty text")
	}
	out["enc"] = enc
	return out, nil
}

// opened is why openJob did not give a job: the outcome the worker gives
// (Fail, Retry or Release), its code and reason, and for a release the
// job's expiresAt when it could be read.
type opened struct {
	action  Action
	code    codes.Code
	reason  string
	expires *time.Time
}

func failed(code codes.Code, reason string) *opened {
	return &opened{action: Fail, code: code, reason: reason}
}

// openJob reads a stored job as a worker does, in this order
// (docs/wire.md, "What a worker checks"): the JSON (an object, no duplicate
// names), the version, the mac when keys are given, the schema (a field
// version 1 does not know gives the job back), the codec for a sealed job,
// the schema of what it opened, the hash. The job it returns decodes from
// the canonical JSON of what was verified, never from the raw bytes again.
func openJob(ctx context.Context, data []byte, keys []SigningKey, codec Codec) (*jobv1.Job, *opened) {
	obj, err := decodeStored(data)
	if err != nil {
		return nil, failed(codes.QueueInvalidJob, "the stored job is not a JSON object: "+err.Error())
	}
	switch v := versionOf(obj); {
	case v > 1:
		return nil, &opened{action: Release, code: codes.QueueUnsupportedVersion, reason: "written by a later version of the job format", expires: expiresOf(obj)}
	case v != 1:
		return nil, failed(codes.QueueInvalidJob, "the stored job has no valid version")
	}
	if len(keys) > 0 && !verify(keys, obj) {
		return nil, failed(codes.QueueSignatureInvalid, "not signed by a key of SigningKeys")
	}
	if o := validateStored(obj, expiresOf(obj)); o != nil {
		return nil, o
	}
	whole := obj
	if enc, sealed := obj["enc"].(string); sealed {
		if codec == nil {
			return nil, &opened{action: Release, code: codes.QueueCodecMissing, reason: "sealed, and this worker has no codec"}
		}
		sealedJSON, err := codec.Decode(ctx, enc)
		if err != nil {
			o := &opened{action: Retry, code: codes.QueueCodecFailed, reason: "the codec could not open the job: " + err.Error()}
			if !retryable(err) {
				o.action = Fail
			}
			return nil, o
		}
		inner, err := decodeStored(sealedJSON)
		if err != nil {
			return nil, failed(codes.QueueInvalidJob, "the sealed job does not open to a JSON object: "+err.Error())
		}
		whole = make(map[string]any, len(inner)+len(envelope))
		for k, v := range inner {
			if isEnvelope(k) || k == "enc" {
				return nil, failed(codes.QueueInvalidJob, "the sealed part holds "+strconv.Quote(k)+", a field of the envelope")
			}
			whole[k] = v
		}
		for k, v := range obj {
			if k != "enc" {
				whole[k] = v
			}
		}
		if o := validateStored(whole, expiresOf(whole)); o != nil {
			return nil, o
		}
	}
	want, _ := obj["hash"].(string)
	got, err := hashOf(whole)
	if err != nil || want == "" || got != want {
		return nil, failed(codes.QueueHashMismatch, "the job is not what was enqueued: its hash does not match")
	}
	// Decode what was verified and hashed: the object itself, never the
	// raw bytes again.
	job, _, err := jobv1.DecodeValue(whole)
	if err != nil || job == nil {
		return nil, failed(codes.QueueInvalidJob, "the stored job does not decode")
	}
	return job, nil
}

// validateStored checks a stored job against the schema: a field version 1
// does not know gives it back (queue.unsupported_version), any other fault
// fails it (queue.invalid_job).
func validateStored(obj map[string]any, expires *time.Time) *opened {
	err := jobv1.ValidateValue(obj)
	if err == nil {
		return nil
	}
	var ve *jobv1.ValidationError
	if !errors.As(err, &ve) || len(ve.Errors) == 0 {
		return failed(codes.QueueInvalidJob, "the stored job is not valid")
	}
	for _, f := range ve.Errors {
		if f.Rule == "additionalProperties" {
			return &opened{action: Release, code: codes.QueueUnsupportedVersion, reason: "it has a field version 1 does not know", expires: expires}
		}
	}
	return failed(codes.QueueInvalidJob, "the stored job is not valid: "+ve.Errors[0].Path+": "+ve.Errors[0].Message+" ("+ve.Errors[0].Rule+")")
}

// versionOf returns the job's v as an integer: 0 when it is missing, not a
// number or not an integer.
func versionOf(obj map[string]any) int64 {
	n, ok := obj["v"].(json.Number)
	if !ok {
		return 0
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || f != float64(int64(f)) || f < 0 || f > 1<<53 {
		return 0
	}
	return int64(f)
}

// expiresOf returns the expiresAt of a job of any version when it reads as
// an RFC 3339 time, so a job given back can still be failed once it expired.
func expiresOf(obj map[string]any) *time.Time {
	s, ok := obj["expiresAt"].(string)
	if !ok {
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return nil
	}
	return &t
}

// decodeStored decodes a stored job, or the opened part of a sealed one,
// into a JSON object, numbers as json.Number. It refuses text that is not
// UTF-8 or escapes a lone surrogate (encoding/json would turn either into
// U+FFFD, and the job would be read as another message than the one its
// producer hashed) and duplicate member names (I-JSON, RFC 7493, which
// RFC 8785 asks for: with two names alike, what is verified and what is
// sent could differ between readers). Bytes in canonical JSON, as this kit
// stores them, hold no name twice (a second one would be lost and the bytes
// would differ); only other bytes take the slower scan for them
// (docs/wire.md).
func decodeStored(data []byte) (map[string]any, error) {
	if err := checkText(data); err != nil {
		return nil, err
	}
	v, err := decodeJSON(data)
	if err != nil {
		return nil, err
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("not an object")
	}
	canon, err := canonicalJSON(obj)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(canon, data) {
		if err := checkNoDuplicates(data); err != nil {
			return nil, err
		}
	}
	return obj, nil
}

// checkNoDuplicates walks the tokens of data and fails on an object with two
// members of one name.
func checkNoDuplicates(data []byte) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	type frame struct {
		names  map[string]bool
		object bool
		key    bool // the next token of an object is a name
	}
	var stack []*frame
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.key {
			if name, ok := tok.(string); ok {
				if top.names[name] {
					return errors.New("a name appears twice in one object")
				}
				top.names[name] = true
				top.key = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{names: map[string]bool{}, object: true, key: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		// A value ended: the parent object expects a name next.
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].key = true
		}
	}
}

// open reads the stored job as openJob does and turns a job it cannot give
// into the worker's outcome. A forged job fails before a codec sees it.
func (w *Worker) open(ctx context.Context, r *run) (Outcome, bool) {
	job, o := openJob(ctx, r.lease.Data, w.q.cfg.SigningKeys, w.q.cfg.Codec)
	if o == nil {
		r.job = job
		return Outcome{}, true
	}
	switch o.action {
	case Release:
		return w.unreadableUntil(ctx, r, o.code, o.reason, o.expires)
	case Retry:
		return w.retry(ctx, r, o.code, 0, o.reason), false
	}
	return w.fail(ctx, r, o.code, codes.StateFailed, o.reason), false
}

// unreadable gives back a job this worker cannot read yet (or whose
// operator must act), its attempt not spent, and fails it once it expired or
// waited MaxReleaseWait.
func (w *Worker) unreadable(ctx context.Context, r *run, code codes.Code, reason string) (Outcome, bool) {
	var expires *time.Time
	if r.job != nil {
		expires = r.job.ExpiresAt
	}
	return w.unreadableUntil(ctx, r, code, reason, expires)
}

// unreadableUntil is unreadable with the job's expiresAt given, for a job
// not decoded. The failure keeps the code of the release: the job was never
// read, and the code says why.
func (w *Worker) unreadableUntil(ctx context.Context, r *run, code codes.Code, reason string, expires *time.Time) (Outcome, bool) {
	if expires != nil && r.now.After(*expires) {
		return w.fail(ctx, r, code, codes.StateFailed, reason+"; past its expiresAt"), false
	}
	if !r.lease.EnqueuedAt.IsZero() && r.now.Sub(r.lease.EnqueuedAt) > MaxReleaseWait {
		return w.fail(ctx, r, code, codes.StateFailed, reason+"; waited more than a week"), false
	}
	return w.release(r, code, w.cfg.OperatorDelay, reason), false
}
