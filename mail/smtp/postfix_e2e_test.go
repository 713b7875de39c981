package smtp_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/alexify/mailer/internal/postfixtest"
	"github.com/alexify/mailer/mail"
	"github.com/alexify/mailer/mail/smtp"
)

// testCA makes a CA and a certificate it signs for 127.0.0.1 and mta.test,
// as PEM, and a pool that trusts the CA.
func testCA(t *testing.T) (certPEM, keyPEM []byte, roots *x509.CertPool) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mailer test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "mta.test"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		DNSNames: []string{"mta.test"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	roots = x509.NewCertPool()
	roots.AddCert(caCert)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), roots
}

// postfixTransport is the kit's transport to a test Postfix: STARTTLS
// required (the default) with a TLSConfig that gives only the test CA.
func postfixTransport(t *testing.T, pf *postfixtest.Server, roots *x509.CertPool, edit func(*smtp.Config)) *smtp.Transport {
	t.Helper()
	cfg := smtp.Config{Host: "127.0.0.1", Port: pf.Port, HELO: "client.test", Timeout: 10 * time.Second,
		TLSConfig: &tls.Config{RootCAs: roots}}
	if edit != nil {
		edit(&cfg)
	}
	tr, err := smtp.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

// kinds are the kinds of message the kit builds.
func kinds() map[string]*mail.Message {
	base := func(id string) *mail.Message {
		return &mail.Message{
			MessageID: "<" + id + "@mailer.example.com>",
			Date:      time.Date(2026, 3, 14, 15, 9, 26, 0, time.FixedZone("CET", 3600)),
			From:      "Mailer <no-reply@example.test>",
			To:        []string{"Ada Lovelace <ada@example.test>"},
			Subject:   "Hello",
		}
	}
	text := base("text")
	text.Text = "Hello Ada.\n.\nA line with a lone dot above, and one of 80 characters below:\n" + strings.Repeat("x", 80) + "\n"
	html := base("html")
	html.HTML = `<p>Hello <b>Ada</b></p>`
	html.Text = "Hello Ada"
	inline := base("inline")
	inline.HTML = `<p>Logo:</p><img src="cid:logo.1@mailer.example.com">`
	inline.Attachments = []mail.Attachment{{Filename: "logo.png", ContentType: "image/png", ContentID: "logo.1@mailer.example.com", Inline: true, Data: png1x1}}
	attach := base("attachments")
	attach.Text = "Two attachments."
	attach.Attachments = []mail.Attachment{
		{Filename: "report.pdf", ContentType: "application/pdf", Data: []byte("%PDF-1.4\n% fake \x00\xff binary\n")},
		{Filename: "data.csv", ContentType: "text/csv", Data: []byte("a,b\n1,2\n")},
	}
	intl := base("intl")
	intl.From = "Zoë Ångström <no-reply@example.test>"
	intl.To = []string{"Jürgen Groß <juergen@bücher.test>", "Ada <ada@example.test>"}
	intl.Subject = "Grüße aus Köln – Ihre Rechnung ✓"
	intl.Text = "Hallo Jürgen, anbei die Rechnung. Grüße!\n"
	intl.Attachments = []mail.Attachment{{Filename: "Rechnung März.pdf", ContentType: "application/pdf", Data: []byte("%PDF-1.4\n")}}
	return map[string]*mail.Message{"text": text, "html": html, "inline": inline, "attachments": attach, "intl": intl}
}

// TestPostfix sends through the kit's SMTP transport to a real Postfix
// (Debian's), started by the test on a free loopback port with a
// configuration of its own, over STARTTLS with a certificate the test made
// (issue 10, point 12).
func TestPostfix(t *testing.T) {
	certPEM, keyPEM, roots := testCA(t)
	pf := postfixtest.Start(t, postfixtest.Options{
		Domains: []string{"example.test", "bücher.test", "xn--bcher-kva.test"},
		CertPEM: certPEM, KeyPEM: keyPEM,
		Main: map[string]string{"smtpd_recipient_limit": "5"},
	})
	ctx := context.Background()

	t.Run("the kinds of message, byte for byte", func(t *testing.T) {
		tr := postfixTransport(t, pf, roots, nil)
		if err := tr.Check(ctx); err != nil {
			t.Fatalf("Check: %v", err)
		}
		ks := kinds()
		want := map[string][]byte{} // by Message-ID and recipient
		n := 0
		for name, msg := range ks {
			r, err := tr.Send(ctx, msg)
			if err != nil || r.Category != mail.Accepted {
				t.Fatalf("%s: %+v, %v", name, r, err)
			}
			b, err := msg.Bytes()
			if err != nil {
				t.Fatal(err)
			}
			_, rcpts, _ := msg.Envelope()
			for _, rc := range rcpts {
				want[msg.MessageID+" "+rc] = bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))
				n++
			}
		}
		got := deliveredBy(t, pf, n)
		for _, d := range messages(t, pf) {
			// Postfix's Received says ESMTPS (or UTF8SMTPS) for a session
			// over TLS.
			if !bytes.Contains(d.Data, []byte("SMTPS id ")) {
				t.Errorf("%s was not received over TLS:\n%s", d.Name, d.Data[:min(len(d.Data), 400)])
			}
		}
		for key, w := range want {
			g, ok := got[key]
			if !ok {
				t.Errorf("%s: not delivered (got %v)", key, keysOf(got))
				continue
			}
			if diff := cmp.Diff(string(w), string(g)); diff != "" {
				t.Errorf("%s: the delivered message differs from what the kit built (-built +delivered):\n%s", key, diff)
			}
		}
	})

	t.Run("recipients past smtpd_recipient_limit go in a second transaction", func(t *testing.T) {
		tr := postfixTransport(t, pf, roots, nil)
		msg := kinds()["text"]
		msg.MessageID = "<limit@mailer.example.com>"
		msg.To = nil
		for i := 1; i <= 8; i++ {
			msg.To = append(msg.To, fmt.Sprintf("r%d@example.test", i))
		}
		before := len(messages(t, pf))
		r, err := tr.Send(ctx, msg)
		if err != nil || r.Category != mail.Accepted || len(r.Refused) != 0 {
			t.Fatalf("%+v, %v", r, err)
		}
		if strings.Count(r.ProviderID, "queued as") != 2 {
			t.Errorf("ProviderID %q: want two transactions", r.ProviderID)
		}
		got := deliveredBy(t, pf, before+8)
		for i := 1; i <= 8; i++ {
			if _, ok := got[fmt.Sprintf("%s r%d@example.test", msg.MessageID, i)]; !ok {
				t.Errorf("r%d was not delivered", i)
			}
		}
		if n := countID(t, pf, msg.MessageID); n != 8 {
			t.Errorf("%d copies delivered, want 8 (one each)", n)
		}
	})
}

