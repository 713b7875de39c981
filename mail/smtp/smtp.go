// Package smtp is a mail.Transport that sends over SMTP with
// github.com/wneessen/go-mail.
//
// # Connections
//
// Each Send dials a connection of its own (go-mail's Client dials, says
// EHLO, starts TLS and authenticates), runs one mail transaction on it and
// closes it with QUIT, or drops it after a failure. There is no connection
// pool: a Transport is safe for concurrent use, each Send on its own
// connection. So nothing of one send reaches the next: a 501 on one
// recipient, a 421, a timeout or a half-read reply leaves no state behind on
// a connection that a later job would reuse
// (TestSendAfterRefusalOnSameTransport sends in a row after a 501).
//
// # Addresses
//
// After EHLO, Send looks at the server's extensions. A server that offers
// SMTPUTF8 (RFC 6531) gets the message as it is, addresses in UTF-8 and
// "SMTPUTF8" on MAIL FROM. Any other server gets mail.Message.ASCII of it:
// the domains of internationalized addresses in A-labels (punycode), in the
// envelope and in the header alike. A local part that is not ASCII has no
// such form: without SMTPUTF8 that message is mail.Unsupported (failed for
// good, never retried), and nothing is sent. Display names that are not
// ASCII are always RFC 2047-encoded (mail.Build).
//
// # Outcomes
//
// Send maps every outcome to a mail.Category (see Send for the full table).
// The rule that matters most: once the end of the data (the final ".") has
// been written to the server, a send without a reply (a timeout, a lost
// connection, a cancelled context) is mail.DeliveryUnknown, never
// mail.Retryable, as the server may have taken the message. Before that, any
// failure is mail.Retryable: the server cannot have taken it.
//
// # Recipients
//
// The transaction is driven here, over go-mail's SMTP client, rather than
// with go-mail's Client.Send: that one (sendSingleMsg in v0.8.1) sends RSET
// and gives up the whole message as soon as one RCPT TO is refused, and it
// does not tell whether the final "." was written. Here, when the server
// refuses some recipients and accepts others, the message goes to the
// accepted ones and the receipt is mail.Accepted, with Receipt.Refused
// listing each refused recipient with its code (a 4xx one included: it is
// not retried). When every recipient is refused, nothing is sent and the
// receipt takes the category, code and reason of the first refusal, with
// Refused listing them all.
package smtp

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/alexify/mailer/mail"
	gomail "github.com/wneessen/go-mail"
	gmsmtp "github.com/wneessen/go-mail/smtp"
)

// TLSPolicy tells whether a connection must, may or must not use STARTTLS.
type TLSPolicy int

const (
	// TLSOpportunistic starts TLS when the server offers STARTTLS and goes
	// on in clear when it does not. The default (the zero value).
	TLSOpportunistic TLSPolicy = iota
	// TLSMandatory starts TLS and refuses to send in clear: a server that
	// does not offer STARTTLS gives a mail.Configuration receipt.
	TLSMandatory
	// TLSNone never starts TLS.
	TLSNone
)

// String returns the policy's name.
func (p TLSPolicy) String() string {
	switch p {
	case TLSOpportunistic:
		return "opportunistic"
	case TLSMandatory:
		return "mandatory"
	case TLSNone:
		return "none"
	}
	return "TLSPolicy(" + strconv.Itoa(int(p)) + ")"
}

// DefaultTimeout is the Timeout of a Config that gives none.
const DefaultTimeout = 30 * time.Second

// DefaultPort is the Port of a Config that gives none (submission).
const DefaultPort = 587

