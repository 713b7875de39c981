package mailqueue

// The vectors of docs/wire.md (gen/vectors/vectors.json, written by
// cmd/generate with code of its own): mailqueue must agree with every one.
// The canonical JSON vectors are checked in internal/jcs.
// conformance/node checks the same file with Node's crypto and ajv.

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/alexify/mailer/clock"
	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/internal/jcs"
	"github.com/alexify/mailer/internal/sign"
	"github.com/alexify/mailer/internal/strictjson"
)

type vectorsFile struct {
	Canonical []struct{ Name, Input, Canonical string }
	Numbers   []struct {
		Bits, Canonical string
		Error           bool
	}
	Valid []struct {
		Name string
		Job  json.RawMessage
	}
	Invalid []struct {
		Name   string
		Job    json.RawMessage
		Errors []struct{ Pointer, Rule string }
		Code   string
		Worker vectorOutcome
	}
	Raw []rawVector
	IDs []struct {
		Name, Namespace, Tenant, Key, IDSecret, From           string
		JobIDInput, JobIDSeed, JobID, MessageIDSeed, MessageID string
		ContentIDs                                             []string
		Queue, CodecAD                                         string
	}
	Signed []struct {
		Name                                                            string
		Key                                                             *vectorKey
		Codec                                                           string
		Namespace, Queue, ID                                            string
		Job                                                             json.RawMessage
		HashInput, Hash, SealedJSON, CodecAD, MACInput, MAC, StoredJSON string
	}
	Stored []struct {
		Name, Data, ID, Namespace, Queue string
		Keys                             []vectorKey
		Codec, CodecKey                  string
		Want                             vectorOutcome
	}
}

type vectorOutcome struct{ Action, Code string }

type vectorKey struct{ ID, Secret string }

func (k vectorKey) signingKey(t testing.TB) SigningKey {
	b, err := hex.DecodeString(k.Secret)
	if err != nil {
		t.Fatal(err)
	}
	return SigningKey{ID: k.ID, Secret: b}
}

func signingKeys(t testing.TB, ks []vectorKey) []SigningKey {
	out := make([]SigningKey, 0, len(ks))
	for _, k := range ks {
		out = append(out, k.signingKey(t))
	}
	return out
}

func readVectors(t testing.TB) *vectorsFile {
	t.Helper()
	b, err := os.ReadFile("../gen/vectors/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var f vectorsFile
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Canonical) == 0 || len(f.Numbers) == 0 || len(f.Valid) == 0 || len(f.Invalid) == 0 || len(f.IDs) == 0 || len(f.Signed) == 0 || len(f.Stored) == 0 {
		t.Fatal("a section of the vectors is empty")
	}
	return &f
}

// base64Codec is the vectors' stand-in codec: enc is the standard base64
// of the sealed JSON. It binds no associated data, and keeps the last it
// was given.
type base64Codec struct {
	decodes int
	ad      []byte
}

func (c *base64Codec) Encode(_ context.Context, plain, ad []byte) (string, error) {
	c.ad = ad
	return base64.StdEncoding.EncodeToString(plain), nil
}

func (c *base64Codec) Decode(_ context.Context, enc string, ad []byte) ([]byte, error) {
	c.decodes++
	c.ad = ad
	b, err := base64.StdEncoding.Strict().DecodeString(enc)
	if err != nil {
		return nil, PermanentError(errors.New("not base64"))
	}
	return b, nil
}

func vectorCodec(name string) Codec {
	if name == "base64" {
		return &base64Codec{}
	}
	return nil
}

func outcomeOf(o *opened) vectorOutcome {
	if o == nil {
		return vectorOutcome{Action: "open"}
	}
	return vectorOutcome{Action: o.action.String(), Code: string(o.code)}
}

