package mailqueue_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/alexify/mailer/drivers/memory"
	"github.com/alexify/mailer/mail"
	"github.com/alexify/mailer/mail/smtp"
	"github.com/alexify/mailer/mail/smtptest"
	"github.com/alexify/mailer/mailqueue"
)

// TestStartChecksTheTransport: Start runs the transport's Check and refuses
// to start on a wrong password, so that the mistake is an error at start
// and not one AUTH per queued job every OperatorDelay; an unreachable
// transport (an outage the breaker waits for) and SkipTransportCheck start.
func TestStartChecksTheTransport(t *testing.T) {
	t.Parallel()
	withAuth := func(t *testing.T, user, pass string) *smtp.Transport {
		srv := smtptest.Start(t, smtptest.Script{Username: "u", Password: "right"})
		tr, err := smtp.New(smtp.Config{Host: srv.Host(), Port: srv.Port(), TLS: smtp.TLSNone, HELO: "test.localhost", Username: user, Password: pass, Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	closedPort := func(t *testing.T) *smtp.Transport {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		_ = ln.Close()
		tr, err := smtp.New(smtp.Config{Host: "127.0.0.1", Port: port, TLS: smtp.TLSNone, HELO: "test.localhost", Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	tests := []struct {
		name    string
		tr      func(t *testing.T) *smtp.Transport
		skip    bool
		wantErr bool
	}{
		{"the right password starts", func(t *testing.T) *smtp.Transport { return withAuth(t, "u", "right") }, false, false},
		{"a wrong password does not start", func(t *testing.T) *smtp.Transport { return withAuth(t, "u", "wrong") }, false, true},
		{"SkipTransportCheck starts with a wrong password", func(t *testing.T) *smtp.Transport { return withAuth(t, "u", "wrong") }, true, false},
		{"an unreachable server starts (an outage)", closedPort, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			q, err := mailqueue.New(mailqueue.Config{Driver: mustMemory(t, memory.Options{})})
			if err != nil {
				t.Fatal(err)
			}
			w, err := q.NewWorker(mailqueue.WorkerConfig{Transport: tc.tr(t), SkipTransportCheck: tc.skip, Redelivered: mailqueue.RedeliveredDeliveryUnknown})
			if err != nil {
				t.Fatal(err)
			}
			err = w.Start()
			t.Cleanup(func() { _ = w.Close(context.Background()) })
			if (err != nil) != tc.wantErr {
				t.Fatalf("Start: %v; want an error: %t", err, tc.wantErr)
			}
			var me *mail.Error
			if tc.wantErr && (!errors.As(err, &me) || me.Receipt.Category != mail.Auth) {
				t.Errorf("Start: %v; want a *mail.Error of category auth", err)
			}
		})
	}
}
