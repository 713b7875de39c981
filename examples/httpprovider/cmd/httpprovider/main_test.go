package main

import (
	"bytes"
	"context"
	"log/slog"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRun runs the command against its fake provider: the first job is
// posted once with its id as the Idempotency-Key and accepted, its
// duplicate is not posted, and the job to a blocked recipient fails for
// good at its first attempt.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	cfg := config{from: "Acme <no-reply@example.com>", to: "ada@example.com"}
	if err := run(context.Background(), cfg, &out, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	// The ids derive from the namespace and the key: the same on every run.
	const (
		id1 = "d4f36061-1fb7-82e8-b1e9-0a4437b5f3ad"
		id2 = "1b67d465-853b-8590-9e07-aa888b471eb7"
	)
	got := regexp.MustCompile(`http://127\.0\.0\.1:\d+`).ReplaceAllString(out.String(), "http://127.0.0.1:PORT")
	want := `a fake provider listens on http://127.0.0.1:PORT/send
enqueued ` + id1 + ` (key welcome:1, duplicate false)
enqueued ` + id1 + ` (key welcome:1, duplicate true)
enqueued ` + id2 + ` (key welcome:2, duplicate false)
provider: POST "Welcome to Acme", Idempotency-Key ` + id1 + `: 200
provider: POST "Welcome to Acme", Idempotency-Key ` + id2 + `: 422
job ` + id1 + `: accepted after 1 attempt(s)
job ` + id2 + `: failed after 1 attempt(s) (queue.message_refused)
`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}
