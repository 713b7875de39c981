package mail_test

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	netmail "net/mail"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/alexify/mailer/mail"
)

// pngBytes is a 1×1 transparent PNG.
var pngBytes = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82")

func fullMessage() *mail.Message {
	return &mail.Message{
		MessageID: "<0b9c6f1e-5a43-5d7e-9c1a-3f2e8b7d6c5a@mailer.example.com>",
		Date:      time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC),
		From:      "Zoë Ångström <no-reply@example.com>",
		To:        []string{"Ada Lovelace <ada@example.com>"},
		Cc:        []string{"grace@example.com"},
		Bcc:       []string{"audit@example.com"},
		ReplyTo:   []string{"Support <support@example.com>"},
		Subject:   "Grüße – your reset link ✓",
		Text:      "Hello Ada,\nreset your password: https://example.com/r/abc\n",
		HTML:      `<p>Hello Ada,</p><p><img src="cid:logo@mailer.example.com" alt="logo"></p>`,
		Headers:   map[string]string{"X-Mailer-Job": "job-1", "List-Unsubscribe": "<https://example.com/u>", "Auto-Submitted": "auto-generated"},
		Attachments: []mail.Attachment{
			{Filename: "logo.png", ContentType: "image/png", ContentID: "logo@mailer.example.com", Inline: true, Data: pngBytes},
			{Filename: "invoice.pdf", ContentType: "application/pdf", Data: []byte("%PDF-1.4 fake\n")},
		},
	}
}

func TestBytesDeterministic(t *testing.T) {
	// Not parallel: it changes time.Local, a global of the process.
	for name, msg := range map[string]*mail.Message{
		"nested":      fullMessage(),
		"text only":   {MessageID: "<a@b>", Date: time.Unix(1_700_000_000, 0), From: "a@example.com", To: []string{"b@example.com"}, Text: "hi"},
		"alternative": {MessageID: "<a@b>", Date: time.Unix(1_700_000_000, 0), From: "a@example.com", To: []string{"b@example.com"}, Text: "hi", HTML: "<b>hi</b>"},
		"one attachment": {MessageID: "<a@b>", Date: time.Unix(1_700_000_000, 0), From: "a@example.com", To: []string{"b@example.com"}, Text: "hi",
			Attachments: []mail.Attachment{{Filename: "a.txt", Data: []byte("x")}}},
	} {
		t.Run(name, func(t *testing.T) {
			local := time.Local
			t.Cleanup(func() { time.Local = local })

			// A Date in the process's zone: changing the zone between builds
			// must not change the bytes.
			time.Local = time.FixedZone("UTC+5", 5*3600)
			msg.Date = msg.Date.Local()
			first, err := msg.Bytes()
			if err != nil {
				t.Fatal(err)
			}
			time.Local = time.FixedZone("UTC-8", -8*3600)
			msg.Date = msg.Date.Local()
			second, err := msg.Bytes()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(first), string(second)); diff != "" {
				t.Fatalf("two builds differ (-first +second):\n%s", diff)
			}
			var viaWriteTo bytes.Buffer
			if _, err := msg.WriteTo(&viaWriteTo); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(first), viaWriteTo.String()); diff != "" {
				t.Fatalf("WriteTo differs from Bytes (-Bytes +WriteTo):\n%s", diff)
			}
			// A fresh copy (another attempt, another process) too.
			third, err := msg.Clone().Bytes()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(first), string(third)); diff != "" {
				t.Fatalf("clone builds differently:\n%s", diff)
			}
			if !bytes.Contains(first, []byte("Date: Tue, 14 Nov 2023 22:13:20 +0000")) && name != "nested" {
				t.Errorf("Date not in UTC:\n%s", first)
			}
		})
	}
}

func TestBoundariesDeriveFromMessageID(t *testing.T) {
	t.Parallel()
	a := fullMessage()
	b := fullMessage()
	b.MessageID = "<other@mailer.example.com>"
	ab, err := a.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	bb, err := b.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	ba, bbs := boundaries(t, ab), boundaries(t, bb)
	if len(ba) != 3 {
		t.Fatalf("want 3 multipart levels (mixed, related, alternative), got %q", ba)
	}
	for i := range ba {
		if ba[i] == bbs[i] {
			t.Errorf("level %d: same boundary for two Message-IDs", i)
		}
		for j := range ba {
			if i != j && ba[i] == ba[j] {
				t.Errorf("levels %d and %d share a boundary", i, j)
			}
		}
	}
}

