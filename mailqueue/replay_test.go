package mailqueue_test

// A signed or sealed job cannot be replayed, and the store's record of it
// cannot overrule it (docs/wire.md, "The mac", "Sealed jobs" and "What a
// worker checks"): a copy under another id, into another queue or another
// namespace, and a record whose tenant, priority or attempts differ from
// the job's, are refused unsent. The same on Redis: drivers/redis's
// TestReplayOnRedis.

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/alexify/mailer/audit"
	"github.com/alexify/mailer/clock"
	"github.com/alexify/mailer/drivers/memory"
	"github.com/alexify/mailer/drivers/polling"
	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/mail"
	mmemory "github.com/alexify/mailer/mail/memory"
	"github.com/alexify/mailer/mailqueue"
)

// tenantJob is a job of a tenant with delivery parameters of its own, so a
// store's record that changes them can be told.
func tenantJob() *jobv1.Job {
	j := contentJob()
	j.TenantID, j.MaxAttempts, j.Priority = "acme", 3, jobv1.PriorityHigh
	return j
}

// writeRecord writes data under the store's record nj, as whoever can write
// to the store can, due now.
func writeRecord(t *testing.T, mq *memory.Queue, nj mailqueue.NewJob) {
	t.Helper()
	if nj.Hash == "" {
		nj.Hash = "crafted-" + nj.ID
	}
	nj.RunAt, nj.EnqueuedAt = t0, t0
	res, err := mq.Source().Enqueue(context.Background(), []mailqueue.NewJob{nj})
	if err != nil || len(res) != 1 || res[0].Duplicate || res[0].Conflict {
		t.Fatalf("writing %s: %+v, %v", nj.ID, res, err)
	}
	mq.Wake()
}

// record is the store's record a producer makes of tenantJob.
func record(id string, data []byte) mailqueue.NewJob {
	return mailqueue.NewJob{ID: id, Data: data, TenantID: "acme", MaxAttempts: 3, Priority: jobv1.PriorityHigh}
}

func TestReplayIsRefused(t *testing.T) {
	t.Parallel()
	keys := []mailqueue.SigningKey{key("k1", 'a')}
	codec := aesCodec(t, 1)
	clearSigned, id := produceID(t, mailqueue.Config{SigningKeys: keys}, tenantJob())
	clearUnsigned, _ := produceID(t, mailqueue.Config{}, tenantJob())
	sealedSigned, _ := produceID(t, mailqueue.Config{SigningKeys: keys, Codec: codec}, tenantJob())
	sealedUnsigned, _ := produceID(t, mailqueue.Config{Codec: codec}, tenantJob())
	other := tenantJob()
	other.IdempotencyKey = "invoice:2"
	_, otherID := produceID(t, mailqueue.Config{}, other)
	tests := []struct {
		name  string
		data  []byte
		id    string
		cfg   mailqueue.Config // the worker's: the keys and codec of the producer
		queue string           // the worker's memory queue's name ("" for "mail")
		state mailqueue.JobState
		code  codes.Code
	}{
		{"clear, signed, its own place: sent", clearSigned, id, mailqueue.Config{SigningKeys: keys}, "", mailqueue.JobAccepted, ""},
		{"clear, signed, copied under another id", clearSigned, otherID, mailqueue.Config{SigningKeys: keys}, "", mailqueue.JobFailed, codes.QueueJobTampered},
		{"clear, signed, same id, another queue", clearSigned, id, mailqueue.Config{SigningKeys: keys}, "other", mailqueue.JobFailed, codes.QueueSignatureInvalid},
		{"clear, signed, same id, another namespace", clearSigned, id, mailqueue.Config{SigningKeys: keys, Namespace: "billing"}, "", mailqueue.JobFailed, codes.QueueSignatureInvalid},
		{"clear, unsigned, no keys, copied under another id", clearUnsigned, otherID, mailqueue.Config{}, "", mailqueue.JobFailed, codes.QueueJobTampered},
		{"clear, unsigned, no keys, same id, another namespace", clearUnsigned, id, mailqueue.Config{Namespace: "billing"}, "", mailqueue.JobFailed, codes.QueueJobTampered},
		{"sealed, signed, its own place: sent", sealedSigned, id, mailqueue.Config{SigningKeys: keys, Codec: codec}, "", mailqueue.JobAccepted, ""},
		// Its tenant and key are sealed, and enc is not opened before the
		// mac verifies: the mac tells.
		{"sealed, signed, copied under another id", sealedSigned, otherID, mailqueue.Config{SigningKeys: keys, Codec: codec}, "", mailqueue.JobFailed, codes.QueueSignatureInvalid},
		{"sealed, signed, same id, another queue", sealedSigned, id, mailqueue.Config{SigningKeys: keys, Codec: codec}, "other", mailqueue.JobFailed, codes.QueueSignatureInvalid},
		{"sealed, signed, same id, another namespace", sealedSigned, id, mailqueue.Config{SigningKeys: keys, Codec: codec, Namespace: "billing"}, "", mailqueue.JobFailed, codes.QueueSignatureInvalid},
		// Without keys the codec's associated data binds alone: AES-GCM does
		// not authenticate, which it cannot tell from a key it lacks, so
		// the job is retried (an attempt spent), never sent.
		{"sealed, unsigned, copied under another id", sealedUnsigned, otherID, mailqueue.Config{Codec: codec}, "", mailqueue.JobQueued, codes.QueueCodecFailed},
		{"sealed, unsigned, same id, another queue", sealedUnsigned, id, mailqueue.Config{Codec: codec}, "other", mailqueue.JobQueued, codes.QueueCodecFailed},
		{"sealed, unsigned, same id, another namespace", sealedUnsigned, id, mailqueue.Config{Codec: codec, Namespace: "billing"}, "", mailqueue.JobQueued, codes.QueueCodecFailed},
		{"sealed, unsigned, its own place: sent", sealedUnsigned, id, mailqueue.Config{Codec: codec}, "", mailqueue.JobAccepted, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			logs := &wireLogs{}
			tc.cfg.Logger = slog.New(logs)
			q, mq, _ := newQueueWith(t, tc.cfg, memory.Options{Queue: tc.queue, RetainData: mailqueue.RetainAllData})
			tr := mmemory.New()
			startWorker(t, q, mailqueue.WorkerConfig{Transport: tr})
			writeRecord(t, mq, record(tc.id, tc.data))
			drain(t, mq)
			got, err := mq.Get(context.Background(), tc.id)
			if err != nil {
				t.Fatal(err)
			}
			if got.State != tc.state || got.Code != tc.code {
				t.Fatalf("%s (%s: %s), want %s (%s)", got.State, got.Code, got.Reason, tc.state, tc.code)
			}
			if sent := tr.Attempts(); (tc.state == mailqueue.JobAccepted) != (sent == 1) {
				t.Errorf("%d sends", sent)
			}
			if tc.state == mailqueue.JobFailed && !logs.logged(slog.LevelError, tc.code) {
				t.Errorf("%s was not logged at error", tc.code)
			}
		})
	}
}

