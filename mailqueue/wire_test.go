package mailqueue_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alexify/mailer/drivers/memory"
	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/internal/codetest"
	mmemory "github.com/alexify/mailer/mail/memory"
	"github.com/alexify/mailer/mailqueue"
)

// produce enqueues job through a queue of cfg over a memory queue of its
// own and returns what it stored: the bytes a producer writes.
func produce(t *testing.T, cfg mailqueue.Config, job *jobv1.Job) []byte {
	t.Helper()
	data, _ := produceID(t, cfg, job)
	return data
}

// produceID is produce, and it returns the job's id too: a signed or
// sealed job opens only under its own id (its mac and the codec's
// associated data bind it), in a memory queue named "mail".
func produceID(t *testing.T, cfg mailqueue.Config, job *jobv1.Job) ([]byte, string) {
	t.Helper()
	q, mq, _ := newQueue(t, cfg)
	r, err := q.Enqueue(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	got, err := mq.Data(context.Background(), r.ID)
	if err != nil {
		t.Fatalf("the produced job is not stored: %v", err)
	}
	return got, r.ID
}

// writeRaw writes data straight into the memory queue's source, as whoever
// can write to the store can, due now.
func writeRaw(t *testing.T, mq *memory.Queue, id string, data []byte) {
	t.Helper()
	res, err := mq.Source().Enqueue(context.Background(), []mailqueue.NewJob{{
		ID: id, Hash: "crafted-" + id, Data: data, Priority: jobv1.PriorityNormal, RunAt: t0, MaxAttempts: 5, EnqueuedAt: t0,
	}})
	if err != nil || len(res) != 1 || res[0].Duplicate || res[0].Conflict {
		t.Fatalf("writing %s: %+v, %v", id, res, err)
	}
	mq.Wake()
}

// editJSON decodes a stored job, lets f change it, and encodes it again.
func editJSON(t *testing.T, data []byte, f func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// wantJob checks a job's state, attempts spent and code.
func wantJob(t *testing.T, mq *memory.Queue, id string, state mailqueue.JobState, attempts int, code codes.Code) {
	t.Helper()
	got, err := mq.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("job %s is not stored: %v", id, err)
	}
	if got.State != state || got.Attempt != attempts || got.Code != code {
		t.Fatalf("job %s: state %s, attempts %d, code %s; want %s, %d, %s (%s)", id, got.State, got.Attempt, got.Code, state, attempts, code, got.Reason)
	}
}

// wireLogs is a slog.Handler that keeps the records.
type wireLogs struct {
	mu      sync.Mutex
	records []slog.Record
}

func (l *wireLogs) Enabled(context.Context, slog.Level) bool { return true }
func (l *wireLogs) Handle(_ context.Context, r slog.Record) error {
	codetest.Observe(r)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, r.Clone())
	return nil
}
func (l *wireLogs) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *wireLogs) WithGroup(string) slog.Handler      { return l }

// logged reports whether a record at level carries the attribute code.
func (l *wireLogs) logged(level slog.Level, code codes.Code) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.records {
		found := false
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "code" && a.Value.String() == string(code) {
				found = true
			}
			return !found
		})
		if found && r.Level == level {
			return true
		}
	}
	return false
}

func TestHashMismatchFails(t *testing.T) {
	t.Parallel()
	q, mq, _ := newQueue(t, mailqueue.Config{})
	tr := mmemory.New()
	startWorker(t, q, mailqueue.WorkerConfig{Transport: tr})
	data := editJSON(t, produce(t, mailqueue.Config{}, contentJob()), func(m map[string]any) { m["subject"] = "Changed in the store" })
	writeRaw(t, mq, "changed", data)
	drain(t, mq)
	wantJob(t, mq, "changed", mailqueue.JobFailed, 1, codes.QueueHashMismatch)
	if tr.Attempts() != 0 {
		t.Error("a job whose hash does not match was sent")
	}
}

func TestUnreadableJobsAreReleasedThenFailed(t *testing.T) {
	t.Parallel()
	expires := t0.Add(10 * time.Minute)
	good := contentJob()
	good.ExpiresAt = &expires
	base := produce(t, mailqueue.Config{}, good)
	tests := []struct {
		name    string
		edit    func(m map[string]any)
		advance time.Duration // to the failure
	}{
		{"a later version", func(m map[string]any) { m["v"] = 2; delete(m, "expiresAt") }, mailqueue.MaxReleaseWait + time.Minute},
		{"a later version with an expiresAt", func(m map[string]any) { m["v"] = 2 }, 11 * time.Minute},
		{"a field version 1 does not know", func(m map[string]any) { m["ampHtml"] = "<amp>"; delete(m, "expiresAt") }, mailqueue.MaxReleaseWait + time.Minute},
		{"a field version 1 does not know, and expired", func(m map[string]any) { m["ampHtml"] = "<amp>" }, 11 * time.Minute},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q, mq, fc := newQueue(t, mailqueue.Config{})
			tr := mmemory.New()
			startWorker(t, q, mailqueue.WorkerConfig{Transport: tr})
			writeRaw(t, mq, "later", editJSON(t, base, tc.edit))
			drain(t, mq)
			wantJob(t, mq, "later", mailqueue.JobQueued, 0, codes.QueueUnsupportedVersion)
			// Given back again and again, its attempts not spent.
			fc.Advance(mailqueue.DefaultOperatorDelay)
			mq.Wake()
			drain(t, mq)
			wantJob(t, mq, "later", mailqueue.JobQueued, 0, codes.QueueUnsupportedVersion)
			fc.Set(t0.Add(tc.advance))
			mq.Wake()
			drain(t, mq)
			wantJob(t, mq, "later", mailqueue.JobFailed, 1, codes.QueueUnsupportedVersion)
			if tr.Attempts() != 0 {
				t.Error("a job this worker cannot read was sent")
			}
		})
	}
}