func TestVectorsSchema(t *testing.T) {
	f := readVectors(t)
	for _, v := range f.Valid {
		if err := jobv1.Validate(v.Job); err != nil {
			t.Errorf("valid %q: %v", v.Name, err)
		}
	}
	for _, v := range f.Invalid {
		t.Run(v.Name, func(t *testing.T) {
			err := jobv1.Validate(v.Job)
			var ve *jobv1.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Validate = %v, want a *ValidationError", err)
			}
			got := make([]struct{ Pointer, Rule string }, 0, len(ve.Errors))
			for _, e := range ve.Errors {
				got = append(got, struct{ Pointer, Rule string }{e.Pointer, e.Rule})
			}
			if diff := cmp.Diff(v.Errors, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if e := validationError(err); string(e.Code) != v.Code {
				t.Errorf("producer's code %s, want %s", e.Code, v.Code)
			}
			_, o := openJob(context.Background(), v.Job, openParams{MaxBytes: testReadLimit, At: sign.Binding{Namespace: DefaultNamespace, ID: "an-id"}})
			if diff := cmp.Diff(v.Worker, outcomeOf(o)); diff != "" {
				t.Errorf("the worker (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVectorsIDs(t *testing.T) {
	f := readVectors(t)
	for _, v := range f.IDs {
		t.Run(v.Name, func(t *testing.T) {
			secret, _ := hex.DecodeString(v.IDSecret)
			input, _ := jcs.Marshal([]any{"mailer/job-id", v.Namespace, v.Tenant, v.Key})
			q := &Queue{cfg: Config{Namespace: v.Namespace, IDSecret: secret, DeriveID: DeriveUUID}}
			seed := q.jobIDSeed(v.Tenant, v.Key)
			id := DeriveUUID(IDKindJob, seed)
			q.name = v.Queue
			ad, err := sign.AD(q.binding(id))
			if err != nil {
				t.Fatal(err)
			}
			got := []string{string(input), seed, id, seedOf(nil, "mailer/"+IDKindMessage, id), q.messageID(id, v.From), q.contentID(id, v.From, 0), q.contentID(id, v.From, 1), string(ad)}
			want := []string{v.JobIDInput, v.JobIDSeed, v.JobID, v.MessageIDSeed, v.MessageID, v.ContentIDs[0], v.ContentIDs[1], v.CodecAD}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("input, seed, id, message seed, Message-ID, Content-IDs, codec AD (-want +got):\n%s", diff)
			}
			// A worker derives the same id.
			p := openParams{MaxBytes: testReadLimit, At: sign.Binding{Namespace: v.Namespace, Queue: v.Queue, ID: id}, IDSecret: secret}
			if got := p.jobID(v.Tenant, v.Key); got != v.JobID {
				t.Errorf("the worker derives %s, want %s", got, v.JobID)
			}
		})
	}
}

// nopDriver lets prepare run in this package's tests; it names its queue
// (QueueNamer).
type nopDriver struct{ name string }

func (nopDriver) Enqueue(context.Context, []NewJob) ([]EnqueueResult, error) { return nil, nil }
func (nopDriver) Work(Handler, WorkOptions) (Runner, error)                  { return nil, nil }
func (d nopDriver) QueueName() string                                        { return d.name }

func TestVectorsSigned(t *testing.T) {
	f := readVectors(t)
	for _, v := range f.Signed {
		t.Run(v.Name, func(t *testing.T) {
			jv, err := strictjson.Decode(v.Job)
			if err != nil {
				t.Fatal(err)
			}
			job := jv.(map[string]any)
			// The hash and its input.
			hashed := map[string]any{}
			for k, x := range job {
				if !slices.Contains(notHashed, k) {
					hashed[k] = x
				}
			}
			in, _ := jcs.Marshal(hashed)
			h, err := hashOf(job)
			if string(in) != v.HashInput || err != nil || h != v.Hash {
				t.Errorf("hash %s (%v), want %s; input\n%s\nwant\n%s", h, err, v.Hash, in, v.HashInput)
			}
			// prepare, end to end: the producer's bytes.
			var keys []SigningKey
			if v.Key != nil {
				keys = []SigningKey{v.Key.signingKey(t)}
			}
			var src jobv1.Job
			if err := json.Unmarshal(v.Job, &src); err != nil {
				t.Fatal(err)
			}
			fc := clock.NewFake(*src.EnqueuedAt)
			codec := vectorCodec(v.Codec)
			q, err := New(Config{Driver: nopDriver{v.Queue}, Namespace: v.Namespace, Clock: fc, SigningKeys: keys, Codec: codec})
			if err != nil {
				t.Fatal(err)
			}
			nj, res, perr := q.prepare(context.Background(), &src)
			if perr != nil {
				t.Fatal(perr)
			}
			if string(nj.Data) != v.StoredJSON || res.Hash != v.Hash || nj.ID != v.ID {
				t.Errorf("prepare stored %s:\n%s\nwant %s:\n%s", nj.ID, nj.Data, v.ID, v.StoredJSON)
			}
			if c, ok := codec.(*base64Codec); ok && string(c.ad) != v.CodecAD {
				t.Errorf("the codec was given the associated data %s, want %s", c.ad, v.CodecAD)
			}
			at := sign.Binding{Namespace: v.Namespace, Queue: v.Queue, ID: v.ID}
			stored, err := strictjson.DecodeObject([]byte(v.StoredJSON))
			if err != nil {
				t.Fatal(err)
			}
			if v.Key != nil {
				mac, err := sign.MAC(keys[0].Secret, at, stored)
				if err != nil || mac != v.MAC {
					t.Errorf("mac %s (%v), want %s", mac, err, v.MAC)
				}
				if in, err := sign.MACInput(at, stored); err != nil || string(in) != v.MACInput {
					t.Errorf("mac input\n%s (%v)\nwant\n%s", in, err, v.MACInput)
				}
			}
			// The worker opens it.
			got, o := openJob(context.Background(), []byte(v.StoredJSON), openParams{MaxBytes: testReadLimit, At: at, Keys: keys, Codec: vectorCodec(v.Codec)})
			if o != nil || got.Hash != v.Hash || got.MessageID != src.MessageID || got.Subject != src.Subject {
				t.Errorf("openJob: %+v, %v", o, got)
			}
		})
	}
}

func TestVectorsStored(t *testing.T) {
	f := readVectors(t)
	for _, v := range f.Stored {
		t.Run(v.Name, func(t *testing.T) {
			codec := vectorCodec(v.Codec)
			if v.Codec == "aes-256-gcm" {
				key, _ := hex.DecodeString(v.CodecKey)
				c, err := NewAESGCMCodec(key)
				if err != nil {
					t.Fatal(err)
				}
				codec = c
			}
			at := sign.Binding{Namespace: v.Namespace, Queue: v.Queue, ID: v.ID}
			_, o := openJob(context.Background(), []byte(v.Data), openParams{MaxBytes: testReadLimit, At: at, Keys: signingKeys(t, v.Keys), Codec: codec})
			if diff := cmp.Diff(v.Want, outcomeOf(o)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if c, ok := codec.(*base64Codec); ok && o != nil && o.code == codes.QueueSignatureInvalid && c.decodes > 0 {
				t.Error("a job that failed its mac reached the codec")
			}
		})
	}
}

// rawVector is a job given as bytes (gen/vectors/vectors.json's raw): its
// parts, each a base64 text repeated Repeat times.
type rawVector struct {
	Name  string
	Parts []struct {
		Base64 string
		Repeat int
	}
	Valid  bool
	Code   string
	Errors []struct{ Pointer, Rule string }
	Worker vectorOutcome
}

func (v rawVector) bytes(t testing.TB) []byte {
	var b []byte
	for _, p := range v.Parts {
		text, err := base64.StdEncoding.DecodeString(p.Base64)
		if err != nil {
			t.Fatal(err)
		}
		for range max(p.Repeat, 1) {
			b = append(b, text...)
		}
	}
	return b
}

// TestVectorsRaw gives each raw vector's bytes to the producer's check
// (jobv1.Validate, after the size a queue takes by default) and to the
// worker's opening, and compares their verdicts with the vector's.
func TestVectorsRaw(t *testing.T) {
	f := readVectors(t)
	if len(f.Raw) == 0 {
		t.Fatal("no raw vectors")
	}
	for _, v := range f.Raw {
		t.Run(v.Name, func(t *testing.T) {
			data := v.bytes(t)
			type fault struct{ Pointer, Rule string }
			// The producer's check of a file (the size a queue takes by
			// default, then jobv1.Validate) and EnqueueJSON give the
			// vector's verdict.
			var got []fault
			code := ""
			if len(data) > DefaultMaxJobBytes {
				got = append(got, fault{"", "maxJobBytes"})
				code = string(codes.QueueInvalidJob)
			} else if err := jobv1.Validate(data); err != nil {
				var ve *jobv1.ValidationError
				if !errors.As(err, &ve) {
					t.Fatalf("Validate = %v, want a *ValidationError", err)
				}
				for _, e := range ve.Errors {
					got = append(got, fault{e.Pointer, e.Rule})
				}
				code = string(validationError(err).Code)
			}
			if (len(got) == 0) != v.Valid || code != v.Code {
				t.Errorf("producer: valid %t, code %q; want %t, %q", len(got) == 0, code, v.Valid, v.Code)
			}
			want := make([]fault, len(v.Errors))
			for i, e := range v.Errors {
				want[i] = fault{e.Pointer, e.Rule}
			}
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("producer's errors (-want +got):\n%s", diff)
			}
			q, d := newJSONQueue(t, Config{})
			var enq []fault
			enqCode := ""
			if _, err := q.EnqueueJSON(t.Context(), data); err != nil {
				var e *Error
				if !errors.As(err, &e) {
					t.Fatalf("EnqueueJSON = %v, want an *Error", err)
				}
				enqCode = string(e.Code)
				for _, f := range e.Fields {
					enq = append(enq, fault{f.Pointer, f.Rule})
				}
				if len(d.jobs) != 0 {
					t.Errorf("EnqueueJSON refused the job and stored %d", len(d.jobs))
				}
			}
			if enqCode != v.Code {
				t.Errorf("EnqueueJSON: code %q, want %q", enqCode, v.Code)
			}
			if diff := cmp.Diff(want, enq, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("EnqueueJSON's errors (-want +got):\n%s", diff)
			}
			// The worker, reading the bytes as stored.
			_, o := openJob(context.Background(), data, openParams{MaxBytes: testReadLimit, At: sign.Binding{Namespace: DefaultNamespace, ID: "an-id"}})
			if diff := cmp.Diff(v.Worker, outcomeOf(o)); diff != "" {
				t.Errorf("the worker (-want +got):\n%s", diff)
			}
		})
	}
}
