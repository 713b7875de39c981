package smtp_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http/httptest"
	"net/textproto"
	"strconv"
	"strings"
	"testing"
	"time"

	gosmtp "github.com/emersion/go-smtp"
	"github.com/google/go-cmp/cmp"

	"github.com/alexify/mailer/mail"
	"github.com/alexify/mailer/mail/smtp"
	"github.com/alexify/mailer/mail/smtptest"
)

func message() *mail.Message {
	return &mail.Message{
		MessageID: "<job-1@mailer.example.com>",
		Date:      time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC),
		From:      "Mailer <no-reply@example.com>",
		To:        []string{"ada@example.com", "bob@example.com"},
		Subject:   "Hello",
		Text:      "Hello.\n.\nA line with a lone dot above.\n",
	}
}

// echoed is what a server's reply quotes of the message (its subject), as
// servers do: it must reach Receipt.Text alone, never the Reason or the
// error's text.
const echoed = "Subject 'Your reset code 918273'"

// reply is a server reply that echoes addresses and the subject, as servers
// do.
func reply(code int, enh string) *gosmtp.SMTPError {
	return smtptest.Reply(code, enh, "<bob@example.com>: refused for ada@example.com, "+echoed)
}

func transport(t *testing.T, srv *smtptest.Server, edit func(*smtp.Config)) *smtp.Transport {
	t.Helper()
	cfg := smtp.Config{Host: srv.Host(), Port: srv.Port(), TLS: smtp.TLSNone, HELO: "client.test", Timeout: 5 * time.Second}
	if edit != nil {
		edit(&cfg)
	}
	tr, err := smtp.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestSendCategories(t *testing.T) {
	type want struct {
		cat     mail.Category
		code    int
		refused []string // addresses in Receipt.Refused
		sent    bool     // the server read the message
	}
	for _, tc := range []struct {
		name   string
		script smtptest.Script
		config func(*smtp.Config)
		addr   string // overrides the server's address
		want   want
	}{
		{name: "accepted", script: smtptest.Script{QueueID: "4F2B31C0A4"},
			want: want{cat: mail.Accepted, code: 250, sent: true}},
		{name: "421 at MAIL", script: smtptest.Script{Mail: reply(421, "4.3.0")}, want: want{cat: mail.Retryable, code: 421}},
		{name: "450 at RCPT", script: smtptest.Script{Rcpt: rcpts(reply(450, "4.2.0"))}, want: want{cat: mail.Retryable, code: 450, refused: []string{"ada@example.com"}}}, // reset at the first 4xx
		{name: "451 at DATA end", script: smtptest.Script{Data: reply(451, "4.3.0")}, want: want{cat: mail.Retryable, code: 451, sent: true}},
		{name: "452 at RCPT", script: smtptest.Script{Rcpt: rcpts(reply(452, "4.5.3"))}, want: want{cat: mail.Retryable, code: 452, refused: []string{"ada@example.com", "bob@example.com"}}},
		{name: "454 at MAIL", script: smtptest.Script{Mail: reply(454, "4.7.0")}, want: want{cat: mail.Retryable, code: 454}},
		{name: "550 at RCPT", script: smtptest.Script{Rcpt: rcpts(reply(550, "5.1.1"))}, want: want{cat: mail.Rejected, code: 550, refused: []string{"ada@example.com", "bob@example.com"}}},
		{name: "551 at RCPT", script: smtptest.Script{Rcpt: rcpts(reply(551, "5.1.6"))}, want: want{cat: mail.Rejected, code: 551, refused: []string{"ada@example.com", "bob@example.com"}}},
		{name: "553 at MAIL", script: smtptest.Script{Mail: reply(553, "5.1.8")}, want: want{cat: mail.Rejected, code: 553}},
		{name: "554 at DATA end", script: smtptest.Script{Data: reply(554, "5.7.1")}, want: want{cat: mail.Rejected, code: 554, sent: true}},
		{name: "552 at DATA end", script: smtptest.Script{Data: reply(552, "5.3.4")}, want: want{cat: mail.Rejected, code: 552, sent: true}},
		{name: "5.6.7 SMTPUTF8 needed", script: smtptest.Script{Mail: reply(553, "5.6.7")}, want: want{cat: mail.Unsupported, code: 553}},
		{name: "530 auth required", script: smtptest.Script{Username: "u", Password: "p"}, want: want{cat: mail.Auth, code: 530}},
		{name: "534 mechanism too weak", script: smtptest.Script{Auth: reply(534, "5.7.9")},
			config: func(c *smtp.Config) { c.Username, c.Password = "u", "p" }, want: want{cat: mail.Auth, code: 534}},
		{name: "535 bad credentials", script: smtptest.Script{Username: "u", Password: "p"},
			config: func(c *smtp.Config) { c.Username, c.Password = "u", "wrong" }, want: want{cat: mail.Auth, code: 535}},
		{name: "auth ok", script: smtptest.Script{Username: "u", Password: "p"},
			config: func(c *smtp.Config) { c.Username, c.Password = "u", "p" }, want: want{cat: mail.Accepted, code: 250, sent: true}},
		{name: "555 at MAIL", script: smtptest.Script{Mail: reply(555, "5.5.4")}, want: want{cat: mail.Validation, code: 555}},
		{name: "501 at RCPT", script: smtptest.Script{Rcpt: rcpts(reply(501, "5.1.3"))}, want: want{cat: mail.Validation, code: 501, refused: []string{"ada@example.com", "bob@example.com"}}},
		{name: "TLS mandatory not offered", config: func(c *smtp.Config) { c.TLS = smtp.TLSMandatory }, want: want{cat: mail.Configuration}},
		{name: "connection refused", addr: refusedAddr(t), want: want{cat: mail.Retryable}},
		{name: "drop after DATA", script: smtptest.Script{AfterData: smtptest.Drop}, want: want{cat: mail.DeliveryUnknown, sent: true}},
		{name: "timeout after DATA", script: smtptest.Script{AfterData: smtptest.Hang},
			config: func(c *smtp.Config) { c.Timeout = 300 * time.Millisecond }, want: want{cat: mail.DeliveryUnknown, sent: true}},
		{name: "partial recipients", script: smtptest.Script{Rcpt: map[string]*gosmtp.SMTPError{"bob@example.com": reply(550, "5.1.1")}},
			want: want{cat: mail.Accepted, code: 250, refused: []string{"bob@example.com"}, sent: true}},
		{name: "all recipients refused, first decides", script: smtptest.Script{Rcpt: map[string]*gosmtp.SMTPError{
			"ada@example.com": reply(450, "4.2.1"), "bob@example.com": reply(550, "5.1.1")}},
			want: want{cat: mail.Retryable, code: 450, refused: []string{"ada@example.com"}}}, // a 4xx resets the transaction at once
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := smtptest.Start(t, tc.script)
			tr := transport(t, srv, func(c *smtp.Config) {
				if tc.addr != "" {
					host, port, _ := net.SplitHostPort(tc.addr)
					c.Host = host
					c.Port = atoi(t, port)
				}
				if tc.config != nil {
					tc.config(c)
				}
			})
			start := time.Now()
			r, err := tr.Send(context.Background(), message())
			if time.Since(start) > 4*time.Second {
				t.Errorf("send took %v", time.Since(start))
			}
			checkReceipt(t, r, err)
			t.Logf("receipt %+v; err %v", r, err)
			var refused []string
			for _, rr := range r.Refused {
				refused = append(refused, rr.Address)
				if rr.Code == 0 || strings.Contains(rr.Reason, "@") {
					t.Errorf("refused recipient %+v: no code or an address in the reason", rr)
				}
			}
			got := want{cat: r.Category, code: r.Code, refused: refused, sent: len(srv.Messages()) > 0}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("receipt %+v (err %v) (-want +got):\n%s", r, err, diff)
			}
			if tc.want.cat == mail.Accepted {
				if r.ProviderID == "" {
					t.Errorf("no ProviderID in %+v", r)
				}
				if tc.script.QueueID != "" && r.ProviderID != "OK: queued as "+tc.script.QueueID {
					t.Errorf("ProviderID = %q", r.ProviderID)
				}
			}
		})
	}
}

