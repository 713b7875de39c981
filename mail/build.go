package mail

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	netmail "net/mail"
	"regexp"
	"slices"
	"strconv"
	"strings"

	gomail "github.com/wneessen/go-mail"
)

// ErrInvalidMessage is wrapped by every error Build, Bytes, WriteTo and
// Envelope return for a message that cannot be built as given: a missing or
// malformed Message-ID, no Date, a bad address, no recipient, no body, a bad
// header or attachment. Such a message fails for good: the queue fails its
// job with queue.invalid_message. Match it with errors.Is. The error's text
// names the field (such as "to[1]") but never quotes an address.
var ErrInvalidMessage = errors.New("mail: invalid message")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidMessage, fmt.Sprintf(format, args...))
}

// atext of RFC 5322 plus '.', the characters of a dot-atom.
const atext = "-A-Za-z0-9!#$%&'*+/=?^_`{|}~."

var (
	messageIDPattern = regexp.MustCompile(`^<[` + atext + `]+@[` + atext + `\[\]]+>$`)
	contentIDPattern = regexp.MustCompile(`^[` + atext + `@]+$`)
	headerNamePat    = regexp.MustCompile(`^[!-9;-~]+$`) // printable ASCII but ':'
)

// reservedHeaders are the fields Build writes itself; Message.Headers may not
// set them.
var reservedHeaders = []string{
	"bcc", "cc", "content-description", "content-disposition", "content-id",
	"content-transfer-encoding", "content-type", "date", "from", "message-id",
	"mime-version", "reply-to", "sender", "subject", "to",
}

// Build validates msg and returns it as a go-mail message, with the
// Message-ID, the Date, the Content-IDs and the headers as msg gives them.
//
// The Date is written in UTC (RFC 1123Z, "+0000"), so the bytes do not depend
// on the zone of the process. No User-Agent or X-Mailer is added, so the bytes
// do not change with the version of go-mail. A Text and an HTML body make a
// multipart/alternative (the text first); inline attachments go into a
// multipart/related with the bodies, the others into a multipart/mixed. The
// Bcc recipients are set on the go-mail message (its GetRecipients has them)
// but go-mail never writes a Bcc header.
//
// When the message has a single multipart level, Build fixes its boundary
// (derived from the Message-ID), so writing the returned message gives the
// same bytes each time. With nested levels go-mail v0.8.1 cannot fix the
// boundaries (SetBoundary sets one boundary for every level, which would
// break the message), so the returned message draws random ones: use
// Message.Bytes or Message.WriteTo for the canonical, deterministic bytes.
//
// Every address must parse as one RFC 5322 mailbox whose addr-spec is a
// dot-string (DotString): a quoted local part is refused, as it could not
// go into the SMTP envelope unchanged. A display name that is not ASCII is
// encoded (RFC 2047, in the display name only); an address that is not ASCII
// is written as it is (RFC 6532): an SMTP transport gives a server without
// SMTPUTF8 the message of Message.ASCII instead. A Message-ID or Content-ID
// on an internationalized domain is written with the domain in A-labels
// (punycode).
//
// Errors wrap ErrInvalidMessage.
func Build(msg *Message) (*gomail.Msg, error) {
	messageID, err := checkFields(msg)
	if err != nil {
		return nil, err
	}
	addrs, err := parseMailboxes(msg)
	if err != nil {
		return nil, err
	}
	m := gomail.NewMsg(gomail.WithNoDefaultUserAgent())
	m.SetMessageIDWithValue(strings.TrimSuffix(strings.TrimPrefix(messageID, "<"), ">"))
	m.SetDateWithValue(msg.Date.UTC())
	addrs.set(m)
	m.Subject(msg.Subject)
	if err := setHeaders(m, msg.Headers); err != nil {
		return nil, err
	}
	setBodies(m, msg)
	levels, err := addAttachments(m, msg.Attachments)
	if err != nil {
		return nil, err
	}
	if msg.Text != "" && msg.HTML != "" {
		levels++
	}
	if levels == 1 {
		// One multipart level: go-mail's SetBoundary is safe and makes the
		// go-mail message itself deterministic.
		m.SetBoundary(boundary(msg.MessageID, 0))
	}
	return m, nil
}