// boundaries returns the boundaries of the multipart levels, outermost first.
func boundaries(t *testing.T, raw []byte) []string {
	t.Helper()
	m, err := netmail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func(ct string, r io.Reader)
	walk = func(ct string, r io.Reader) {
		mt, params, err := mime.ParseMediaType(ct)
		if err != nil || !strings.HasPrefix(mt, "multipart/") {
			return
		}
		out = append(out, params["boundary"])
		mr := multipart.NewReader(r, params["boundary"])
		for {
			p, err := mr.NextRawPart()
			if err == io.EOF {
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			walk(p.Header.Get("Content-Type"), p)
		}
	}
	walk(m.Header.Get("Content-Type"), m.Body)
	return out
}

func TestBytesHeaders(t *testing.T) {
	t.Parallel()
	raw, err := fullMessage().Bytes()
	if err != nil {
		t.Fatal(err)
	}
	m, err := netmail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	h := m.Header
	dec := new(mime.WordDecoder)
	subject, err := dec.DecodeHeader(h.Get("Subject"))
	if err != nil {
		t.Fatal(err)
	}
	from, err := h.AddressList("From")
	if err != nil {
		t.Fatal(err)
	}
	date, err := h.Date()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]any{
		"Message-ID":   h.Get("Message-ID"),
		"Subject":      subject,
		"From":         from[0].Name + " | " + from[0].Address,
		"Date":         date.UTC(),
		"Bcc":          h.Get("Bcc"),
		"X-Mailer-Job": h.Get("X-Mailer-Job"),
		"User-Agent":   h.Get("User-Agent") + h.Get("X-Mailer"),
		"MIME-Version": h.Get("MIME-Version"),
	}
	want := map[string]any{
		"Message-ID":   "<0b9c6f1e-5a43-5d7e-9c1a-3f2e8b7d6c5a@mailer.example.com>",
		"Subject":      "Grüße – your reset link ✓",
		"From":         "Zoë Ångström | no-reply@example.com",
		"Date":         time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC),
		"Bcc":          "",
		"X-Mailer-Job": "job-1",
		"User-Agent":   "",
		"MIME-Version": "1.0",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("headers (-want +got):\n%s", diff)
	}
	if strings.Contains(string(raw), "audit@example.com") {
		t.Error("the Bcc address is in the message")
	}
	// The raw Subject and From are RFC 2047-encoded, 7-bit.
	head := "\r\n" + string(raw[:bytes.Index(raw, []byte("\r\n\r\n"))])
	for _, r := range head {
		if r > 127 {
			t.Fatalf("non-ASCII in the header:\n%s", head)
		}
	}
	// The extra headers come in name order among the others.
	iAuto, iList, iX := strings.Index(head, "\r\nAuto-Submitted:"), strings.Index(head, "\r\nList-Unsubscribe:"), strings.Index(head, "\r\nX-Mailer-Job:")
	if iAuto < 0 || iList < 0 || iX < 0 || iAuto >= iList || iList >= iX {
		t.Errorf("extra headers not in name order:\n%s", head)
	}
}

