package conformance

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/mailqueue"
)

func pauser(t *testing.T, s *suite) mailqueue.Pauser {
	t.Helper()
	p, ok := s.Source.(mailqueue.Pauser)
	if !ok {
		t.Skip("the source is not a mailqueue.Pauser: pauses are not offered")
	}
	return p
}

func testPauseQueue(t *testing.T, s *suite) {
	p := pauser(t, s)
	s.enqueue(t, s.job(jobv1.PriorityHigh, "a"))
	if err := p.Pause(s.ctx, mailqueue.Pause{For: s.Lease}); err != nil {
		t.Fatal(err)
	}
	s.reserveNone(t, "the queue is paused")
	if err := p.Resume(s.ctx, mailqueue.ResumeParams{}); err != nil {
		t.Fatal(err)
	}
	s.reserveOne(t)
	s.enqueue(t, s.job(jobv1.PriorityNormal, ""))
	if err := p.Pause(s.ctx, mailqueue.Pause{For: s.Lease}); err != nil {
		t.Fatal(err)
	}
	s.reserveNone(t, "the queue is paused again")
	s.wait(s.Lease + 50*time.Millisecond)
	s.reserveOne(t) // the pause ran out
}

func testPauseTenant(t *testing.T, s *suite) {
	p := pauser(t, s)
	a1, b1, a2, none := s.job(jobv1.PriorityNormal, "a"), s.job(jobv1.PriorityNormal, "b"), s.job(jobv1.PriorityHigh, "a"), s.job(jobv1.PriorityNormal, "")
	s.enqueue(t, a1, b1, a2, none)
	if err := p.Pause(s.ctx, mailqueue.Pause{Tenant: true, TenantID: "a", For: s.Lease}); err != nil {
		t.Fatal(err)
	}
	got := ids(s.reserve(t, 10))
	sort.Strings(got)
	want := []string{b1.ID, none.ID}
	sort.Strings(want)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("with tenant a paused, leased %v; want the jobs of b and of no tenant %v", got, want)
	}
	if err := p.Resume(s.ctx, mailqueue.ResumeParams{Tenant: true, TenantID: "a"}); err != nil {
		t.Fatal(err)
	}
	got = ids(s.reserve(t, 10))
	if fmt.Sprint(got) != fmt.Sprint([]string{a2.ID, a1.ID}) {
		t.Errorf("after Resume of a, leased %v; want %v (high first)", got, []string{a2.ID, a1.ID})
	}
}