// checkFields checks what Build needs of the message besides its addresses,
// headers and attachments: a Message-ID of the form <left@right>, a Date, a
// body, a Subject on one line. It returns the Message-ID with its domain in
// ASCII.
func checkFields(msg *Message) (string, error) {
	if msg == nil {
		return "", invalid("nil message")
	}
	if msg.MessageID == "" {
		return "", invalid("message id: required")
	}
	messageID, err := asciiID(msg.MessageID)
	if err != nil || !messageIDPattern.MatchString(messageID) {
		return "", invalid("message id: not of the form <left@right>")
	}
	if msg.Date.IsZero() {
		return "", invalid("date: required")
	}
	if msg.HTML == "" && msg.Text == "" {
		return "", invalid("body: neither HTML nor Text is set")
	}
	if hasCRLF(msg.Subject) {
		return "", invalid("subject: contains CR or LF")
	}
	return messageID, nil
}

// mailboxes are the parsed addresses of a message.
type mailboxes struct {
	from                 *netmail.Address
	to, cc, bcc, replyTo []*netmail.Address
}

// parseMailboxes parses every address of the message, in the order From,
// To, Cc, Bcc, Reply-To; a message needs a recipient in To, Cc or Bcc.
func parseMailboxes(msg *Message) (mailboxes, error) {
	var a mailboxes
	var err error
	if a.from, err = parseAddress("from", msg.From); err != nil {
		return a, err
	}
	if a.to, err = parseAddresses("to", msg.To); err != nil {
		return a, err
	}
	if a.cc, err = parseAddresses("cc", msg.Cc); err != nil {
		return a, err
	}
	if a.bcc, err = parseAddresses("bcc", msg.Bcc); err != nil {
		return a, err
	}
	if len(a.to)+len(a.cc)+len(a.bcc) == 0 {
		return a, invalid("recipients: no To, Cc or Bcc")
	}
	if a.replyTo, err = parseAddresses("reply-to", msg.ReplyTo); err != nil {
		return a, err
	}
	return a, nil
}

// set writes the addresses on the go-mail message; an empty list sets no
// header.
func (a mailboxes) set(m *gomail.Msg) {
	m.FromMailAddress(a.from)
	if len(a.to) > 0 {
		m.ToMailAddress(a.to...)
	}
	if len(a.cc) > 0 {
		m.CcMailAddress(a.cc...)
	}
	if len(a.bcc) > 0 {
		m.BccMailAddress(a.bcc...)
	}
	if len(a.replyTo) > 0 {
		m.ReplyToMailAddress(a.replyTo...)
	}
}

// setHeaders sets the extra header fields in the order of their names. A
// name must be printable ASCII without ':' and not a field Build writes
// itself; a value must be on one line.
func setHeaders(m *gomail.Msg, headers map[string]string) error {
	names := make([]string, 0, len(headers))
	for name := range headers {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		value := headers[name]
		switch {
		case !headerNamePat.MatchString(name):
			return invalid("header %q: not a field name", name)
		case slices.Contains(reservedHeaders, strings.ToLower(name)):
			return invalid("header %q: set by the message's own fields", name)
		case hasCRLF(value):
			return invalid("header %q: value contains CR or LF", name)
		}
		m.SetGenHeader(gomail.Header(name), value)
	}
	return nil
}

// setBodies sets the bodies: a Text and an HTML make a
// multipart/alternative, the text first.
func setBodies(m *gomail.Msg, msg *Message) {
	switch {
	case msg.Text != "" && msg.HTML != "":
		m.SetBodyString(gomail.TypeTextPlain, msg.Text)
		m.AddAlternativeString(gomail.TypeTextHTML, msg.HTML)
	case msg.Text != "":
		m.SetBodyString(gomail.TypeTextPlain, msg.Text)
	default:
		m.SetBodyString(gomail.TypeTextHTML, msg.HTML)
	}
}