// TestBuildInvalid forces each error path of Build and its helpers: each
// error wraps ErrInvalidMessage, names the field (want) and quotes no
// address, and Bytes and WriteTo fail the same way, writing nothing. The
// one path it cannot force is go-mail failing to read an attachment's
// bytes.Reader, which does not fail; that error wraps ErrInvalidMessage too.
func TestBuildInvalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		edit func(m *mail.Message)
		want string
	}{
		{"no message id", func(m *mail.Message) { m.MessageID = "" }, "message id: required"},
		{"message id no brackets", func(m *mail.Message) { m.MessageID = "abc@example.com" }, "message id: not of the form"},
		{"message id no at", func(m *mail.Message) { m.MessageID = "<abc>" }, "message id: not of the form"},
		{"message id space", func(m *mail.Message) { m.MessageID = "<a b@example.com>" }, "message id: not of the form"},
		{"message id left not ASCII", func(m *mail.Message) { m.MessageID = "<zoë@example.com>" }, "message id: not of the form"},
		{"message id on a bad IDN", func(m *mail.Message) { m.MessageID = "<a@bü_cher.example>" }, "message id: not of the form"},
		{"no date", func(m *mail.Message) { m.Date = time.Time{} }, "date: required"},
		{"no body", func(m *mail.Message) { m.Text, m.HTML = "", "" }, "body: neither HTML nor Text"},
		{"subject injection", func(m *mail.Message) { m.Subject = "hi\r\nBcc: victim@example.com" }, "subject: contains CR or LF"},
		{"subject with LF", func(m *mail.Message) { m.Subject = "hi\nthere" }, "subject: contains CR or LF"},
		{"no from", func(m *mail.Message) { m.From = "" }, "from: required"},
		{"bad from", func(m *mail.Message) { m.From = "not an address" }, "from: not a single RFC 5322 address"},
		{"two froms", func(m *mail.Message) { m.From = "a@example.com, b@example.com" }, "from: not a single RFC 5322 address"},
		{"from with a quoted local part", func(m *mail.Message) { m.From = `"a> SIZE=1"@example.com` }, "from: a quoted local part"},
		{"bad to", func(m *mail.Message) { m.To = []string{"ada@"} }, "to[0]: not a single"},
		{"empty second to", func(m *mail.Message) { m.To = append(m.To, "") }, "to[1]: required"},
		{"bad cc", func(m *mail.Message) { m.Cc = []string{"<grace"} }, "cc[0]: not a single"},
		{"bad bcc", func(m *mail.Message) { m.Bcc = []string{"x"} }, "bcc[0]: not a single"},
		{"no recipient", func(m *mail.Message) { m.To, m.Cc, m.Bcc = nil, nil, nil }, "recipients: no To, Cc or Bcc"},
		{"bad reply-to", func(m *mail.Message) { m.ReplyTo = []string{"@example.com"} }, "reply-to[0]: not a single"},
		{"header injection", func(m *mail.Message) { m.Headers = map[string]string{"X-A": "1\r\nBcc: v@example.com"} }, `header "X-A": value contains CR or LF`},
		{"reserved header", func(m *mail.Message) { m.Headers = map[string]string{"subject": "x"} }, `header "subject": set by the message's own fields`},
		{"bad header name", func(m *mail.Message) { m.Headers = map[string]string{"X A": "x"} }, `header "X A": not a field name`},
		{"header name with a colon", func(m *mail.Message) { m.Headers = map[string]string{"X:A": "x"} }, `header "X:A": not a field name`},
		{"inline without cid", func(m *mail.Message) { m.Attachments[0].ContentID = "" }, "attachment[0]: inline without a content id"},
		{"cid with brackets", func(m *mail.Message) { m.Attachments[0].ContentID = "<logo@x>" }, "attachment[0]: bad content id"},
		{"cid left not ASCII", func(m *mail.Message) { m.Attachments[0].ContentID = "zoë@x" }, "attachment[0]: bad content id"},
		{"cid on a bad IDN", func(m *mail.Message) { m.Attachments[0].ContentID = "logo@bü_cher.example" }, "attachment[0]: bad content id"},
		{"attachment no name", func(m *mail.Message) { m.Attachments[1].Filename = "" }, "attachment[1]: no filename"},
		{"attachment name with CR LF", func(m *mail.Message) { m.Attachments[1].Filename = "a\r\nb.pdf" }, "attachment[1]: filename contains CR or LF"},
		{"bad content type", func(m *mail.Message) { m.Attachments[1].ContentType = "not a type" }, "attachment[1]: bad content type"},
		{"multipart content type", func(m *mail.Message) { m.Attachments[1].ContentType = "multipart/mixed; boundary=x" }, "attachment[1]: bad content type"},
		{"content type with CR LF", func(m *mail.Message) { m.Attachments[1].ContentType = "text/plain;\r\n charset=utf-8" }, "attachment[1]: bad content type"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := fullMessage()
			tc.edit(m)
			_, err := mail.Build(m)
			if !errors.Is(err, mail.ErrInvalidMessage) {
				t.Fatalf("Build: got %v, want ErrInvalidMessage", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Build: %q, want it to say %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "example.com") || strings.Contains(err.Error(), "bü_cher") {
				t.Errorf("error quotes an address: %v", err)
			}
			if _, err := m.Bytes(); !errors.Is(err, mail.ErrInvalidMessage) {
				t.Fatalf("Bytes: got %v, want ErrInvalidMessage", err)
			}
			var buf bytes.Buffer
			if n, err := m.WriteTo(&buf); !errors.Is(err, mail.ErrInvalidMessage) || n != 0 || buf.Len() != 0 {
				t.Fatalf("WriteTo: %d bytes, %v; want nothing written and ErrInvalidMessage", n, err)
			}
		})
	}
	if _, err := mail.Build(nil); !errors.Is(err, mail.ErrInvalidMessage) {
		t.Errorf("Build(nil): %v", err)
	}
}

