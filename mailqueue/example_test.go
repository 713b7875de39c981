package mailqueue_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing/fstest"
	"time"

	"github.com/alexify/mailer/clock"
	"github.com/alexify/mailer/drivers/memory"
	"github.com/alexify/mailer/drivers/polling"
	"github.com/alexify/mailer/gen/jobv1"
	mmemory "github.com/alexify/mailer/mail/memory"
	"github.com/alexify/mailer/mailqueue"
	"github.com/alexify/mailer/render"
)

// A producer and a worker in one process: the memory queue stores the job,
// the worker renders it from templates in a file system and sends it through
// the memory transport, which keeps the message instead of sending it. In a
// real program the transport is mail/smtp and the templates are a folder
// (os.DirFS) or an embed.FS.
func Example() {
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler) // the queue logs at info and above by default
	fc := clock.NewFake(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))

	store, err := memory.New(memory.Options{Clock: fc, Logger: quiet})
	if err != nil {
		fmt.Println(err)
		return
	}
	queue, err := mailqueue.New(mailqueue.Config{Driver: store, Clock: fc, Logger: quiet})
	if err != nil {
		fmt.Println(err)
		return
	}

	renderer, err := render.New(fstest.MapFS{
		"reset-password/en/subject.txt": {Data: []byte("Reset your password")},
		"reset-password/en/body.txt":    {Data: []byte("Hi {{.name}}, open {{.url}} to choose a new password.")},
	}, render.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	transport := mmemory.New()
	worker, err := queue.NewWorker(mailqueue.WorkerConfig{Transport: transport, Renderer: renderer})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := worker.Start(); err != nil {
		fmt.Println(err)
		return
	}

	// The producer. The job's id derives from the namespace ("mail") and the
	// idempotency key, so the same key always names the same job.
	expires := fc.Now().Add(15 * time.Minute) // an expiry relative to now
	res, err := queue.Enqueue(ctx, &jobv1.Job{
		Kind:           jobv1.KindTemplate,
		Template:       "reset-password",
		Context:        map[string]any{"name": "Ada", "url": "https://app.example.com/reset?token=abc"},
		Locale:         "en",
		From:           "Acme <no-reply@example.com>",
		To:             []string{"ada@example.com"},
		IdempotencyKey: "reset-password:42",
		ExpiresAt:      &expires,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("job:", res.ID)
	fmt.Println("message id:", res.MessageID)

	// Wait until the worker has settled the job, then stop it.
	if err := store.Drain(ctx); err != nil {
		fmt.Println(err)
		return
	}
	if err := worker.Close(ctx); err != nil {
		fmt.Println(err)
		return
	}

	for _, m := range transport.Messages() {
		fmt.Println("to:", strings.Join(m.To, ", "))
		fmt.Println("subject:", m.Subject)
		fmt.Println("text:", m.Text)
		fmt.Println("idempotency key given to the transport is the job's id:", m.IdempotencyKey == res.ID)
	}
	// Output:
	// job: 04d7551d-ae10-8924-8c72-617b26fd81aa
	// message id: <7e95e1d3-b869-8d62-b027-ac7eff2f71ca@example.com>
	// to: ada@example.com
	// subject: Reset your password
	// text: Hi Ada, open https://app.example.com/reset?token=abc to choose a new password.
	// idempotency key given to the transport is the job's id: true
}

// The same message enqueued twice under one key is one job: the second
// enqueue answers Duplicate with the same id and stores nothing. Another
// message under a key used before is refused with queue.key_reused, so that
// a bug in the producer does not silently drop a different mail.
func ExampleQueue_Enqueue_duplicate() {
	ctx := context.Background()
	store, err := memory.New(memory.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println(err)
		return
	}
	queue, err := mailqueue.New(mailqueue.Config{Driver: store})
	if err != nil {
		fmt.Println(err)
		return
	}
	invoice := func(text string) *jobv1.Job {
		return &jobv1.Job{
			Kind:           jobv1.KindContent,
			Subject:        "Your invoice",
			Content:        &jobv1.Content{Text: text},
			From:           "Shop <shop@example.com>",
			To:             []string{"ada@example.com"},
			IdempotencyKey: "invoice:2026-0042",
		}
	}

	first, err := queue.Enqueue(ctx, invoice("Invoice 2026-0042: 12.00 EUR"))
	if err != nil {
		fmt.Println(err)
		return
	}
	again, err := queue.Enqueue(ctx, invoice("Invoice 2026-0042: 12.00 EUR"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("first duplicate:", first.Duplicate)
	fmt.Println("again duplicate:", again.Duplicate, "same id:", again.ID == first.ID)

	_, err = queue.Enqueue(ctx, invoice("Invoice 2026-0042: 99.00 EUR"))
	fmt.Println("another message under the key:", mailqueue.CodeOf(err))
	var e *mailqueue.Error
	if errors.As(err, &e) {
		fmt.Println("refused job:", e.JobIDs[0] == first.ID)
	}
	// Output:
	// first duplicate: false
	// again duplicate: true same id: true
	// another message under the key: queue.key_reused
	// refused job: true
}

// A job that breaks the schema is refused before anything is stored, with
// its code and the path of the bad value; the error never quotes the value
// itself, which may be an address.
func ExampleQueue_Enqueue_invalid() {
	store, err := memory.New(memory.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println(err)
		return
	}
	queue, err := mailqueue.New(mailqueue.Config{Driver: store})
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = queue.Enqueue(context.Background(), &jobv1.Job{
		Kind:    jobv1.KindContent,
		Subject: "Hello",
		Content: &jobv1.Content{Text: "Hello"},
		From:    "Shop <shop@example.com>",
		To:      []string{"ada@example.com", "not an address"},
	})
	var e *mailqueue.Error
	if errors.As(err, &e) {
		fmt.Println("code:", e.Code)
		fmt.Println("path:", e.Path)
	}
	// Output:
	// code: queue.invalid_job
	// path: to[1]
}

// A signed and sealed queue: every job is signed with an HMAC-SHA256 (the
// first signing key signs, every key verifies) and its message is sealed
// with AES-256-GCM, so the store holds neither the addresses nor the text.
// A worker with the same keys and codec opens and sends it; a job whose
// stored bytes were changed is failed with queue.signature_invalid, and
// nothing is sent.
//
// The example calls the worker's handler on a lease taken by hand, as a
// driver does, so that it can change the stored bytes in between.
func Example_signedAndSealed() {
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	fc := clock.NewFake(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))

	// Real keys come from a secret store: 32 random bytes each.
	keys := []mailqueue.SigningKey{{ID: "2026-12", Secret: bytes.Repeat([]byte{'k'}, 32)}}
	codec, err := mailqueue.NewAESGCMCodec(bytes.Repeat([]byte{'s'}, 32))
	if err != nil {
		fmt.Println(err)
		return
	}

	src, err := memory.NewSource(memory.Options{Clock: fc})
	if err != nil {
		fmt.Println(err)
		return
	}
	driver, err := polling.New(src, polling.Options{Clock: fc, Logger: quiet})
	if err != nil {
		fmt.Println(err)
		return
	}
	queue, err := mailqueue.New(mailqueue.Config{Driver: driver, SigningKeys: keys, Codec: codec, Clock: fc, Logger: quiet})
	if err != nil {
		fmt.Println(err)
		return
	}
	transport := mmemory.New()
	worker, err := queue.NewWorker(mailqueue.WorkerConfig{Transport: transport})
	if err != nil {
		fmt.Println(err)
		return
	}

	for _, key := range []string{"code:1", "code:2"} {
		_, err := queue.Enqueue(ctx, &jobv1.Job{
			Kind:           jobv1.KindContent,
			Subject:        "Your sign-in code",
			Content:        &jobv1.Content{Text: "Your code is 314159."},
			From:           "Acme <no-reply@example.com>",
			To:             []string{"ada@example.com"},
			IdempotencyKey: key,
		})
		if err != nil {
			fmt.Println(err)
			return
		}
	}
	leases, err := src.Reserve(ctx, mailqueue.ReserveParams{Limit: 2, LeaseDuration: time.Minute})
	if err != nil || len(leases) != 2 {
		fmt.Println(len(leases), err)
		return
	}
	stored := leases[0].Data
	fmt.Println("stored in clear:", bytes.Contains(stored, []byte("ada@example.com")) || bytes.Contains(stored, []byte("314159")))
	fmt.Println("stored signed and sealed:", bytes.Contains(stored, []byte(`"kid":"2026-12"`)) && bytes.Contains(stored, []byte(`"enc":`)))

	out := worker.Handle(ctx, leases[0])
	fmt.Println("intact job:", out.Action)

	// Change one byte of the second job's sealed text, as a writer without
	// the keys would.
	tampered := leases[1]
	i := bytes.Index(tampered.Data, []byte(`"enc":"`)) + len(`"enc":"`)
	tampered.Data = bytes.Clone(tampered.Data)
	tampered.Data[i] ^= 1
	out = worker.Handle(ctx, tampered)
	fmt.Println("tampered job:", out.Action, out.State, out.Code)

	fmt.Println("messages sent:", transport.Sent())
	// Output:
	// stored in clear: false
	// stored signed and sealed: true
	// intact job: ack
	// tampered job: fail failed queue.signature_invalid
	// messages sent: 1
}

// The backoff's ceiling doubles per attempt from 30 seconds up to an hour;
// Backoff draws the delay uniformly below it ("full jitter"), so that
// retries of many jobs spread out.
func ExampleBackoffCeiling() {
	for attempt := 1; attempt <= 9; attempt++ {
		fmt.Printf("after attempt %d: up to %v\n", attempt, mailqueue.BackoffCeiling(attempt))
	}
	// Output:
	// after attempt 1: up to 30s
	// after attempt 2: up to 1m0s
	// after attempt 3: up to 2m0s
	// after attempt 4: up to 4m0s
	// after attempt 5: up to 8m0s
	// after attempt 6: up to 16m0s
	// after attempt 7: up to 32m0s
	// after attempt 8: up to 1h0m0s
	// after attempt 9: up to 1h0m0s
}
