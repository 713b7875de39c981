package mailqueue

// The fuzz target of EnqueueJSON. go test runs its seeds only; fuzz it
// with, for instance:
//
//	go test ./mailqueue -run '^$' -fuzz '^FuzzEnqueueJSON$' -fuzztime 20000x -parallel 1

import (
	"context"
	"errors"
	"testing"

	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/internal/strictjson"
)

// FuzzEnqueueJSON: EnqueueJSON never panics, refuses with an *Error what it
// refuses, never accepts what jobv1.Validate or the worker's reading of the
// JSON refuses, and what it stores a worker opens, signed and sealed too.
func FuzzEnqueueJSON(f *testing.F) {
	v := readVectors(f)
	for _, j := range v.Valid {
		f.Add([]byte(j.Job), false, false)
		f.Add([]byte(j.Job), true, true)
	}
	for _, j := range v.Invalid {
		f.Add([]byte(j.Job), false, false)
	}
	for _, s := range []string{
		jsonHead + `"to":["ada@example.com"]}`,
		jsonHead + `"to":["ada@example.com"],"to":["eve@example.net"]}`,
		jsonHead + `"to":["ada@example.com"],"context":{"n":9007199254740993,"s":"\ud800"}}`,
		jsonHead + `"to":["ada@example.com"],"maxAttempts":0}`,
	} {
		f.Add([]byte(s), false, false)
	}
	keys := signingKeys(f, []vectorKey{{ID: "2026-10", Secret: "6d61696c65722d746573742d6b65792d6f662d33322d62797465732d2d2d2d21"}})
	f.Fuzz(func(t *testing.T, data []byte, signed, sealed bool) {
		var cfg Config
		if signed {
			cfg.SigningKeys = keys
		}
		if sealed {
			cfg.Codec = &base64Codec{}
		}
		q, d := newJSONQueue(t, cfg)
		_, err := q.EnqueueJSON(context.Background(), data)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Code == "" || len(e.Fields) == 0 && e.Err == nil {
				t.Fatalf("a refusal that is not a coded *Error: %v", err)
			}
			if len(d.jobs) != 0 {
				t.Fatalf("refused, yet %d jobs stored", len(d.jobs))
			}
			return
		}
		if err := strictjson.Check(data); err != nil {
			t.Fatalf("enqueued what the worker's reading refuses: %v", err)
		}
		if err := jobv1.Validate(data); err != nil {
			t.Fatalf("enqueued what jobv1.Validate refuses: %v", err)
		}
		if len(d.jobs) != 1 {
			t.Fatalf("%d jobs stored", len(d.jobs))
		}
		if _, o := openJob(context.Background(), d.jobs[0].Data, q.openParams(d.jobs[0].ID)); o != nil {
			t.Fatalf("a worker refuses what EnqueueJSON stored: %+v\n%s", o, d.jobs[0].Data)
		}
	})
}