// TestEnvelopeInvalid forces each error path of Envelope: each wraps
// ErrInvalidMessage and names the field.
func TestEnvelopeInvalid(t *testing.T) {
	tests := []struct {
		name string
		edit func(m *mail.Message)
		want string
	}{
		{"no from", func(m *mail.Message) { m.From = "" }, "from: required"},
		{"bad from", func(m *mail.Message) { m.From = "not an address" }, "from: not a single"},
		{"bad to", func(m *mail.Message) { m.To = []string{"ada@"} }, "to[0]: not a single"},
		{"bad cc", func(m *mail.Message) { m.Cc = []string{"<grace"} }, "cc[0]: not a single"},
		{"quoted bcc", func(m *mail.Message) { m.Bcc = []string{`"john doe"@example.com`} }, "bcc[0]: a quoted local part"},
		{"no recipient", func(m *mail.Message) { m.To, m.Cc, m.Bcc = nil, nil, nil }, "recipients: no To, Cc or Bcc"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := fullMessage()
			tc.edit(m)
			_, _, err := m.Envelope()
			if !errors.Is(err, mail.ErrInvalidMessage) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Envelope: %v, want ErrInvalidMessage saying %q", err, tc.want)
			}
		})
	}
	var nilMsg *mail.Message
	if _, _, err := nilMsg.Envelope(); !errors.Is(err, mail.ErrInvalidMessage) {
		t.Errorf("Envelope of nil: %v", err)
	}
}

func TestEnvelope(t *testing.T) {
	t.Parallel()
	m := fullMessage()
	m.To = append(m.To, "ADA@example.com", "Bob <bob@example.com>")
	m.Bcc = append(m.Bcc, "bob@example.com")
	from, rcpt, err := m.Envelope()
	if err != nil {
		t.Fatal(err)
	}
	if from != "no-reply@example.com" {
		t.Errorf("from = %q", from)
	}
	want := []string{"ada@example.com", "bob@example.com", "grace@example.com", "audit@example.com"}
	if diff := cmp.Diff(want, rcpt); diff != "" {
		t.Errorf("rcpt (-want +got):\n%s", diff)
	}
	m.To, m.Cc, m.Bcc = nil, nil, nil
	if _, _, err := m.Envelope(); !errors.Is(err, mail.ErrInvalidMessage) {
		t.Errorf("no recipients: %v", err)
	}
}

func TestClone(t *testing.T) {
	t.Parallel()
	m := fullMessage()
	c := m.Clone()
	if diff := cmp.Diff(m, c); diff != "" {
		t.Fatalf("clone differs:\n%s", diff)
	}
	c.To[0] = "x@example.com"
	c.Headers["X-Mailer-Job"] = "changed"
	c.Attachments[0].Data[0] = 0
	if m.To[0] == c.To[0] || m.Headers["X-Mailer-Job"] == "changed" || m.Attachments[0].Data[0] == 0 {
		t.Error("clone shares memory with the original")
	}
}

func TestRedact(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"5.1.1 <ada@example.com>: Recipient address rejected": "5.1.1 <address>: Recipient address rejected",
		"5.1.1 ada@example.com... User unknown":               "5.1.1 <address>... User unknown",
		"to=ada@example.com, status=bounced":                  "<address>, status=bounced",
		"mailbox \"bob@example.org\" full\nsee (x@y.z)":       "mailbox \"<address>\" full see (<address>)",
		"OK: queued as 4F2B31C0A4":                            "OK: queued as 4F2B31C0A4",
	} {
		if got := mail.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}
