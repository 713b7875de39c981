package mailqueue_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/alexify/mailer/clock"
	"github.com/alexify/mailer/drivers/memory"
	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/mailqueue"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// newQueue returns a queue over a memory queue with a fake clock.
func newQueue(t *testing.T, cfg mailqueue.Config) (*mailqueue.Queue, *memory.Queue, *clock.Fake) {
	t.Helper()
	return newQueueWith(t, cfg, memory.Options{})
}

// newQueueWith is newQueue with options of the memory queue.
func newQueueWith(t *testing.T, cfg mailqueue.Config, opts memory.Options) (*mailqueue.Queue, *memory.Queue, *clock.Fake) {
	t.Helper()
	fc := clock.NewFake(t0)
	opts.Clock = fc
	mq := mustMemory(t, opts)
	cfg.Driver, cfg.Clock = mq, fc
	q, err := mailqueue.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return q, mq, fc
}

func contentJob() *jobv1.Job {
	return &jobv1.Job{
		Kind:           jobv1.KindContent,
		Subject:        "Your invoice",
		Content:        &jobv1.Content{HTML: "<p>Hello</p>", Text: "Hello"},
		From:           "Shop <shop@example.com>",
		To:             []string{"ada@example.com"},
		IdempotencyKey: "invoice:1",
	}
}

type cyclic map[string]any

