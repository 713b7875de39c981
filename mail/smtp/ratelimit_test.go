package smtp_test

import (
	"context"
	"errors"
	"testing"
	"time"

	gosmtp "github.com/emersion/go-smtp"
	"github.com/google/go-cmp/cmp"

	"github.com/alexify/mailer/mail"
	"github.com/alexify/mailer/mail/smtp"
	"github.com/alexify/mailer/mail/smtptest"
)

// TestRateLimits checks that the throttling replies of servers, Postfix's
// own among them (Debian's 3.7, to its anvil limits), are RateLimited with
// the kit's Retry-After, and that other 4xx replies stay Retryable.
func TestRateLimits(t *testing.T) {
	one := func(r *gosmtp.SMTPError) map[string]*gosmtp.SMTPError {
		return map[string]*gosmtp.SMTPError{"ada@example.com": r}
	}
	for _, tc := range []struct {
		name   string
		script smtptest.Script
		cat    mail.Category
		code   int
		outage bool // nothing was sent and the server is not throttling: mail.ErrUnavailable
	}{
		{"Postfix: too much mail, to MAIL FROM", smtptest.Script{Mail: smtptest.Reply(450, "4.7.1", "Error: too much mail from 127.0.0.1")}, mail.RateLimited, 450, false},
		{"Postfix: too many recipients from, to RCPT TO", smtptest.Script{Rcpt: one(smtptest.Reply(450, "4.7.1", "Error: too many recipients from 127.0.0.1"))}, mail.RateLimited, 450, false},
		{"Postfix: too many connections, in place of the greeting", smtptest.Script{Greeting: smtptest.Reply(421, "4.7.0", "mta.test Error: too many connections from 127.0.0.1")}, mail.RateLimited, 421, false},
		{"Postfix: too many messages from, to MAIL FROM", smtptest.Script{Mail: smtptest.Reply(450, "4.7.1", "Error: too many messages from 127.0.0.1")}, mail.RateLimited, 450, false},
		{"421 without a rate at MAIL FROM is retryable", smtptest.Script{Mail: smtptest.Reply(421, "4.3.2", "Service shutting down")}, mail.Retryable, 421, false},
		{"421 without a rate at EHLO is an outage", smtptest.Script{Hello: smtptest.Reply(421, "", "Try again later")}, mail.Retryable, 421, true},
		{"421 without a rate in place of the greeting is an outage", smtptest.Script{Greeting: smtptest.Reply(421, "4.3.2", "Service shutting down")}, mail.Retryable, 421, true},
		{"421 without a rate at the end of the data is retryable", smtptest.Script{Data: smtptest.Reply(421, "4.4.2", "Timeout")}, mail.Retryable, 421, false},
		{"421 with a rate text at MAIL FROM", smtptest.Script{Mail: smtptest.Reply(421, "4.3.2", "Too many messages, slow down")}, mail.RateLimited, 421, false},
		{"4.7.28, unusual rate", smtptest.Script{Data: smtptest.Reply(450, "4.7.28", "Our system has detected an unusual rate of unsolicited mail")}, mail.RateLimited, 450, false},
		{"451 4.7.1 without a rate text", smtptest.Script{Mail: smtptest.Reply(451, "4.7.1", "Please try again later")}, mail.RateLimited, 451, false},
		{"4.7.0 with a rate text", smtptest.Script{Mail: smtptest.Reply(450, "4.7.0", "Sending rate limit exceeded")}, mail.RateLimited, 450, false},
		{"throttled", smtptest.Script{Rcpt: one(smtptest.Reply(452, "4.2.2", "Throttled, slow down"))}, mail.RateLimited, 452, false},
		{"454 4.7.0 without a rate text is retryable", smtptest.Script{Mail: smtptest.Reply(454, "4.7.0", "Temporary failure")}, mail.Retryable, 454, false},
		{"451 4.3.0 is retryable", smtptest.Script{Data: smtptest.Reply(451, "4.3.0", "Local error in processing")}, mail.Retryable, 451, false},
		{"450 4.2.1 mailbox busy is retryable", smtptest.Script{Rcpt: one(smtptest.Reply(450, "4.2.1", "Mailbox busy"))}, mail.Retryable, 450, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := smtptest.Start(t, tc.script)
			msg := message()
			msg.To = []string{"ada@example.com"}
			r, err := transport(t, srv, nil).Send(context.Background(), msg)
			checkReceipt(t, r, err)
			if r.Category != tc.cat || r.Code != tc.code {
				t.Fatalf("got %s %d (%v), want %s %d", r.Category, r.Code, err, tc.cat, tc.code)
			}
			wantWait := time.Duration(0)
			if tc.cat == mail.RateLimited {
				wantWait = smtp.DefaultRateLimitWait
			}
			if r.RetryAfter != wantWait {
				t.Errorf("RetryAfter = %v, want %v", r.RetryAfter, wantWait)
			}
			if got := errors.Is(err, mail.ErrUnavailable); got != tc.outage {
				t.Errorf("errors.Is(err, mail.ErrUnavailable) = %t, want %t (%v)", got, tc.outage, err)
			}
		})
	}
	t.Run("RateLimitWait sets the Retry-After", func(t *testing.T) {
		srv := smtptest.Start(t, smtptest.Script{Mail: smtptest.Reply(450, "4.7.1", "Error: too much mail from 127.0.0.1")})
		r, _ := transport(t, srv, func(c *smtp.Config) { c.RateLimitWait = 5 * time.Minute }).Send(context.Background(), message())
		if r.Category != mail.RateLimited || r.RetryAfter != 5*time.Minute {
			t.Errorf("got %s, RetryAfter %v; want rate_limited, 5m", r.Category, r.RetryAfter)
		}
	})
}

