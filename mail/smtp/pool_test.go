package smtp_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	gosmtp "github.com/emersion/go-smtp"

	"github.com/alexify/mailer/clock"
	"github.com/alexify/mailer/mail"
	"github.com/alexify/mailer/mail/smtp"
	"github.com/alexify/mailer/mail/smtptest"
)

func send(t *testing.T, tr *smtp.Transport, to string) mail.Receipt {
	t.Helper()
	msg := message()
	msg.To = []string{to}
	r, err := tr.Send(context.Background(), msg)
	checkReceipt(t, r, err)
	return r
}

// TestPool checks when a connection is reused (after an RSET) and when it
// is dropped.
func TestPool(t *testing.T) {
	throttle := map[string]*gosmtp.SMTPError{
		"throttled@example.com": smtptest.Reply(421, "4.7.0", "Error: too many connections"),
		"refused@example.com":   smtptest.Reply(550, "5.1.1", "User unknown"),
	}
	t.Run("reused after accepted and refused sends", func(t *testing.T) {
		srv := smtptest.Start(t, smtptest.Script{Rcpt: throttle})
		tr := transport(t, srv, nil)
		for _, to := range []string{"ada@example.com", "refused@example.com", "bob@example.com"} {
			send(t, tr, to)
		}
		if n := srv.Sessions(); n != 1 {
			t.Errorf("%d sessions, want 1", n)
		}
		if n := len(srv.Messages()); n != 2 {
			t.Errorf("%d messages, want 2", n)
		}
	})
	t.Run("dropped after a 421", func(t *testing.T) {
		srv := smtptest.Start(t, smtptest.Script{Rcpt: throttle})
		tr := transport(t, srv, nil)
		if r := send(t, tr, "throttled@example.com"); r.Category != mail.RateLimited {
			t.Fatalf("got %+v", r)
		}
		if r := send(t, tr, "ada@example.com"); r.Category != mail.Accepted {
			t.Fatalf("got %+v", r)
		}
		if n := srv.Sessions(); n != 2 {
			t.Errorf("%d sessions, want a new one after the 421", n)
		}
	})
	t.Run("dropped after no reply to the data", func(t *testing.T) {
		srv := smtptest.Start(t, smtptest.Script{AfterData: smtptest.Drop})
		tr := transport(t, srv, nil)
		for range 2 {
			if r := send(t, tr, "ada@example.com"); r.Category != mail.DeliveryUnknown {
				t.Fatalf("got %+v", r)
			}
		}
		if n := srv.Sessions(); n != 2 {
			t.Errorf("%d sessions, want one per send", n)
		}
	})
	t.Run("a connection the server closed is dialed again", func(t *testing.T) {
		srv := smtptest.Start(t, smtptest.Script{})
		tr := transport(t, srv, nil)
		send(t, tr, "ada@example.com")
		srv.DropConnections()
		if r := send(t, tr, "bob@example.com"); r.Category != mail.Accepted {
			t.Fatalf("after the server closed the idle connection: %+v", r)
		}
		if n, m := srv.Sessions(), len(srv.Messages()); n != 2 || m != 2 {
			t.Errorf("%d sessions and %d messages, want 2 and 2", n, m)
		}
	})
	t.Run("idle timeout", func(t *testing.T) {
		srv := smtptest.Start(t, smtptest.Script{})
		clk := clock.NewFake(time.Date(2026, 3, 14, 15, 0, 0, 0, time.UTC))
		tr := transport(t, srv, func(c *smtp.Config) { c.Clock = clk; c.IdleTimeout = time.Minute })
		send(t, tr, "ada@example.com")
		clk.Advance(59 * time.Second)
		send(t, tr, "ada@example.com")
		if n := srv.Sessions(); n != 1 {
			t.Fatalf("%d sessions within the idle timeout, want 1", n)
		}
		clk.Advance(time.Minute)
		send(t, tr, "ada@example.com")
		if n := srv.Sessions(); n != 2 {
			t.Errorf("%d sessions after the idle timeout, want 2", n)
		}
	})
	t.Run("MaxMessages", func(t *testing.T) {
		srv := smtptest.Start(t, smtptest.Script{})
		tr := transport(t, srv, func(c *smtp.Config) { c.MaxMessages = 2 })
		for range 5 {
			send(t, tr, "ada@example.com")
		}
		if n := srv.Sessions(); n != 3 {
			t.Errorf("%d sessions for 5 messages at 2 a connection, want 3", n)
		}
	})
	t.Run("MaxConnections bounds concurrent sends", func(t *testing.T) {
		srv := smtptest.Start(t, smtptest.Script{})
		tr := transport(t, srv, func(c *smtp.Config) { c.MaxConnections = 2 })
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(func() { send(t, tr, "ada@example.com") })
		}
		wg.Wait()
		if n := srv.Sessions(); n > 2 {
			t.Errorf("%d sessions, want 2 at most", n)
		}
		if n := len(srv.Messages()); n != 16 {
			t.Errorf("%d messages, want 16", n)
		}
	})
	t.Run("a send waiting for a connection honours its context", func(t *testing.T) {
		srv := smtptest.Start(t, smtptest.Script{AfterData: smtptest.Hang})
		tr := transport(t, srv, func(c *smtp.Config) { c.MaxConnections = 1 })
		started := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			close(started)
			_, _ = tr.Send(ctx, message()) // holds the only connection until the server closes
		}()
		<-started
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		r, err := tr.Send(ctx, message())
		if r.Category != mail.Retryable || !errors.Is(err, context.Canceled) {
			t.Errorf("got %+v, %v", r, err)
		}
		_ = srv.Close()
		<-done
	})
	t.Run("Close ends the idle connections", func(t *testing.T) {
		srv := smtptest.Start(t, smtptest.Script{})
		tr := transport(t, srv, nil)
		send(t, tr, "ada@example.com")
		if err := tr.Close(); err != nil {
			t.Fatal(err)
		}
		send(t, tr, "ada@example.com")
		send(t, tr, "ada@example.com")
		if n := srv.Sessions(); n != 3 {
			t.Errorf("%d sessions, want a connection per send after Close", n)
		}
	})
}

