package mailqueue

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/internal/sign"
	"github.com/alexify/mailer/internal/strictjson"
)

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

// readLimit is the most bytes of a stored job, and of the opened part of a
// sealed one, that a worker of a queue of this config reads: twice
// MaxJobBytes (512 KiB by default). A producer of this kit refuses a job
// whose stored bytes, sealed and signed, are over MaxJobBytes, so every job
// it stored is read; the margin takes a producer in another language that
// measures the clear job (a sealed job's stored form is about 4/3 of its
// clear JSON, plus its envelope), and one whose MaxJobBytes is larger, up
// to twice. A longer job is failed with queue.invalid_job before it is
// parsed: a job of 64 MiB written into the store costs its length, no more.
func (c Config) readLimit() int {
	if c.MaxJobBytes > math.MaxInt/2 {
		return math.MaxInt
	}
	return 2 * c.MaxJobBytes
}

// tooLong is the failure of a text over the worker's read limit.
func tooLong(what string, n, limit int) *opened {
	return failed(codes.QueueInvalidJob, what+" is "+strconv.Itoa(n)+" bytes, more than the "+strconv.Itoa(limit)+" a worker reads (twice MaxJobBytes): it was not read")
}

// openParams are what openJob reads a stored job with: where it is stored
// (the id the store keeps it under, the queue's name and the namespace),
// the worker's keys and codec, and how a job's id derives (IDSecret and
// DeriveID, DeriveUUID when nil).
type openParams struct {
	// MaxBytes is the most bytes read (Config.readLimit): a longer stored
	// job, or opened part of a sealed one, is failed unread. 0 reads any.
	MaxBytes int
	At       sign.Binding
	Keys     []SigningKey
	Codec    Codec
	IDSecret []byte
	DeriveID func(kind, seed string) string
}

// jobID derives the id of a job of the tenant and key in p's namespace, as
// a producer does (docs/wire.md, "Ids").
func (p openParams) jobID(tenant, key string) string {
	derive := p.DeriveID
	if derive == nil {
		derive = DeriveUUID
	}
	return derive(IDKindJob, jobIDSeedOf(p.IDSecret, p.At.Namespace, tenant, key))
}

// openJob reads a stored job as a worker does, in this order
// (docs/wire.md, "What a worker checks"): the JSON (an object, no duplicate
// names), the version, the mac when keys are given (over the job and where
// it is stored), the schema (a field version 1 does not know gives the job
// back), the codec for a sealed job (under the associated data of where it
// is stored), the schema of what it opened, the hash, and last the job's id,
// derived from its namespace, tenant and key, which must be the id it is
// stored under (queue.job_tampered). The job it returns decodes from the
// canonical JSON of what was verified, never from the raw bytes again.
//
// Before anything, a job longer than p.MaxBytes (readLimit) is failed
// unread, as is the opened part of a sealed job longer than that.
func openJob(ctx context.Context, data []byte, p openParams) (*jobv1.Job, *opened) {
	if p.MaxBytes > 0 && len(data) > p.MaxBytes {
		return nil, tooLong("the stored job", len(data), p.MaxBytes)
	}
	obj, err := strictjson.DecodeObject(data)
	if err != nil {
		return nil, failed(codes.QueueInvalidJob, "the stored job is not a JSON object: "+err.Error())
	}
	switch v := versionOf(obj); {
	case v > 1:
		return nil, &opened{action: Release, code: codes.QueueUnsupportedVersion, reason: "written by a later version of the job format", expires: expiresOf(obj)}
	case v != 1:
		return nil, failed(codes.QueueInvalidJob, "the stored job has no valid version")
	}
	if len(p.Keys) > 0 && !verifyJob(p.Keys, p.At, obj) {
		if signedForAnotherID(p, obj) {
			return nil, failed(codes.QueueJobTampered, "a signed job stored under another id than the one it was signed for: a copy")
		}
		return nil, failed(codes.QueueSignatureInvalid, "not signed by a key of SigningKeys for this queue, namespace and id")
	}
	if o := validateStored(obj, expiresOf(obj)); o != nil {
		return nil, o
	}
	whole := obj
	if enc, sealed := obj["enc"].(string); sealed {
		var o *opened
		if whole, o = openSealed(ctx, obj, enc, p); o != nil {
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
	if p.jobID(job.TenantID, job.IdempotencyKey) != p.At.ID {
		return nil, failed(codes.QueueJobTampered, "the job's id, derived from its namespace, tenant and idempotency key, is not the id it is stored under")
	}
	return job, nil
}

// signedForAnotherID reports whether a clear job whose mac failed for the
// id it is stored under was signed, by a key of p, for the id its own
// tenant and key derive: a genuine job copied under another id. A sealed
// job keeps its tenant and key in enc, which is not opened before its mac
// verifies, so it is never told so (queue.signature_invalid).
func signedForAnotherID(p openParams, obj map[string]any) bool {
	if _, sealed := obj["enc"]; sealed {
		return false
	}
	tenant, ok := obj["tenantId"].(string)
	if _, has := obj["tenantId"]; has && !ok {
		return false
	}
	key, ok := obj["idempotencyKey"].(string)
	if _, has := obj["idempotencyKey"]; has && !ok {
		return false
	}
	id := p.jobID(tenant, key)
	if id == p.At.ID {
		return false
	}
	at := p.At
	at.ID = id
	return verifyJob(p.Keys, at, obj)
}

// openSealed opens the enc of a sealed job with the codec, under the
// associated data of where the job is stored, and returns the whole job:
// the envelope's fields and those of the sealed part, which may hold none
// of the envelope's, checked against the schema.
func openSealed(ctx context.Context, obj map[string]any, enc string, p openParams) (map[string]any, *opened) {
	if p.Codec == nil {
		return nil, &opened{action: Release, code: codes.QueueCodecMissing, reason: "sealed, and this worker has no codec"}
	}
	ad, err := sign.AD(p.At)
	if err != nil {
		return nil, failed(codes.QueueInvalidJob, "the job's id is not valid UTF-8")
	}
	sealedJSON, err := p.Codec.Decode(ctx, enc, ad)
	if err != nil {
		o := &opened{action: Retry, code: codes.QueueCodecFailed, reason: "the codec could not open the job: " + err.Error()}
		if !retryable(err) {
			o.action = Fail
		}
		return nil, o
	}
	if p.MaxBytes > 0 && len(sealedJSON) > p.MaxBytes {
		return nil, tooLong("the opened part of the sealed job", len(sealedJSON), p.MaxBytes)
	}
	inner, err := strictjson.DecodeObject(sealedJSON)
	if err != nil {
		return nil, failed(codes.QueueInvalidJob, "the sealed job does not open to a JSON object: "+err.Error())
	}
	whole := make(map[string]any, len(inner)+len(envelope))
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
	return whole, nil
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

// open reads the stored job as openJob does and turns a job it cannot give
// into the worker's outcome. A forged job fails before a codec sees it.
func (w *Worker) open(ctx context.Context, r *run) (Outcome, bool) {
	job, o := openJob(ctx, r.lease.Data, w.q.openParams(r.lease.ID))
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

// openParams are what a worker of the queue opens the job stored under id
// with.
func (q *Queue) openParams(id string) openParams {
	c := &q.cfg
	return openParams{MaxBytes: c.readLimit(), At: q.binding(id), Keys: c.SigningKeys, Codec: c.Codec, IDSecret: c.IDSecret, DeriveID: c.DeriveID}
}

// unreadable gives back a job this worker cannot read yet (or whose
// operator must act), and the attempt is not spent; it fails the job once
// the job expired or waited MaxReleaseWait.
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
