// Package jobs_test checks the example job files: they hold no fixed time,
// and the valid one is sent by a worker with the example templates.
package jobs_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/alexify/mailer/clock"
	"github.com/alexify/mailer/drivers/memory"
	"github.com/alexify/mailer/examples/templates"
	"github.com/alexify/mailer/gen/jobv1"
	mmemory "github.com/alexify/mailer/mail/memory"
	"github.com/alexify/mailer/mailqueue"
	"github.com/alexify/mailer/render"
)

// TestNoFixedTimes fails on a job file with a time in it: a fixed expiresAt
// passes one day (reset-password.json's did, on 2026-11-30), and the job is
// then failed as expired.
func TestNoFixedTimes(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no job files: %v", err)
	}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		var job map[string]any
		if err := json.Unmarshal(data, &job); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, key := range []string{"expiresAt", "scheduledAt", "enqueuedAt"} {
			if _, ok := job[key]; ok {
				t.Errorf("%s holds a fixed %s: set it relative to now in the program instead", name, key)
			}
		}
	}
}

// TestResetPasswordIsSent enqueues reset-password.json, with an expiry set
// relative to now as a program sets it, and runs a worker with the example
// templates on it.
func TestResetPasswordIsSent(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("reset-password.json")
	if err != nil {
		t.Fatal(err)
	}
	job, sealed, err := jobv1.Decode(data)
	if err != nil || sealed != nil {
		t.Fatalf("decode: %v (sealed %v)", err, sealed != nil)
	}
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	fc := clock.NewFake(time.Now())
	expires := fc.Now().Add(15 * time.Minute)
	job.ExpiresAt = &expires

	store, err := memory.New(memory.Options{Clock: fc, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	queue, err := mailqueue.New(mailqueue.Config{Driver: store, Clock: fc, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	renderer, err := render.New(templates.FS, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	transport := mmemory.New()
	worker, err := queue.NewWorker(mailqueue.WorkerConfig{Transport: transport, Renderer: renderer})
	if err != nil {
		t.Fatal(err)
	}
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := queue.Enqueue(ctx, job); err != nil {
		t.Fatalf("enqueue: %v", err)
	}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := store.Drain(dctx); err != nil {
		t.Fatal(err)
	}
	if err := worker.Close(ctx); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range transport.Messages() {
		got = append(got, m.Subject)
	}
	if diff := cmp.Diff([]string{"Reset your password"}, got); diff != "" {
		t.Errorf("the subjects sent (-want +got):\n%s", diff)
	}
}
