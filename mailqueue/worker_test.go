package mailqueue_test

import (
	"bytes"
	"context"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/alexify/mailer/drivers/memory"
	"github.com/alexify/mailer/examples/templates"
	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/gen/jobv1"
	mmail "github.com/alexify/mailer/mail"
	"github.com/alexify/mailer/mail/smtp"
	"github.com/alexify/mailer/mail/smtptest"
	"github.com/alexify/mailer/mailqueue"
	"github.com/alexify/mailer/render"
)

func smtpTransport(t *testing.T, srv *smtptest.Server) *smtp.Transport {
	t.Helper()
	tr, err := smtp.New(smtp.Config{Host: srv.Host(), Port: srv.Port(), TLS: smtp.TLSNone, HELO: "test.localhost", Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func startWorker(t *testing.T, q *mailqueue.Queue, cfg mailqueue.WorkerConfig) *mailqueue.Worker {
	t.Helper()
	w, err := q.NewWorker(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close(context.Background()) })
	return w
}

func drain(t *testing.T, mq *memory.Queue) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := mq.Drain(ctx); err != nil {
		t.Fatalf("drain: %v", err)
	}
}

// parts walks a MIME body and returns its leaf parts by media type.
func parts(t *testing.T, contentType string, body io.Reader, out map[string][]*multipart.Part, data map[string][][]byte) {
	t.Helper()
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(mt, "multipart/") {
		b, err := io.ReadAll(body)
		if err != nil {
			t.Fatal(err)
		}
		data[mt] = append(data[mt], b)
		return
	}
	mr := multipart.NewReader(body, params["boundary"])
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		pmt, _, _ := mime.ParseMediaType(p.Header.Get("Content-Type"))
		out[pmt] = append(out[pmt], p)
		if p.Header.Get("Content-Transfer-Encoding") == "base64" {
			// multipart.Reader decodes quoted-printable only.
			b, _ := io.ReadAll(p)
			dec, err := io.ReadAll(base64Reader(b))
			if err != nil {
				t.Fatal(err)
			}
			data[pmt] = append(data[pmt], dec)
			continue
		}
		parts(t, p.Header.Get("Content-Type"), p, out, data)
	}
}

