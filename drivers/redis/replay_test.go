package redis_test

// The trust binds of docs/wire.md on real Redis: a signed or sealed job
// copied under another id, into another queue or another namespace, and a
// job whose hash's tenant, max or pri fields were written beside it, are
// refused unsent (mailqueue's TestReplayIsRefused and
// TestStoreRecordCannotOverruleTheJob do the same on the memory queue).

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	redisdriver "github.com/alexify/mailer/drivers/redis"
	"github.com/alexify/mailer/drivers/redis/internal/redistest"
	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/gen/jobv1"
	mmemory "github.com/alexify/mailer/mail/memory"
	"github.com/alexify/mailer/mailqueue"
)

// replayJob is a job of a tenant with delivery parameters of its own.
func replayJob(key string) *jobv1.Job {
	return &jobv1.Job{
		Kind: jobv1.KindContent, Subject: "Your invoice", Content: &jobv1.Content{Text: "Hello"},
		From: "Shop <shop@example.com>", To: []string{"ada@example.com"}, IdempotencyKey: key,
		TenantID: "acme", MaxAttempts: 3, Priority: jobv1.PriorityHigh,
	}
}

// replayQueue opens the Redis queue prefix:name, deleted when the test
// ends, and a mailqueue.Queue of cfg over it.
func replayQueue(t *testing.T, c goredis.UniversalClient, prefix, name string, cfg mailqueue.Config) (*redisdriver.Queue, *mailqueue.Queue) {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	rq, err := redisdriver.Open(context.Background(), redisdriver.Options{Client: c, Prefix: prefix, Queue: name, Logger: quiet, PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = rq.Source().Obliterate(context.Background()) })
	if got, want := rq.QueueName(), prefix+":"+name; got != want {
		t.Fatalf("QueueName %q, want %q", got, want)
	}
	cfg.Driver, cfg.Logger = rq, quiet
	q, err := mailqueue.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rq, q
}

// jobKey is the key of a job's hash in the queue prefix:name.
func jobKey(prefix, name, id string) string { return "{" + prefix + ":" + name + "}:job:" + id }

