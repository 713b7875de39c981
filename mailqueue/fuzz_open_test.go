package mailqueue

// The fuzz target of the worker's opening of stored bytes with signing and
// sealing on (a real key, AES-256-GCM): whatever the bytes and wherever
// they are leased (id, queue, namespace), openJob never panics and never
// opens a job whose mac, codec associated data or id does not bind it to
// that place. go test runs its seeds only; fuzz it with, for instance:
//
//	go test ./mailqueue -run '^$' -fuzz '^FuzzOpenBound$' -fuzztime 20000x -parallel 1

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alexify/mailer/clock"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/internal/sign"
	"github.com/alexify/mailer/internal/strictjson"
)

// t0Fuzz is when the fuzz target's producers enqueue.
var t0Fuzz = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// countedCodec counts the Decode calls of a codec.
type countedCodec struct {
	Codec
	decodes atomic.Int32
}

func (c *countedCodec) Decode(ctx context.Context, enc string, ad []byte) ([]byte, error) {
	c.decodes.Add(1)
	return c.Codec.Decode(ctx, enc, ad)
}

func FuzzOpenBound(f *testing.F) {
	keys := []SigningKey{{ID: "k1", Secret: bytes.Repeat([]byte{'a'}, 32)}}
	codec, err := NewAESGCMCodec(bytes.Repeat([]byte{1}, 32))
	if err != nil {
		f.Fatal(err)
	}
	// The places producers enqueued into, and what they stored there.
	places := []sign.Binding{{Namespace: "mail", Queue: "mailer:mail"}, {Namespace: "billing", Queue: "mailer:other"}}
	signedAt := map[sign.Binding]bool{} // where a job signed by keys is stored
	sealedAt := map[sign.Binding]bool{} // where a job sealed by codec is stored
	type made struct {
		data   []byte
		at     sign.Binding
		signed bool
	}
	var jobs []made
	for _, p := range places {
		for _, cfg := range []Config{{SigningKeys: keys}, {SigningKeys: keys, Codec: codec}, {Codec: codec}, {}} {
			cfg.Driver, cfg.Namespace, cfg.Clock = nopDriver{p.Queue}, p.Namespace, clock.NewFake(t0Fuzz)
			q, err := New(cfg)
			if err != nil {
				f.Fatal(err)
			}
			job := &jobv1.Job{
				Kind: jobv1.KindContent, Subject: "Your invoice", Content: &jobv1.Content{Text: "Hello"},
				From: "Shop <shop@example.com>", To: []string{"ada@example.com"}, IdempotencyKey: "invoice:1", TenantID: "acme",
				Attachments: []jobv1.Attachment{{Filename: "a.txt", ContentType: "text/plain", Content: []byte("hi")}},
			}
			nj, _, perr := q.prepare(context.Background(), job)
			if perr != nil {
				f.Fatal(perr)
			}
			at := q.binding(nj.ID)
			if cfg.SigningKeys != nil {
				signedAt[at] = true
			}
			if cfg.Codec != nil {
				sealedAt[at] = true
			}
			jobs = append(jobs, made{nj.Data, at, cfg.SigningKeys != nil})
		}
	}
	// Seeds: every job in its own place, and copied into every other: each
	// id, queue and namespace of a producer's, in every combination.
	for _, j := range jobs {
		for _, p := range jobs {
			for _, q := range places {
				for _, ns := range places {
					for _, signed := range []bool{true, false} {
						f.Add(j.data, p.at.ID, q.Queue, ns.Namespace, signed)
					}
				}
			}
		}
		f.Add(j.data, "another-id", j.at.Queue, j.at.Namespace, true)
		f.Add(j.data, "another-id", j.at.Queue, j.at.Namespace, false)
		// Each opens in its own place: the target checks a worker that reads
		// jobs, not one that refuses all.
		p := openParams{At: j.at, Codec: codec}
		if j.signed {
			p.Keys = keys
		}
		if _, o := openJob(context.Background(), j.data, p); o != nil {
			f.Fatalf("a job does not open where it was enqueued: %+v", o)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, id, queue, namespace string, signed bool) {
		at := sign.Binding{Namespace: namespace, Queue: queue, ID: id}
		cc := &countedCodec{Codec: codec}
		p := openParams{At: at, Codec: cc}
		if signed {
			p.Keys = keys
		}
		job, o := openJob(context.Background(), data, p)
		obj, jsonErr := strictjson.DecodeObject(data)
		if cc.decodes.Load() > 0 && signed && (jsonErr != nil || !verifyJob(keys, at, obj)) {
			t.Fatalf("the codec was asked for a job whose mac does not bind it here: %+v", o)
		}
		if o != nil {
			if job != nil || o.code == "" || (o.action != Fail && o.action != Retry && o.action != Release) {
				t.Fatalf("a refusal with a job or without an outcome: %+v", o)
			}
			if o.action == Retry && o.code != "queue.codec_failed" {
				t.Fatalf("only a codec retries: %+v", o)
			}
			return
		}
		if job == nil || jsonErr != nil {
			t.Fatalf("opened %v from bytes that are no JSON object (%v)", job, jsonErr)
		}
		if p.jobID(job.TenantID, job.IdempotencyKey) != id {
			t.Fatalf("opened a job whose id does not derive from its namespace, tenant and key: %q", id)
		}
		if signed && (!verifyJob(keys, at, obj) || !signedAt[at]) {
			t.Fatalf("opened a job under keys whose mac does not bind it to %+v", at)
		}
		if _, sealed := obj["enc"]; sealed && !sealedAt[at] {
			t.Fatalf("opened a sealed job the codec's associated data does not bind to %+v", at)
		}
	})
}