func rcpts(r *gosmtp.SMTPError) map[string]*gosmtp.SMTPError {
	return map[string]*gosmtp.SMTPError{"ada@example.com": r, "bob@example.com": r}
}

// checkReceipt checks what holds for every receipt: the error is nil exactly
// when accepted, is then a *mail.Error with the same receipt, and no address
// shows in the reason or in the error's text.
func checkReceipt(t *testing.T, r mail.Receipt, err error) {
	t.Helper()
	if (err == nil) != (r.Category == mail.Accepted) {
		t.Fatalf("category %q with error %v", r.Category, err)
	}
	if strings.Contains(r.Reason, "@") {
		t.Errorf("reason has an address: %q", r.Reason)
	}
	if strings.Contains(r.Reason, "918273") || strings.Contains(r.Text, "@") {
		t.Errorf("the reason quotes the reply's text, or the text an address: %+v", r)
	}
	if err != nil && strings.Contains(err.Error(), "918273") {
		t.Errorf("the error's text quotes the reply's text: %q", err.Error())
	}
	if err != nil {
		var me *mail.Error
		if !errors.As(err, &me) {
			t.Fatalf("error %T is not a *mail.Error", err)
		}
		if diff := cmp.Diff(r, me.Receipt); diff != "" {
			t.Errorf("error's receipt differs:\n%s", diff)
		}
		if strings.Contains(err.Error(), "@") {
			t.Errorf("error text has an address: %q", err.Error())
		}
		var te *textproto.Error
		if errors.As(err, &te) && strings.Contains(te.Msg, "@") {
			t.Errorf("cause has an address: %q", te.Msg)
		}
	}
}

func refusedAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

func atoi(t *testing.T, s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			t.Fatalf("bad port %q", s)
		}
		n = n*10 + int(c-'0')
	}
	return n
}

func TestSendDotStuffingAndEnvelope(t *testing.T) {
	t.Parallel()
	srv := smtptest.Start(t, smtptest.Script{})
	msg := message()
	msg.Cc = []string{"Ada <ADA@example.com>"} // a duplicate, differently spelled
	msg.Bcc = []string{"audit@example.com"}
	r, err := transport(t, srv, nil).Send(context.Background(), msg)
	if err != nil {
		t.Fatal(err)
	}
	if r.ProviderID != "OK: queued as Q1" {
		t.Errorf("ProviderID = %q", r.ProviderID)
	}
	got := srv.Messages()
	if len(got) != 1 {
		t.Fatalf("%d messages arrived", len(got))
	}
	want, err := msg.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got[0].Data)); diff != "" {
		t.Errorf("the bytes that arrived differ from Bytes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"ada@example.com", "bob@example.com", "audit@example.com"}, got[0].To); diff != "" {
		t.Errorf("envelope recipients (-want +got):\n%s", diff)
	}
	if got[0].From != "no-reply@example.com" {
		t.Errorf("envelope from = %q", got[0].From)
	}
}

func TestSendInvalidMessage(t *testing.T) {
	t.Parallel()
	srv := smtptest.Start(t, smtptest.Script{})
	msg := message()
	msg.MessageID = ""
	r, err := transport(t, srv, nil).Send(context.Background(), msg)
	checkReceipt(t, r, err)
	if r.Category != mail.Validation || !errors.Is(err, mail.ErrInvalidMessage) {
		t.Errorf("got %+v, %v", r, err)
	}
	if srv.Sessions() != 0 {
		t.Error("connected for an invalid message")
	}
}

func TestSendContext(t *testing.T) {
	t.Run("cancelled before", func(t *testing.T) {
		srv := smtptest.Start(t, smtptest.Script{})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		r, err := transport(t, srv, nil).Send(ctx, message())
		checkReceipt(t, r, err)
		if r.Category != mail.Retryable || !errors.Is(err, context.Canceled) {
			t.Errorf("got %+v, %v", r, err)
		}
	})
	t.Run("deadline while waiting for the reply to the data", func(t *testing.T) {
		srv := smtptest.Start(t, smtptest.Script{AfterData: smtptest.Hang})
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		r, err := transport(t, srv, nil).Send(ctx, message()) // Timeout 5s: the context ends first
		checkReceipt(t, r, err)
		if r.Category != mail.DeliveryUnknown || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("got %+v, %v", r, err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("the context was not honoured: %v", d)
		}
	})
	t.Run("cancelled while connecting", func(t *testing.T) {
		// A listener that never answers the greeting.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = ln.Close() }()
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer func() { _ = c.Close() }()
			}
		}()
		tr, err := smtp.New(smtp.Config{Host: "127.0.0.1", Port: ln.Addr().(*net.TCPAddr).Port, Timeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		r, err := tr.Send(ctx, message())
		checkReceipt(t, r, err)
		if r.Category != mail.Retryable || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("got %+v, %v", r, err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("the context was not honoured: %v", d)
		}
	})
}

