package mailqueue_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/alexify/mailer/drivers/memory"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/mail"
	"github.com/alexify/mailer/mail/smtp"
	"github.com/alexify/mailer/mail/smtptest"
	"github.com/alexify/mailer/mailqueue"
	"github.com/alexify/mailer/render"
)

// nullTransport accepts every message without sending it anywhere.
type nullTransport struct{ n atomic.Int64 }

func (t *nullTransport) Send(_ context.Context, m *mail.Message) (mail.Receipt, error) {
	t.n.Add(1)
	return mail.Receipt{Category: mail.Accepted, Code: 250}, nil
}

// bytesTransport builds the message's bytes, as a real transport must, and
// drops them.
type bytesTransport struct{}

func (bytesTransport) Send(_ context.Context, m *mail.Message) (mail.Receipt, error) {
	if _, err := m.WriteTo(io.Discard); err != nil {
		return mail.Receipt{Category: mail.Validation}, &mail.Error{Receipt: mail.Receipt{Category: mail.Validation}, Err: err}
	}
	return mail.Receipt{Category: mail.Accepted, Code: 250}, nil
}

var benchTemplates = fstest.MapFS{
	"welcome/en/subject.txt": {Data: []byte("Welcome, {{.name}}")},
	"welcome/en/body.txt":    {Data: []byte("Hello {{.name}}, your code is {{.code}}.\n")},
	"welcome/en/body.html":   {Data: []byte("<p>Hello {{.name}}, your code is <b>{{.code}}</b>.</p>\n")},
}

func benchJob(i int) *jobv1.Job {
	return &jobv1.Job{
		Kind: jobv1.KindTemplate, Template: "welcome", Context: map[string]any{"name": "Ada", "code": i},
		From: "Shop <shop@example.com>", To: []string{"ada@example.com"}, IdempotencyKey: fmt.Sprintf("welcome:%d", i),
	}
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelError}))
}