func TestEnqueueRefusals(t *testing.T) {
	t.Parallel()
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cycle := map[string]any{}
	cycle["self"] = cycle
	tests := []struct {
		name        string
		edit        func(j *jobv1.Job)
		cfg         mailqueue.Config
		wantPath    string
		wantPointer string
		wantRule    string
	}{
		{"bad address", func(j *jobv1.Job) { j.To = []string{"ada@example.com", "not an address"} }, mailqueue.Config{}, "to[1]", "/to/1", "format"},
		{"CR in a display name", func(j *jobv1.Job) { j.To = []string{"Ada\r\nBcc: eve@example.com <ada@example.com>"} }, mailqueue.Config{}, "to[0]", "/to/0", "format"},
		{"LF in a header value", func(j *jobv1.Job) { j.Headers = map[string]string{"X-Tag": "a\nBcc: eve@example.com"} }, mailqueue.Config{}, "headers.X-Tag", "/headers/X-Tag", "pattern"},
		{"LF in the subject", func(j *jobv1.Job) { j.Subject = "Hi\nBcc: eve@example.com" }, mailqueue.Config{}, "subject", "/subject", "pattern"},
		{"a header the kit owns", func(j *jobv1.Job) { j.Headers = map[string]string{"Message-ID": "<x@example.com>"} }, mailqueue.Config{}, "headers.Message-ID", "/headers/Message-ID", "reservedHeader"},
		{"no recipient", func(j *jobv1.Job) { j.To = nil }, mailqueue.Config{}, "to", "/to", "required"},
		{"a template job without template", func(j *jobv1.Job) { j.Kind, j.Content = jobv1.KindTemplate, nil }, mailqueue.Config{}, "template", "/template", "required"},
		{"a content job without subject", func(j *jobv1.Job) { j.Subject = "" }, mailqueue.Config{}, "subject", "/subject", "required"},
		{"an unknown priority", func(j *jobv1.Job) { j.Priority = "urgent" }, mailqueue.Config{}, "priority", "/priority", "enum"},
		{"a time in the context", func(j *jobv1.Job) { j.Context = map[string]any{"user": map[string]any{"createdAt": created}} }, mailqueue.Config{}, "context.user.createdAt", "/context/user/createdAt", "json"},
		{"a *time.Time in the context", func(j *jobv1.Job) { j.Context = map[string]any{"user": map[string]any{"createdAt": &created}} }, mailqueue.Config{}, "context.user.createdAt", "/context/user/createdAt", "json"},
		{"a time in a struct of the context", func(j *jobv1.Job) {
			j.Context = map[string]any{"user": struct {
				CreatedAt time.Time `json:"createdAt"`
			}{created}}
		}, mailqueue.Config{}, "context.user.createdAt", "/context/user/createdAt", "json"},
		{"NaN in the context", func(j *jobv1.Job) { j.Context = map[string]any{"scores": []any{1.0, math.NaN()}} }, mailqueue.Config{}, "context.scores[1]", "/context/scores/1", "json"},
		{"an infinity in the context", func(j *jobv1.Job) { j.Context = map[string]any{"x": math.Inf(1)} }, mailqueue.Config{}, "context.x", "/context/x", "json"},
		{"a func in the context", func(j *jobv1.Job) { j.Context = map[string]any{"cb": func() {}} }, mailqueue.Config{}, "context.cb", "/context/cb", "json"},
		{"a channel in the context", func(j *jobv1.Job) { j.Context = map[string]any{"ch": make(chan int)} }, mailqueue.Config{}, "context.ch", "/context/ch", "json"},
		{"a cycle in the context", func(j *jobv1.Job) { j.Context = map[string]any{"a": cycle} }, mailqueue.Config{}, "context.a.self", "/context/a/self", "json"},
		{"a map with int keys in the context", func(j *jobv1.Job) { j.Context = map[string]any{"byId": map[int]string{1: "a"}} }, mailqueue.Config{}, "context.byId", "/context/byId", "json"},
		{"an integer beyond 2^53 in the context", func(j *jobv1.Job) { j.Context = map[string]any{"id": int64(1) << 60} }, mailqueue.Config{}, "context.id", "/context/id", "json"},
		{"a job over MaxJobBytes", func(j *jobv1.Job) { j.Content.Text = strings.Repeat("x", 2048) }, mailqueue.Config{MaxJobBytes: 1024}, "", "", "maxJobBytes"},
		{"a job over the default 256 KiB", func(j *jobv1.Job) { j.Content.Text = strings.Repeat("x", 256<<10) }, mailqueue.Config{}, "", "", "maxJobBytes"},
		{"inline attachments over the default 256 KiB", func(j *jobv1.Job) {
			j.Attachments = []jobv1.Attachment{{Filename: "a.bin", Content: make([]byte, 200<<10)}, {Filename: "b.bin", Content: make([]byte, 100<<10)}}
		}, mailqueue.Config{MaxJobBytes: 1 << 20}, "attachments", "/attachments", "maxInlineAttachmentBytes"},
		{"a struct with unexported fields in the context", func(j *jobv1.Job) {
			j.Context = map[string]any{"u": struct{ name string }{"Ada"}}
		}, mailqueue.Config{}, "context.u", "/context/u", "json"},
		{"a subject that is not UTF-8", func(j *jobv1.Job) { j.Subject = "Caf\xe9" }, mailqueue.Config{}, "subject", "/subject", "json"},
		{"a context string that is not UTF-8", func(j *jobv1.Job) { j.Context = map[string]any{"name": "Ren\xe9"} }, mailqueue.Config{}, "context.name", "/context/name", "json"},
		{"a time past year 9999", func(j *jobv1.Job) { far := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC); j.ScheduledAt = &far }, mailqueue.Config{}, "scheduledAt", "/scheduledAt", "json"},
		{"a context nested too deep", func(j *jobv1.Job) {
			var v any = "leaf"
			for i := 0; i < 100; i++ {
				v = []any{v}
			}
			j.Context = map[string]any{"deep": v}
		}, mailqueue.Config{}, "", "", "json"},
		{"an attachment by reference with content", func(j *jobv1.Job) {
			j.Attachments = []jobv1.Attachment{{Ref: "invoices/1.pdf", Content: []byte("x")}}
		}, mailqueue.Config{}, "attachments[0].content", "/attachments/0/content", "not"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q, mq, _ := newQueue(t, tc.cfg)
			j := contentJob()
			tc.edit(j)
			_, err := q.Enqueue(context.Background(), j)
			var e *mailqueue.Error
			if !errors.As(err, &e) {
				t.Fatalf("Enqueue: got %v, want a *mailqueue.Error", err)
			}
			got := []string{string(e.Code), e.Path, e.Pointer, e.Fields[0].Rule}
			want := []string{string(codes.QueueInvalidJob), tc.wantPath, tc.wantPointer, tc.wantRule}
			if tc.name == "a context nested too deep" {
				// The path is the 65th level down: check its start only.
				want[1], want[2] = e.Path, e.Pointer
				if !strings.HasPrefix(e.Path, "context.deep[0][0]") {
					t.Errorf("path %q", e.Path)
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("code, path, pointer, rule (-want +got):\n%s\nerror: %v", diff, err)
			}
			if strings.Contains(err.Error(), "eve@example.com") {
				t.Errorf("the error quotes the bad value: %v", err)
			}
			if n := countJobs(t, mq); n != 0 {
				t.Errorf("a refused job was stored: %d jobs", n)
			}
		})
	}
}

