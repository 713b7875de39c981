package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	pgdriver "github.com/alexify/mailer/drivers/postgres"
	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/internal/pgtest"
	"github.com/alexify/mailer/mailqueue"
)

// TestPostgresOperations runs migrate, then stats, failed, retry (with
// --resend) and purge on a PostgreSQL queue in a schema of its own.
func TestPostgresOperations(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	schema := pgtest.SchemaName()
	pgtest.DropSchema(t, pool, schema)
	url := pgtest.URL()
	mailq := func(args ...string) (string, int) {
		var out, errOut bytes.Buffer
		code := run(ctx, append([]string{args[0], "--postgres", url, "--schema", schema}, args[1:]...), nil, &out, &errOut)
		return out.String() + errOut.String(), code
	}
	if out, code := mailq("stats"); code != 1 || !strings.Contains(out, "not migrated") {
		t.Errorf("mailq stats before migrate = %d:\n%s; want the schema not migrated", code, out)
	}
	if out, code := mailq("migrate"); code != 0 || !strings.Contains(out, "migrated from version 0") {
		t.Fatalf("mailq migrate = %d:\n%s", code, out)
	}
	if out, code := mailq("migrate"); code != 0 || !strings.Contains(out, "nothing to do") {
		t.Errorf("mailq migrate again = %d:\n%s", code, out)
	}
	var errOut bytes.Buffer
	if code := run(ctx, []string{"migrate"}, nil, &errOut, &errOut); code != 2 {
		t.Errorf("mailq migrate without --postgres = %d, want 2:\n%s", code, errOut.String())
	}
	if code := run(ctx, []string{"stats", "--postgres", url, "--redis", "redis://127.0.0.1:6379/0"}, nil, &errOut, &errOut); code != 2 {
		t.Errorf("mailq stats with two stores = %d, want 2", code)
	}

	src, err := pgdriver.OpenSource(ctx, pgdriver.Options{Pool: pool, Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, err := src.Enqueue(ctx, []mailqueue.NewJob{
		{ID: "job-1", Hash: "h1", Data: []byte(`{"v":1}`), RunAt: now, EnqueuedAt: now, MaxAttempts: 5},
		{ID: "job-2", Hash: "h2", Data: []byte(`{"v":1}`), RunAt: now, EnqueuedAt: now, MaxAttempts: 5},
	}); err != nil {
		t.Fatal(err)
	}
	ls, err := src.Reserve(ctx, mailqueue.ReserveParams{Limit: 2, LeaseDuration: time.Minute})
	if err != nil || len(ls) != 2 {
		t.Fatalf("Reserve: %d, %v", len(ls), err)
	}
	for _, l := range ls {
		if l.ID == "job-1" {
			_, _ = src.Fail(ctx, mailqueue.FailParams{ID: l.ID, Token: l.Token, State: codes.StateDeliveryUnknown, Code: codes.DeliveryUnknown, Reason: "timeout after DATA"})
		} else {
			_, _ = src.Ack(ctx, mailqueue.AckParams{ID: l.ID, Token: l.Token})
		}
	}
	if out, code := mailq("stats"); code != 0 || !strings.Contains(out, "accepted          1") || !strings.Contains(out, "delivery_unknown  1") {
		t.Errorf("mailq stats = %d:\n%s", code, out)
	}
	if out, code := mailq("failed"); code != 0 || !strings.Contains(out, "job-1") || strings.Contains(out, "job-2") {
		t.Errorf("mailq failed = %d:\n%s", code, out)
	}
	idem, err := pgdriver.OpenIdempotencyStore(ctx, pool, schema)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := idem.Reserve(ctx, "job-1", "run-1", time.Hour); err != nil {
		t.Fatal(err)
	}
	if out, code := mailq("retry", "--resend", "job-1"); code != 0 || !strings.Contains(out, "job-1 queued again, its idempotency key cleared") {
		t.Errorf("mailq retry --resend = %d:\n%s", code, out)
	}
	if e, err := idem.Reserve(ctx, "job-1", "run-2", time.Hour); e != nil || err != nil {
		t.Errorf("after mailq retry --resend the key holds %+v, %v; want nothing", e, err)
	}
	if out, code := mailq("retry", "job-2"); code != 1 || !strings.Contains(out, "not failed") {
		t.Errorf("mailq retry of an accepted job = %d:\n%s", code, out)
	}
	if out, code := mailq("purge", "--state", "accepted", "--older-than", "0s", "--yes"); code != 0 || !strings.Contains(out, "1 accepted jobs purged") {
		t.Errorf("mailq purge --yes = %d:\n%s", code, out)
	}
	if res, err := src.Enqueue(ctx, []mailqueue.NewJob{{ID: "job-2", Hash: "h2", Data: []byte(`{"v":1}`), RunAt: now, EnqueuedAt: now, MaxAttempts: 5}}); err != nil || !res[0].Duplicate {
		t.Errorf("job-2 enqueued again after mailq purge: %+v, %v; want Duplicate", res, err)
	}
}