func TestWorkerSendsThroughSMTP(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := smtptest.Start(t, smtptest.Script{})
	q, mq, _ := newQueueWith(t, mailqueue.Config{}, memory.Options{RetainData: mailqueue.RetainAllData})
	renderer, err := render.New(templates.FS, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	startWorker(t, q, mailqueue.WorkerConfig{Transport: smtpTransport(t, srv), Renderer: renderer, Concurrency: 3})

	png := []byte("\x89PNG\r\n\x1a\nnot really a png, but bytes")
	job := &jobv1.Job{
		Kind: jobv1.KindTemplate, Template: "reset-password", Locale: "de",
		Context: map[string]any{"name": "Ada", "url": "https://app.example.com/reset?t=1"},
		From:    "Hirevel <no-reply@example.com>", To: []string{"Ada <ada@example.com>"}, Bcc: []string{"audit@example.com"},
		IdempotencyKey: "reset-password:1", Priority: jobv1.PriorityHigh,
		Attachments: []jobv1.Attachment{{Filename: "logo.png", ContentType: "image/png", Content: png, Disposition: jobv1.DispositionInline}},
	}
	r, err := q.Enqueue(ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	drain(t, mq)

	got, _ := mq.Get(context.Background(), r.ID)
	if got.State != mailqueue.JobAccepted || got.Attempt != 1 {
		t.Fatalf("job %s after one run: state %s, attempts %d; want accepted, 1 (%s %s)", r.ID, got.State, got.Attempt, got.Code, got.Reason)
	}
	msgs := srv.Messages()
	if len(msgs) != 1 {
		t.Fatalf("%d messages arrived, want 1", len(msgs))
	}
	m := msgs[0]
	if diff := cmp.Diff([]string{"ada@example.com", "audit@example.com"}, m.To); diff != "" || m.From != "no-reply@example.com" {
		t.Errorf("envelope from %q, to (-want +got):\n%s", m.From, diff)
	}
	parsed, err := mail.ReadMessage(bytes.NewReader(m.Data))
	if err != nil {
		t.Fatal(err)
	}
	h := parsed.Header
	if h.Get("Message-Id") != r.MessageID {
		t.Errorf("Message-ID %q, want %q", h.Get("Message-Id"), r.MessageID)
	}
	if h.Get("Bcc") != "" {
		t.Error("the Bcc header went out")
	}
	subject, _ := new(mime.WordDecoder).DecodeHeader(h.Get("Subject"))
	if subject != "Passwort zurücksetzen" {
		t.Errorf("subject %q: want the German template's", subject)
	}
	if d, err := h.Date(); err != nil || !d.Equal(t0) {
		t.Errorf("Date %v (%v), want the enqueue time %v", d, err, t0)
	}
	ps, data := map[string][]*multipart.Part{}, map[string][][]byte{}
	parts(t, h.Get("Content-Type"), parsed.Body, ps, data)
	if len(data["text/plain"]) != 1 || !strings.Contains(string(data["text/plain"][0]), "https://app.example.com/reset?t=1") {
		t.Errorf("text part: %q", data["text/plain"])
	}
	if len(data["text/html"]) != 1 || !strings.Contains(string(data["text/html"][0]), "Ada") {
		t.Errorf("html part: %q", data["text/html"])
	}
	if len(data["image/png"]) != 1 || !bytes.Equal(data["image/png"][0], png) {
		t.Errorf("the image's bytes did not arrive whole: %q", data["image/png"])
	}
	stored, _ := mq.Data(context.Background(), r.ID)
	var sj jobv1.Job
	_ = jsonUnmarshal(stored, &sj)
	if cid := ps["image/png"][0].Header.Get("Content-Id"); cid != "<"+sj.Attachments[0].ContentID+">" {
		t.Errorf("Content-ID %q, want the one fixed at enqueue %q", cid, sj.Attachments[0].ContentID)
	}
}

// switchTransport sends each attempt through the next transport.
type switchTransport struct {
	mu   sync.Mutex
	next []mmail.Transport
}

func (s *switchTransport) Send(ctx context.Context, m *mmail.Message) (mmail.Receipt, error) {
	s.mu.Lock()
	tr := s.next[0]
	if len(s.next) > 1 {
		s.next = s.next[1:]
	}
	s.mu.Unlock()
	return tr.Send(ctx, m)
}

func TestRetryableFailureRetriesAfterBackoffWithTheSameMessage(t *testing.T) {
	ctx := context.Background()
	busy := smtptest.Start(t, smtptest.Script{Data: smtptest.Reply(451, "4.3.0", "try again later")})
	ok := smtptest.Start(t, smtptest.Script{})
	q, mq, fc := newQueue(t, mailqueue.Config{})
	tr := &switchTransport{next: []mmail.Transport{smtpTransport(t, busy), smtpTransport(t, ok)}}
	startWorker(t, q, mailqueue.WorkerConfig{Transport: tr})

	r, err := q.Enqueue(ctx, contentJob())
	if err != nil {
		t.Fatal(err)
	}
	drain(t, mq)
	got, _ := mq.Get(context.Background(), r.ID)
	if got.State != mailqueue.JobQueued || got.Attempt != 1 || got.Code != codes.QueueSendFailed {
		t.Fatalf("after a 451: state %s, attempts %d, code %s; want queued, 1, queue.send_failed", got.State, got.Attempt, got.Code)
	}
	delay := got.RunAt.Sub(fc.Now())
	if delay < 0 || delay > mailqueue.BackoffBase {
		t.Errorf("first retry in %v; want within the spec's first backoff [0, 30s]", delay)
	}
	// Not due before its time, due after it.
	fc.Set(got.RunAt.Add(-time.Millisecond))
	mq.Wake()
	drain(t, mq)
	if n := len(ok.Messages()); n != 0 && delay > time.Millisecond {
		t.Fatalf("the retry ran before its backoff")
	}
	fc.Set(got.RunAt)
	mq.Wake()
	drain(t, mq)
	got, _ = mq.Get(context.Background(), r.ID)
	if got.State != mailqueue.JobAccepted || got.Attempt != 2 {
		t.Fatalf("after the retry: state %s, attempts %d", got.State, got.Attempt)
	}
	first, second := busy.Messages(), ok.Messages()
	if len(first) != 1 || len(second) != 1 {
		t.Fatalf("messages: %d then %d", len(first), len(second))
	}
	if diff := cmp.Diff(string(first[0].Data), string(second[0].Data)); diff != "" {
		t.Errorf("two attempts of one job built different messages (-first +second):\n%s", diff)
	}
	if !strings.Contains(string(second[0].Data), "Message-Id: "+r.MessageID) && !strings.Contains(string(second[0].Data), "Message-ID: "+r.MessageID) {
		t.Errorf("the message does not carry the Message-ID fixed at enqueue")
	}
}

func TestRefusedMessageFailsAtOnce(t *testing.T) {
	t.Parallel()
	srv := smtptest.Start(t, smtptest.Script{Rcpt: map[string]*gosmtpError{"ada@example.com": smtptest.Reply(550, "5.1.1", "no such user ada@example.com")}})
	q, mq, _ := newQueue(t, mailqueue.Config{})
	startWorker(t, q, mailqueue.WorkerConfig{Transport: smtpTransport(t, srv)})
	r, err := q.Enqueue(context.Background(), contentJob())
	if err != nil {
		t.Fatal(err)
	}
	drain(t, mq)
	got, _ := mq.Get(context.Background(), r.ID)
	if got.State != mailqueue.JobFailed || got.Attempt != 1 || got.Code != codes.QueueMessageRefused {
		t.Fatalf("state %s, attempts %d, code %s; want failed, 1, queue.message_refused", got.State, got.Attempt, got.Code)
	}
	if strings.Contains(got.Reason, "ada@example.com") {
		t.Errorf("the reason quotes the address: %q", got.Reason)
	}
}

// blockingTransport holds each send until release is closed.
type blockingTransport struct {
	started chan struct{}
	release chan struct{}
}

func (b *blockingTransport) Send(ctx context.Context, m *mmail.Message) (mmail.Receipt, error) {
	b.started <- struct{}{}
	select {
	case <-b.release:
		return mmail.Receipt{Category: mmail.Accepted, Code: 250}, nil
	case <-ctx.Done():
		return mmail.Receipt{Category: mmail.DeliveryUnknown}, &mmail.Error{Receipt: mmail.Receipt{Category: mmail.DeliveryUnknown}, Err: ctx.Err()}
	}
}

func TestCloseWaitsForTheJobsInFlight(t *testing.T) {
	q, mq, _ := newQueue(t, mailqueue.Config{})
	tr := &blockingTransport{started: make(chan struct{}, 1), release: make(chan struct{})}
	w, err := q.NewWorker(mailqueue.WorkerConfig{Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	r, err := q.Enqueue(context.Background(), contentJob())
	if err != nil {
		t.Fatal(err)
	}
	<-tr.started
	closed := make(chan error, 1)
	go func() { closed <- w.Close(context.Background()) }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a send was in flight", err)
	case <-time.After(50 * time.Millisecond):
	}
	// Close stops reserving: a job enqueued now is not run.
	later := contentJob()
	later.IdempotencyKey = "later"
	rl, err := q.Enqueue(context.Background(), later)
	if err != nil {
		t.Fatal(err)
	}
	close(tr.release)
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got, _ := mq.Get(context.Background(), r.ID); got.State != mailqueue.JobAccepted {
		t.Errorf("the job in flight: %s, want accepted", got.State)
	}
	if got, _ := mq.Get(context.Background(), rl.ID); got.State != mailqueue.JobQueued || got.Attempt != 0 {
		t.Errorf("the job enqueued during Close: %s after %d attempts, want queued, 0", got.State, got.Attempt)
	}
}
