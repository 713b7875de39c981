package mail_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/alexify/mailer/mail"
)

func TestDotString(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]bool{
		"ada@example.com":                 true,
		"ada.lovelace+tag@example.com":    true,
		"jörg@bücher.example":             true,
		"ada@[192.0.2.1]":                 true,
		"a> SIZE=1@example.com":           false, // "a> SIZE=1"@example.com unquoted
		"x@y> NOTIFY=NEVER@z.example":     false,
		"john doe@example.com":            false,
		"a..b@example.com":                false,
		".a@example.com":                  false,
		"a@example..com":                  false,
		"a@[1.2.3.4> SIZE=1]":             false,
		"a\u00a0b@example.com":            false, // a no-break space
		"@example.com":                    false,
		"ada@":                            false,
		`a"b@example.com`:                 false,
		"ada@exa mple.com":                false,
		"ada@xn--bcher-kva.example":       true,
		"ada@[IPv6:2001:db8::1]":          true,
		"tab\tb@example.com":              false,
		"ada@example.com> NOTIFY=SUCCESS": false,
	} {
		if got := mail.DotString(addr); got != want {
			t.Errorf("DotString(%q) = %t, want %t", addr, got, want)
		}
	}
}

func TestASCII(t *testing.T) {
	t.Parallel()
	m := &mail.Message{
		MessageID: "<id@bücher.example>",
		Date:      time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		From:      "Zoë <zoe@bücher.example>",
		To:        []string{"ada@example.com", "Groß <gross@straße.example>"},
		Bcc:       []string{"audit@ÉXAMPLE.com"},
		ReplyTo:   []string{"help@bücher.example"},
		Subject:   "Hi",
		Text:      "Hi",
	}
	if !m.NeedsSMTPUTF8() {
		t.Fatal("NeedsSMTPUTF8 = false for IDN addresses")
	}
	a, err := m.ASCII()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`=?utf-8?q?Zo=C3=AB?= <zoe@xn--bcher-kva.example>`, "ada@example.com", `=?utf-8?q?Gro=C3=9F?= <gross@xn--strae-oqa.example>`, "<audit@xn--xample-9ua.com>", "<help@xn--bcher-kva.example>"}
	got := append(append(append([]string{a.From}, a.To...), a.Bcc...), a.ReplyTo...)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ASCII addresses (-want +got):\n%s", diff)
	}
	if a.NeedsSMTPUTF8() {
		t.Error("the ASCII message still needs SMTPUTF8")
	}
	if m.To[1] != "Groß <gross@straße.example>" {
		t.Error("ASCII changed the original")
	}
	b1, err := a.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsFunc(string(b1), func(r rune) bool { return r >= 0x80 }) {
		t.Errorf("the ASCII message's bytes hold 8-bit bytes:\n%s", b1)
	}
	if !strings.Contains(string(b1), "Message-ID: <id@xn--bcher-kva.example>") {
		t.Errorf("the Message-ID's IDN is not in punycode:\n%s", b1)
	}
	b2, _ := a.Bytes()
	if string(b1) != string(b2) {
		t.Error("two builds differ")
	}

	local := &mail.Message{From: "a@example.com", To: []string{"Jörg <jörg@example.com>"}}
	if _, err := local.ASCII(); !errors.Is(err, mail.ErrNeedsSMTPUTF8) || strings.Contains(err.Error(), "jörg") {
		t.Errorf("a local part not ASCII: %v; want ErrNeedsSMTPUTF8 without the address", err)
	}
	ascii := &mail.Message{From: "a@example.com", To: []string{"Zoë <b@example.com>"}}
	if ascii.NeedsSMTPUTF8() {
		t.Error("a display name alone needs no SMTPUTF8")
	}
}

func TestBuildRefusesQuotedLocalPart(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{`"a> SIZE=1"@example.com`, `Eve <"x@y> NOTIFY=NEVER"@example.com>`, `"john doe"@example.com`} {
		m := fullMessage()
		m.Cc = []string{addr}
		if _, err := mail.Build(m); !errors.Is(err, mail.ErrInvalidMessage) {
			t.Errorf("Build with cc %s: %v", addr, err)
		}
		if _, _, err := m.Envelope(); !errors.Is(err, mail.ErrInvalidMessage) {
			t.Errorf("Envelope with cc %s: %v", addr, err)
		}
	}
}