func TestIDSecretChangesTheIDAndIsStable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	secret := []byte(strings.Repeat("s", 32))
	plain, _, _ := newQueue(t, mailqueue.Config{})
	a, _, _ := newQueue(t, mailqueue.Config{IDSecret: secret})
	b, _, _ := newQueue(t, mailqueue.Config{IDSecret: secret})
	other, _, _ := newQueue(t, mailqueue.Config{IDSecret: []byte(strings.Repeat("o", 32))})
	rs := make([]mailqueue.Result, 0, 4)
	for _, q := range []*mailqueue.Queue{plain, a, b, other} {
		r, err := q.Enqueue(ctx, contentJob())
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	if rs[1].ID != rs[2].ID || rs[1].MessageID != rs[2].MessageID {
		t.Errorf("two producers of one IDSecret derived %s and %s", rs[1].ID, rs[2].ID)
	}
	if rs[0].ID == rs[1].ID || rs[1].ID == rs[3].ID || rs[0].MessageID == rs[1].MessageID {
		t.Errorf("IDSecret did not change the id: %s %s %s", rs[0].ID, rs[1].ID, rs[3].ID)
	}
	if _, err := mailqueue.New(mailqueue.Config{Driver: mustMemory(t, memory.Options{}), IDSecret: make([]byte, 31)}); err == nil {
		t.Error("New took a 31-byte IDSecret")
	}
}

func TestDeriveIDFlowsIntoTheIDs(t *testing.T) {
	t.Parallel()
	derive := func(kind, seed string) string {
		if kind == mailqueue.IDKindJob {
			return "job_" + seed[:26]
		}
		return "m" + seed[:32]
	}
	q, mq, _ := newQueueWith(t, mailqueue.Config{DeriveID: derive}, memory.Options{RetainData: mailqueue.RetainAllData})
	tr := mmemory.New()
	startWorker(t, q, mailqueue.WorkerConfig{Transport: tr})
	j := contentJob()
	j.Attachments = []jobv1.Attachment{{Filename: "a.txt", ContentType: "text/plain", Content: []byte("hi")}}
	r, err := q.Enqueue(context.Background(), j)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r.ID, "job_") || len(r.ID) != 30 {
		t.Errorf("id %q, want job_ and 26 hex digits", r.ID)
	}
	if !strings.HasPrefix(r.MessageID, "<m") || !strings.HasSuffix(r.MessageID, "@example.com>") || len(r.MessageID) != len("<m@example.com>")+32 {
		t.Errorf("Message-ID %q, want <m + 32 hex digits @example.com>", r.MessageID)
	}
	drain(t, mq)
	wantJob(t, mq, r.ID, mailqueue.JobAccepted, 1, "")
	msgs := tr.Messages()
	if len(msgs) != 1 {
		t.Fatalf("%d messages sent", len(msgs))
	}
	m := msgs[0]
	if m.MessageID != r.MessageID || m.IdempotencyKey != r.ID {
		t.Errorf("sent with Message-ID %q and key %q; want %q and %q", m.MessageID, m.IdempotencyKey, r.MessageID, r.ID)
	}
	if cid := m.Attachments[0].ContentID; !strings.HasPrefix(cid, "m") || !strings.HasSuffix(cid, "@example.com") || len(cid) != len("m@example.com")+32 {
		t.Errorf("Content-ID %q, want m + 32 hex digits @example.com", cid)
	}
	// The same again: the same ids.
	q2, _, _ := newQueue(t, mailqueue.Config{DeriveID: derive})
	r2, err := q2.Enqueue(context.Background(), contentJob())
	if err != nil || r2.ID != r.ID || r2.MessageID != r.MessageID {
		t.Errorf("another producer: %+v, %v", r2, err)
	}
}

func TestDrawingDeriveIDIsRefused(t *testing.T) {
	t.Parallel()
	n := 0
	_, err := mailqueue.New(mailqueue.Config{Driver: mustMemory(t, memory.Options{}), DeriveID: func(kind, seed string) string {
		n++
		return seed[:8] + "-" + strings.Repeat("x", n)
	}})
	if err == nil {
		t.Error("New took a DeriveID that draws")
	}
}

func TestGenerateIDDrawsTheKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := 0
	gen := func() string { n++; return "drawn-" + strings.Repeat("x", n) }
	q, mq, _ := newQueue(t, mailqueue.Config{GenerateID: gen})
	j := contentJob()
	j.IdempotencyKey = ""
	r, err := q.Enqueue(ctx, j)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := mq.Data(context.Background(), r.ID)
	var stored jobv1.Job
	if err := json.Unmarshal(got, &stored); err != nil {
		t.Fatal(err)
	}
	if stored.IdempotencyKey != "drawn-x" || n != 1 {
		t.Errorf("stored key %q after %d draws; want drawn-x after 1", stored.IdempotencyKey, n)
	}
	// The id is that of the drawn key, as if it had been given.
	keyed := contentJob()
	keyed.IdempotencyKey = "drawn-x"
	q2, _, _ := newQueue(t, mailqueue.Config{})
	r2, err := q2.Enqueue(ctx, keyed)
	if err != nil || r2.ID != r.ID {
		t.Errorf("the id of the drawn key: %s, want %s (%v)", r2.ID, r.ID, err)
	}
	// A key given is not drawn.
	if _, err := q.Enqueue(ctx, contentJob()); err != nil || n != 1 {
		t.Errorf("a job with a key drew one (%d draws, %v)", n, err)
	}
}
