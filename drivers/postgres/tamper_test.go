package postgres_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/alexify/mailer/drivers/postgres"
	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/internal/pgtest"
	memtransport "github.com/alexify/mailer/mail/memory"
	"github.com/alexify/mailer/mailqueue"
)

// TestStoreRecordOnPostgres: whoever can write to the jobs table changes a
// signed job's record beside its data (100 attempts, another tenant, no
// tenant, another priority) or copies its row under another id; the worker
// refuses each, unsent, with queue.job_tampered, and sends the job left as
// it was.
func TestStoreRecordOnPostgres(t *testing.T) {
	ctx := context.Background()
	keys := []mailqueue.SigningKey{{ID: "k1", Secret: bytes.Repeat([]byte{'a'}, 32)}}
	for _, tc := range []struct{ name, set string }{
		{"max 100", "max_attempts = 100"},
		{"another tenant", "tenant = 'evil'"},
		{"no tenant", "tenant = ''"},
		{"priority low", "priority = 2"},
		{"tenant and max", "tenant = 'evil', max_attempts = 100"},
		{"a copy under another id", "id = 'a-copy'"},
		{"nothing changed", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool := pgtest.Pool(t)
			schema := pgtest.SchemaName()
			pgtest.DropSchema(t, pool, schema)
			if err := postgres.MigrateSchema(ctx, pool, schema); err != nil {
				t.Fatal(err)
			}
			pq, err := postgres.Open(ctx, postgres.Options{Pool: pool, Schema: schema, PollInterval: 20 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			q, err := mailqueue.New(mailqueue.Config{Driver: pq, SigningKeys: keys})
			if err != nil {
				t.Fatal(err)
			}
			res, err := q.Enqueue(ctx, &jobv1.Job{
				Kind: jobv1.KindContent, Subject: "Your invoice", Content: &jobv1.Content{Text: "Hello"},
				From: "Shop <shop@example.com>", To: []string{"ada@example.com"}, IdempotencyKey: "invoice:1",
				TenantID: "acme", MaxAttempts: 3, Priority: jobv1.PriorityHigh,
			})
			if err != nil {
				t.Fatal(err)
			}
			id := res.ID
			if tc.set != "" {
				sql := fmt.Sprintf(`UPDATE %s.jobs SET %s WHERE id = $1`, pgx.Identifier{schema}.Sanitize(), tc.set)
				if tag, err := pool.Exec(ctx, sql, res.ID); err != nil || tag.RowsAffected() != 1 {
					t.Fatalf("%s: %v, %v", sql, tag, err)
				}
				if tc.name == "a copy under another id" {
					id = "a-copy"
				}
			}
			tr := memtransport.New()
			w, err := q.NewWorker(mailqueue.WorkerConfig{Transport: tr})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Start(); err != nil {
				t.Fatal(err)
			}
			var row mailqueue.JobRow
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				if row, err = pq.Get(ctx, id); err != nil {
					t.Fatal(err)
				}
				if row.State != mailqueue.JobQueued && row.State != mailqueue.JobRunning {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("job %s still %s after 10 s", id, row.State)
				}
			}
			if err := w.Close(ctx); err != nil {
				t.Fatal(err)
			}
			sent := len(tr.Messages())
			if tc.set == "" {
				if row.State != mailqueue.JobAccepted || sent != 1 {
					t.Fatalf("%s (%s), %d sends; want accepted, one send", row.State, row.Code, sent)
				}
				return
			}
			if row.State != mailqueue.JobFailed || row.Code != codes.QueueJobTampered || sent != 0 {
				t.Fatalf("%s (%s: %s), %d sends; want failed, queue.job_tampered, unsent", row.State, row.Code, row.Reason, sent)
			}
		})
	}
}
