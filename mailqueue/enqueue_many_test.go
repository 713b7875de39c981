package mailqueue_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/alexify/mailer/drivers/memory"
	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/mailqueue"
)

// TestEnqueueManyKeyReusedStoresTheOthers: a call to EnqueueMany with one
// job whose key was enqueued before for another message stores every other
// job of the call and tells it to the audit, and returns the answers of all
// with the queue.key_reused error, which names the job refused.
func TestEnqueueManyKeyReusedStoresTheOthers(t *testing.T) {
	t.Parallel()
	h := newHarness(t, mailqueue.WorkerConfig{}, memory.Options{})
	first := h.enqueue(contentJob())
	keyed := func(key, subject string) *jobv1.Job {
		j := contentJob()
		j.IdempotencyKey, j.Subject = key, subject
		return j
	}
	// The second job reuses invoice:1 for another subject.
	jobs := []*jobv1.Job{keyed("invoice:2", "Invoice 2"), keyed("invoice:1", "Another subject"), keyed("invoice:3", "Invoice 3")}
	rs, err := h.q.EnqueueMany(context.Background(), jobs)
	var e *mailqueue.Error
	if !errors.As(err, &e) || e.Code != codes.QueueKeyReused {
		t.Fatalf("got %v; want queue.key_reused", err)
	}
	if diff := cmp.Diff([]string{first}, e.JobIDs); diff != "" {
		t.Errorf("JobIDs (-want +got):\n%s", diff)
	}
	if len(rs) != 3 {
		t.Fatalf("got %d answers with the error, want 3", len(rs))
	}
	ignore := cmpopts.IgnoreFields(mailqueue.Result{}, "MessageID", "Hash")
	if diff := cmp.Diff(mailqueue.Result{ID: first, KeyReused: true}, rs[1], ignore); diff != "" {
		t.Errorf("the refused job's answer (-want +got):\n%s", diff)
	}
	for _, i := range []int{0, 2} {
		r := rs[i]
		if r.ID == "" || r.ID == first || r.Hash == "" || r.MessageID == "" || r.Duplicate || r.KeyReused {
			t.Errorf("answer %d: %+v; want a new job", i, r)
		}
		if diff := cmp.Diff([]mailqueue.AuditState{"queued"}, h.sink.States(r.ID)); diff != "" {
			t.Errorf("job %d told to the audit (-want +got):\n%s", i, diff)
		}
	}
	if recs := h.logs.find(string(codes.QueueKeyReused)); len(recs) != 1 || recs[0].Attrs["job_id"] != first {
		t.Errorf("queue.key_reused records %+v; want one naming %s", recs, first)
	}
	// The two others are stored and sent; the first job keeps its message.
	h.start().drain()
	var subjects []string
	for _, m := range h.tr.Messages() {
		subjects = append(subjects, m.Subject)
	}
	if diff := cmp.Diff([]string{"Invoice 2", "Invoice 3", "Your invoice"}, subjects, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("sent (-want +got):\n%s", diff)
	}
}
