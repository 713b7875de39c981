package main

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"log/slog"
	"mime"
	"mime/multipart"
	"net/mail"
	"sort"
	"strings"
	"time"

	"github.com/alexify/mailer/drivers/memory"
	"github.com/alexify/mailer/examples/templates"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/mail/smtp"
	"github.com/alexify/mailer/mail/smtptest"
	"github.com/alexify/mailer/mailqueue"
	"github.com/alexify/mailer/render"
)

// demo runs the main job on the embedded default: it starts a real SMTP
// server on a loopback port, a memory queue and a worker; enqueues the
// spec's example (a reset-password template job, priority high, expiring in
// 15 minutes) and a content job with an inline image; sends both through the
// SMTP transport; and prints what arrived.
func demo(ctx context.Context, stdout, stderr io.Writer) error {
	start := time.Now()
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

	srv, err := smtptest.New(smtptest.Script{})
	if err != nil {
		return fmt.Errorf("starting the SMTP server: %w", err)
	}
	defer srv.Close()

	mq := memory.New(memory.Options{Logger: logger})
	queue, err := mailqueue.New(mailqueue.Config{Driver: mq, Logger: logger})
	if err != nil {
		return err
	}
	renderer, err := render.New(templates.FS, render.Options{DefaultLocale: "en"})
	if err != nil {
		return err
	}
	transport, err := smtp.New(smtp.Config{Host: srv.Host(), Port: srv.Port(), TLS: smtp.TLSNone, HELO: "mailq-demo.localhost"})
	if err != nil {
		return err
	}
	worker, err := queue.NewWorker(mailqueue.WorkerConfig{Transport: transport, Renderer: renderer, Concurrency: 2})
	if err != nil {
		return err
	}

	// The producer: the spec's example job, and a content job rendered
	// already, with an inline image referenced by its Content-ID.
	expires := time.Now().Add(15 * time.Minute)
	reset := &jobv1.Job{
		Kind:           jobv1.KindTemplate,
		Template:       "reset-password",
		Context:        map[string]any{"name": "Ada", "url": "https://app.example.com/reset?token=demo-token", "product": "Hirevel"},
		Locale:         "en",
		From:           "Hirevel <no-reply@example.com>",
		To:             []string{"ada@example.com"},
		IdempotencyKey: "reset-password:42",
		Priority:       jobv1.PriorityHigh,
		ExpiresAt:      &expires,
	}
	logo, err := logoPNG()
	if err != nil {
		return err
	}
	welcome := &jobv1.Job{
		Kind:    jobv1.KindContent,
		Subject: "Welcome to Hirevel, Grace",
		Content: &jobv1.Content{
			HTML: `<p><img src="cid:logo@example.com" alt="Hirevel"></p><p>Welcome aboard, Grace.</p>`,
			Text: "Welcome aboard, Grace.",
		},
		From:           "Hirevel <hello@example.com>",
		To:             []string{"Grace Hopper <grace@example.com>"},
		IdempotencyKey: "welcome:7",
		Attachments: []jobv1.Attachment{{
			Filename: "logo.png", ContentType: "image/png", Content: logo,
			ContentID: "logo@example.com", Disposition: jobv1.DispositionInline,
		}},
	}
	var results []mailqueue.Result
	for _, job := range []*jobv1.Job{reset, welcome} {
		r, err := queue.Enqueue(ctx, job)
		if err != nil {
			return fmt.Errorf("enqueue: %w", err)
		}
		results = append(results, r)
		fmt.Fprintf(stdout, "enqueued %s job %s (Message-ID %s)\n", job.Kind, r.ID, r.MessageID)
	}
	again, err := queue.Enqueue(ctx, reset)
	if err != nil {
		return fmt.Errorf("enqueue again: %w", err)
	}
	fmt.Fprintf(stdout, "enqueued the reset-password job again: duplicate=%t, same id=%t\n", again.Duplicate, again.ID == results[0].ID)

	// The worker.
	if err := worker.Start(); err != nil {
		return err
	}
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := mq.Drain(dctx); err != nil {
		return fmt.Errorf("waiting for the jobs: %w", err)
	}
	if err := worker.Close(dctx); err != nil {
		return err
	}

	received := srv.Messages()
	for i, m := range received {
		fmt.Fprintf(stdout, "\n── message %d of %d ──────────────────────────────\n", i+1, len(received))
		if err := printMessage(stdout, m); err != nil {
			return err
		}
	}
	st := mq.Stats()
	fmt.Fprintf(stdout, "\nmailq demo: %d jobs enqueued, %d accepted, %d failed, %d delivery unknown; %d messages arrived at the SMTP server on %s in %s\n",
		len(results), st.Accepted, st.Failed, st.DeliveryUnknown, len(received), srv.Addr(), time.Since(start).Round(time.Millisecond))
	if st.Accepted != len(results) || len(received) != len(results) {
		return fmt.Errorf("expected %d messages accepted and arrived", len(results))
	}
	return nil
}

// printMessage prints a message's envelope, its headers and its text part.
func printMessage(w io.Writer, m smtptest.Received) error {
	fmt.Fprintf(w, "envelope: MAIL FROM:<%s> RCPT TO:<%s>\n", m.From, strings.Join(m.To, ">, <"))
	msg, err := mail.ReadMessage(bytes.NewReader(m.Data))
	if err != nil {
		return fmt.Errorf("parsing what arrived: %w", err)
	}
	fmt.Fprintln(w, "headers:")
	names := make([]string, 0, len(msg.Header))
	for k := range msg.Header {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		for _, v := range msg.Header[k] {
			fmt.Fprintf(w, "  %s: %s\n", k, v)
		}
	}
	text, parts, err := textPart(msg.Header.Get("Content-Type"), msg.Body)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "parts: %s\n", strings.Join(parts, ", "))
	fmt.Fprintln(w, "text part:")
	for _, line := range strings.Split(strings.TrimRight(text, "\r\n"), "\n") {
		fmt.Fprintf(w, "  | %s\n", strings.TrimRight(line, "\r"))
	}
	return nil
}

// textPart walks a MIME body and returns its text/plain part, decoded, and
// the media types of every part.
func textPart(contentType string, body io.Reader) (string, []string, error) {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return "", nil, fmt.Errorf("content type: %w", err)
	}
	if !strings.HasPrefix(mt, "multipart/") {
		b, err := io.ReadAll(body)
		if mt == "text/plain" {
			return string(b), []string{mt}, err
		}
		return "", []string{mt}, err
	}
	var text string
	var types []string
	mr := multipart.NewReader(body, params["boundary"])
	for {
		p, err := mr.NextPart() // decodes quoted-printable
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", nil, err
		}
		t, ts, err := textPart(p.Header.Get("Content-Type"), p)
		if err != nil {
			return "", nil, err
		}
		if text == "" {
			text = t
		}
		types = append(types, ts...)
	}
	return text, types, nil
}

// logoPNG draws a small logo: the demo's inline image.
func logoPNG() ([]byte, error) {
	img := image.NewRGBA(image.Rect(0, 0, 24, 24))
	for y := 0; y < 24; y++ {
		for x := 0; x < 24; x++ {
			c := color.RGBA{R: 0x2b, G: 0x6c, B: 0xb0, A: 0xff}
			if (x-12)*(x-12)+(y-12)*(y-12) < 49 {
				c = color.RGBA{R: 0xff, G: 0xff, B: 0xff, A: 0xff}
			}
			img.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