// addAttachments embeds the inline attachments and attaches the others. It
// returns the multipart levels they open: one for the inline ones (a
// multipart/related), one for the others (a multipart/mixed).
func addAttachments(m *gomail.Msg, attachments []Attachment) (int, error) {
	var inline, attached int
	for i, a := range attachments {
		opts, err := attachmentOptions(i, a)
		if err != nil {
			return 0, err
		}
		if a.Inline {
			inline++
			err = m.EmbedReader(a.Filename, bytes.NewReader(a.Data), opts...)
		} else {
			attached++
			err = m.AttachReader(a.Filename, bytes.NewReader(a.Data), opts...)
		}
		if err != nil {
			// go-mail reads a bytes.Reader, which does not fail; should a
			// later go-mail fail here, the message is not built as given.
			return 0, fmt.Errorf("%w: attachment[%d]: %w", ErrInvalidMessage, i, err)
		}
	}
	levels := 0
	if inline > 0 {
		levels++
	}
	if attached > 0 {
		levels++
	}
	return levels, nil
}

func attachmentOptions(i int, a Attachment) ([]gomail.FileOption, error) {
	if a.Filename == "" {
		return nil, invalid("attachment[%d]: no filename", i)
	}
	if hasCRLF(a.Filename) {
		return nil, invalid("attachment[%d]: filename contains CR or LF", i)
	}
	var opts []gomail.FileOption
	if a.ContentType != "" {
		mediaType, _, err := mime.ParseMediaType(a.ContentType)
		if err != nil || strings.HasPrefix(mediaType, "multipart/") || hasCRLF(a.ContentType) {
			return nil, invalid("attachment[%d]: bad content type", i)
		}
		opts = append(opts, gomail.WithFileContentType(gomail.ContentType(a.ContentType)))
	} else {
		opts = append(opts, gomail.WithFileContentType("application/octet-stream"))
	}
	if a.ContentID != "" {
		cid, err := asciiID(a.ContentID)
		if err != nil || !contentIDPattern.MatchString(cid) {
			return nil, invalid("attachment[%d]: bad content id (give it without angle brackets)", i)
		}
		opts = append(opts, gomail.WithFileContentID("<"+cid+">"))
	} else if a.Inline {
		return nil, invalid("attachment[%d]: inline without a content id", i)
	}
	return opts, nil
}

func hasCRLF(s string) bool { return strings.ContainsAny(s, "\r\n") }

// asciiID returns a Message-ID ("<left@right>") or a Content-ID
// ("left@right") with a right side that is an internationalized domain
// name in A-labels (punycode): the queue derives both on the domain of
// From, which may be an IDN. An ASCII id comes back unchanged.
func asciiID(id string) (string, error) {
	if isASCII(id) {
		return id, nil
	}
	angled := strings.HasPrefix(id, "<") && strings.HasSuffix(id, ">")
	bare := strings.TrimSuffix(strings.TrimPrefix(id, "<"), ">")
	left, right, ok := splitAddress(bare)
	if !ok || !isASCII(left) {
		return "", invalid("id: not ASCII")
	}
	d, err := ASCIIDomain(right)
	if err != nil {
		return "", err
	}
	out := left + "@" + d
	if angled {
		out = "<" + out + ">"
	}
	return out, nil
}

func parseAddress(field, s string) (*netmail.Address, error) {
	if s == "" {
		return nil, invalid("%s: required", field)
	}
	a, err := netmail.ParseAddress(s)
	if err != nil {
		// Not the parser's error: it may quote the input.
		return nil, invalid("%s: not a single RFC 5322 address", field)
	}
	if !DotString(a.Address) {
		return nil, invalid("%s: a quoted local part or a character an SMTP path cannot carry (see DotString)", field)
	}
	return a, nil
}