// TestStoreRecordCannotOverruleTheJob: the store's record of a job's
// attempts, tenant or priority that disagrees with the verified job is
// refused as queue.job_tampered, unsent, signed or not.
func TestStoreRecordCannotOverruleTheJob(t *testing.T) {
	t.Parallel()
	keys := []mailqueue.SigningKey{key("k1", 'a')}
	for _, signed := range []bool{true, false} {
		cfg := mailqueue.Config{}
		if signed {
			cfg.SigningKeys = keys
		}
		data, id := produceID(t, cfg, tenantJob())
		for name, edit := range map[string]func(nj *mailqueue.NewJob){
			"100 attempts":     func(nj *mailqueue.NewJob) { nj.MaxAttempts = 100 },
			"another tenant":   func(nj *mailqueue.NewJob) { nj.TenantID = "evil" },
			"no tenant":        func(nj *mailqueue.NewJob) { nj.TenantID = "" },
			"another priority": func(nj *mailqueue.NewJob) { nj.Priority = jobv1.PriorityLow },
			"the whole of it": func(nj *mailqueue.NewJob) {
				nj.MaxAttempts, nj.TenantID, nj.Priority = 100, "evil", jobv1.PriorityNormal
			},
		} {
			t.Run(name+map[bool]string{true: ", signed", false: ", unsigned"}[signed], func(t *testing.T) {
				logs := &wireLogs{}
				wcfg := cfg
				wcfg.Logger = slog.New(logs)
				q, mq, _ := newQueue(t, wcfg)
				tr := mmemory.New()
				startWorker(t, q, mailqueue.WorkerConfig{Transport: tr})
				nj := record(id, data)
				edit(&nj)
				writeRecord(t, mq, nj)
				drain(t, mq)
				wantJob(t, mq, id, mailqueue.JobFailed, 1, codes.QueueJobTampered)
				if tr.Attempts() != 0 {
					t.Error("sent")
				}
				if !logs.logged(slog.LevelError, codes.QueueJobTampered) {
					t.Error("queue.job_tampered was not logged at error")
				}
			})
		}
	}
}

// failing refuses every send for now (a 4xx).
type failing struct{ sends int }

func (f *failing) Send(context.Context, *mail.Message) (mail.Receipt, error) {
	f.sends++
	return mail.Receipt{}, &mail.Error{Receipt: mail.Receipt{Category: mail.Retryable, Code: 451}}
}

// TestWorkerTakesTheAttemptsOfTheJob: a store that does not tell the
// attempts (MaxAttempts 0 in its record) leaves the job's own: a job of 2
// attempts fails after 2, whatever the queue's Config.MaxAttempts.
func TestWorkerTakesTheAttemptsOfTheJob(t *testing.T) {
	t.Parallel()
	j := contentJob()
	j.MaxAttempts = 2
	data, id := produceID(t, mailqueue.Config{}, j)
	q, mq, fc := newQueue(t, mailqueue.Config{MaxAttempts: 10})
	tr := &failing{}
	startWorker(t, q, mailqueue.WorkerConfig{Transport: tr, Backoff: func(int) time.Duration { return time.Second }})
	writeRecord(t, mq, mailqueue.NewJob{ID: id, Data: data})
	for range 3 {
		drain(t, mq)
		fc.Advance(2 * time.Second)
		mq.Wake()
	}
	drain(t, mq)
	wantJob(t, mq, id, mailqueue.JobFailed, 2, codes.QueueAttemptsExhausted)
	if tr.sends != 2 {
		t.Errorf("%d sends, want 2", tr.sends)
	}
}

