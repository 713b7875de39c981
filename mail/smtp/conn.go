package smtp

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/textproto"
	"strings"
	"sync"

	gomail "github.com/wneessen/go-mail"
	gmsmtp "github.com/wneessen/go-mail/smtp"

	"github.com/alexify/mailer/mail"
)

// client makes the go-mail client that sets up one connection. A client per
// connection, as go-mail changes its auth settings while it dials
// (opportunistic auth).
func (t *Transport) client(d *trackedDialer) (*gomail.Client, error) {
	policy := gomail.TLSMandatory
	switch {
	case t.implicit, t.cfg.TLS == TLSNone:
		// Under implicit TLS the dialer has started TLS already.
		policy = gomail.NoTLS
	case t.cfg.TLS == TLSOpportunistic:
		policy = gomail.TLSOpportunistic
	}
	opts := []gomail.Option{
		gomail.WithPort(t.cfg.Port),
		gomail.WithTimeout(t.cfg.Timeout),
		gomail.WithDialContextFunc(d.dial),
		gomail.WithTLSPolicy(policy),
		gomail.WithTLSConfig(t.tlsConfig.Clone()),
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

// dial opens a connection and sets it up (greeting, EHLO, TLS, AUTH). When it
// fails it returns nil and the receipt and error of the failure.
func (t *Transport) dial(ctx context.Context) (*pooled, mail.Receipt, error) {
	d := &trackedDialer{}
	if t.implicit {
		d.tls = t.tlsConfig
	}
	gc, err := t.client(d)
	if err != nil {
		r, err := fail(mail.Configuration, "bad client settings: "+mail.Redact(err.Error()), err)
		return nil, r, err
	}
	stop := context.AfterFunc(ctx, d.close)
	defer stop()
	c, err := gc.DialToSMTPClientWithContext(ctx)
	if err != nil {
		d.close()
		r, err := t.setupFailure(ctx, err)
		return nil, r, err
	}
	return &pooled{c: c, d: d}, mail.Receipt{}, nil
}

// trackedDialer dials the connection of one send and keeps it, so that a
// cancelled context can close it and a failed write can be told. With tls
// set, it starts TLS on the connection before the greeting (implicit TLS).
type trackedDialer struct {
	tls *tls.Config

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
	if d.closed {
		d.mu.Unlock()
		_ = c.Close()
		return nil, net.ErrClosed
	}
	d.conn = c
	d.mu.Unlock()
	var conn net.Conn = &trackedConn{Conn: c, d: d}
	if d.tls != nil {
		// go-mail's Client takes the connection as TLS (for AUTH PLAIN) when
		// it is a *tls.Conn, so the TLS layer is the outer one.
		tc := tls.Client(conn, d.tls.Clone())
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = c.Close()
			return nil, &handshakeError{err: err}
		}
		conn = tc
	}
	return conn, nil
}

// handshakeError is a failed TLS handshake of implicit TLS.
type handshakeError struct{ err error }

func (e *handshakeError) Error() string { return "TLS handshake: " + e.err.Error() }
func (e *handshakeError) Unwrap() error { return e.err }

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

// setupStep is the step of a reply during the setup of a connection.
const setupStep = "the session's setup (greeting, EHLO, STARTTLS, AUTH)"

// setupFailure maps a failure of the setup of a connection (the dial, the
// greeting, EHLO, STARTTLS, AUTH). Nothing was sent: a failure without a
// reply, or a 4xx that is not a throttle, is an outage
// (mail.ErrUnavailable).
func (t *Transport) setupFailure(ctx context.Context, err error) (mail.Receipt, error) {
	if ctx.Err() != nil {
		return fail(mail.Retryable, "cancelled while connecting", ctx.Err())
	}
	var te *textproto.Error
	if errors.As(err, &te) {
		cat := classify(te.Code, te.Msg)
		switch cat {
		case mail.Rejected, mail.Validation, mail.Unsupported:
			// A 5xx before the transaction refuses this client, not the
			// message: the operator's to fix.
			cat = mail.Configuration
		case mail.Retryable:
			r, _ := t.reply(cat, te, setupStep)
			return r, &mail.Error{Receipt: r, Err: fmt.Errorf("%w: %w", mail.ErrUnavailable, redactedReply(te))}
		}
		return t.reply(cat, te, setupStep)
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
		return fail(mail.Configuration, "TLS is mandatory but the server does not offer STARTTLS", err)
	case errors.As(err, &certErr), errors.As(err, &unknown), errors.As(err, &hostErr), errors.As(err, &invalidC):
		return fail(mail.Configuration, "the server's TLS certificate does not verify: "+mail.Redact(msg), err)
	case strings.Contains(msg, "does not support SMTP AUTH"),
		errors.Is(err, gomail.ErrNoSupportedAuthDiscovered),
		errors.Is(err, gomail.ErrPlainAuthNotSupported),
		errors.Is(err, gomail.ErrLoginAuthNotSupported),
		errors.Is(err, gomail.ErrCramMD5AuthNotSupported),
		errors.Is(err, gomail.ErrSCRAMSHA1AuthNotSupported),
		errors.Is(err, gomail.ErrSCRAMSHA256AuthNotSupported),
		errors.Is(err, gmsmtp.ErrUnencrypted),
		errors.Is(err, gmsmtp.ErrWrongHostname):
		return fail(mail.Configuration, "no usable authentication: "+mail.Redact(msg), err)
	}
	var he *handshakeError
	if errors.As(err, &he) {
		return mail.Unavailable("TLS handshake: "+describe(he.err), err)
	}
	return mail.Unavailable("connecting: "+describe(err), err)
}
