package mailqueue_test

import (
	"context"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"github.com/alexify/mailer/drivers/memory"
	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/gen/jobv1"
	mmemory "github.com/alexify/mailer/mail/memory"
	"github.com/alexify/mailer/mailqueue"
)

func key(id string, b byte) mailqueue.SigningKey {
	return mailqueue.SigningKey{ID: id, Secret: []byte(strings.Repeat(string(b), 32))}
}

var macText = regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`)

func TestSignedJobIsSentWithKidAndMac(t *testing.T) {
	t.Parallel()
	keys := []mailqueue.SigningKey{key("2026-10", 'a'), key("2026-04", 'b')}
	q, mq, _ := newQueue(t, mailqueue.Config{SigningKeys: keys})
	tr := mmemory.New()
	r, err := q.Enqueue(context.Background(), contentJob())
	if err != nil {
		t.Fatal(err)
	}
	// Read the stored job before a worker runs it: an accepted job drops
	// its data (RetainData "failed").
	got, _ := mq.Data(context.Background(), r.ID)
	var stored jobv1.Job
	if err := jsonUnmarshal(got, &stored); err != nil {
		t.Fatal(err)
	}
	if stored.KID != "2026-10" || !macText.MatchString(stored.MAC) {
		t.Errorf("kid %q, mac %q: want the first key's id and 43 base64url characters", stored.KID, stored.MAC)
	}
	startWorker(t, q, mailqueue.WorkerConfig{Transport: tr})
	drain(t, mq)
	wantJob(t, mq, r.ID, mailqueue.JobAccepted, 1, "")
	if tr.Sent() != 1 {
		t.Errorf("%d sent", tr.Sent())
	}
}

func TestSignatureInvalidFailsUnsent(t *testing.T) {
	t.Parallel()
	keys := []mailqueue.SigningKey{key("k1", 'a')}
	signed, id := produceID(t, mailqueue.Config{SigningKeys: keys}, contentJob())
	var env map[string]any
	if err := jsonUnmarshal(signed, &env); err != nil {
		t.Fatal(err)
	}
	forgedJob := contentJob()
	forgedJob.To = []string{"eve@example.net"}
	tests := map[string][]byte{
		"unsigned": produce(t, mailqueue.Config{}, contentJob()),
		// Whoever can write to the store recomputes the hash, keeps the mac.
		"forged": editJSON(t, produce(t, mailqueue.Config{}, forgedJob), func(m map[string]any) { m["kid"], m["mac"] = env["kid"], env["mac"] }),
		// The hash leaves expiresAt out; the mac does not.
		"altered": editJSON(t, signed, func(m map[string]any) { m["expiresAt"] = "2027-01-01T00:00:00Z" }),
		"signed by another secret under the same kid": produce(t, mailqueue.Config{SigningKeys: []mailqueue.SigningKey{key("k1", 'z')}}, contentJob()),
		"signed by a key not listed":                  produce(t, mailqueue.Config{SigningKeys: []mailqueue.SigningKey{key("k9", 'a')}}, contentJob()),
		"a kid and no mac":                            editJSON(t, signed, func(m map[string]any) { delete(m, "mac") }),
	}
	for name, data := range tests {
		t.Run(name, func(t *testing.T) {
			logs := &wireLogs{}
			q, mq, _ := newQueue(t, mailqueue.Config{SigningKeys: keys, Logger: slog.New(logs)})
			tr := mmemory.New()
			startWorker(t, q, mailqueue.WorkerConfig{Transport: tr})
			writeRaw(t, mq, id, data)
			drain(t, mq)
			wantJob(t, mq, id, mailqueue.JobFailed, 1, codes.QueueSignatureInvalid)
			if tr.Attempts() != 0 {
				t.Error("a job no key signed was sent")
			}
			if !logs.logged(slog.LevelError, codes.QueueSignatureInvalid) {
				t.Error("queue.signature_invalid was not logged at error")
			}
		})
	}
	// The signed job itself passes, and a worker without keys checks the
	// hash alone (docs/spec/queue.md, "Signed jobs").
	for name, cfg := range map[string]mailqueue.Config{"with keys": {SigningKeys: keys}, "without keys": {}} {
		q, mq, _ := newQueue(t, cfg)
		startWorker(t, q, mailqueue.WorkerConfig{Transport: mmemory.New()})
		writeRaw(t, mq, id, signed)
		drain(t, mq)
		if got, _ := mq.Get(context.Background(), id); got.State != mailqueue.JobAccepted {
			t.Errorf("%s: the signed job is %s (%s)", name, got.State, got.Code)
		}
	}
}

// TestKeyRotation follows docs/spec/queue.md, "Signed jobs": put the new key
// first, deploy the workers, then the producers; drop the old key once no
// job it signed is left.
func TestKeyRotation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	oldKey, newKey := key("2026-04", 'o'), key("2026-10", 'n')
	_, mq, fc := newQueue(t, mailqueue.Config{})
	queueOf := func(keys ...mailqueue.SigningKey) *mailqueue.Queue {
		q, err := mailqueue.New(mailqueue.Config{Driver: mq, Clock: fc, SigningKeys: keys})
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	enqueue := func(q *mailqueue.Queue, k string) string {
		j := contentJob()
		j.IdempotencyKey = k
		r, err := q.Enqueue(ctx, j)
		if err != nil {
			t.Fatal(err)
		}
		return r.ID
	}
	work := func(q *mailqueue.Queue) {
		w, err := q.NewWorker(mailqueue.WorkerConfig{Transport: mmemory.New()})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		drain(t, mq)
		if err := w.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	oldProducer := queueOf(oldKey)
	before := enqueue(oldProducer, "before")
	// The workers first: the newKey key first, the oldKey one still listed.
	work(queueOf(newKey, oldKey))
	wantJob(t, mq, before, mailqueue.JobAccepted, 1, "")
	// A producer not yet deployed still signs with the oldKey key; the newKey
	// producers sign with the newKey one.
	during := enqueue(oldProducer, "during")
	newProducer := queueOf(newKey, oldKey)
	fresh := enqueue(newProducer, "fresh")
	if got, _ := mq.Data(context.Background(), fresh); !strings.Contains(string(got), `"kid":"2026-10"`) {
		t.Errorf("the newKey producer did not sign with the newKey key: %s", got)
	}
	work(queueOf(newKey, oldKey))
	wantJob(t, mq, during, mailqueue.JobAccepted, 1, "")
	wantJob(t, mq, fresh, mailqueue.JobAccepted, 1, "")
	// The oldKey key dropped too soon: a job it signed fails.
	late := enqueue(oldProducer, "late")
	last := enqueue(newProducer, "last")
	work(queueOf(newKey))
	wantJob(t, mq, late, mailqueue.JobFailed, 1, codes.QueueSignatureInvalid)
	wantJob(t, mq, last, mailqueue.JobAccepted, 1, "")
}

func TestNewRefusesBadSigningKeys(t *testing.T) {
	t.Parallel()
	mq := mustMemory(t, memory.Options{})
	tests := map[string][]mailqueue.SigningKey{
		"a short secret":   {{ID: "k1", Secret: make([]byte, 31)}},
		"no ID":            {{ID: "", Secret: make([]byte, 32)}},
		"two IDs alike":    {key("k1", 'a'), key("k1", 'b')},
		"an ID not a kid":  {{ID: "k 1", Secret: make([]byte, 32)}},
		"a short old key":  {key("k2", 'a'), {ID: "k1", Secret: []byte("short")}},
		"a nil secret too": {{ID: "k1"}},
	}
	for name, keys := range tests {
		if _, err := mailqueue.New(mailqueue.Config{Driver: mq, SigningKeys: keys}); err == nil {
			t.Errorf("%s: New took the keys", name)
		}
	}
	if _, err := mailqueue.New(mailqueue.Config{Driver: mq, SigningKeys: []mailqueue.SigningKey{key("k2", 'a'), key("k1", 'b')}}); err != nil {
		t.Errorf("two good keys: %v", err)
	}
}
