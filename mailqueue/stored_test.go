package mailqueue_test

import (
	"context"
	"testing"
	"time"

	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/mailqueue"
)

// storedJob is what the tests of schedule_test.go, ratelimit_fallback_test.go
// and retry_after_test.go read of a job the memory queue stores. They assert
// through the audit, the transport and the logs where they can; this is the
// one place that reads the memory queue's own row type.
type storedJob struct {
	State   mailqueue.JobState
	Attempt int
	Code    codes.Code
	RunAt   time.Time
}

// jobGetter is the memory queue or its source (any mailqueue.Inspector).
type jobGetter interface {
	Get(ctx context.Context, id string) (mailqueue.JobRow, error)
}

// stored returns the job of id as the store holds it, failing the test when
// there is none.
func stored(t *testing.T, g jobGetter, id string) storedJob {
	t.Helper()
	j, err := g.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("job %s: %v", id, err)
	}
	return storedJob{State: j.State, Attempt: j.Attempt, Code: j.Code, RunAt: j.RunAt}
}