// TestOperatorRefusals checks that a refusal of relaying or of access to an
// unauthenticated client is the operator's to fix (Configuration), not the
// message's, while other refusals stay Rejected.
func TestOperatorRefusals(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script smtptest.Script
		cat    mail.Category
	}{
		{"Relay access denied", smtptest.Script{Rcpt: rcpts(smtptest.Reply(554, "5.7.1", "<x@other.example>: Relay access denied"))}, mail.Configuration},
		{"Recipient address rejected: Access denied", smtptest.Script{Rcpt: rcpts(smtptest.Reply(554, "5.7.1", "<x@other.example>: Recipient address rejected: Access denied"))}, mail.Configuration},
		{"Sender address rejected: Access denied", smtptest.Script{Mail: smtptest.Reply(554, "5.7.1", "<x@example.com>: Sender address rejected: Access denied")}, mail.Configuration},
		{"Client host rejected", smtptest.Script{Mail: smtptest.Reply(554, "5.7.1", "<localhost[127.0.0.1]>: Client host rejected: Access denied")}, mail.Configuration},
		{"Relaying denied", smtptest.Script{Rcpt: rcpts(smtptest.Reply(550, "5.7.1", "Relaying denied. Proper authentication required."))}, mail.Configuration},
		{"no such user stays rejected", smtptest.Script{Rcpt: rcpts(smtptest.Reply(550, "5.1.1", "<x@example.com>: Recipient address rejected: User unknown"))}, mail.Rejected},
		{"spam stays rejected", smtptest.Script{Data: smtptest.Reply(554, "5.7.1", "Message rejected as spam")}, mail.Rejected},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := smtptest.Start(t, tc.script)
			r, err := transport(t, srv, nil).Send(context.Background(), message())
			checkReceipt(t, r, err)
			if r.Category != tc.cat {
				t.Errorf("got %s %d (%v), want %s", r.Category, r.Code, err, tc.cat)
			}
		})
	}
}

// TestRecipientLimit sends a message of 8 recipients to a server that takes
// 5 a transaction (as Postfix's smtpd_recipient_limit answers "452 4.5.3
// Error: too many recipients"): the first 5 go in one transaction, the last
// 3 in a second on the same connection, each recipient once.
func TestRecipientLimit(t *testing.T) {
	srv := smtptest.Start(t, smtptest.Script{MaxRecipients: 5})
	msg := message()
	msg.To = []string{"r1@example.com", "r2@example.com", "r3@example.com", "r4@example.com"}
	msg.Cc = []string{"r5@example.com", "r6@example.com"}
	msg.Bcc = []string{"r7@example.com", "r8@example.com"}
	r, err := transport(t, srv, nil).Send(context.Background(), msg)
	checkReceipt(t, r, err)
	if r.Category != mail.Accepted || len(r.Refused) != 0 {
		t.Fatalf("got %+v, %v; want accepted with no refusal", r, err)
	}
	if r.ProviderID != "OK: queued as Q1; OK: queued as Q2" {
		t.Errorf("ProviderID = %q, want the ids of both transactions", r.ProviderID)
	}
	got := srv.Messages()
	to := make([][]string, 0, len(got))
	for _, m := range got {
		to = append(to, m.To)
	}
	want := [][]string{
		{"r1@example.com", "r2@example.com", "r3@example.com", "r4@example.com", "r5@example.com"},
		{"r6@example.com", "r7@example.com", "r8@example.com"},
	}
	if diff := cmp.Diff(want, to); diff != "" {
		t.Errorf("the transactions' recipients (-want +got):\n%s", diff)
	}
	if len(got) == 2 && string(got[0].Data) != string(got[1].Data) {
		t.Error("the two transactions sent different bytes")
	}
	if n := srv.Sessions(); n != 1 {
		t.Errorf("%d sessions, want 1", n)
	}
}

