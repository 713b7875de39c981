package mailqueue_test

import (
	"context"
	"errors"
	"testing"

	"github.com/alexify/mailer/drivers/memory"
	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/mailqueue"
)

// failingDriver is a Driver whose Enqueue answers err, or n results when
// err is nil.
type failingDriver struct {
	err error
	n   int
}

func (d failingDriver) Enqueue(_ context.Context, jobs []mailqueue.NewJob) ([]mailqueue.EnqueueResult, error) {
	if d.err != nil {
		return nil, d.err
	}
	return make([]mailqueue.EnqueueResult, d.n), nil
}

func (failingDriver) Work(mailqueue.Handler, mailqueue.WorkOptions) (mailqueue.Runner, error) {
	return nil, errors.New("failingDriver does not work")
}

// TestEnqueueStoreFailed: a store that fails at enqueue gives a
// *mailqueue.Error with code queue.store_failed that wraps the driver's
// error, from Enqueue and EnqueueMany alike (issue 10, point 9).
func TestEnqueueStoreFailed(t *testing.T) {
	down := errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")
	full := mustMemory(t, memory.Options{MaxJobs: 1})
	tests := []struct {
		name   string
		driver mailqueue.Driver
		cause  error // errors.Is(err, cause); nil for no cause to find
	}{
		{"the store is down", failingDriver{err: down}, down},
		{"the memory queue is full", full, memory.ErrFull},
		{"the driver answers too few results", failingDriver{n: 0}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := mailqueue.New(mailqueue.Config{Driver: tt.driver})
			if err != nil {
				t.Fatal(err)
			}
			first, second := contentJob(), contentJob()
			first.IdempotencyKey, second.IdempotencyKey = "k:1", "k:2"
			if tt.driver == full {
				// The queue holds one job; both of the call are one too many.
				filler := contentJob()
				filler.IdempotencyKey = "filler"
				if _, err := q.Enqueue(context.Background(), filler); err != nil {
					t.Fatal(err)
				}
			}
			_, errOne := q.Enqueue(context.Background(), first)
			_, errMany := q.EnqueueMany(context.Background(), []*jobv1.Job{first, second})
			for call, err := range map[string]error{"Enqueue": errOne, "EnqueueMany": errMany} {
				var e *mailqueue.Error
				if !errors.As(err, &e) {
					t.Fatalf("%s: %v (%T), want a *mailqueue.Error", call, err, err)
				}
				if e.Code != codes.QueueStoreFailed || mailqueue.CodeOf(err) != codes.QueueStoreFailed || e.Index != -1 {
					t.Errorf("%s: code %s, CodeOf %s, index %d; want queue.store_failed, index -1", call, e.Code, mailqueue.CodeOf(err), e.Index)
				}
				if tt.cause != nil && !errors.Is(err, tt.cause) {
					t.Errorf("%s: %v does not wrap the driver's error %v", call, err, tt.cause)
				}
			}
		})
	}
}