// TestMailParameters checks SIZE=, BODY=8BITMIME and SMTPUTF8 on MAIL FROM,
// and that a message larger than the server's SIZE is refused before its
// data is sent.
func TestMailParameters(t *testing.T) {
	t.Run("ASCII message: SIZE only", func(t *testing.T) {
		srv := smtptest.Start(t, smtptest.Script{SMTPUTF8: true})
		send(t, transport(t, srv, nil), "ada@example.com")
		got := srv.Messages()[0]
		if got.Size != int64(len(got.Data)) || got.UTF8 || got.Body != "" {
			t.Errorf("SIZE=%d SMTPUTF8 %t BODY=%q; want SIZE alone", got.Size, got.UTF8, got.Body)
		}
	})
	t.Run("UTF-8 address: SMTPUTF8 and BODY=8BITMIME", func(t *testing.T) {
		srv := smtptest.Start(t, smtptest.Script{SMTPUTF8: true})
		msg := message()
		msg.To = []string{"jörg@example.com"}
		if r, err := transport(t, srv, nil).Send(context.Background(), msg); err != nil {
			t.Fatalf("%+v, %v", r, err)
		}
		got := srv.Messages()[0]
		if !got.UTF8 || got.Body != "8BITMIME" {
			t.Errorf("SMTPUTF8 %t BODY=%q; want both", got.UTF8, got.Body)
		}
	})
	t.Run("too big for SIZE", func(t *testing.T) {
		srv := smtptest.Start(t, smtptest.Script{MaxSize: 200})
		r := send(t, transport(t, srv, nil), "ada@example.com")
		if r.Category != mail.Rejected || r.Code != 0 || !strings.Contains(r.Reason, "SIZE") {
			t.Errorf("got %+v; want rejected before MAIL FROM", r)
		}
		if n := len(srv.Messages()); n != 0 {
			t.Errorf("%d messages arrived", n)
		}
	})
}

// testCert returns a certificate for 127.0.0.1 and a pool with its CA.
func testCert(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	hs := httptest.NewUnstartedServer(nil)
	hs.StartTLS()
	defer hs.Close()
	roots := x509.NewCertPool()
	roots.AddCert(hs.Certificate())
	return hs.TLS.Certificates[0], roots
}

// TestTLS checks implicit TLS, the default policy (STARTTLS required) and a
// TLSConfig without ServerName.
func TestTLS(t *testing.T) {
	cert, roots := testCert(t)
	serverTLS := &tls.Config{Certificates: []tls.Certificate{cert}}
	onlyCA := func(p smtp.TLSPolicy) func(*smtp.Config) {
		return func(c *smtp.Config) { c.TLS = p; c.TLSConfig = &tls.Config{RootCAs: roots} }
	}
	for _, tc := range []struct {
		name   string
		script smtptest.Script
		config func(*smtp.Config)
		cat    mail.Category
	}{
		{"STARTTLS, a TLSConfig with only a CA", smtptest.Script{TLS: serverTLS}, onlyCA(smtp.TLSMandatory), mail.Accepted},
		{"implicit TLS, a TLSConfig with only a CA", smtptest.Script{TLS: serverTLS, ImplicitTLS: true}, onlyCA(smtp.TLSImplicit), mail.Accepted},
		{"the default policy requires STARTTLS", smtptest.Script{}, func(c *smtp.Config) { c.TLS = 0 }, mail.Configuration},
		{"opportunistic goes on in clear", smtptest.Script{}, func(c *smtp.Config) { c.TLS = smtp.TLSOpportunistic }, mail.Accepted},
		{"implicit TLS to a server in clear is an outage", smtptest.Script{}, onlyCA(smtp.TLSImplicit), mail.Retryable},
		{"implicit TLS, a certificate that does not verify", smtptest.Script{TLS: serverTLS, ImplicitTLS: true}, func(c *smtp.Config) { c.TLS = smtp.TLSImplicit }, mail.Configuration},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := smtptest.Start(t, tc.script)
			tr := transport(t, srv, func(c *smtp.Config) { c.Timeout = 2 * time.Second; tc.config(c) })
			r := send(t, tr, "ada@example.com")
			if r.Category != tc.cat {
				t.Errorf("got %+v, want %s", r, tc.cat)
			}
		})
	}
}

