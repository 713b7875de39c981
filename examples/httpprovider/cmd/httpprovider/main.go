// Command httpprovider sends mail through the queue with the example HTTP
// transport (package github.com/alexify/mailer/examples/httpprovider): a
// producer and a worker over the memory queue, the worker posting each
// message as JSON with the job's id in an Idempotency-Key header.
//
//	go run ./examples/httpprovider/cmd/httpprovider
//	go run ./examples/httpprovider/cmd/httpprovider -endpoint https://api.example.com/send -key KEY -to you@example.com
//
// Without -endpoint it starts a fake provider on loopback, which prints
// each request it gets and answers 200, or 422 for a recipient at
// blocked.example.com, so the run shows a job accepted, a duplicate that
// is not posted again, and a job refused for good. With -endpoint it posts
// the first two to that URL instead (the refused one is left out); the JSON
// is this example's shape, which a real provider's API will not take as it
// is: adapt the transport to its API.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"strings"
	"sync"
	"time"

	"github.com/alexify/mailer/audit"
	"github.com/alexify/mailer/drivers/memory"
	"github.com/alexify/mailer/examples/httpprovider"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/mailqueue"
)

// config is what the flags set.
type config struct {
	endpoint, apiKey string
	from, to         string
}

func main() {
	var cfg config
	flag.StringVar(&cfg.endpoint, "endpoint", "", "the URL messages are posted to (a fake provider on loopback when empty)")
	flag.StringVar(&cfg.apiKey, "key", "", "the provider's API key, sent as a bearer token")
	flag.StringVar(&cfg.from, "from", "Acme <no-reply@example.com>", "the author of the messages")
	flag.StringVar(&cfg.to, "to", "ada@example.com", "the recipient of the first message")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if err := run(ctx, cfg, os.Stdout, logger); err != nil {
		fmt.Fprintln(os.Stderr, "httpprovider:", err)
		os.Exit(1)
	}
}

// lockedWriter serializes the writes of the fake provider's goroutines and
// the program's own.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, format, args...)
}

// fakeProvider answers as a provider's HTTP API might: 200 with an id, or
// 422 for a recipient at blocked.example.com. It prints each request.
func fakeProvider(out *lockedWriter) http.Handler {
	var mu sync.Mutex
	n := 0
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Subject string   `json:"subject"`
			To      []string `json:"to"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, `{"message":"not JSON"}`, http.StatusBadRequest)
			return
		}
		mu.Lock()
		n++
		id := fmt.Sprintf("msg-%d", n)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		status := http.StatusOK
		for _, to := range body.To {
			if strings.HasSuffix(to, "@blocked.example.com") {
				status = http.StatusUnprocessableEntity
			}
		}
		out.Printf("provider: POST %q, Idempotency-Key %s: %d\n", body.Subject, r.Header.Get("Idempotency-Key"), status)
		w.WriteHeader(status)
		if status != http.StatusOK {
			_, _ = io.WriteString(w, `{"message":"recipient refused"}`)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"id": id})
	})
}

func run(ctx context.Context, cfg config, stdout io.Writer, logger *slog.Logger) error {
	out := &lockedWriter{w: stdout}
	endpoint := cfg.endpoint
	if endpoint == "" {
		srv := httptest.NewServer(fakeProvider(out))
		defer srv.Close()
		endpoint = srv.URL + "/send"
		out.Printf("a fake provider listens on %s\n", endpoint)
	}

	store, err := memory.New(memory.Options{Logger: logger})
	if err != nil {
		return err
	}
	sink := audit.NewMemory()
	queue, err := mailqueue.New(mailqueue.Config{Driver: store, Audit: sink, Logger: logger})
	if err != nil {
		return err
	}
	transport, err := httpprovider.New(httpprovider.Config{
		Endpoint: endpoint,
		APIKey:   cfg.apiKey,
		// A reply that does not come in time is delivery_unknown: the
		// provider may have taken the message.
		Client: &http.Client{Timeout: 30 * time.Second},
	})
	if err != nil {
		return err
	}
	worker, err := queue.NewWorker(mailqueue.WorkerConfig{Transport: transport})
	if err != nil {
		return err
	}
	welcome := func(key, to string) *jobv1.Job {
		return &jobv1.Job{
			Kind:           jobv1.KindContent,
			Subject:        "Welcome to Acme",
			Content:        &jobv1.Content{Text: "Welcome aboard!", HTML: "<p>Welcome aboard!</p>"},
			From:           cfg.from,
			To:             []string{to},
			IdempotencyKey: key,
		}
	}
	// The same key twice is one job: the second enqueue is a duplicate and
	// nothing is posted for it.
	jobs := []*jobv1.Job{
		welcome("welcome:1", cfg.to),
		welcome("welcome:1", cfg.to),
	}
	if cfg.endpoint == "" {
		// The fake provider refuses this recipient: the job fails for good
		// (queue.message_refused) and is not retried.
		jobs = append(jobs, welcome("welcome:2", "bob@blocked.example.com"))
	}
	var ids []string
	for _, job := range jobs {
		res, err := queue.Enqueue(ctx, job)
		if err != nil {
			return err
		}
		out.Printf("enqueued %s (key %s, duplicate %t)\n", res.ID, job.IdempotencyKey, res.Duplicate)
		if !res.Duplicate {
			ids = append(ids, res.ID)
		}
	}

	// The worker starts once the jobs are in, so that this program prints
	// in the same order on every run; a real worker runs all along.
	if err := worker.Start(); err != nil {
		return err
	}
	// A job the provider refuses with a 5xx or a 429 is retried after a
	// backoff of up to 30 seconds and more: wait as long as it takes, or
	// until an interrupt.
	if err := store.Drain(ctx); err != nil {
		return errors.Join(fmt.Errorf("waiting for the jobs: %w", err), worker.Close(context.Background()))
	}
	if err := worker.Close(ctx); err != nil {
		return err
	}
	for _, id := range ids {
		events := sink.Events(id)
		last := events[len(events)-1]
		line := fmt.Sprintf("job %s: %s after %d attempt(s)", id, last.State, last.Attempt)
		if last.Code != "" {
			line += fmt.Sprintf(" (%s)", last.Code)
		}
		out.Printf("%s\n", line)
	}
	return nil
}
