package smtp_test

import (
	"bytes"
	"context"
	"errors"
	"mime"
	netmail "net/mail"
	"strings"
	"testing"

	gosmtp "github.com/emersion/go-smtp"
	"github.com/google/go-cmp/cmp"

	"github.com/alexify/mailer/mail"
	"github.com/alexify/mailer/mail/smtp"
	"github.com/alexify/mailer/mail/smtptest"
)

// TestSendMoreCategories covers the replies TestSendCategories does not: a
// refusal in place of the greeting or of the reply to EHLO, a 454 to AUTH,
// and the syntax errors and refusals at MAIL FROM.
func TestSendMoreCategories(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		script smtptest.Script
		config func(*smtp.Config)
		cat    mail.Category
		code   int
	}{
		{name: "421 at greeting", script: smtptest.Script{Greeting: reply(421, "4.3.2")}, cat: mail.Retryable, code: 421},
		{name: "554 at greeting", script: smtptest.Script{Greeting: reply(554, "5.7.1")}, cat: mail.Configuration, code: 554},
		{name: "421 at EHLO", script: smtptest.Script{Hello: reply(421, "4.3.2")}, cat: mail.Retryable, code: 421},
		{name: "454 at AUTH", script: smtptest.Script{Auth: reply(454, "4.7.0")},
			config: func(c *smtp.Config) { c.Username, c.Password = "u", "p" }, cat: mail.Retryable, code: 454},
		{name: "535 at AUTH, enhanced 5.7.8", script: smtptest.Script{Auth: reply(535, "5.7.8")},
			config: func(c *smtp.Config) { c.Username, c.Password = "u", "p" }, cat: mail.Auth, code: 535},
		{name: "450 at MAIL", script: smtptest.Script{Mail: reply(450, "4.2.0")}, cat: mail.Retryable, code: 450},
		{name: "452 at MAIL", script: smtptest.Script{Mail: reply(452, "4.3.1")}, cat: mail.Retryable, code: 452},
		{name: "500 at MAIL", script: smtptest.Script{Mail: reply(500, "5.5.2")}, cat: mail.Validation, code: 500},
		{name: "501 at MAIL", script: smtptest.Script{Mail: reply(501, "5.1.7")}, cat: mail.Validation, code: 501},
		{name: "550 at MAIL", script: smtptest.Script{Mail: reply(550, "5.7.1")}, cat: mail.Rejected, code: 550},
		{name: "421 at DATA end", script: smtptest.Script{Data: reply(421, "4.4.2")}, cat: mail.Retryable, code: 421},
		{name: "550 at DATA end", script: smtptest.Script{Data: reply(550, "5.7.1")}, cat: mail.Rejected, code: 550},
		{name: "553 at RCPT", script: smtptest.Script{Rcpt: rcpts(reply(553, "5.1.3"))}, cat: mail.Rejected, code: 553},
		{name: "554 at RCPT", script: smtptest.Script{Rcpt: rcpts(reply(554, "5.7.1"))}, cat: mail.Rejected, code: 554},
		{name: "555 at RCPT", script: smtptest.Script{Rcpt: rcpts(reply(555, "5.5.4"))}, cat: mail.Validation, code: 555},
		{name: "454 at RCPT", script: smtptest.Script{Rcpt: rcpts(reply(454, "4.7.1"))}, cat: mail.Retryable, code: 454},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := smtptest.Start(t, tc.script)
			r, err := transport(t, srv, tc.config).Send(context.Background(), message())
			checkReceipt(t, r, err)
			if r.Category != tc.cat || r.Code != tc.code {
				t.Errorf("got %s %d (%v), want %s %d", r.Category, r.Code, err, tc.cat, tc.code)
			}
			if n := len(srv.Messages()); n != 0 && tc.script.Data == nil {
				t.Errorf("%d messages arrived", n)
			}
		})
	}
}