// Config sets up a Transport.
type Config struct {
	// Host is the server's host name or IP address. Required. It is also
	// the name the server's certificate is checked against, unless
	// TLSConfig says otherwise.
	Host string
	// Port is the server's TCP port; 0 means DefaultPort (587).
	Port int
	// Username and Password are the credentials; with an empty Username the
	// transport does not authenticate. The mechanism is the first the server
	// offers of SCRAM-SHA-256, SCRAM-SHA-1, CRAM-MD5, PLAIN and LOGIN; PLAIN
	// and LOGIN are used only over TLS or to a loopback host (localhost,
	// 127.0.0.1, ::1).
	Username, Password string
	// TLS is the STARTTLS policy; the zero value is TLSOpportunistic.
	// Implicit TLS (port 465) is not supported yet.
	TLS TLSPolicy
	// TLSConfig configures TLS; nil means the system roots, ServerName Host
	// and TLS 1.2 at least.
	TLSConfig *tls.Config
	// HELO is the name given in EHLO; empty means the host name of the
	// machine.
	HELO string
	// Timeout bounds the dial, and then each step of the session (the
	// greeting to the authentication, MAIL FROM, each RCPT TO, DATA, the
	// writing of the message, the wait for the reply to its end) anew; 0
	// means DefaultTimeout (30s). The context given to Send bounds the
	// whole send besides.
	Timeout time.Duration
}

// Transport sends messages over SMTP. It implements mail.Transport and is
// safe for concurrent use.
type Transport struct {
	cfg Config
}

var _ mail.Transport = (*Transport)(nil)

// New checks cfg, fills in its defaults and returns a Transport. It does not
// connect. It fails when Host is empty, Port or Timeout is out of range or
// TLS is not one of the policies.
func New(cfg Config) (*Transport, error) {
	if cfg.Host == "" {
		return nil, errors.New("smtp: Config.Host is required")
	}
	if cfg.Port == 0 {
		cfg.Port = DefaultPort
	}
	if cfg.Port < 1 || cfg.Port > 65535 {
		return nil, fmt.Errorf("smtp: Config.Port %d out of range", cfg.Port)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Timeout < 0 {
		return nil, errors.New("smtp: Config.Timeout is negative")
	}
	if cfg.TLS < TLSOpportunistic || cfg.TLS > TLSNone {
		return nil, fmt.Errorf("smtp: unknown %v", cfg.TLS)
	}
	if hasCRLF(cfg.HELO) || hasCRLF(cfg.Host) {
		return nil, errors.New("smtp: Config.Host or HELO contains CR or LF")
	}
	if cfg.TLSConfig != nil {
		cfg.TLSConfig = cfg.TLSConfig.Clone()
	}
	return &Transport{cfg: cfg}, nil
}

func hasCRLF(s string) bool { return strings.ContainsAny(s, "\r\n") }

// client makes the go-mail client of one send. A client per send, as go-mail
// changes its auth settings while it dials (opportunistic auth).
func (t *Transport) client(conn *trackedDialer) (*gomail.Client, error) {
	opts := []gomail.Option{
		gomail.WithPort(t.cfg.Port),
		gomail.WithTimeout(t.cfg.Timeout),
		gomail.WithDialContextFunc(conn.dial),
		gomail.WithTLSPolicy(map[TLSPolicy]gomail.TLSPolicy{
			TLSOpportunistic: gomail.TLSOpportunistic,
			TLSMandatory:     gomail.TLSMandatory,
			TLSNone:          gomail.NoTLS,
		}[t.cfg.TLS]),
	}
	if t.cfg.TLSConfig != nil {
		opts = append(opts, gomail.WithTLSConfig(t.cfg.TLSConfig.Clone()))
	}
	if t.cfg.HELO != "" {
		opts = append(opts, gomail.WithHELO(t.cfg.HELO))
	}
	if t.cfg.Username != "" {
		opts = append(opts,
			gomail.WithUsername(t.cfg.Username),
			gomail.WithPassword(t.cfg.Password),
			gomail.WithOpportunisticSMTPAuth(
				gomail.SMTPAuthSCRAMSHA256, gomail.SMTPAuthSCRAMSHA1, gomail.SMTPAuthCramMD5,
				gomail.SMTPAuthPlain, gomail.SMTPAuthLogin,
			))
	}
	return gomail.NewClient(t.cfg.Host, opts...)
}

// trackedDialer dials the connection of one send and keeps it, so that a
// cancelled context can close it and a failed write can be told.
type trackedDialer struct {
	mu        sync.Mutex
	conn      net.Conn
	closed    bool
	writeFail bool
}

func (d *trackedDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var nd net.Dialer
	c, err := nd.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		_ = c.Close()
		return nil, net.ErrClosed
	}
	d.conn = c
	return &trackedConn{Conn: c, d: d}, nil
}

