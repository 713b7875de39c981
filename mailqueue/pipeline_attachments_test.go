package mailqueue_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"mime/multipart"
	"net/mail"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/alexify/mailer/attachments"
	"github.com/alexify/mailer/drivers/memory"
	"github.com/alexify/mailer/examples/templates"
	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/gen/jobv1"
	mmail "github.com/alexify/mailer/mail"
	"github.com/alexify/mailer/mail/smtptest"
	"github.com/alexify/mailer/mailqueue"
	"github.com/alexify/mailer/render"
)

// TestPipelineInlineAttachmentsCap: the inline attachments of a job are
// capped in all (MaxInlineAttachmentBytes, 256 KiB by default) and refused
// at enqueue with the path; references count nothing.
func TestPipelineInlineAttachmentsCap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q, mq, _ := newQueue(t, mailqueue.Config{MaxJobBytes: 1 << 20})
	if mailqueue.DefaultMaxInlineAttachmentBytes != 256<<10 {
		t.Fatalf("DefaultMaxInlineAttachmentBytes = %d", mailqueue.DefaultMaxInlineAttachmentBytes)
	}
	over := contentJob()
	over.Attachments = []jobv1.Attachment{
		{Filename: "a.bin", Content: make([]byte, 128<<10)},
		{Filename: "b.bin", Content: make([]byte, 128<<10+1)},
	}
	_, err := q.Enqueue(ctx, over)
	var e *mailqueue.Error
	if !errors.As(err, &e) || e.Code != codes.QueueInvalidJob || e.Path != "attachments" || e.Fields[0].Rule != "maxInlineAttachmentBytes" {
		t.Fatalf("over the cap: %v; want queue.invalid_job at attachments", err)
	}
	at := contentJob()
	at.IdempotencyKey = "at-the-cap"
	at.Attachments = []jobv1.Attachment{
		{Filename: "a.bin", Content: make([]byte, 128<<10)},
		{Filename: "b.bin", Content: make([]byte, 128<<10)},
		{Filename: "big.pdf", Ref: "big.pdf"}, // by reference: no bytes in the job
	}
	if _, err := q.Enqueue(ctx, at); err != nil {
		t.Errorf("at the cap, with a reference: %v", err)
	}
	if n := countJobs(t, mq); n != 1 {
		t.Errorf("%d jobs stored, want 1", n)
	}
}

// plResolveRecorder wraps a resolver and records what it was told.
type plResolveRecorder struct {
	mu    sync.Mutex
	refs  []string
	infos []mailqueue.ResolveInfo
	next  attachments.Resolver
}

func (r *plResolveRecorder) resolve(ctx context.Context, ref string, info mailqueue.ResolveInfo) ([]byte, error) {
	r.mu.Lock()
	r.refs = append(r.refs, ref)
	r.infos = append(r.infos, info)
	next := r.next
	r.mu.Unlock()
	return next(ctx, ref, info)
}

// TestPipelineAttachmentByReference sends a job with an attachment by
// reference, read by attachments.FromPath at the worker, through SMTP.
func TestPipelineAttachmentByReference(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	terms := []byte("%PDF-1.4\n% the terms \x00\xff\n")
	if err := os.MkdirAll(filepath.Join(dir, "legal"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "legal", "terms.pdf"), terms, 0o640); err != nil {
		t.Fatal(err)
	}
	srv := smtptest.Start(t, smtptest.Script{})
	q, mq, _ := newQueue(t, mailqueue.Config{})
	rec := &plResolveRecorder{next: attachments.FromPath(dir)}
	startWorker(t, q, mailqueue.WorkerConfig{Transport: smtpTransport(t, srv), ResolveAttachment: rec.resolve})

	j := contentJob()
	j.Attachments = []jobv1.Attachment{{Filename: "terms.pdf", ContentType: "application/pdf", Ref: "legal/terms.pdf"}}
	r, err := q.Enqueue(ctx, j)
	if err != nil {
		t.Fatal(err)
	}
	drain(t, mq)
	if got, _ := mq.Get(context.Background(), r.ID); got.State != mailqueue.JobAccepted {
		t.Fatalf("state %s, code %s: %s", got.State, got.Code, got.Reason)
	}
	if len(rec.infos) != 1 || rec.refs[0] != "legal/terms.pdf" || rec.infos[0].Job == nil || rec.infos[0].Attachment == nil ||
		rec.infos[0].Attachment.Ref != "legal/terms.pdf" || rec.infos[0].Job.IdempotencyKey != j.IdempotencyKey {
		t.Errorf("ResolveAttachment was told %q %+v", rec.refs, rec.infos)
	}
	msgs := srv.Messages()
	if len(msgs) != 1 {
		t.Fatalf("%d messages", len(msgs))
	}
	parsed, err := mail.ReadMessage(bytes.NewReader(msgs[0].Data))
	if err != nil {
		t.Fatal(err)
	}
	ps, data := map[string][]*multipart.Part{}, map[string][][]byte{}
	parts(t, parsed.Header.Get("Content-Type"), parsed.Body, ps, data)
	if len(data["application/pdf"]) != 1 || !bytes.Equal(data["application/pdf"][0], terms) {
		t.Errorf("the attachment did not arrive whole: %q", data["application/pdf"])
	}
	if cte := ps["application/pdf"][0].Header.Get("Content-Transfer-Encoding"); cte != "base64" {
		t.Errorf("the attachment went as %q, want base64", cte)
	}
}