// TestPostfixRateLimits runs a Postfix whose anvil limits apply to loopback
// too (smtpd_client_event_limit_exceptions emptied) and checks that its
// replies are rate limits (issue 10, point 2).
func TestPostfixRateLimits(t *testing.T) {
	certPEM, keyPEM, roots := testCA(t)
	pf := postfixtest.Start(t, postfixtest.Options{
		CertPEM: certPEM, KeyPEM: keyPEM,
		Main: map[string]string{
			"smtpd_client_event_limit_exceptions": "",
			"smtpd_client_message_rate_limit":     "3",
			"anvil_rate_time_unit":                "60s",
		},
	})
	ctx := context.Background()
	tr := postfixTransport(t, pf, roots, nil)
	cats := make([]mail.Category, 0, 6)
	var limited mail.Receipt
	for i := range 6 {
		msg := kinds()["text"]
		msg.MessageID = fmt.Sprintf("<rate-%d@mailer.example.com>", i)
		r, _ := tr.Send(ctx, msg)
		cats = append(cats, r.Category)
		if r.Category == mail.RateLimited && limited.Category == "" {
			limited = r
		}
	}
	want := []mail.Category{mail.Accepted, mail.Accepted, mail.Accepted, mail.RateLimited, mail.RateLimited, mail.RateLimited}
	if diff := cmp.Diff(want, cats); diff != "" {
		t.Errorf("categories under a limit of 3 messages a minute (-want +got):\n%s", diff)
	}
	if limited.Code != 450 || !strings.Contains(limited.Text, "too many messages") && !strings.Contains(limited.Text, "too much mail") || limited.RetryAfter != smtp.DefaultRateLimitWait {
		t.Errorf("the rate-limited receipt: %+v", limited)
	}
	t.Logf("Postfix's reply: %d %s", limited.Code, limited.Text)
}