// TestSendSTARTTLS sends over STARTTLS to a server with a certificate for
// 127.0.0.1, and checks that a certificate that does not verify is a
// configuration failure.
func TestSendSTARTTLS(t *testing.T) {
	t.Parallel()
	hs := httptest.NewUnstartedServer(nil)
	hs.StartTLS()
	cert := hs.TLS.Certificates[0]
	roots := x509.NewCertPool()
	roots.AddCert(hs.Certificate())
	hs.Close()

	srv := smtptest.Start(t, smtptest.Script{TLS: &tls.Config{Certificates: []tls.Certificate{cert}}})
	for _, policy := range []smtp.TLSPolicy{smtp.TLSMandatory, smtp.TLSOpportunistic} {
		r, err := transport(t, srv, func(c *smtp.Config) {
			c.TLS = policy
			c.TLSConfig = &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
		}).Send(context.Background(), message())
		if err != nil || r.Category != mail.Accepted {
			t.Fatalf("%v: %+v, %v", policy, r, err)
		}
	}
	r, err := transport(t, srv, func(c *smtp.Config) { c.TLS = smtp.TLSMandatory }).Send(context.Background(), message())
	checkReceipt(t, r, err)
	if r.Category != mail.Configuration {
		t.Errorf("unverified certificate: %+v, %v", r, err)
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]smtp.Config{
		"no host":    {},
		"bad port":   {Host: "h", Port: 70000},
		"bad policy": {Host: "h", TLS: 7},
		"neg time":   {Host: "h", Timeout: -1},
		"crlf helo":  {Host: "h", HELO: "a\r\nb"},
	} {
		if _, err := smtp.New(cfg); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := smtp.New(smtp.Config{Host: "h"}); err != nil {
		t.Error(err)
	}
}

// TestReplyTextIsApart checks that a refusal's text, which echoes the
// subject, goes to Receipt.Text alone: the Reason names the step, the
// codes are in Code and EnhancedCode, and the error's text holds no text of
// the reply.
func TestReplyTextIsApart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		script smtptest.Script
		want   mail.Receipt
	}{
		{"550 at RCPT", smtptest.Script{Rcpt: rcpts(reply(550, "5.7.1"))},
			mail.Receipt{Category: mail.Rejected, Code: 550, EnhancedCode: "5.7.1", Reason: "the reply to RCPT TO"}},
		{"451 at MAIL", smtptest.Script{Mail: reply(451, "4.3.0")},
			mail.Receipt{Category: mail.Retryable, Code: 451, EnhancedCode: "4.3.0", Reason: "the reply to MAIL FROM"}},
		{"554 at the end of the data", smtptest.Script{Data: reply(554, "5.7.1")},
			mail.Receipt{Category: mail.Rejected, Code: 554, EnhancedCode: "5.7.1", Reason: "the reply to the end of the message"}},
		{"450 throttle at MAIL", smtptest.Script{Mail: smtptest.Reply(450, "4.7.1", "too much mail from ada@example.com, "+echoed)},
			mail.Receipt{Category: mail.RateLimited, Code: 450, EnhancedCode: "4.7.1", Reason: "the reply to MAIL FROM", RetryAfter: smtp.DefaultRateLimitWait}},
		{"554 greeting", smtptest.Script{Greeting: reply(554, "5.7.1")},
			mail.Receipt{Category: mail.Configuration, Code: 554, EnhancedCode: "5.7.1", Reason: "the reply to the session's setup (greeting, EHLO, STARTTLS, AUTH)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := smtptest.Start(t, tc.script)
			r, err := transport(t, srv, nil).Send(context.Background(), message())
			checkReceipt(t, r, err)
			if !strings.Contains(r.Text, echoed) || !strings.Contains(r.Text, mail.AddressPlaceholder) {
				t.Errorf("Text %q does not carry the reply's text, addresses redacted", r.Text)
			}
			got := r
			got.Text, got.Refused = "", nil
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("receipt (-want +got):\n%s", diff)
			}
			want := "mail: " + string(tc.want.Category) + " " + strconv.Itoa(tc.want.Code) + " " + tc.want.EnhancedCode + ": " + tc.want.Reason
			if err == nil || err.Error() != want {
				t.Errorf("error %v, want %q", err, want)
			}
		})
	}
}