func TestEnqueueDuplicateAndKeyReused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q, mq, fc := newQueue(t, mailqueue.Config{})
	first, err := q.Enqueue(ctx, contentJob())
	if err != nil {
		t.Fatal(err)
	}
	if first.Duplicate {
		t.Fatal("the first enqueue is a duplicate")
	}
	// The same message again, later, with another expiry and correlation id:
	// the same job.
	fc.Advance(time.Minute)
	again := contentJob()
	exp := t0.Add(time.Hour)
	again.ExpiresAt, again.CorrelationID = &exp, "req-2"
	second, err := q.Enqueue(ctx, again)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(mailqueue.Result{ID: first.ID, MessageID: first.MessageID, Hash: first.Hash, Duplicate: true}, second); diff != "" {
		t.Errorf("enqueue again (-want +got):\n%s", diff)
	}
	// Another message under the same key: refused, nothing stored.
	other := contentJob()
	other.Subject = "Another subject"
	_, err = q.Enqueue(ctx, other)
	var e *mailqueue.Error
	if !errors.As(err, &e) || e.Code != codes.QueueKeyReused || !cmp.Equal(e.JobIDs, []string{first.ID}) {
		t.Fatalf("another message under the key: got %v, want queue.key_reused for %s", err, first.ID)
	}
	if mailqueue.CodeOf(err) != codes.QueueKeyReused {
		t.Errorf("CodeOf = %q", mailqueue.CodeOf(err))
	}
	if n := countJobs(t, mq); n != 1 {
		t.Errorf("stored %d jobs, want 1", n)
	}
	// The key is scoped by the tenant.
	tenant := contentJob()
	tenant.TenantID = "acme"
	r, err := q.Enqueue(ctx, tenant)
	if err != nil || r.Duplicate || r.ID == first.ID {
		t.Errorf("the same key of another tenant: %+v, %v; want a new job", r, err)
	}
}

func TestEnqueueFixesIDs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q, mq, _ := newQueue(t, mailqueue.Config{})
	j := contentJob()
	j.Attachments = []jobv1.Attachment{{Filename: "a.txt", ContentType: "text/plain", Content: []byte("hi")}}
	r, err := q.Enqueue(ctx, j)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := mq.Data(context.Background(), r.ID)
	if err != nil {
		t.Fatal(err)
	}
	var got jobv1.Job
	if err := json.Unmarshal(stored, &got); err != nil {
		t.Fatal(err)
	}
	if got.MessageID != r.MessageID || !strings.HasSuffix(r.MessageID, "@example.com>") {
		t.Errorf("stored Message-ID %q, result %q", got.MessageID, r.MessageID)
	}
	if got.Attachments[0].ContentID == "" || got.Hash != r.Hash || got.V != 1 || got.MaxAttempts != 5 || got.Priority != jobv1.PriorityNormal {
		t.Errorf("stored job lacks what enqueue fills in: %+v", got)
	}
	if j.MessageID != "" || j.Attachments[0].ContentID != "" {
		t.Error("Enqueue changed the caller's job")
	}
	// The same key in a second queue (another producer process) gives the
	// same id and Message-ID: they derive from the key.
	q2, _, _ := newQueue(t, mailqueue.Config{})
	r2, err := q2.Enqueue(ctx, contentJob())
	if err != nil {
		t.Fatal(err)
	}
	if r2.ID != r.ID || r2.MessageID != r.MessageID {
		t.Errorf("another producer derived %s %s, want %s %s", r2.ID, r2.MessageID, r.ID, r.MessageID)
	}
	// A job without a key gets one drawn: two such jobs are two jobs.
	a, b := contentJob(), contentJob()
	a.IdempotencyKey, b.IdempotencyKey = "", ""
	ra, _ := q.Enqueue(ctx, a)
	rb, _ := q.Enqueue(ctx, b)
	if ra.ID == rb.ID || ra.Duplicate || rb.Duplicate {
		t.Errorf("two jobs without a key: %+v %+v", ra, rb)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	t.Parallel()
	mq := mustMemory(t, memory.Options{})
	n := 0
	tests := map[string]mailqueue.Config{
		"no driver":        {},
		"short IDSecret":   {Driver: mq, IDSecret: []byte("short")},
		"drawing DeriveID": {Driver: mq, DeriveID: func(kind, seed string) string { n++; return strings.Repeat("a", n) }},
	}
	for name, cfg := range tests {
		if _, err := mailqueue.New(cfg); err == nil {
			t.Errorf("%s: New accepted it", name)
		}
	}
	if _, err := mailqueue.New(mailqueue.Config{Driver: mq, IDSecret: make([]byte, 32)}); err != nil {
		t.Errorf("a 32-byte IDSecret: %v", err)
	}
}

func TestEnqueueManyRefusesAllOrNothing(t *testing.T) {
	t.Parallel()
	q, mq, _ := newQueue(t, mailqueue.Config{})
	good, bad := contentJob(), contentJob()
	bad.IdempotencyKey, bad.To = "other", []string{"nope"}
	_, err := q.EnqueueMany(context.Background(), []*jobv1.Job{good, bad})
	var e *mailqueue.Error
	if !errors.As(err, &e) || e.Index != 1 || e.Path != "to[0]" {
		t.Fatalf("got %v, want queue.invalid_job at job 1 to[0]", err)
	}
	if n := countJobs(t, mq); n != 0 {
		t.Errorf("stored %d jobs of a refused call", n)
	}
}