// TestPostfixRecipientAndConnectionLimits checks Postfix's two other
// replies to its anvil limits: "450 4.7.1 Error: too many recipients from"
// to RCPT TO (nothing of that message is sent: no recipient is dropped) and
// "421 4.7.0 … too many connections from" in place of the greeting.
func TestPostfixRecipientAndConnectionLimits(t *testing.T) {
	certPEM, keyPEM, roots := testCA(t)
	ctx := context.Background()
	t.Run("recipients", func(t *testing.T) {
		pf := postfixtest.Start(t, postfixtest.Options{CertPEM: certPEM, KeyPEM: keyPEM, Main: map[string]string{
			"smtpd_client_event_limit_exceptions": "", "smtpd_client_recipient_rate_limit": "4",
		}})
		tr := postfixTransport(t, pf, roots, nil)
		msg := kinds()["text"]
		msg.To = []string{"a1@example.test", "a2@example.test", "a3@example.test"}
		if r, err := tr.Send(ctx, msg); err != nil {
			t.Fatalf("first: %+v, %v", r, err)
		}
		second := kinds()["html"]
		second.To = []string{"b1@example.test", "b2@example.test", "b3@example.test"}
		r, err := tr.Send(ctx, second)
		checkReceipt(t, r, err)
		if r.Category != mail.RateLimited || r.Code != 450 || !strings.Contains(r.Text, "too many recipients from") {
			t.Errorf("second: %+v; want rate_limited 450 too many recipients", r)
		}
		deliveredBy(t, pf, 3)
		if n := countID(t, pf, second.MessageID); n != 0 {
			t.Errorf("%d copies of the rate-limited message delivered, want none", n)
		}
	})
	t.Run("connections", func(t *testing.T) {
		pf := postfixtest.Start(t, postfixtest.Options{CertPEM: certPEM, KeyPEM: keyPEM, Main: map[string]string{
			"smtpd_client_event_limit_exceptions": "", "smtpd_client_connection_rate_limit": "2",
		}})
		tr := postfixTransport(t, pf, roots, func(c *smtp.Config) { c.MaxMessages = 1 })
		var last mail.Receipt
		for i := range 3 {
			msg := kinds()["text"]
			msg.MessageID = fmt.Sprintf("<conn-%d@mailer.example.com>", i)
			last, _ = tr.Send(ctx, msg)
		}
		if last.Category != mail.RateLimited || last.Code != 421 || !strings.Contains(last.Text, "too many connections from") {
			t.Errorf("the third connection: %+v; want rate_limited 421 too many connections", last)
		}
		t.Logf("Postfix's reply: %d %s", last.Code, last.Text)
	})
}

func messages(t *testing.T, pf *postfixtest.Server) []postfixtest.Delivered {
	t.Helper()
	got, err := pf.Messages()
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// deliveredBy waits for n messages in the Maildir and returns them by
// Message-ID and recipient, each without the header fields Postfix added.
func deliveredBy(t *testing.T, pf *postfixtest.Server, n int) map[string][]byte {
	t.Helper()
	got, err := pf.WaitMessages(n, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < n {
		t.Fatalf("%d messages delivered after 30s, want %d; log:\n%s", len(got), n, pf.Log())
	}
	out := map[string][]byte{}
	for _, d := range got {
		body, err := postfixtest.StripAdded(d.Data)
		if err != nil {
			t.Fatal(err)
		}
		out[messageID(body)+" "+d.Recipient] = body
	}
	return out
}

func countID(t *testing.T, pf *postfixtest.Server, id string) int {
	n := 0
	for _, d := range messages(t, pf) {
		body, _ := postfixtest.StripAdded(d.Data)
		if messageID(body) == id {
			n++
		}
	}
	return n
}

func messageID(data []byte) string {
	for _, line := range strings.Split(string(data), "\n") {
		if line == "" {
			break
		}
		if v, ok := strings.CutPrefix(line, "Message-ID: "); ok {
			return strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(line, "Message-Id: "); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func keysOf(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