// TestSendAfterRefusalOnSameTransport sends twice in a row on one Transport
// after a 501 on a recipient: the pooled connection is reset between sends
// (package documentation), so the refusal does not break the next job.
func TestSendAfterRefusalOnSameTransport(t *testing.T) {
	t.Parallel()
	srv := smtptest.Start(t, smtptest.Script{Rcpt: map[string]*gosmtp.SMTPError{
		"bad@example.com": smtptest.Reply(501, "5.1.3", "bad recipient address syntax"),
	}})
	tr := transport(t, srv, nil)
	ctx := context.Background()

	bad := message()
	bad.To = []string{"bad@example.com"}
	r, err := tr.Send(ctx, bad)
	checkReceipt(t, r, err)
	if r.Category != mail.Validation || r.Code != 501 {
		t.Fatalf("all recipients 501: %+v, %v", r, err)
	}

	partial := message()
	partial.To = []string{"bad@example.com", "ada@example.com"}
	r, err = tr.Send(ctx, partial)
	if err != nil || r.Category != mail.Accepted || len(r.Refused) != 1 || r.Refused[0].Code != 501 {
		t.Fatalf("one recipient 501: %+v, %v", r, err)
	}

	for i := range 2 {
		good := message()
		good.To = []string{"grace@example.com"}
		r, err = tr.Send(ctx, good)
		if err != nil || r.Category != mail.Accepted || len(r.Refused) != 0 {
			t.Fatalf("send %d after the 501: %+v, %v", i+1, r, err)
		}
	}
	got := srv.Messages()
	if len(got) != 3 {
		t.Fatalf("%d messages arrived, want 3", len(got))
	}
	if diff := cmp.Diff([]string{"grace@example.com"}, got[2].To); diff != "" {
		t.Errorf("the last envelope (-want +got):\n%s", diff)
	}
	if n := srv.Sessions(); n != 1 {
		t.Errorf("%d sessions for 4 sends, want one connection reused (RSET between them)", n)
	}
}

