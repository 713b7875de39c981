package mailqueue

// The fuzz target of the worker's job-opening path. go test runs its seeds
// (the wire vectors) only; fuzz it with, for instance:
//
//	go test ./mailqueue -run '^$' -fuzz '^FuzzOpen$' -fuzztime 20000x -parallel 1
//
// FuzzCanonical, of the canonical JSON, is in internal/jcs.

import (
	"context"
	"regexp"
	"testing"

	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/internal/sign"
	"github.com/alexify/mailer/internal/strictjson"
)

var hashText = regexp.MustCompile(`^[0-9a-f]{64}$`)

func FuzzOpen(f *testing.F) {
	v := readVectors(f)
	for _, s := range v.Stored {
		f.Add([]byte(s.Data), len(s.Keys) > 0, s.Codec != "")
	}
	for _, s := range v.Signed {
		f.Add([]byte(s.StoredJSON), s.Key != nil, s.Codec != "")
	}
	for _, j := range v.Valid {
		f.Add([]byte(j.Job), false, false)
	}
	for _, j := range v.Invalid {
		f.Add([]byte(j.Job), false, false)
	}
	keys := signingKeys(f, []vectorKey{{ID: "2026-10", Secret: "6d61696c65722d746573742d6b65792d6f662d33322d62797465732d2d2d2d21"}})
	at := sign.Binding{Namespace: v.Signed[1].Namespace, Queue: v.Signed[1].Queue, ID: v.Signed[1].ID}
	f.Fuzz(func(t *testing.T, data []byte, signed, sealed bool) {
		var ks []SigningKey
		if signed {
			ks = keys
		}
		codec := func() Codec {
			if sealed {
				return &base64Codec{}
			}
			return nil
		}
		c1 := codec()
		job, o := openJob(context.Background(), data, openParams{MaxBytes: testReadLimit, At: at, Keys: ks, Codec: c1})
		_, o2 := openJob(context.Background(), data, openParams{MaxBytes: testReadLimit, At: at, Keys: ks, Codec: codec()})
		if outcomeOf(o) != outcomeOf(o2) {
			t.Fatalf("two opens differ: %+v, %+v", o, o2)
		}
		if o != nil {
			checkRefusal(t, data, at, ks, job, o)
			return
		}
		if job == nil || job.V != 1 || !hashText.MatchString(job.Hash) {
			t.Fatalf("an opened job without version or hash: %+v", job)
		}
		if signed && job.KID != ks[0].ID {
			t.Fatalf("a job opened under keys has kid %q", job.KID)
		}
		if c, ok := c1.(*base64Codec); ok && c.decodes > 1 {
			t.Fatalf("the codec was asked %d times", c.decodes)
		}
	})
}

// checkRefusal checks a job openJob refused: no job, an outcome with a
// code, a retry only from the codec, and under keys the codec asked only
// for a job whose mac was verified.
func checkRefusal(t *testing.T, data []byte, at sign.Binding, ks []SigningKey, job *jobv1.Job, o *opened) {
	t.Helper()
	if job != nil || o.code == "" || (o.action != Fail && o.action != Retry && o.action != Release) {
		t.Fatalf("a refusal with a job or without an outcome: %+v", o)
	}
	if o.action == Retry && o.code != "queue.codec_failed" {
		t.Fatalf("only a codec retries: %+v", o)
	}
	if len(ks) > 0 && (o.code == "queue.codec_failed" || o.code == "queue.codec_missing") {
		// The mac was verified before the codec was asked.
		if obj, err := strictjson.DecodeObject(data); err != nil || !verifyJob(ks, at, obj) {
			t.Fatalf("an unverified job reached the codec: %+v", o)
		}
	}
}