// close closes the connection, now and for one dialed later.
func (d *trackedDialer) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	if d.conn != nil {
		_ = d.conn.Close()
	}
}

// resetWriteFail forgets the failed writes so far.
func (d *trackedDialer) resetWriteFail() {
	d.mu.Lock()
	d.writeFail = false
	d.mu.Unlock()
}

// writeFailed tells whether a write failed since resetWriteFail.
func (d *trackedDialer) writeFailed() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.writeFail
}

type trackedConn struct {
	net.Conn
	d *trackedDialer
}

// Write records a failure: a write that fails did not hand its last bytes
// to the network.
func (c *trackedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if err != nil {
		c.d.mu.Lock()
		c.d.writeFail = true
		c.d.mu.Unlock()
	}
	return n, err
}

// Send sends msg in one SMTP session and returns its receipt; the error is
// nil exactly when the receipt is mail.Accepted, and is otherwise a
// *mail.Error with the same receipt and the cause. Send does not retry.
//
// The categories:
//
//   - a 250 reply to the end of the data: Accepted, Code 250, ProviderID the
//     server's text after the code and the enhanced status code (such as
//     "Ok: queued as 4F2B31C0A4"), Refused the recipients refused (see the
//     package documentation);
//   - a 4xx reply at any step: Retryable;
//   - 530, 534, 535, 538 (or the enhanced codes 5.7.8, 5.7.9, 5.7.11) at any
//     step: Auth;
//   - 500, 501, 555 at MAIL, RCPT or DATA: Validation; 5.6.7 (SMTPUTF8
//     needed): Unsupported; any other 5xx at MAIL, RCPT, DATA or at the end
//     of the data: Rejected;
//   - any other 5xx before MAIL (the greeting, EHLO, STARTTLS, AUTH), a TLS
//     certificate that does not verify, STARTTLS not offered under
//     TLSMandatory, no usable authentication mechanism: Configuration;
//   - a message Build refuses (mail.ErrInvalidMessage): Validation, Code 0;
//   - an address whose local part is not ASCII to a server that does not
//     offer SMTPUTF8 (mail.ErrNeedsSMTPUTF8): Unsupported, Code 0, before
//     MAIL FROM;
//   - a refused or failed dial, a lost connection or a timeout before the
//     final "." was written, and a context cancelled before then: Retryable
//     (the cause is ctx.Err() when the context ended);
//   - no reply to the end of the data (a timeout, a lost connection, a
//     context cancelled while waiting), or a reply that cannot be read:
//     DeliveryUnknown.
//
// The Reason is the server's reply (or a description of the failure) with
// every address replaced by mail.AddressPlaceholder; the cause of a server
// reply is a *textproto.Error whose Msg is redacted the same way.
func (t *Transport) Send(ctx context.Context, msg *mail.Message) (mail.Receipt, error) {
	if err := ctx.Err(); err != nil {
		return fail(mail.Retryable, 0, "cancelled before connecting", err)
	}
	p, err := payloadOf(msg)
	if err != nil {
		return invalidMessage(err)
	}

	d := &trackedDialer{}
	defer d.close()
	stop := context.AfterFunc(ctx, d.close)
	defer stop()

	gc, err := t.client(d)
	if err != nil {
		return fail(mail.Configuration, 0, "bad client settings: "+mail.Redact(err.Error()), err)
	}
	c, err := gc.DialToSMTPClientWithContext(ctx)
	if err != nil {
		return t.setupFailure(ctx, err)
	}
	s := &session{t: t, ctx: ctx, c: c, d: d}
	if e := s.fit(msg, &p); e != nil {
		return e.receipt, e.err
	}
	return s.transaction(p)
}

// payload is what a send writes: the message's bytes and its envelope.
type payload struct {
	data  []byte
	from  string
	rcpts []string
}

