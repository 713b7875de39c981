package conformance

import (
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/mailqueue"
)

func testEnqueueReserve(t *testing.T, s *suite) {
	j := s.job(jobv1.PriorityNormal, "t1")
	res := s.enqueue(t, j)
	if res[0].ID != j.ID || res[0].Duplicate || res[0].Conflict {
		t.Fatalf("Enqueue = %+v, want a new job %s", res[0], j.ID)
	}
	l := s.reserveOne(t)
	if l.ID != j.ID || string(l.Data) != string(j.Data) || l.Attempt != 1 || l.MaxAttempts != j.MaxAttempts || l.Redeliveries != 0 || l.Token == "" || l.TenantID != "t1" || l.Priority != jobv1.PriorityNormal {
		t.Errorf("Lease = %+v; want job %s, its data, attempt 1 of %d, no redelivery, a token, tenant t1, priority normal", l, j.ID, j.MaxAttempts)
	}
	if !l.EnqueuedAt.Equal(j.EnqueuedAt) && l.EnqueuedAt.Sub(j.EnqueuedAt).Abs() > time.Millisecond {
		t.Errorf("Lease.EnqueuedAt = %v, want %v", l.EnqueuedAt, j.EnqueuedAt)
	}
	if d := l.Until.Sub(s.Now()); d <= 0 || d > s.Lease+time.Second {
		t.Errorf("the lease runs out in %v, want about %v", d, s.Lease)
	}
	s.reserveNone(t, "the only job is leased")
}

func testDuplicates(t *testing.T, s *suite) {
	j := s.job(jobv1.PriorityNormal, "")
	s.enqueue(t, j)
	other := j
	other.Hash = fmt.Sprintf("%064x", 999)
	fresh := s.job(jobv1.PriorityNormal, "")
	res := s.enqueue(t, j, other, fresh)
	if !res[0].Duplicate || res[0].Conflict {
		t.Errorf("the same id and hash again: %+v, want Duplicate", res[0])
	}
	if res[1].Duplicate || !res[1].Conflict {
		t.Errorf("the same id with another hash: %+v, want Conflict", res[1])
	}
	if res[2].Duplicate || res[2].Conflict {
		t.Errorf("a new job in the same call: %+v, want stored", res[2])
	}
	got := ids(s.reserve(t, 10))
	sort.Strings(got)
	if fmt.Sprint(got) != fmt.Sprint([]string{j.ID, fresh.ID}) {
		t.Errorf("leased %v, want each job once: %v", got, []string{j.ID, fresh.ID})
	}
}

func testReserveEmpty(t *testing.T, s *suite) {
	s.reserveNone(t, "the source is empty")
}

func testPriority(t *testing.T, s *suite) {
	low := s.job(jobv1.PriorityLow, "")
	n1 := s.job(jobv1.PriorityNormal, "")
	n2 := s.job(jobv1.PriorityNormal, "")
	high := s.job(jobv1.PriorityHigh, "")
	n2.RunAt = n1.RunAt.Add(time.Millisecond)
	s.enqueue(t, low, n2)
	s.enqueue(t, n1, high)
	s.wait(10 * time.Millisecond)
	var got []string
	for i := 0; i < 4; i++ {
		got = append(got, s.reserveOne(t).ID)
	}
	want := []string{high.ID, n1.ID, n2.ID, low.ID}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("leased in the order %v, want %v (high, normal by time, low)", got, want)
	}
}

func testLimit(t *testing.T, s *suite) {
	for i := 0; i < 5; i++ {
		s.enqueue(t, s.job(jobv1.PriorityNormal, ""))
	}
	if n := len(s.reserve(t, 3)); n != 3 {
		t.Errorf("Reserve(limit 3) leased %d", n)
	}
	if n := len(s.reserve(t, 3)); n != 2 {
		t.Errorf("then Reserve(limit 3) leased %d, want the 2 left", n)
	}
}

func testScheduled(t *testing.T, s *suite) {
	j := s.job(jobv1.PriorityHigh, "")
	j.RunAt = s.Now().Add(s.Lease)
	s.enqueue(t, j)
	s.reserveNone(t, "a job scheduled later is not due")
	s.wait(s.Lease / 2)
	s.reserveNone(t, "a job scheduled later is not due yet")
	s.wait(s.Lease/2 + 50*time.Millisecond)
	if l := s.reserveOne(t); l.ID != j.ID {
		t.Errorf("leased %s", l.ID)
	}
}

func testReserveOnce(t *testing.T, s *suite) {
	const jobs, workers = 60, 12
	for i := 0; i < jobs; i++ {
		s.enqueue(t, s.job(jobv1.PriorityNormal, ""))
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				ls, err := s.Source.Reserve(s.ctx, mailqueue.ReserveParams{Limit: 2, LeaseDuration: time.Hour})
				if err != nil {
					t.Errorf("Reserve: %v", err)
					return
				}
				if len(ls) == 0 {
					return
				}
				mu.Lock()
				for _, l := range ls {
					seen[l.ID]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != jobs {
		t.Errorf("%d of %d jobs leased", len(seen), jobs)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("job %s leased %d times by concurrent reserves", id, n)
		}
	}
}
