package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"log/slog"
	"mime"
	"mime/multipart"
	"net/mail"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/alexify/mailer/attachments"
	"github.com/alexify/mailer/drivers/memory"
	exampleattachments "github.com/alexify/mailer/examples/attachments"
	"github.com/alexify/mailer/examples/templates"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/mail/idempotency"
	"github.com/alexify/mailer/mail/smtp"
	"github.com/alexify/mailer/mail/smtptest"
	"github.com/alexify/mailer/mailqueue"
	"github.com/alexify/mailer/render"
)

// demo runs the main job on the embedded default: it starts a real SMTP
// server on a loopback port, a memory queue and a worker; enqueues the
// spec's example (a reset-password template job, priority high, expiring in
// 15 minutes), a content job with an inline image and an attachment by
// reference (examples/attachments/terms.pdf, read at the worker by
// attachments.FromPath), and the reset-password template again in German;
// sends them through the SMTP transport; and prints what arrived.
func demo(ctx context.Context, stdout, stderr io.Writer) error {
	start := time.Now()
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

	srv, err := smtptest.New(smtptest.Script{})
	if err != nil {
		return fmt.Errorf("starting the SMTP server: %w", err)
	}
	defer func() { _ = srv.Close() }() // the demo's own server; its end is the demo's end

	mq, err := memory.New(memory.Options{Logger: logger})
	if err != nil {
		return err
	}
	queue, err := mailqueue.New(mailqueue.Config{Driver: mq, Logger: logger})
	if err != nil {
		return err
	}
	renderer, err := render.New(templates.FS, render.Options{DefaultLocale: "en"})
	if err != nil {
		return err
	}
	smtpTransport, err := smtp.New(smtp.Config{Host: srv.Host(), Port: srv.Port(), TLS: smtp.TLSNone, HELO: "mailq-demo.localhost"})
	if err != nil {
		return err
	}
	// A job is sent once even when its run is redelivered (a lost lease).
	transport, err := idempotency.New(smtpTransport, idempotency.NewMemoryStore(nil), idempotency.Options{})
	if err != nil {
		return err
	}
	attachDir, cleanup, err := attachmentsFolder()
	if err != nil {
		return err
	}
	defer cleanup()
	worker, err := queue.NewWorker(mailqueue.WorkerConfig{
		Transport: transport, Renderer: renderer, Concurrency: 2,
		// A job names a file by reference; the worker reads it below this
		// folder alone.
		ResolveAttachment: attachments.FromPath(attachDir),
	})
	if err != nil {
		return err
	}

	reset, welcome, german, err := demoJobs()
	if err != nil {
		return err
	}
	var results []mailqueue.Result
	for _, job := range []*jobv1.Job{reset, welcome, german} {
		r, err := queue.Enqueue(ctx, job)
		if err != nil {
			return fmt.Errorf("enqueue: %w", err)
		}
		results = append(results, r)
		what := string(job.Kind) + " job"
		if job.Kind == jobv1.KindTemplate {
			what = fmt.Sprintf("template job %s (%s)", job.Template, job.Locale)
		}
		fmt.Fprintf(stdout, "enqueued %s %s, Message-ID %s\n", what, r.ID, r.MessageID)
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

	received := inEnqueueOrder(srv.Messages(), results)
	for i, m := range received {
		fmt.Fprintf(stdout, "\n── message %d of %d ──────────────────────────────\n", i+1, len(received))
		if err := printMessage(stdout, m); err != nil {
			return err
		}
	}
	st, err := mq.Stats(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nmailq demo: %d jobs enqueued, %d accepted, %d failed, %d delivery unknown; %d messages arrived at the SMTP server on %s in %s\n",
		len(results), st.Accepted, st.Failed, st.DeliveryUnknown, len(received), srv.Addr(), time.Since(start).Round(time.Millisecond))
	shown := attachDir
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, attachDir); err == nil {
			shown = rel
		}
	}
	fmt.Fprintf(stdout, "attachments by reference were read with attachments.FromPath(%q)\n", shown)
	if st.Accepted != int64(len(results)) || len(received) != len(results) {
		return fmt.Errorf("expected %d messages accepted and arrived", len(results))
	}
	return nil
}