// finished waits until the job is no longer queued nor running, or has
// spent an attempt, and returns its row.
func finished(t *testing.T, rq *redisdriver.Queue, id string) mailqueue.JobRow {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		j, err := rq.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if (j.State != mailqueue.JobQueued && j.State != mailqueue.JobRunning) || j.Attempt > 0 {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s is still %s after 10 s", id, j.State)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// work runs a worker of q until the job id is finished, and returns its
// row and the sends of that job (its lease's id is the message's
// idempotency key).
func work(t *testing.T, rq *redisdriver.Queue, q *mailqueue.Queue, id string) (mailqueue.JobRow, int) {
	t.Helper()
	tr := mmemory.New()
	w, err := q.NewWorker(mailqueue.WorkerConfig{Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	row := finished(t, rq, id)
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	sent := 0
	for _, m := range tr.Messages() {
		if m.IdempotencyKey == id {
			sent++
		}
	}
	return row, sent
}

func TestReplayOnRedis(t *testing.T) {
	ctx := context.Background()
	c := redistest.Standalone(t)
	keys := []mailqueue.SigningKey{{ID: "k1", Secret: bytes.Repeat([]byte{'a'}, 32)}}
	codec, err := mailqueue.NewAESGCMCodec(bytes.Repeat([]byte{1}, 32))
	if err != nil {
		t.Fatal(err)
	}
	type place struct{ queue, namespace, id string }
	for _, sealed := range []bool{false, true} {
		for _, signed := range []bool{true, false} {
			cfg := mailqueue.Config{}
			if signed {
				cfg.SigningKeys = keys
			}
			if sealed {
				cfg.Codec = codec
			}
			prefix := redistest.Prefix(t)
			rq, producer := replayQueue(t, c, prefix, "mail", cfg)
			res, err := producer.Enqueue(ctx, replayJob("invoice:1"))
			if err != nil {
				t.Fatal(err)
			}
			data, err := c.HGet(ctx, jobKey(prefix, "mail", res.ID), "data").Bytes()
			if err != nil {
				t.Fatal(err)
			}
			// The original, in its own place, is sent.
			if row, sent := work(t, rq, producer, res.ID); row.State != mailqueue.JobAccepted || sent != 1 {
				t.Errorf("the original: %s (%s), %d sends", row.State, row.Code, sent)
			}
			// The id of another job of the queue: where a copy would go.
			otherID := deriveID(t, cfg, "invoice:2")
			// A copy under another id is refused as tampered, unless only the
			// mac or the codec can tell (the tenant and key are sealed).
			anotherID := codes.QueueJobTampered
			switch {
			case sealed && signed:
				anotherID = codes.QueueSignatureInvalid
			case sealed:
				anotherID = codes.QueueCodecFailed // the AD does not authenticate: retried, unsent
			}
			elsewhere := codes.QueueSignatureInvalid
			if !signed && sealed {
				elsewhere = codes.QueueCodecFailed
			}
			tests := []struct {
				name string
				at   place
				want codes.Code
			}{
				{"under another id", place{"mail", "", otherID}, anotherID},
				{"into another queue, same id", place{"other", "", res.ID}, elsewhere},
				{"into another namespace, same id", place{"mail2", "billing", res.ID}, elsewhere},
			}
			if !signed && !sealed {
				// Without keys nor codec, only the id binds: another queue of
				// the same namespace reads it; another namespace derives
				// another id.
				tests[1].want = ""
				tests[2].want = codes.QueueJobTampered
			}
			for _, tc := range tests {
				name := map[bool]string{true: "sealed", false: "clear"}[sealed] + ", " + map[bool]string{true: "signed", false: "unsigned"}[signed] + ", " + tc.name
				t.Run(name, func(t *testing.T) {
					wcfg := cfg
					wcfg.Namespace = tc.at.namespace
					wrq, wq := rq, producer
					if tc.at.queue != "mail" || tc.at.namespace != "" {
						wrq, wq = replayQueue(t, c, prefix, tc.at.queue, wcfg)
					}
					// The copy, written as whoever can write to the store can,
					// with the metadata of the original.
					r, err := wrq.Source().Enqueue(ctx, []mailqueue.NewJob{{
						ID: tc.at.id, Hash: res.Hash + "-copy", Data: data, TenantID: "acme", MaxAttempts: 3, Priority: jobv1.PriorityHigh,
					}})
					if err != nil || r[0].Duplicate || r[0].Conflict {
						t.Fatalf("writing the copy: %+v, %v", r, err)
					}
					row, sent := work(t, wrq, wq, tc.at.id)
					if tc.want == "" {
						if row.State != mailqueue.JobAccepted || sent != 1 {
							t.Fatalf("%s (%s), %d sends; want accepted, sent once", row.State, row.Code, sent)
						}
						return
					}
					if row.Code != tc.want || sent != 0 {
						t.Fatalf("%s (%s: %s), %d sends; want %s, unsent", row.State, row.Code, row.Reason, sent, tc.want)
					}
					if tc.want != codes.QueueCodecFailed && row.State != mailqueue.JobFailed {
						t.Errorf("state %s, want failed", row.State)
					}
				})
			}
		}
	}
}

// deriveID returns the id a queue of cfg gives the job of key: enqueued in
// a Redis queue of its own.
func deriveID(t *testing.T, cfg mailqueue.Config, key string) string {
	t.Helper()
	_, q := replayQueue(t, redistest.Standalone(t), redistest.Prefix(t), "mail", cfg)
	res, err := q.Enqueue(context.Background(), replayJob(key))
	if err != nil {
		t.Fatal(err)
	}
	return res.ID
}

// TestStoreRecordOnRedis: a store writer changes the tenant, max and pri
// fields of a signed job's hash beside its data; the worker refuses it as
// tampered, unsent.
func TestStoreRecordOnRedis(t *testing.T) {
	ctx := context.Background()
	c := redistest.Standalone(t)
	keys := []mailqueue.SigningKey{{ID: "k1", Secret: bytes.Repeat([]byte{'a'}, 32)}}
	for name, fields := range map[string][]any{
		"max 100":         {"max", 100},
		"another tenant":  {"tenant", "evil"},
		"no tenant":       {"tenant", ""},
		"priority low":    {"pri", 2},
		"tenant and max":  {"tenant", "evil", "max", 100},
		"nothing changed": nil,
	} {
		t.Run(name, func(t *testing.T) {
			prefix := redistest.Prefix(t)
			rq, q := replayQueue(t, c, prefix, "mail", mailqueue.Config{SigningKeys: keys})
			res, err := q.Enqueue(ctx, replayJob("invoice:1"))
			if err != nil {
				t.Fatal(err)
			}
			if fields != nil {
				if err := c.HSet(ctx, jobKey(prefix, "mail", res.ID), fields...).Err(); err != nil {
					t.Fatal(err)
				}
			}
			row, sent := work(t, rq, q, res.ID)
			if fields == nil {
				if row.State != mailqueue.JobAccepted || sent != 1 {
					t.Fatalf("%s (%s), %d sends; want accepted", row.State, row.Code, sent)
				}
				return
			}
			if row.State != mailqueue.JobFailed || row.Code != codes.QueueJobTampered || sent != 0 {
				t.Fatalf("%s (%s: %s), %d sends; want failed, queue.job_tampered, unsent", row.State, row.Code, row.Reason, sent)
			}
		})
	}
}
