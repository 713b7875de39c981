package mailqueue_test

import (
	"context"
	"testing"

	"github.com/alexify/mailer/drivers/memory"
	"github.com/alexify/mailer/mailqueue"
)

// mustMemory returns a memory queue of opts, failing the test when the
// options are refused.
func mustMemory(t testing.TB, opts memory.Options) *memory.Queue {
	t.Helper()
	q, err := memory.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// mustMemorySource returns a memory source of opts, failing the test when
// the options are refused.
func mustMemorySource(t testing.TB, opts memory.Options) *memory.Source {
	t.Helper()
	s, err := memory.NewSource(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// countJobs returns how many jobs the queue holds, in every state.
func countJobs(t testing.TB, q mailqueue.Inspector) int {
	t.Helper()
	st := stats(t, q)
	return int(st.Queued + st.Running + st.Accepted + st.Failed + st.DeliveryUnknown)
}

// stats returns the queue's counts, failing the test on an error.
func stats(t testing.TB, q mailqueue.Inspector) mailqueue.Stats {
	t.Helper()
	st, err := q.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// allJobs returns every job the queue holds, state by state, through the
// operations interface, failing the test on an error.
func allJobs(t testing.TB, q mailqueue.Inspector) []mailqueue.JobRow {
	t.Helper()
	var rows []mailqueue.JobRow
	for _, st := range []mailqueue.JobState{mailqueue.JobQueued, mailqueue.JobRunning, mailqueue.JobAccepted, mailqueue.JobFailed, mailqueue.JobDeliveryUnknown} {
		p := mailqueue.JobsParams{State: st}
		for {
			page, err := q.Jobs(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			rows = append(rows, page.Rows...)
			if page.Next == "" {
				break
			}
			p.Cursor = page.Next
		}
	}
	return rows
}