// demoJobs returns the demo's jobs: the spec's example job (reset-password,
// priority high, expiring in 15 minutes); a content job rendered already,
// with an inline image referenced by its Content-ID and the terms attached
// by reference; and the reset-password template in German.
func demoJobs() (reset, welcome, german *jobv1.Job, err error) {
	expires := time.Now().Add(15 * time.Minute)
	reset = &jobv1.Job{
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
		return nil, nil, nil, err
	}
	welcome = &jobv1.Job{
		Kind:    jobv1.KindContent,
		Subject: "Welcome to Hirevel, Grace",
		Content: &jobv1.Content{
			HTML: `<p><img src="cid:logo@example.com" alt="Hirevel"></p><p>Welcome aboard, Grace.</p>`,
			Text: "Welcome aboard, Grace.",
		},
		From:           "Hirevel <hello@example.com>",
		To:             []string{"Grace Hopper <grace@example.com>"},
		IdempotencyKey: "welcome:7",
		Attachments: []jobv1.Attachment{
			{
				Filename: "logo.png", ContentType: "image/png", Content: logo,
				ContentID: "logo@example.com", Disposition: jobv1.DispositionInline,
			},
			// By reference: the job holds the name, the worker reads the bytes.
			{Filename: "terms.pdf", ContentType: "application/pdf", Ref: "terms.pdf"},
		},
	}
	german = &jobv1.Job{
		Kind:           jobv1.KindTemplate,
		Template:       "reset-password",
		Context:        map[string]any{"name": "Jürgen", "url": "https://app.example.com/reset?token=demo-token-de", "product": "Hirevel"},
		Locale:         "de",
		From:           "Hirevel <no-reply@example.com>",
		To:             []string{"Jürgen Groß <juergen@example.com>"},
		IdempotencyKey: "reset-password:43",
		Priority:       jobv1.PriorityHigh,
		ExpiresAt:      &expires,
	}
	return reset, welcome, german, nil
}

// inEnqueueOrder sorts the messages received in the order of the enqueue
// of their jobs, whatever order the worker sent them in.
func inEnqueueOrder(received []smtptest.Received, results []mailqueue.Result) []smtptest.Received {
	order := map[string]int{}
	for i, r := range results {
		order[r.MessageID] = i
	}
	sort.SliceStable(received, func(i, j int) bool {
		return order[messageID(received[i].Data)] < order[messageID(received[j].Data)]
	})
	return received
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
	dec := new(mime.WordDecoder)
	for _, k := range names {
		for _, v := range msg.Header[k] {
			if d, err := dec.DecodeHeader(v); err == nil && d != v {
				v = d + "   (encoded, RFC 2047)"
			}
			fmt.Fprintf(w, "  %s: %s\n", k, v)
		}
	}
	var files []string
	text, parts, err := textPart(msg.Header.Get("Content-Type"), "", msg.Body, &files)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "parts: %s\n", strings.Join(parts, ", "))
	for _, f := range files {
		fmt.Fprintf(w, "attachment: %s\n", f)
	}
	fmt.Fprintln(w, "text part:")
	for _, line := range strings.Split(strings.TrimRight(text, "\r\n"), "\n") {
		fmt.Fprintf(w, "  | %s\n", strings.TrimRight(line, "\r"))
	}
	return nil
}

// textPart walks a MIME body and returns its text/plain part, decoded, and
// the media types of every part; it appends to files a line for each part
// with a file name.
func textPart(contentType, disposition string, body io.Reader, files *[]string) (string, []string, error) {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return "", nil, fmt.Errorf("content type: %w", err)
	}
	if !strings.HasPrefix(mt, "multipart/") {
		b, err := io.ReadAll(body)
		if err != nil {
			return "", nil, err
		}
		if disp, dp, err := mime.ParseMediaType(disposition); err == nil && dp["filename"] != "" {
			name, _ := new(mime.WordDecoder).DecodeHeader(dp["filename"])
			size := len(b)
			if n, err := base64.StdEncoding.DecodeString(string(bytes.Join(bytes.Fields(b), nil))); err == nil {
				size = len(n)
			}
			*files = append(*files, fmt.Sprintf("%s (%s, %s, %d bytes)", name, mt, disp, size))
			return "", []string{mt}, nil
		}
		if mt == "text/plain" {
			return string(b), []string{mt}, nil
		}
		return "", []string{mt}, nil
	}
	var text string
	var types []string
	mr := multipart.NewReader(body, params["boundary"])
	for {
		p, err := mr.NextPart() // decodes quoted-printable
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", nil, err
		}
		t, ts, err := textPart(p.Header.Get("Content-Type"), p.Header.Get("Content-Disposition"), p, files)
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

// messageID returns the Message-ID of a message's bytes, "" when it has
// none.
func messageID(data []byte) string {
	m, err := mail.ReadMessage(bytes.NewReader(data))
	if err != nil {
		return ""
	}
	return m.Header.Get("Message-Id")
}

// attachmentsFolder returns the folder the demo's attachments by reference
// are read from: examples/attachments of the repository, found from the
// working directory up (go run ./cmd/mailq demo from the repository, its
// tests from cmd/mailq); elsewhere a temporary copy of the embedded files,
// which cleanup removes.
func attachmentsFolder() (dir string, cleanup func(), err error) {
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			cand := filepath.Join(d, "examples", "attachments")
			if st, err := os.Stat(filepath.Join(cand, "terms.pdf")); err == nil && st.Mode().IsRegular() {
				return cand, func() {}, nil
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	tmp, err := os.MkdirTemp("", "mailq-demo-attachments-")
	if err != nil {
		return "", nil, err
	}
	if err := os.CopyFS(tmp, exampleattachments.FS); err != nil {
		_ = os.RemoveAll(tmp)
		return "", nil, err
	}
	return tmp, func() { _ = os.RemoveAll(tmp) }, nil
}