// payloadOf builds the message and its envelope; the errors wrap
// mail.ErrInvalidMessage.
func payloadOf(msg *mail.Message) (payload, error) {
	data, err := msg.Bytes()
	if err != nil {
		return payload{}, err
	}
	from, rcpts, err := msg.Envelope()
	if err != nil {
		return payload{}, err
	}
	return payload{data: data, from: from, rcpts: rcpts}, nil
}

// ended is how a send ended before its last step: its receipt and error.
type ended struct {
	receipt mail.Receipt
	err     error
}

func endWith(r mail.Receipt, err error) *ended { return &ended{receipt: r, err: err} }

// session is one send on its connection, from the end of the dial.
type session struct {
	t   *Transport
	ctx context.Context
	c   *gmsmtp.Client
	d   *trackedDialer
}

// fit gives a server that does not offer SMTPUTF8 the message of
// mail.Message.ASCII, when the message needs it: addresses in UTF-8 go only
// to a server that offers SMTPUTF8. A message that has no ASCII form ends
// the send, before MAIL FROM.
func (s *session) fit(msg *mail.Message, p *payload) *ended {
	if ok, _ := s.c.Extension("SMTPUTF8"); ok || !msg.NeedsSMTPUTF8() {
		return nil
	}
	am, err := msg.ASCII()
	if err == nil {
		*p, err = payloadOf(am)
	}
	if err == nil {
		return nil
	}
	s.quit()
	if errors.Is(err, mail.ErrNeedsSMTPUTF8) {
		return endWith(fail(mail.Unsupported, 0, "a local part is not ASCII, and the server does not offer SMTPUTF8", err))
	}
	return endWith(invalidMessage(err))
}

// transaction runs the mail transaction: MAIL FROM, RCPT TO for each
// recipient, DATA, the message and its end.
func (s *session) transaction(p payload) (mail.Receipt, error) {
	if e := s.step("MAIL FROM", func() error { return s.c.Mail("<" + p.from + ">") }); e != nil {
		return e.receipt, e.err
	}
	refused, e := s.recipients(p.rcpts)
	if e != nil {
		return e.receipt, e.err
	}
	w, e := s.data(p.data)
	if e != nil {
		return e.receipt, e.err
	}
	return s.end(w, refused)
}

// recipients sends RCPT TO for each recipient, one by one, and returns the
// refused ones. When every one is refused, the send ends with the first
// refusal.
func (s *session) recipients(rcpts []string) ([]mail.RefusedRecipient, *ended) {
	var refused []mail.RefusedRecipient
	var first *textproto.Error
	accepted := 0
	for _, rcpt := range rcpts {
		if err := s.c.UpdateDeadline(s.t.cfg.Timeout); err != nil {
			return nil, endWith(s.t.beforeData(s.ctx, "RCPT TO", err))
		}
		err := s.c.Rcpt("<" + rcpt + ">")
		var te *textproto.Error
		switch {
		case err == nil:
			accepted++
		case errors.As(err, &te):
			refused = append(refused, mail.RefusedRecipient{
				Address: rcpt, Code: te.Code, Reason: mail.Redact(te.Msg),
			})
			if first == nil {
				first = te
			}
		default:
			return nil, endWith(s.t.beforeData(s.ctx, "RCPT TO", err))
		}
	}
	if accepted == 0 {
		r := mail.Receipt{
			Category: classify(first.Code, first.Msg), Code: first.Code,
			Reason: mail.Redact(first.Msg), Refused: refused,
		}
		return nil, endWith(r, &mail.Error{Receipt: r, Err: redactedReply(first)})
	}
	return refused, nil
}

