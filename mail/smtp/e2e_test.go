package smtp_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"mime"
	"mime/multipart"
	netmail "net/mail"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/alexify/mailer/mail"
	"github.com/alexify/mailer/mail/smtptest"
)

var png1x1 = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82")

// leaf is a non-multipart part as it arrived, decoded.
type leaf struct {
	Path        string // the multipart types above it and its own type
	Disposition string
	Filename    string
	ContentID   string
	Body        string
}

// TestSendEndToEnd builds a full message, sends it to a real SMTP server and
// reads what arrived with the standard library alone.
func TestSendEndToEnd(t *testing.T) {
	t.Parallel()
	pdf := []byte("%PDF-1.4\n% fake \x00\xff binary\n")
	msg := &mail.Message{
		MessageID: "<3f1c9a7e-1d2b-5c4e-8f6a-0b9d8c7e6f5a@mailer.example.com>",
		Date:      time.Date(2026, 3, 14, 15, 9, 26, 0, time.FixedZone("CET", 3600)),
		From:      "Zoë Ångström <no-reply@example.com>",
		To:        []string{"Ada Lovelace <ada@example.com>"},
		Cc:        []string{"grace@example.com"},
		Bcc:       []string{"audit@example.com"},
		ReplyTo:   []string{"support@example.com"},
		Subject:   "Grüße aus Köln – Ihre Rechnung ✓",
		Text:      "Hallo Ada,\nanbei die Rechnung. Grüße!\n",
		HTML:      `<p>Hallo Ada, Grüße!</p><img src="cid:logo.1@mailer.example.com">`,
		Headers:   map[string]string{"X-Job-Id": "job-7"},
		Attachments: []mail.Attachment{
			{Filename: "logo.png", ContentType: "image/png", ContentID: "logo.1@mailer.example.com", Inline: true, Data: png1x1},
			{Filename: "Rechnung März.pdf", ContentType: "application/pdf", Data: pdf},
		},
	}
	srv := smtptest.Start(t, smtptest.Script{})
	r, err := transport(t, srv, nil).Send(context.Background(), msg)
	if err != nil {
		t.Fatalf("send: %+v, %v", r, err)
	}
	got := srv.Messages()
	if len(got) != 1 {
		t.Fatalf("%d messages arrived", len(got))
	}
	arrived := got[0]

	// The envelope has the Bcc; the header does not.
	if diff := cmp.Diff([]string{"ada@example.com", "grace@example.com", "audit@example.com"}, arrived.To); diff != "" {
		t.Errorf("envelope recipients (-want +got):\n%s", diff)
	}
	if arrived.From != "no-reply@example.com" {
		t.Errorf("envelope from %q", arrived.From)
	}
	if bytes.Contains(arrived.Data, []byte("audit@example.com")) {
		t.Error("the Bcc address is in the message")
	}

	m, err := netmail.ReadMessage(bytes.NewReader(arrived.Data))
	if err != nil {
		t.Fatal(err)
	}
	h := m.Header
	gotHeaders := readHeaders(t, h)
	wantHeaders := map[string]string{
		"Message-Id": msg.MessageID,
		"Subject":    msg.Subject,
		"From":       (&netmail.Address{Name: "Zoë Ångström", Address: "no-reply@example.com"}).String(),
		"To":         (&netmail.Address{Name: "Ada Lovelace", Address: "ada@example.com"}).String(),
		"Cc":         "grace@example.com",
		"Reply-To":   "support@example.com",
		"Date":       "2026-03-14T14:09:26Z",
		"X-Job-Id":   "job-7",
		"Bcc":        "",
	}
	if diff := cmp.Diff(wantHeaders, gotHeaders); diff != "" {
		t.Errorf("headers (-want +got):\n%s", diff)
	}
	if !strings.Contains(h.Get("Subject"), "=?") || !strings.Contains(h.Get("From"), "=?") {
		t.Errorf("subject or from not RFC 2047-encoded: %q, %q", h.Get("Subject"), h.Get("From"))
	}

	var leaves []leaf
	walk(t, "", h.Get("Content-Type"), h.Get("Content-Transfer-Encoding"), nil, m.Body, &leaves)
	want := []leaf{
		{Path: "multipart/mixed/multipart/related/multipart/alternative/text/plain", Body: msg.Text},
		{Path: "multipart/mixed/multipart/related/multipart/alternative/text/html", Body: msg.HTML},
		{Path: "multipart/mixed/multipart/related/image/png", Disposition: "inline", Filename: "logo.png",
			ContentID: "<logo.1@mailer.example.com>", Body: string(png1x1)},
		{Path: "multipart/mixed/application/pdf", Disposition: "attachment", Filename: "Rechnung März.pdf", Body: string(pdf)},
	}
	if diff := cmp.Diff(want, leaves); diff != "" {
		t.Errorf("parts (-want +got):\n%s", diff)
	}
}

// readHeaders returns the headers of an arrived message that
// TestSendEndToEnd checks, decoded with the standard library: the Subject
// (RFC 2047), the first address of From and To in full, of Cc and Reply-To
// bare, the Date in UTC.
func readHeaders(t *testing.T, h netmail.Header) map[string]string {
	t.Helper()
	dec := new(mime.WordDecoder)
	subject, err := dec.DecodeHeader(h.Get("Subject"))
	if err != nil {
		t.Fatal(err)
	}
	lists := map[string][]*netmail.Address{}
	for _, name := range []string{"From", "To", "Cc", "Reply-To"} {
		if lists[name], err = h.AddressList(name); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	date, err := h.Date()
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"Message-Id": h.Get("Message-Id"),
		"Subject":    subject,
		"From":       lists["From"][0].String(),
		"To":         lists["To"][0].String(),
		"Cc":         lists["Cc"][0].Address,
		"Reply-To":   lists["Reply-To"][0].Address,
		"Date":       date.UTC().Format(time.RFC3339),
		"X-Job-Id":   h.Get("X-Job-Id"),
		"Bcc":        h.Get("Bcc"),
	}
}

func walk(t *testing.T, path, contentType, cte string, header map[string][]string, body io.Reader, out *[]leaf) {
	t.Helper()
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		t.Fatalf("%s: content type %q: %v", path, contentType, err)
	}
	if path != "" {
		path += "/"
	}
	path += mt
	if strings.HasPrefix(mt, "multipart/") {
		mr := multipart.NewReader(body, params["boundary"])
		for {
			p, err := mr.NextPart() // decodes quoted-printable
			if err == io.EOF {
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			walk(t, path, p.Header.Get("Content-Type"), p.Header.Get("Content-Transfer-Encoding"), p.Header, p, out)
		}
	}
	r := io.Reader(body)
	if strings.EqualFold(cte, "base64") {
		r = base64.NewDecoder(base64.StdEncoding, body)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	l := leaf{Path: path, Body: string(data)}
	if strings.HasPrefix(mt, "text/") {
		l.Body = strings.ReplaceAll(l.Body, "\r\n", "\n")
	}
	get := func(k string) string {
		if v := header[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	if cd := get("Content-Disposition"); cd != "" {
		disp, dp, err := mime.ParseMediaType(cd)
		if err != nil {
			t.Fatalf("%s: disposition %q: %v", path, cd, err)
		}
		l.Disposition = disp
		name, err := new(mime.WordDecoder).DecodeHeader(dp["filename"])
		if err != nil {
			t.Fatal(err)
		}
		l.Filename = name
	}
	l.ContentID = get("Content-Id")
	*out = append(*out, l)
}
