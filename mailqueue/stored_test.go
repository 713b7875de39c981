package mailqueue_test

import (
	"testing"
	"time"

	"github.com/alexify/mailer/drivers/memory"
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

// jobGetter is the memory queue or its source.
type jobGetter interface {
	Get(id string) (memory.Job, bool)
}

// stored returns the job of id as the store holds it, failing the test when
// there is none.
func stored(t *testing.T, g jobGetter, id string) storedJob {
	t.Helper()
	j, ok := g.Get(id)
	if !ok {
		t.Fatalf("no job %s is stored", id)
	}
	return storedJob{State: j.State, Attempt: j.Attempts, Code: j.Code, RunAt: j.RunAt}
}