// TestTransientRecipientResets checks that a 4xx on one recipient while
// another was accepted sends nothing: the transaction is reset, the receipt
// takes that reply, and the queue retries the message for all of them.
func TestTransientRecipientResets(t *testing.T) {
	srv := smtptest.Start(t, smtptest.Script{Rcpt: map[string]*gosmtp.SMTPError{
		"bob@example.com": smtptest.Reply(450, "4.2.1", "Mailbox busy"),
	}})
	tr := transport(t, srv, nil)
	r, err := tr.Send(context.Background(), message()) // to ada (accepted) and bob
	checkReceipt(t, r, err)
	if r.Category != mail.Retryable || r.Code != 450 {
		t.Fatalf("got %+v, %v; want retryable 450", r, err)
	}
	if diff := cmp.Diff([]mail.RefusedRecipient{{Address: "bob@example.com", Code: 450, Reason: "4.2.1 Mailbox busy"}}, r.Refused); diff != "" {
		t.Errorf("Refused (-want +got):\n%s", diff)
	}
	if n := len(srv.Messages()); n != 0 {
		t.Fatalf("%d messages arrived, want none", n)
	}
	good := message()
	good.To = []string{"ada@example.com"}
	if r, err := tr.Send(context.Background(), good); err != nil {
		t.Fatalf("the next send on the reset connection: %+v, %v", r, err)
	}
	if n := srv.Sessions(); n != 1 {
		t.Errorf("%d sessions, want the connection kept after the reset", n)
	}
}

// TestLaterTransactionRefused checks that recipients a later transaction
// cannot take, once the message went to the first ones, are listed in
// Refused with their code: never dropped silently, never sent twice.
func TestLaterTransactionRefused(t *testing.T) {
	srv := smtptest.Start(t, smtptest.Script{MaxRecipients: 1, Rcpt: map[string]*gosmtp.SMTPError{
		"bob@example.com": smtptest.Reply(450, "4.7.1", "Error: too many recipients from 127.0.0.1"),
	}})
	r, err := transport(t, srv, nil).Send(context.Background(), message()) // ada, then bob alone
	checkReceipt(t, r, err)
	if r.Category != mail.Accepted {
		t.Fatalf("got %+v, %v; want accepted for ada", r, err)
	}
	if len(r.Refused) != 1 || r.Refused[0].Address != "bob@example.com" || r.Refused[0].Code != 450 {
		t.Errorf("Refused = %+v, want bob with 450", r.Refused)
	}
	if got := srv.Messages(); len(got) != 1 || len(got[0].To) != 1 || got[0].To[0] != "ada@example.com" {
		t.Errorf("messages %+v, want one to ada", got)
	}
}

// TestLaterTransactionClosed checks that a 421 in a later transaction ends
// it: the recipients it leaves are listed in Refused, and the connection is
// not kept.
func TestLaterTransactionClosed(t *testing.T) {
	srv := smtptest.Start(t, smtptest.Script{MaxRecipients: 1, Rcpt: map[string]*gosmtp.SMTPError{
		"bob@example.com": smtptest.Reply(421, "4.7.0", "Error: too many connections"),
	}})
	tr := transport(t, srv, nil)
	r, err := tr.Send(context.Background(), message()) // ada, then bob alone
	checkReceipt(t, r, err)
	if r.Category != mail.Accepted || len(r.Refused) != 1 || r.Refused[0].Address != "bob@example.com" || r.Refused[0].Code != 421 {
		t.Fatalf("got %+v, %v; want accepted for ada, bob refused with 421", r, err)
	}
	send(t, tr, "ada@example.com")
	if n := srv.Sessions(); n != 2 {
		t.Errorf("%d sessions, want a new one after the 421", n)
	}
}
