package mailqueue_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/alexify/mailer/drivers/memory"
	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/mailqueue"
)

// TestStoredJobThatIsNoJob: a stored job that is not a JSON object, or has
// no valid version, fails at the worker with queue.invalid_job, unsent.
func TestStoredJobThatIsNoJob(t *testing.T) {
	t.Parallel()
	for name, data := range map[string]string{
		"not a JSON object": `["a list"]`,
		"no valid version":  `{"v":"one","kind":"content"}`,
		"not JSON at all":   `{"v":1,`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, mailqueue.WorkerConfig{}, memory.Options{}).start()
			writeRaw(t, h.mq, "crafted", []byte(data))
			h.drain()
			if got := h.sink.Events("crafted"); len(got) != 1 || got[0].State != mailqueue.AuditFailed || got[0].Code != codes.QueueInvalidJob {
				t.Errorf("audit %+v; want one failed event, queue.invalid_job", got)
			}
			recs := h.logs.find(string(codes.QueueJobFailed))
			if len(recs) != 1 || recs[0].Attrs["code"] != string(codes.QueueInvalidJob) || recs[0].Level != slog.LevelError {
				t.Errorf("queue.job.failed records %+v; want one at error with queue.invalid_job", recs)
			}
			if h.tr.Attempts() != 0 {
				t.Error("a stored job that is no job was sent")
			}
		})
	}
}

// TestWorkerPanicIsThrown: a panic in the worker's own steps (here a
// CheckJob hook) fails the job with queue.thrown, logs queue.worker.error
// with its stack and warns MAILER_QUEUE_WORKER_THREW, never quoting what the
// panic said of an address.
func TestWorkerPanicIsThrown(t *testing.T) {
	t.Parallel()
	var warned []codes.Code
	h := newHarness(t, mailqueue.WorkerConfig{}, memory.Options{})
	q, err := mailqueue.New(mailqueue.Config{Driver: h.mq, Clock: h.fc, Logger: slog.New(h.logs), Audit: h.sink, OnWarning: func(c codes.Code, _ error) {
		warned = append(warned, c)
	}})
	if err != nil {
		t.Fatal(err)
	}
	newWorker(t, q, mailqueue.WorkerConfig{Transport: h.tr, CheckJob: func(context.Context, *jobv1.Job) error {
		panic(errors.New("a bug with ada@example.com in hand"))
	}})
	r, err := q.Enqueue(context.Background(), contentJob())
	if err != nil {
		t.Fatal(err)
	}
	h.drain()
	events := h.sink.Events(r.ID)
	if last := events[len(events)-1]; last.State != mailqueue.AuditFailed || last.Code != codes.QueueThrown {
		t.Errorf("last audit event %+v; want failed, queue.thrown", last)
	}
	recs := h.logs.find(string(codes.QueueWorkerError))
	if len(recs) != 1 || recs[0].Level != slog.LevelError || !strings.Contains(recs[0].Attrs["stack"], "TestWorkerPanicIsThrown") {
		t.Errorf("queue.worker.error records %+v; want one at error with the stack", recs)
	}
	if len(warned) != 1 || warned[0] != codes.MailerQueueWorkerThrew {
		t.Errorf("warnings %v; want MAILER_QUEUE_WORKER_THREW", warned)
	}
	if h.tr.Attempts() != 0 {
		t.Error("a job whose worker panicked was sent")
	}
}