// data sends DATA and writes the message, all but its end.
func (s *session) data(data []byte) (io.WriteCloser, *ended) {
	var w io.WriteCloser
	if e := s.step("DATA", func() (err error) { w, err = s.c.Data(); return err }); e != nil {
		return nil, e
	}
	if err := s.ctx.Err(); err != nil {
		return nil, endWith(fail(mail.Retryable, 0, "cancelled before the message was sent", err))
	}
	if err := s.c.UpdateDeadline(s.t.cfg.Timeout); err != nil {
		return nil, endWith(s.t.beforeData(s.ctx, "writing the message", err))
	}
	if _, err := w.Write(data); err != nil {
		return nil, endWith(s.t.beforeData(s.ctx, "writing the message", err))
	}
	if err := s.ctx.Err(); err != nil {
		return nil, endWith(fail(mail.Retryable, 0, "cancelled before the end of the message was sent", err))
	}
	if err := s.c.UpdateDeadline(s.t.cfg.Timeout); err != nil {
		return nil, endWith(s.t.beforeData(s.ctx, "writing the message", err))
	}
	return w, nil
}

// end writes the end of the data (Close writes the final "." and reads the
// reply) and makes the receipt. Once the "." is written, a send without a
// reply may have gone: DeliveryUnknown.
func (s *session) end(w io.WriteCloser, refused []mail.RefusedRecipient) (mail.Receipt, error) {
	s.d.resetWriteFail()
	if err := w.Close(); err != nil {
		var te *textproto.Error
		switch {
		case errors.As(err, &te):
			return s.t.replyFailure(err)
		case s.d.writeFailed():
			// The final "." could not be written: the server cannot have
			// taken the message.
			return s.t.beforeData(s.ctx, "writing the end of the message", err)
		case s.ctx.Err() != nil:
			return fail(mail.DeliveryUnknown, 0, "cancelled while waiting for the reply to the end of the message", s.ctx.Err())
		}
		return fail(mail.DeliveryUnknown, 0, "no reply to the end of the message: "+describe(err), err)
	}
	r := mail.Receipt{Category: mail.Accepted, Code: 250, Refused: refused}
	if dc, ok := w.(*gmsmtp.DataCloser); ok {
		r.ProviderID = mail.Redact(strings.TrimSpace(enhancedPrefix.ReplaceAllString(dc.ServerResponse(), "")))
		r.Reason = mail.Redact(dc.ServerResponse())
	}
	// The message is taken; QUIT is a courtesy whose failure changes nothing.
	s.quit()
	return r, nil
}

// quit says QUIT, briefly; its failure changes nothing.
func (s *session) quit() {
	_ = s.c.UpdateDeadline(min(s.t.cfg.Timeout, 5*time.Second))
	_ = s.c.Quit()
}

// step runs one command before the data and maps its failure; nil when the
// command succeeded.
func (s *session) step(name string, f func() error) *ended {
	if err := s.ctx.Err(); err != nil {
		return endWith(fail(mail.Retryable, 0, "cancelled before "+name, err))
	}
	if err := s.c.UpdateDeadline(s.t.cfg.Timeout); err != nil {
		return endWith(s.t.beforeData(s.ctx, name, err))
	}
	err := f()
	if err == nil {
		return nil
	}
	var te *textproto.Error
	if errors.As(err, &te) {
		return endWith(s.t.replyFailure(err))
	}
	return endWith(s.t.beforeData(s.ctx, name, err))
}

// beforeData maps a failure without a reply before the final "." was
// written: the server cannot have taken the message.
func (t *Transport) beforeData(ctx context.Context, step string, err error) (mail.Receipt, error) {
	if ctx.Err() != nil {
		return fail(mail.Retryable, 0, "cancelled at "+step, ctx.Err())
	}
	if strings.Contains(err.Error(), "must not contain CR or LF") {
		return fail(mail.Validation, 0, "an address contains CR or LF", err)
	}
	return fail(mail.Retryable, 0, step+": "+describe(err), err)
}