func parseAddresses(field string, list []string) ([]*netmail.Address, error) {
	out := make([]*netmail.Address, 0, len(list))
	for i, s := range list {
		a, err := parseAddress(field+"["+strconv.Itoa(i)+"]", s)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// boundary derives the MIME boundary of the index-th multipart level (in the
// order they open) from the Message-ID: the hexadecimal SHA-256 of the
// Message-ID, a NUL and the index, 64 characters a boundary may hold
// unquoted.
func boundary(messageID string, index int) string {
	sum := sha256.Sum256([]byte(messageID + "\x00" + strconv.Itoa(index)))
	return hex.EncodeToString(sum[:])
}

// Bytes builds the message and returns its RFC 5322 bytes, with CRLF line
// endings. The same Message gives the same bytes on every call and in every
// process (whatever the time zone): the MIME boundaries derive from the
// Message-ID, the Date is written in UTC, and no clock is read. Errors wrap
// ErrInvalidMessage when the message is invalid.
func (m *Message) Bytes() ([]byte, error) {
	gm, err := Build(m)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if _, err := gm.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("mail: write message: %w", err)
	}
	return fixBoundaries(buf.Bytes(), m.MessageID)
}

// WriteTo writes the bytes Bytes returns to w and returns how many were
// written. Nothing is written when the message is invalid.
func (m *Message) WriteTo(w io.Writer) (int64, error) {
	b, err := m.Bytes()
	if err != nil {
		return 0, err
	}
	n, err := w.Write(b)
	return int64(n), err
}

// fixBoundaries replaces the random boundaries go-mail drew for nested
// multipart levels by boundaries derived from the Message-ID. The boundaries
// are found by parsing the MIME structure go-mail wrote (net/mail and
// mime/multipart), never by pattern; each is a 60-character hexadecimal
// string from crypto/rand, which content encoded as base64 or
// quoted-printable cannot contain by chance (2^-240). The MIME itself is
// go-mail's: only the boundary tokens change.
func fixBoundaries(raw []byte, messageID string) ([]byte, error) {
	var found []string
	parsed, err := netmail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("mail: read back built message: %w", err)
	}
	if err := collectBoundaries(parsed.Header.Get("Content-Type"), parsed.Body, &found); err != nil {
		return nil, fmt.Errorf("mail: read back built message: %w", err)
	}
	out := raw
	for i, b := range found {
		want := boundary(messageID, i)
		if b == want {
			continue
		}
		out = bytes.ReplaceAll(out, []byte(b), []byte(want))
	}
	return out, nil
}

func collectBoundaries(contentType string, body io.Reader, found *[]string) error {
	mediaType, params, err := mime.ParseMediaType(contentType)
	if err != nil || !strings.HasPrefix(mediaType, "multipart/") {
		return nil
	}
	b := params["boundary"]
	if b == "" {
		return errors.New("multipart without a boundary")
	}
	*found = append(*found, b)
	r := multipart.NewReader(body, b)
	for {
		p, err := r.NextRawPart()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := collectBoundaries(p.Header.Get("Content-Type"), p, found); err != nil {
			return err
		}
	}
}

// Envelope returns the SMTP envelope of the message: the bare address of From
// (the reverse path) and those of To, Cc and Bcc in that order, each once
// (compared without regard to case), in the order first given. Display names
// are dropped. Errors wrap ErrInvalidMessage.
func (m *Message) Envelope() (from string, rcpt []string, err error) {
	if m == nil {
		return "", nil, invalid("nil message")
	}
	f, err := parseAddress("from", m.From)
	if err != nil {
		return "", nil, err
	}
	for _, field := range []struct {
		name string
		list []string
	}{{"to", m.To}, {"cc", m.Cc}, {"bcc", m.Bcc}} {
		addrs, err := parseAddresses(field.name, field.list)
		if err != nil {
			return "", nil, err
		}
		for _, a := range addrs {
			if !slices.ContainsFunc(rcpt, func(s string) bool { return strings.EqualFold(s, a.Address) }) {
				rcpt = append(rcpt, a.Address)
			}
		}
	}
	if len(rcpt) == 0 {
		return "", nil, invalid("recipients: no To, Cc or Bcc")
	}
	return f.Address, rcpt, nil
}

// Clone returns a deep copy of the message: its slices, its map and the
// bytes of its attachments are copied.
func (m *Message) Clone() *Message {
	if m == nil {
		return nil
	}
	c := *m
	c.To = slices.Clone(m.To)
	c.Cc = slices.Clone(m.Cc)
	c.Bcc = slices.Clone(m.Bcc)
	c.ReplyTo = slices.Clone(m.ReplyTo)
	if m.Headers != nil {
		c.Headers = make(map[string]string, len(m.Headers))
		for k, v := range m.Headers {
			c.Headers[k] = v
		}
	}
	if m.Attachments != nil {
		c.Attachments = make([]Attachment, len(m.Attachments))
		for i, a := range m.Attachments {
			a.Data = bytes.Clone(a.Data)
			c.Attachments[i] = a
		}
	}
	return &c
}