// leaseEditing is a memory source whose leases edit changes: a store that
// tells other metadata than it was given, or none.
type leaseEditing struct {
	*memory.Source
	edit func(l *mailqueue.Lease)
}

func (s leaseEditing) Reserve(ctx context.Context, p mailqueue.ReserveParams) ([]*mailqueue.Lease, error) {
	ls, err := s.Source.Reserve(ctx, p)
	for _, l := range ls {
		s.edit(l)
	}
	return ls, err
}

// TestLeaseMetadata: a lease's attempts, tenant and priority that disagree
// with the verified job are refused as queue.job_tampered, unsent; a
// source that tells no attempts and no priority (zero) leaves the job's.
func TestLeaseMetadata(t *testing.T) {
	t.Parallel()
	keys := []mailqueue.SigningKey{key("k1", 'a')}
	data, id := produceID(t, mailqueue.Config{SigningKeys: keys}, tenantJob())
	tests := []struct {
		name string
		edit func(l *mailqueue.Lease)
		want codes.Code
	}{
		{"as stored", func(*mailqueue.Lease) {}, ""},
		{"no attempts, no priority told", func(l *mailqueue.Lease) { l.MaxAttempts, l.Priority = 0, "" }, ""},
		{"100 attempts", func(l *mailqueue.Lease) { l.MaxAttempts = 100 }, codes.QueueJobTampered},
		{"1 attempt", func(l *mailqueue.Lease) { l.MaxAttempts = 1 }, codes.QueueJobTampered},
		{"another tenant", func(l *mailqueue.Lease) { l.TenantID = "evil" }, codes.QueueJobTampered},
		{"no tenant told", func(l *mailqueue.Lease) { l.TenantID = "" }, codes.QueueJobTampered},
		{"another priority", func(l *mailqueue.Lease) { l.Priority = jobv1.PriorityLow }, codes.QueueJobTampered},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fc := clock.NewFake(t0)
			src := mustMemorySource(t, memory.Options{Clock: fc})
			d, err := polling.New(leaseEditing{src, tc.edit}, polling.Options{Clock: fc, PollInterval: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			q, err := mailqueue.New(mailqueue.Config{Driver: d, Clock: fc, SigningKeys: keys})
			if err != nil {
				t.Fatal(err)
			}
			tr := mmemory.New()
			startWorker(t, q, mailqueue.WorkerConfig{Transport: tr})
			if _, err := src.Enqueue(context.Background(), []mailqueue.NewJob{record(id, data)}); err != nil {
				t.Fatal(err)
			}
			d.Wake()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := src.Drain(ctx); err != nil {
				t.Fatal(err)
			}
			got, err := src.Get(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			want := mailqueue.JobAccepted
			if tc.want != "" {
				want = mailqueue.JobFailed
			}
			if got.State != want || got.Code != tc.want || (tr.Attempts() == 1) != (tc.want == "") {
				t.Errorf("%s (%s: %s), %d sends; want %s (%s)", got.State, got.Code, got.Reason, tr.Attempts(), want, tc.want)
			}
		})
	}
}

// TestAuditTenantIsTheJobs: the audit's tenant is the verified job's; a
// job that is not read (a forgery) has none, whatever the store says.
func TestAuditTenantIsTheJobs(t *testing.T) {
	t.Parallel()
	keys := []mailqueue.SigningKey{key("k1", 'a')}
	data, id := produceID(t, mailqueue.Config{SigningKeys: keys}, tenantJob())
	forged := editJSON(t, data, func(m map[string]any) { m["subject"] = "Forged" })
	for name, tc := range map[string]struct {
		data   []byte
		tenant string
		want   string
	}{
		"the job":                     {data, "acme", "acme"},
		"a forgery the store tenants": {forged, "evil", ""},
	} {
		t.Run(name, func(t *testing.T) {
			sink := audit.NewMemory()
			q, mq, _ := newQueue(t, mailqueue.Config{SigningKeys: keys, Audit: sink})
			startWorker(t, q, mailqueue.WorkerConfig{Transport: mmemory.New()})
			nj := record(id, tc.data)
			nj.TenantID = tc.tenant
			writeRecord(t, mq, nj)
			drain(t, mq)
			events := sink.Events(id)
			if len(events) == 0 {
				t.Fatal("no audit event")
			}
			for _, e := range events {
				if e.TenantID != tc.want {
					t.Errorf("%s: tenant %q, want %q", e.State, e.TenantID, tc.want)
				}
			}
		})
	}
}
