package conformance

import (
	"testing"
	"time"

	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/mailqueue"
)

func testRetention(t *testing.T, s *suite) {
	if s.Advance == nil || s.DedupeWindow == 0 || s.RetainFailed == 0 {
		t.Skip("retention needs Advance, DedupeWindow and RetainFailed in the harness")
	}
	done, failed := s.job(jobv1.PriorityNormal, ""), s.job(jobv1.PriorityNormal, "")
	s.enqueue(t, done, failed)
	for i := 0; i < 2; i++ {
		l := s.reserveOne(t)
		var ok bool
		var err error
		if l.ID == done.ID {
			ok, err = s.Source.Ack(s.ctx, mailqueue.AckParams{ID: l.ID, Token: l.Token})
		} else {
			ok, err = s.Source.Fail(s.ctx, mailqueue.FailParams{ID: l.ID, Token: l.Token, State: codes.StateFailed, Code: codes.QueueThrown})
		}
		mustBool(t, "settle", ok, err, true)
	}
	s.wait(s.DedupeWindow - time.Second)
	if res := s.enqueue(t, done); !res[0].Duplicate {
		t.Errorf("within the dedupe window: %+v, want Duplicate", res[0])
	}
	s.wait(2 * time.Second)
	if res := s.enqueue(t, done); res[0].Duplicate || res[0].Conflict {
		t.Errorf("after the dedupe window: %+v, want a new job", res[0])
	}
	if s.RetainFailed > s.DedupeWindow {
		if res := s.enqueue(t, failed); !res[0].Duplicate {
			t.Errorf("a failed job within RetainFailed: %+v, want Duplicate", res[0])
		}
	}
	s.wait(s.RetainFailed)
	if res := s.enqueue(t, failed); res[0].Duplicate || res[0].Conflict {
		t.Errorf("a failed job after RetainFailed: %+v, want a new job", res[0])
	}
}