// setupFailure maps a failure of go-mail's dial (connect, greeting, EHLO,
// STARTTLS, AUTH).
func (t *Transport) setupFailure(ctx context.Context, err error) (mail.Receipt, error) {
	if ctx.Err() != nil {
		return fail(mail.Retryable, 0, "cancelled while connecting", ctx.Err())
	}
	var te *textproto.Error
	if errors.As(err, &te) {
		cat := classify(te.Code, te.Msg)
		if cat == mail.Rejected || cat == mail.Validation || cat == mail.Unsupported {
			// A 5xx before the transaction refuses this client, not the
			// message: the operator's to fix.
			cat = mail.Configuration
		}
		return fail(cat, te.Code, mail.Redact(te.Msg), redactedReply(te))
	}
	msg := err.Error()
	var (
		certErr  *tls.CertificateVerificationError
		unknown  x509.UnknownAuthorityError
		hostErr  x509.HostnameError
		invalidC x509.CertificateInvalidError
	)
	switch {
	case strings.Contains(msg, "does not support STARTTLS"):
		return fail(mail.Configuration, 0, "TLS is mandatory but the server does not offer STARTTLS", err)
	case errors.As(err, &certErr), errors.As(err, &unknown), errors.As(err, &hostErr), errors.As(err, &invalidC):
		return fail(mail.Configuration, 0, "the server's TLS certificate does not verify: "+mail.Redact(msg), err)
	case strings.Contains(msg, "does not support SMTP AUTH"),
		errors.Is(err, gomail.ErrNoSupportedAuthDiscovered),
		errors.Is(err, gomail.ErrPlainAuthNotSupported),
		errors.Is(err, gomail.ErrLoginAuthNotSupported),
		errors.Is(err, gomail.ErrCramMD5AuthNotSupported),
		errors.Is(err, gomail.ErrSCRAMSHA1AuthNotSupported),
		errors.Is(err, gomail.ErrSCRAMSHA256AuthNotSupported),
		errors.Is(err, gmsmtp.ErrUnencrypted),
		errors.Is(err, gmsmtp.ErrWrongHostname):
		return fail(mail.Configuration, 0, "no usable authentication: "+mail.Redact(msg), err)
	}
	return fail(mail.Retryable, 0, "connecting: "+describe(err), err)
}

// replyFailure maps a server's refusal (err holds a *textproto.Error).
func (t *Transport) replyFailure(err error) (mail.Receipt, error) {
	var te *textproto.Error
	if !errors.As(err, &te) {
		return fail(mail.Retryable, 0, describe(err), err)
	}
	return fail(classify(te.Code, te.Msg), te.Code, mail.Redact(te.Msg), redactedReply(te))
}

func redactedReply(te *textproto.Error) error {
	return &textproto.Error{Code: te.Code, Msg: mail.Redact(te.Msg)}
}

// enhancedPrefix is an enhanced status code (RFC 3463) at the start of a
// reply's text.
var enhancedPrefix = regexp.MustCompile(`^\s*[245]\.\d{1,3}\.\d{1,3}\s*`)

var enhancedCode = regexp.MustCompile(`^\s*([245]\.\d{1,3}\.\d{1,3})\b`)

// classify maps a reply code, with the enhanced status code that may open
// its text, to a category.
func classify(code int, text string) mail.Category {
	enh := ""
	if m := enhancedCode.FindStringSubmatch(text); m != nil {
		enh = m[1]
	}
	switch {
	case code >= 200 && code < 400:
		// A positive reply where a failure was expected cannot happen here.
		return mail.Retryable
	case code == 530 || code == 534 || code == 535 || code == 538,
		enh == "5.7.8" || enh == "5.7.9" || enh == "5.7.11":
		return mail.Auth
	case code >= 400 && code < 500:
		return mail.Retryable
	case code == 500 || code == 501 || code == 555:
		return mail.Validation
	case enh == "5.6.7":
		return mail.Unsupported
	case code >= 500 && code < 600:
		return mail.Rejected
	}
	return mail.Retryable
}

// describe names a failure without a reply, without any address.
func describe(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed by the server"
	case errors.Is(err, net.ErrClosed):
		return "connection closed"
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	}
	return mail.Redact(err.Error())
}

func invalidMessage(err error) (mail.Receipt, error) {
	return fail(mail.Validation, 0, err.Error(), err)
}

func fail(cat mail.Category, code int, reason string, cause error) (mail.Receipt, error) {
	r := mail.Receipt{Category: cat, Code: code, Reason: reason}
	return r, &mail.Error{Receipt: r, Err: cause}
}