// TestPipelineAttachmentResolveFailures: no resolver fails the job
// (queue.attachment_unresolved); a resolver that errors or gives nothing
// retries it (queue.attachment_failed), and the retry sends once it reads.
func TestPipelineAttachmentResolveFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	refJob := func(key, ref string) *jobv1.Job {
		j := contentJob()
		j.IdempotencyKey = key
		j.Attachments = []jobv1.Attachment{{Filename: "terms.txt", Ref: ref}}
		return j
	}
	quiet := slog.New(&plRecords{})

	t.Run("no resolver", func(t *testing.T) {
		q, mq, _ := newQueueWith(t, mailqueue.Config{Logger: quiet}, memory.Options{Logger: quiet})
		tr := &countingTransport{}
		startWorker(t, q, mailqueue.WorkerConfig{Transport: tr})
		r, err := q.Enqueue(ctx, refJob("k", "terms.txt"))
		if err != nil {
			t.Fatal(err)
		}
		drain(t, mq)
		got, _ := mq.Get(context.Background(), r.ID)
		if got.State != mailqueue.JobFailed || got.Code != codes.QueueAttachmentUnresolved || got.Attempt != 1 || tr.n() != 0 {
			t.Errorf("state %s, code %s, attempts %d, sends %d; want failed, queue.attachment_unresolved, 1, 0", got.State, got.Code, got.Attempt, tr.n())
		}
	})

	dir := t.TempDir()
	t.Run("a path out of the folder fails at once", func(t *testing.T) {
		q, mq, _ := newQueueWith(t, mailqueue.Config{Logger: quiet}, memory.Options{Logger: quiet})
		tr := &countingTransport{}
		startWorker(t, q, mailqueue.WorkerConfig{Transport: tr, ResolveAttachment: func(ctx context.Context, ref string, info mailqueue.ResolveInfo) ([]byte, error) {
			return attachments.FromPath(dir)(ctx, "../"+ref, info)
		}})
		r, err := q.Enqueue(ctx, refJob("k", "terms.txt"))
		if err != nil {
			t.Fatal(err)
		}
		drain(t, mq)
		got, _ := mq.Get(context.Background(), r.ID)
		if got.State != mailqueue.JobFailed || got.Code != codes.QueueAttachmentFailed || got.Attempt != 1 || tr.n() != 0 {
			t.Errorf("state %s, code %s, attempts %d, sends %d; want failed at once, queue.attachment_failed, 1, 0", got.State, got.Code, got.Attempt, tr.n())
		}
	})
	for name, resolver := range map[string]attachments.Resolver{
		"an error": func(context.Context, string, mailqueue.ResolveInfo) ([]byte, error) {
			return nil, errors.New("the file store is down")
		},
		"no content":     func(context.Context, string, mailqueue.ResolveInfo) ([]byte, error) { return nil, nil },
		"a missing file": attachments.FromPath(dir),
	} {
		t.Run(name, func(t *testing.T) {
			q, mq, fc := newQueueWith(t, mailqueue.Config{Logger: quiet}, memory.Options{Logger: quiet})
			tr := &countingTransport{}
			var mu sync.Mutex
			current := resolver
			startWorker(t, q, mailqueue.WorkerConfig{Transport: tr, ResolveAttachment: func(ctx context.Context, ref string, info mailqueue.ResolveInfo) ([]byte, error) {
				mu.Lock()
				f := current
				mu.Unlock()
				return f(ctx, ref, info)
			}})
			r, err := q.Enqueue(ctx, refJob("k", "terms.txt"))
			if err != nil {
				t.Fatal(err)
			}
			drain(t, mq)
			got, _ := mq.Get(context.Background(), r.ID)
			if got.State != mailqueue.JobQueued || got.Code != codes.QueueAttachmentFailed || got.Attempt != 1 || !got.RunAt.After(fc.Now()) || tr.n() != 0 {
				t.Fatalf("state %s, code %s, attempts %d, run at %v, sends %d; want queued, queue.attachment_failed, 1, later, 0",
					got.State, got.Code, got.Attempt, got.RunAt, tr.n())
			}
			// The outage passes: the retry reads and sends.
			mu.Lock()
			current = func(context.Context, string, mailqueue.ResolveInfo) ([]byte, error) { return []byte("the terms"), nil }
			mu.Unlock()
			fc.Set(got.RunAt)
			mq.Wake()
			drain(t, mq)
			if got, _ = mq.Get(context.Background(), r.ID); got.State != mailqueue.JobAccepted || got.Attempt != 2 || tr.n() != 1 {
				t.Errorf("after the retry: state %s, attempts %d, sends %d", got.State, got.Attempt, tr.n())
			}
		})
	}
}

