package redis

import (
	"io"
	"testing"
	"time"

	"github.com/alexify/mailer/drivers/redis/internal/redistest"
	"github.com/alexify/mailer/mailqueue"
)

// TestLostReserveAnswer: a reserve whose answer never reached the driver
// (the connection broke while Redis ran it, as in a restart) leased jobs no
// run will see. The next reserve gives them back at once, no attempt spent
// and no redelivery counted, so that the delivery_unknown policy does not
// fail them as of unknown delivery when their lease would have run out.
func TestLostReserveAnswer(t *testing.T) {
	s := newSource(t, redistest.Standalone(t), Options{})
	enqueue(t, s, testJob("a"), testJob("b"))
	// The reserve runs in Redis, and its answer is lost.
	base := s.tokPrefix + "-lost"
	if err := scriptReserve.Run(ctx, s.c, s.keys, s.args(2, time.Minute.Milliseconds(), base)...).Err(); err != nil {
		t.Fatal(err)
	}
	wantCounts(t, s, "after the lost reserve", mailqueue.Stats{Running: 2})
	s.lostAnswer(base, io.ErrUnexpectedEOF)
	ls := reserve(t, s, 2)
	if len(ls) != 2 {
		t.Fatalf("the next reserve leased %s; want a and b again", leaseIDs(ls))
	}
	for _, l := range ls {
		if l.Redeliveries != 0 || l.Attempt != 1 {
			t.Errorf("%s: redeliveries %d, attempt %d; want 0 and 1", l.ID, l.Redeliveries, l.Attempt)
		}
	}
}

// TestReserveRunAgain: a reserve the client sends again with the same
// token base (go-redis retries a call whose connection broke) gives back
// the leases of its first run before it leases again: none is orphaned.
func TestReserveRunAgain(t *testing.T) {
	s := newSource(t, redistest.Standalone(t), Options{})
	enqueue(t, s, testJob("a"), testJob("b"), testJob("c"))
	base := s.tokPrefix + "-twice"
	for range 2 {
		if err := scriptReserve.Run(ctx, s.c, s.keys, s.args(2, time.Minute.Milliseconds(), base)...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// Two leases (the second run's) and the third job still queued; the
	// first run's two were given back, not left to run out.
	wantCounts(t, s, "after the reserve ran twice", mailqueue.Stats{Running: 2, Queued: 1, Due: 1})
	ls := reserve(t, s, 3)
	if len(ls) != 1 || ls[0].Redeliveries != 0 {
		t.Fatalf("leased %s; want the one job left, no redelivery", leaseIDs(ls))
	}
}