// TestSendInternationalAddresses checks the addresses against a server with
// and without SMTPUTF8: IDN domains go as punycode without it, as UTF-8 with
// it; a local part that is not ASCII is Unsupported without it; display
// names are RFC 2047-encoded in both cases, in the display name only.
func TestSendInternationalAddresses(t *testing.T) {
	t.Parallel()
	idn := func() *mail.Message {
		m := message()
		m.From = "Zoë Ångström <zoe@bücher.example>"
		m.To = []string{"Jürgen Groß <juergen@straße.example>", "ada@example.com"}
		return m
	}
	t.Run("IDN domains without SMTPUTF8 go as punycode", func(t *testing.T) {
		srv := smtptest.Start(t, smtptest.Script{})
		r, err := transport(t, srv, nil).Send(context.Background(), idn())
		if err != nil || r.Category != mail.Accepted {
			t.Fatalf("%+v, %v", r, err)
		}
		got := srv.Messages()[0]
		if got.UTF8 {
			t.Error("SMTPUTF8 was given to a server that does not offer it")
		}
		if got.From != "zoe@xn--bcher-kva.example" {
			t.Errorf("envelope from %q", got.From)
		}
		if diff := cmp.Diff([]string{"juergen@xn--strae-oqa.example", "ada@example.com"}, got.To); diff != "" {
			t.Errorf("envelope to (-want +got):\n%s", diff)
		}
		if bytes.ContainsFunc(headerOf(got.Data), func(r rune) bool { return r >= 0x80 }) {
			t.Errorf("the header holds 8-bit bytes:\n%s", headerOf(got.Data))
		}
		h := parseHeader(t, got.Data)
		checkMailbox(t, h.Get("From"), "Zoë Ångström", "zoe@xn--bcher-kva.example")
		checkMailbox(t, strings.SplitN(h.Get("To"), ",", 2)[0], "Jürgen Groß", "juergen@xn--strae-oqa.example")
		if !strings.HasSuffix(h.Get("Message-Id"), "@mailer.example.com>") {
			t.Errorf("Message-ID %q", h.Get("Message-Id"))
		}
	})
	t.Run("IDN domains with SMTPUTF8 go as they are", func(t *testing.T) {
		srv := smtptest.Start(t, smtptest.Script{SMTPUTF8: true})
		r, err := transport(t, srv, nil).Send(context.Background(), idn())
		if err != nil || r.Category != mail.Accepted {
			t.Fatalf("%+v, %v", r, err)
		}
		got := srv.Messages()[0]
		if !got.UTF8 || got.From != "zoe@bücher.example" || got.To[0] != "juergen@straße.example" {
			t.Errorf("envelope: SMTPUTF8 %t, from %q, to %q", got.UTF8, got.From, got.To)
		}
		h := parseHeader(t, got.Data)
		checkMailbox(t, h.Get("From"), "Zoë Ångström", "zoe@bücher.example")
	})
	utf8Local := func() *mail.Message {
		m := message()
		m.To = []string{"Jörg <jörg@example.com>"}
		return m
	}
	t.Run("a local part that is not ASCII without SMTPUTF8 is unsupported", func(t *testing.T) {
		srv := smtptest.Start(t, smtptest.Script{})
		r, err := transport(t, srv, nil).Send(context.Background(), utf8Local())
		checkReceipt(t, r, err)
		if r.Category != mail.Unsupported || !errors.Is(err, mail.ErrNeedsSMTPUTF8) {
			t.Errorf("got %+v, %v; want unsupported", r, err)
		}
		if n := len(srv.Messages()); n != 0 {
			t.Errorf("%d messages arrived", n)
		}
	})
	t.Run("a local part that is not ASCII with SMTPUTF8 is sent", func(t *testing.T) {
		srv := smtptest.Start(t, smtptest.Script{SMTPUTF8: true})
		r, err := transport(t, srv, nil).Send(context.Background(), utf8Local())
		if err != nil || r.Category != mail.Accepted {
			t.Fatalf("%+v, %v", r, err)
		}
		if got := srv.Messages()[0]; !got.UTF8 || got.To[0] != "jörg@example.com" {
			t.Errorf("envelope: SMTPUTF8 %t, to %q", got.UTF8, got.To)
		}
	})
	t.Run("a quoted local part that smuggles parameters is refused before connecting", func(t *testing.T) {
		srv := smtptest.Start(t, smtptest.Script{})
		for _, addr := range []string{`"a> SIZE=1"@example.com`, `"x@y> NOTIFY=SUCCESS"@example.com`} {
			m := message()
			m.To = []string{addr}
			r, err := transport(t, srv, nil).Send(context.Background(), m)
			checkReceipt(t, r, err)
			if r.Category != mail.Validation || !errors.Is(err, mail.ErrInvalidMessage) {
				t.Errorf("%s: got %+v, %v", addr, r, err)
			}
		}
		if srv.Sessions() != 0 {
			t.Error("connected for a smuggling address")
		}
	})
}

func headerOf(data []byte) []byte {
	h, _, _ := bytes.Cut(data, []byte("\r\n\r\n"))
	return h
}

func parseHeader(t *testing.T, data []byte) netmail.Header {
	t.Helper()
	m, err := netmail.ReadMessage(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return m.Header
}

// checkMailbox checks that a header's mailbox has the display name encoded
// (RFC 2047) and the address in clear.
func checkMailbox(t *testing.T, field, name, addr string) {
	t.Helper()
	field = strings.TrimSpace(field)
	if !strings.HasPrefix(field, "=?") || !strings.HasSuffix(field, " <"+addr+">") {
		t.Errorf("mailbox %q: want an encoded word, then <%s>", field, addr)
		return
	}
	enc := strings.TrimSuffix(field, " <"+addr+">")
	got, err := new(mime.WordDecoder).DecodeHeader(enc)
	if err != nil || got != name {
		t.Errorf("display name %q decodes to %q (%v), want %q", enc, got, err, name)
	}
}
