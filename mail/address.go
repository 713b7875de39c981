package mail

import (
	"errors"
	"fmt"
	netmail "net/mail"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// ErrNeedsSMTPUTF8 is wrapped by the error of Message.ASCII when an address
// has a local part that is not ASCII (such as "jörg@example.com"): no ASCII
// form of it exists, so only a server that offers SMTPUTF8 (RFC 6531) can
// take the message. An SMTP transport reports it as a receipt of category
// Unsupported, which fails the job for good instead of retrying it. Match it
// with errors.Is.
var ErrNeedsSMTPUTF8 = errors.New("mail: a local part is not ASCII and needs SMTPUTF8")

// idnaProfile maps and checks domains as a client looking a name up does
// (IDNA2008, RFC 5891, with the UTS #46 mapping: case folded, NFC).
var idnaProfile = idna.Lookup

// isASCII reports whether s holds ASCII alone.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// splitAddress splits an addr-spec at its last '@'.
func splitAddress(addr string) (local, domain string, ok bool) {
	at := strings.LastIndexByte(addr, '@')
	if at <= 0 || at == len(addr)-1 {
		return "", "", false
	}
	return addr[:at], addr[at+1:], true
}

// ASCIIDomain returns domain in ASCII: unchanged when it is ASCII already
// (a domain literal such as "[192.0.2.1]" included), else its A-labels
// (punycode, RFC 5891 and RFC 3492), such as "xn--bcher-kva.de" for
// "bücher.de". It fails, wrapping ErrInvalidMessage, when the domain is not
// a valid internationalized domain name.
func ASCIIDomain(domain string) (string, error) {
	if isASCII(domain) {
		return domain, nil
	}
	a, err := idnaProfile.ToASCII(domain)
	if err != nil {
		return "", invalid("a domain is not a valid internationalized domain name")
	}
	return a, nil
}

// asciiAddrSpec returns the addr-spec addr with its domain in ASCII.
func asciiAddrSpec(addr string) (string, error) {
	local, domain, ok := splitAddress(addr)
	if !ok {
		return "", invalid("not an address")
	}
	if !isASCII(local) {
		return "", ErrNeedsSMTPUTF8
	}
	d, err := ASCIIDomain(domain)
	if err != nil {
		return "", err
	}
	return local + "@" + d, nil
}

// NeedsSMTPUTF8 reports whether an address of the message (From, To, Cc,
// Bcc or Reply-To) is not ASCII: its domain is an IDN in U-labels or its
// local part is not ASCII. Such a message goes as it is only to a server
// that offers SMTPUTF8; otherwise it needs Message.ASCII. Display names do
// not count: Build encodes them (RFC 2047).
func (m *Message) NeedsSMTPUTF8() bool {
	if m == nil {
		return false
	}
	for _, s := range m.addresses() {
		if a, err := netmail.ParseAddress(*s); err == nil && !isASCII(a.Address) {
			return true
		}
	}
	return false
}

// addresses returns pointers to every address field of the message.
func (m *Message) addresses() []*string {
	out := []*string{&m.From}
	for _, list := range [][]string{m.To, m.Cc, m.Bcc, m.ReplyTo} {
		for i := range list {
			out = append(out, &list[i])
		}
	}
	return out
}

// ASCII returns a copy of the message whose addresses (From, To, Cc, Bcc,
// Reply-To) have their domains in A-labels (punycode), for a server that
// does not offer SMTPUTF8 (RFC 6531): "Zoë <zoe@bücher.de>" becomes
// "Zoë <zoe@xn--bcher-kva.de>", the display name kept as it is (Build
// encodes it, RFC 2047). A message whose addresses are ASCII already comes
// back as an equal copy. The result is the same for the same message, so
// its bytes are the same on every attempt.
//
// It fails with an error wrapping ErrNeedsSMTPUTF8 when a local part is not
// ASCII, and with one wrapping ErrInvalidMessage when an address does not
// parse or a domain is not a valid IDN. The error names the field, never the
// address.
func (m *Message) ASCII() (*Message, error) {
	if m == nil {
		return nil, invalid("nil message")
	}
	c := m.Clone()
	fields := []struct {
		name string
		list []string
	}{{"to", c.To}, {"cc", c.Cc}, {"bcc", c.Bcc}, {"reply-to", c.ReplyTo}}
	if err := asciiMailbox("from", &c.From); err != nil {
		return nil, err
	}
	for _, f := range fields {
		for i := range f.list {
			if err := asciiMailbox(fmt.Sprintf("%s[%d]", f.name, i), &f.list[i]); err != nil {
				return nil, err
			}
		}
	}
	return c, nil
}

// asciiMailbox rewrites the mailbox *s with its domain in ASCII, leaving an
// ASCII mailbox untouched.
func asciiMailbox(field string, s *string) error {
	a, err := netmail.ParseAddress(*s)
	if err != nil {
		return invalid("%s: not a single RFC 5322 address", field)
	}
	if isASCII(a.Address) {
		return nil
	}
	spec, err := asciiAddrSpec(a.Address)
	if errors.Is(err, ErrNeedsSMTPUTF8) {
		return fmt.Errorf("%w: %s", ErrNeedsSMTPUTF8, field)
	}
	if err != nil {
		return invalid("%s: the domain is not a valid internationalized domain name", field)
	}
	*s = (&netmail.Address{Name: a.Name, Address: spec}).String()
	return nil
}

// DotString reports whether the addr-spec addr (as net/mail's
// Address.Address gives it, unquoted) can be written as an SMTP path
// (RFC 5321 section 4.1.2) without quoting: its local part is a dot-string
// of atext characters (RFC 5322 section 3.2.3) and UTF-8 letters (RFC 6531),
// and its domain is a dot-atom of the same or a domain literal
// ("[192.0.2.1]") without white space.
//
// A quoted local part such as "a> SIZE=1" is refused: unquoted into the
// envelope, it would end the path and smuggle ESMTP parameters into MAIL
// FROM or RCPT TO. The job schema's mailbox format applies the same rule at
// enqueue; Build and Envelope apply it again.
func DotString(addr string) bool {
	local, domain, ok := splitAddress(addr)
	if !ok {
		return false
	}
	if !dotAtom(local) {
		return false
	}
	if strings.HasPrefix(domain, "[") && strings.HasSuffix(domain, "]") {
		inner := domain[1 : len(domain)-1]
		if inner == "" {
			return false
		}
		for _, r := range inner {
			if r <= ' ' || r == 0x7f || r >= utf8.RuneSelf || strings.ContainsRune(`[]\<>"`, r) {
				return false
			}
		}
		return true
	}
	return dotAtom(domain)
}

// dotAtom reports whether s is a dot-atom: atext runs joined by single dots,
// non-ASCII letters allowed as RFC 6531 allows them.
func dotAtom(s string) bool {
	if s == "" || s[0] == '.' || s[len(s)-1] == '.' || strings.Contains(s, "..") {
		return false
	}
	for _, r := range s {
		switch {
		case r == '.':
		case r < utf8.RuneSelf:
			if !strings.ContainsRune(atextASCII, r) {
				return false
			}
		case r == utf8.RuneError, unicode.IsSpace(r), unicode.IsControl(r):
			return false
		}
	}
	return true
}

// atextASCII are the ASCII atext characters of RFC 5322 section 3.2.3.
const atextASCII = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!#$%&'*+-/=?^_`{|}~"