// BenchmarkEnqueue measures Enqueue on the memory queue: the checks, the
// ids, the hash and the store.
func BenchmarkEnqueue(b *testing.B) {
	mq := mustMemory(b, memory.Options{Logger: quietLogger(), MaxJobs: 1 << 30})
	q, _ := mailqueue.New(mailqueue.Config{Driver: mq, Logger: quietLogger()})
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := q.Enqueue(ctx, benchJob(i)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEndToEnd enqueues b.N template jobs and runs them through a
// worker at the given concurrency: render, build, and a transport that
// writes the message's bytes.
func BenchmarkEndToEnd(b *testing.B) {
	for _, c := range []int{1, 50} {
		b.Run(fmt.Sprintf("concurrency=%d", c), func(b *testing.B) {
			benchEndToEnd(b, c, bytesTransport{})
		})
	}
}

func benchEndToEnd(b *testing.B, concurrency int, tr mail.Transport) {
	mq := mustMemory(b, memory.Options{Logger: quietLogger(), MaxJobs: 1 << 30, RetainData: mailqueue.RetainNoData})
	q, _ := mailqueue.New(mailqueue.Config{Driver: mq, Logger: quietLogger()})
	renderer, err := render.New(benchTemplates, render.Options{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	w, _ := q.NewWorker(mailqueue.WorkerConfig{Transport: tr, Renderer: renderer, Concurrency: concurrency})
	if err := w.Start(); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		if _, err := q.Enqueue(ctx, benchJob(i)); err != nil {
			b.Fatal(err)
		}
	}
	dctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := mq.Drain(dctx); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	_ = w.Close(ctx)
	if st := stats(b, mq); st.Accepted != int64(b.N) {
		b.Fatalf("%d of %d accepted", st.Accepted, b.N)
	}
}

// BenchmarkQueueOverhead is the queue's own work per job: enqueue, reserve,
// the worker's handling of the lease besides rendering, building and
// sending (open: version, schema, hash; expiry; the message from the job;
// classify the receipt) and the settle. It runs a content job through a
// transport that takes the message without building it.
func BenchmarkQueueOverhead(b *testing.B) {
	mq := mustMemory(b, memory.Options{Logger: quietLogger(), MaxJobs: 1 << 30, RetainData: mailqueue.RetainNoData})
	q, _ := mailqueue.New(mailqueue.Config{Driver: mq, Logger: quietLogger()})
	w, err := q.NewWorker(mailqueue.WorkerConfig{Transport: &nullTransport{}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	src := mq.Source()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		j := benchJob(i)
		j.Kind, j.Template, j.Context = jobv1.KindContent, "", nil
		j.Subject, j.Content = "Welcome, Ada", &jobv1.Content{Text: "Hello Ada, your code is 42.", HTML: "<p>Hello Ada, your code is <b>42</b>.</p>"}
		if _, err := q.Enqueue(ctx, j); err != nil {
			b.Fatal(err)
		}
		ls, err := src.Reserve(ctx, mailqueue.ReserveParams{Limit: 1, LeaseDuration: time.Minute})
		if err != nil || len(ls) != 1 {
			b.Fatal(err)
		}
		out := w.Handle(ctx, ls[0])
		if out.Action != mailqueue.Ack {
			b.Fatalf("outcome %+v", out)
		}
		if ok, err := src.Ack(ctx, mailqueue.AckParams{ID: ls[0].ID, Token: ls[0].Token}); !ok || err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRenderBuildSend is the minimal work of a job besides the queue:
// render a small template, build the message and write its bytes.
func BenchmarkRenderBuildSend(b *testing.B) {
	renderer, err := render.New(benchTemplates, render.Options{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	tr := bytesTransport{}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := renderer.Render(ctx, render.Request{Template: "welcome", Context: map[string]any{"name": "Ada", "code": i}})
		if err != nil {
			b.Fatal(err)
		}
		msg := &mail.Message{
			MessageID: fmt.Sprintf("<%d@example.com>", i), Date: time.Unix(0, 0), From: "Shop <shop@example.com>",
			To: []string{"ada@example.com"}, Subject: res.Subject, HTML: res.HTML, Text: res.Text,
		}
		if _, err := tr.Send(ctx, msg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRenderBuildSendSMTP is the same work with a real send: SMTP to a
// go-smtp server on loopback, on the transport's pooled connection (RSET
// between messages).
func BenchmarkRenderBuildSendSMTP(b *testing.B) {
	renderer, err := render.New(benchTemplates, render.Options{})
	if err != nil {
		b.Fatal(err)
	}
	srv, err := smtptest.New(smtptest.Script{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = srv.Close() }()
	tr, err := smtp.New(smtp.Config{Host: srv.Host(), Port: srv.Port(), TLS: smtp.TLSNone, HELO: "bench.localhost"})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := renderer.Render(ctx, render.Request{Template: "welcome", Context: map[string]any{"name": "Ada", "code": i}})
		if err != nil {
			b.Fatal(err)
		}
		msg := &mail.Message{
			MessageID: fmt.Sprintf("<%d@example.com>", i), Date: time.Unix(0, 0), From: "Shop <shop@example.com>",
			To: []string{"ada@example.com"}, Subject: res.Subject, HTML: res.HTML, Text: res.Text,
		}
		if _, err := tr.Send(ctx, msg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEnqueueReserveSettle is the narrow reading of the queue's
// overhead: enqueue, reserve and settle, without the worker's handling of
// the lease (open, checks) that BenchmarkQueueOverhead adds.
func BenchmarkEnqueueReserveSettle(b *testing.B) {
	mq := mustMemory(b, memory.Options{Logger: quietLogger(), MaxJobs: 1 << 30, RetainData: mailqueue.RetainNoData})
	q, _ := mailqueue.New(mailqueue.Config{Driver: mq, Logger: quietLogger()})
	ctx := context.Background()
	src := mq.Source()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := q.Enqueue(ctx, benchJob(i)); err != nil {
			b.Fatal(err)
		}
		ls, err := src.Reserve(ctx, mailqueue.ReserveParams{Limit: 1, LeaseDuration: time.Minute})
		if err != nil || len(ls) != 1 {
			b.Fatal(err)
		}
		if ok, err := src.Ack(ctx, mailqueue.AckParams{ID: ls[0].ID, Token: ls[0].Token}); !ok || err != nil {
			b.Fatal(err)
		}
	}
}