// TestUnavailable checks which failures are outages (mail.ErrUnavailable:
// nothing was sent, the server could not be reached) and which are not.
func TestUnavailable(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never greets
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = silent.Close() })
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = c.Close() })
		}
	}()
	for _, tc := range []struct {
		name        string
		host        string
		port        int
		script      smtptest.Script
		policy      smtp.TLSPolicy
		unavailable bool
	}{
		{name: "connection refused", host: "127.0.0.1", port: atoi(t, strings.Split(refusedAddr(t), ":")[1]), unavailable: true},
		{name: "a name that does not resolve", host: "no-such-host.invalid", port: 25, unavailable: true},
		{name: "no greeting before the timeout", host: "127.0.0.1", port: silent.Addr().(*net.TCPAddr).Port, unavailable: true},
		{name: "a failed TLS handshake", script: smtptest.Script{}, policy: smtp.TLSImplicit, unavailable: true},
		{name: "454 to AUTH", script: smtptest.Script{Auth: smtptest.Reply(454, "4.7.0", "Temporary authentication failure")}, unavailable: true},
		{name: "a 4xx to MAIL FROM", script: smtptest.Script{Mail: smtptest.Reply(451, "4.3.0", "Local error")}},
		{name: "a rate limit in place of the greeting", script: smtptest.Script{Greeting: smtptest.Reply(421, "4.7.0", "Error: too many connections from 127.0.0.1")}},
		{name: "a connection dropped after the data", script: smtptest.Script{AfterData: smtptest.Drop}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.policy == 0 {
				tc.policy = smtp.TLSNone
			}
			cfg := smtp.Config{Host: tc.host, Port: tc.port, TLS: tc.policy, Timeout: 500 * time.Millisecond, Username: "u", Password: "p"}
			if tc.host == "" {
				srv := smtptest.Start(t, tc.script)
				cfg.Host, cfg.Port = srv.Host(), srv.Port()
				if tc.script.Auth == nil {
					cfg.Username = ""
				}
			}
			tr, err := smtp.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			r, err := tr.Send(context.Background(), message())
			checkReceipt(t, r, err)
			if got := errors.Is(err, mail.ErrUnavailable); got != tc.unavailable {
				t.Errorf("errors.Is(ErrUnavailable) = %t, want %t (%+v, %v)", got, tc.unavailable, r, err)
			}
			if tc.unavailable && r.Category != mail.Retryable {
				t.Errorf("an outage of category %s, want retryable", r.Category)
			}
			if tc.unavailable && !errors.Is(tr.Check(context.Background()), mail.ErrUnavailable) {
				t.Error("Check does not tell the outage")
			}
		})
	}
}

// TestCheck checks that Check tells a wrong password, a server that cannot
// be reached and a missing STARTTLS at once, and passes otherwise.
func TestCheck(t *testing.T) {
	auth := smtptest.Script{Username: "u", Password: "p"}
	for _, tc := range []struct {
		name   string
		script smtptest.Script
		config func(*smtp.Config)
		cat    mail.Category // "" when Check passes
	}{
		{"good credentials", auth, func(c *smtp.Config) { c.Username, c.Password = "u", "p" }, ""},
		{"wrong password", auth, func(c *smtp.Config) { c.Username, c.Password = "u", "wrong" }, mail.Auth},
		{"STARTTLS required, not offered", smtptest.Script{}, func(c *smtp.Config) { c.TLS = smtp.TLSMandatory }, mail.Configuration},
		{"refused in place of the greeting", smtptest.Script{Greeting: smtptest.Reply(554, "5.7.1", "Access denied")}, nil, mail.Configuration},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := smtptest.Start(t, tc.script)
			err := transport(t, srv, tc.config).Check(context.Background())
			if tc.cat == "" {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				if n := len(srv.Messages()); n != 0 {
					t.Errorf("Check sent %d messages", n)
				}
				return
			}
			var me *mail.Error
			if !errors.As(err, &me) || me.Receipt.Category != tc.cat {
				t.Errorf("Check = %v, want a *mail.Error of category %s", err, tc.cat)
			}
		})
	}
}
