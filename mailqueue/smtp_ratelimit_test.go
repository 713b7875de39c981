package mailqueue_test

import (
	"testing"
	"time"

	gosmtp "github.com/emersion/go-smtp"

	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/mail"
	"github.com/alexify/mailer/mail/smtptest"
	"github.com/alexify/mailer/mailqueue"
)

// TestSMTPThrottlePausesTheQueue sends through the kit's SMTP transport to a
// server that answers as Postfix does to its anvil limit ("450 4.7.1 Error:
// too much mail from 127.0.0.1"): under RateLimitScope queue the queue is
// paused and the job given back, its attempt not spent (issue 10, point 2).
func TestSMTPThrottlePausesTheQueue(t *testing.T) {
	srv := smtptest.Start(t, smtptest.Script{Mail: smtptest.Reply(450, "4.7.1", "Error: too much mail from 127.0.0.1")})
	h := newHarness(t, mailqueue.WorkerConfig{Transport: smtpTransport(t, srv), RateLimitScope: mailqueue.RateLimitQueue}).start()
	id := h.enqueue(contentJob())
	h.drain()
	h.check(id, outcome{mailqueue.JobQueued, 0, codes.QueueRateLimited})
	if n := len(srv.Messages()); n != 0 {
		t.Errorf("%d messages arrived", n)
	}
}

// TestClassifyDecidesARateLimit checks that a Classify hook can take a
// reply for a rate limit (DecideRateLimited), with the effect of a
// RateLimited receipt.
func TestClassifyDecidesARateLimit(t *testing.T) {
	h := newHarness(t, mailqueue.WorkerConfig{
		RateLimitScope: mailqueue.RateLimitQueue,
		Classify: func(r mail.Receipt, _ *jobv1.Job) mailqueue.Decision {
			if r.Code == 451 {
				return mailqueue.DecideRateLimited
			}
			return mailqueue.DecideByRules
		},
	}).start()
	h.tr.Script(receiptOf(mail.Retryable, 451))
	id := h.enqueue(contentJob())
	h.drain()
	h.check(id, outcome{mailqueue.JobQueued, 0, codes.QueueRateLimited})
}

// TestCompletedLogsSMTPCode checks that the server's reply code is logged as
// smtp_code, never under code (the kit's code in every record), with the
// recipients refused for now counted apart.
func TestCompletedLogsSMTPCode(t *testing.T) {
	h := newHarness(t, mailqueue.WorkerConfig{}).start()
	r := receiptOf(mail.Accepted, 250)
	r.Refused = []mail.RefusedRecipient{{Address: "bob@example.com", Code: 452}, {Address: "eve@example.com", Code: 550}}
	h.tr.Script(r)
	h.enqueue(contentJob())
	h.drain()
	recs := h.logs.find(string(codes.QueueJobCompleted))
	if len(recs) != 1 {
		t.Fatalf("%d completed records", len(recs))
	}
	a := recs[0].Attrs
	if a["smtp_code"] != "250" || a["refused_recipients"] != "2" || a["deferred_recipients"] != "1" {
		t.Errorf("attrs %v: want smtp_code 250, 2 refused, 1 deferred", a)
	}
	if _, ok := a["code"]; ok {
		t.Errorf("the SMTP code is logged under code: %v", a)
	}
}

// TestSMTPTransientRecipientRetriesTheMessage checks, through the queue and
// the kit's SMTP transport, that a 4xx on one recipient while another was
// accepted neither drops it nor sends twice: nothing goes, the job is
// retried, and once the server takes that recipient the message goes to
// both, once.
func TestSMTPTransientRecipientRetriesTheMessage(t *testing.T) {
	srv := smtptest.Start(t, smtptest.Script{Rcpt: map[string]*gosmtp.SMTPError{
		"bob@example.com": smtptest.Reply(450, "4.2.1", "Mailbox busy"),
	}})
	h := newHarness(t, mailqueue.WorkerConfig{Transport: smtpTransport(t, srv)}).start()
	j := contentJob()
	j.To = []string{"ada@example.com", "bob@example.com"}
	id := h.enqueue(j)
	h.drain()
	h.check(id, outcome{mailqueue.JobQueued, 1, codes.QueueSendFailed})
	if n := len(srv.Messages()); n != 0 {
		t.Fatalf("%d messages arrived after the 450, want none", n)
	}
	srv.Update(func(s *smtptest.Script) { s.Rcpt = nil })
	h.fc.Advance(time.Hour)
	h.mq.Wake()
	h.drain()
	h.check(id, outcome{mailqueue.JobAccepted, 2, ""})
	got := srv.Messages()
	if len(got) != 1 || len(got[0].To) != 2 {
		t.Fatalf("messages %+v, want one to ada and bob", got)
	}
}
