// Command quickstart is the README's example as a program: a producer and a
// worker over the memory queue, rendering the example templates and writing
// each message as an .eml file (the file transport) instead of sending it.
//
//	go run ./examples/quickstart            # writes into a new temporary folder
//	go run ./examples/quickstart -out DIR   # writes into DIR
//
// For real mail, swap the file transport for mail/smtp:
//
//	transport, err := smtp.New(smtp.Config{Host: "smtp.example.com", Username: "…", Password: "…"})
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"github.com/alexify/mailer/drivers/memory"
	"github.com/alexify/mailer/examples/templates"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/mail/file"
	"github.com/alexify/mailer/mail/idempotency"
	"github.com/alexify/mailer/mailqueue"
	"github.com/alexify/mailer/render"
)

func main() {
	out := flag.String("out", "", "the folder the .eml files go to (a new temporary folder when empty)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *out); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, out string) error {
	if out == "" {
		dir, err := os.MkdirTemp("", "mailer-quickstart-")
		if err != nil {
			return err
		}
		out = dir
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))

	// The queue: a driver, here the memory queue (a single process).
	mq, err := memory.New(memory.Options{Logger: logger})
	if err != nil {
		return err
	}
	queue, err := mailqueue.New(mailqueue.Config{Driver: mq, Logger: logger})
	if err != nil {
		return err
	}

	// The worker: a renderer, a transport, a concurrency.
	renderer, err := render.New(templates.FS, render.Options{DefaultLocale: "en"})
	if err != nil {
		return err
	}
	files, err := file.New(out)
	if err != nil {
		return err
	}
	// IdempotencyTransport sends a job once even when a worker loses its
	// lease mid-send and the job runs again; its store is in memory here,
	// drivers/redis.NewIdempotencyStore shares one between processes.
	transport, err := idempotency.New(files, idempotency.NewMemoryStore(nil), idempotency.Options{})
	if err != nil {
		return err
	}
	worker, err := queue.NewWorker(mailqueue.WorkerConfig{Transport: transport, Renderer: renderer, Concurrency: 5})
	if err != nil {
		return err
	}
	if err := worker.Start(); err != nil {
		return err
	}

	// The producer: an HTTP handler or a cron would do this.
	expires := time.Now().Add(15 * time.Minute)
	res, err := queue.Enqueue(ctx, &jobv1.Job{
		Kind:           jobv1.KindTemplate,
		Template:       "reset-password",
		Context:        map[string]any{"name": "Ada", "url": "https://app.example.com/reset?token=abc", "product": "Hirevel"},
		Locale:         "de",
		From:           "Hirevel <no-reply@example.com>",
		To:             []string{"ada@example.com"},
		IdempotencyKey: "reset-password:42",
		Priority:       jobv1.PriorityHigh,
		ExpiresAt:      &expires,
	})
	if err != nil {
		// A *mailqueue.Error: its Code (queue.invalid_job, queue.key_reused)
		// and the Path of the bad value (context.user.createdAt).
		return err
	}
	fmt.Printf("enqueued job %s (duplicate: %t)\n", res.ID, res.Duplicate)

	// Wait for the queue to empty, then stop the worker: it stops reserving
	// and waits for the sends in flight (30 s), then aborts them.
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := mq.Drain(dctx); err != nil {
		return err
	}
	if err := worker.Close(dctx); err != nil {
		return err
	}
	fmt.Printf("wrote %s\n", filepath.Join(out, file.Name(res.MessageID)))
	return nil
}