// countingTransport accepts every message and counts them.
type countingTransport struct {
	mu   sync.Mutex
	msgs []*mmail.Message
}

func (c *countingTransport) Send(_ context.Context, m *mmail.Message) (mmail.Receipt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.msgs = append(c.msgs, m.Clone())
	return mmail.Receipt{Category: mmail.Accepted, Code: 250}, nil
}

func (c *countingTransport) n() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.msgs)
}

// TestPipelineInlineImageSameOnEveryAttempt: the Content-IDs are fixed at
// enqueue, so the inline image the HTML references as cid: is the same on
// every attempt, whether the producer named it or the queue derived it.
func TestPipelineInlineImageSameOnEveryAttempt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	busy := smtptest.Start(t, smtptest.Script{Data: smtptest.Reply(451, "4.3.0", "try again later")})
	ok := smtptest.Start(t, smtptest.Script{})
	quiet := slog.New(&plRecords{})
	q, mq, fc := newQueueWith(t, mailqueue.Config{Logger: quiet}, memory.Options{Logger: quiet})
	renderer, err := render.New(templates.FS, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tr := &switchTransport{next: []mmail.Transport{smtpTransport(t, busy), smtpTransport(t, ok)}}
	startWorker(t, q, mailqueue.WorkerConfig{Transport: tr, Renderer: renderer})

	png := []byte("\x89PNG\r\n\x1a\nlogo")
	badge := []byte("\x89PNG\r\n\x1a\nbadge")
	r, err := q.Enqueue(ctx, &jobv1.Job{
		Kind: jobv1.KindTemplate, Template: "welcome", Locale: "en",
		Context: map[string]any{"name": "Grace", "logoCid": "logo@example.com"},
		From:    "Hirevel <hello@example.com>", To: []string{"grace@example.com"}, IdempotencyKey: "welcome:7",
		Attachments: []jobv1.Attachment{
			{Filename: "logo.png", ContentType: "image/png", Content: png, ContentID: "logo@example.com", Disposition: jobv1.DispositionInline},
			{Filename: "badge.png", ContentType: "image/png", Content: badge, Disposition: jobv1.DispositionInline},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	drain(t, mq)
	got, _ := mq.Get(context.Background(), r.ID)
	if got.State != mailqueue.JobQueued {
		t.Fatalf("after the 451: %s", got.State)
	}
	fc.Set(got.RunAt)
	mq.Wake()
	drain(t, mq)
	if got, _ = mq.Get(context.Background(), r.ID); got.State != mailqueue.JobAccepted {
		t.Fatalf("after the retry: %s", got.State)
	}
	first, second := busy.Messages(), ok.Messages()
	if len(first) != 1 || len(second) != 1 {
		t.Fatalf("messages: %d then %d", len(first), len(second))
	}
	cids := func(data []byte) (html string, ids []string) {
		parsed, err := mail.ReadMessage(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		ps, bodies := map[string][]*multipart.Part{}, map[string][][]byte{}
		parts(t, parsed.Header.Get("Content-Type"), parsed.Body, ps, bodies)
		for _, p := range ps["image/png"] {
			ids = append(ids, p.Header.Get("Content-Id"))
		}
		return string(bodies["text/html"][0]), ids
	}
	html1, ids1 := cids(first[0].Data)
	html2, ids2 := cids(second[0].Data)
	if diff := cmp.Diff(ids1, ids2); diff != "" || len(ids1) != 2 {
		t.Errorf("Content-IDs differ between attempts (-first +second):\n%s", diff)
	}
	if ids1[0] != "<logo@example.com>" || !strings.Contains(html1, `src="cid:logo@example.com"`) || html1 != html2 {
		t.Errorf("the HTML does not reference the inline logo by its Content-ID %s:\n%s", ids1[0], html1)
	}
	if !strings.HasSuffix(ids1[1], "@example.com>") || ids1[1] == ids1[0] {
		t.Errorf("derived Content-ID %q", ids1[1])
	}
	if !bytes.Equal(first[0].Data, second[0].Data) {
		t.Error("two attempts of one job built different bytes")
	}
}
