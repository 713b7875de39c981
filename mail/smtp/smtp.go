// Package smtp is a mail.Transport that sends over SMTP, with the session
// set up (greeting, EHLO, STARTTLS, AUTH) by github.com/wneessen/go-mail and
// the mail transaction driven here.
//
// # Connections
//
// A Transport keeps a pool of connections: at most Config.MaxConnections
// open at once (busy and idle together), a Send waiting for one when all are
// busy. A connection that ended its last transaction cleanly (a reply was
// read to every command) goes back to the pool and is reused by the next
// Send after an RSET, which also tells that the server still has it; a
// connection that fails its RSET is closed and another is dialed, as nothing
// was sent on it. A connection is closed instead of kept after a 421 (the
// server closes the channel), after any failure without a reply (a timeout,
// a lost connection, a cancelled context), after Config.MaxMessages
// messages, and once it has been idle for Config.IdleTimeout. So nothing of
// one send reaches the next: a 501 on one recipient or a half-done
// transaction is reset, and a half-read reply never stays on a pooled
// connection. Close ends the idle connections.
//
// # TLS
//
// STARTTLS is required by default (TLSMandatory, the zero value): a server
// that does not offer it gets nothing, and the receipt is
// mail.Configuration. TLSOpportunistic, only when set, goes on in clear when
// the server does not offer STARTTLS, and so may send the credentials and
// the message in clear to anyone who can strip STARTTLS from the reply to
// EHLO. TLSImplicit (port 465, RFC 8314) starts TLS before the greeting;
// port 465 under the default policy is implicit TLS too. TLSNone never
// starts TLS: for loopback servers in tests and demos. A TLSConfig without
// ServerName checks the certificate against Host.
//
// # Addresses
//
// After EHLO, Send looks at the server's extensions. A server that offers
// SMTPUTF8 (RFC 6531) gets a message that needs it as it is, addresses in
// UTF-8 and "SMTPUTF8" on MAIL FROM. Any other server gets
// mail.Message.ASCII of it: the domains of internationalized addresses in
// A-labels (punycode), in the envelope and in the header alike. A local part
// that is not ASCII has no such form: without SMTPUTF8 that message is
// mail.Unsupported (failed for good, never retried), and nothing is sent.
// Display names that are not ASCII are always RFC 2047-encoded
// (mail.Build). MAIL FROM carries SMTPUTF8 and BODY=8BITMIME only when the
// message needs them (an address in UTF-8; a byte above 127 in the data) and
// the server offers them, and SIZE= (RFC 1870) whenever the server offers
// SIZE; a message larger than the server's SIZE limit is refused
// (mail.Rejected) before MAIL FROM, so its data is never sent.
//
// # Outcomes
//
// Send maps every outcome to a mail.Category (see Send for the full table).
// The rule that matters most: once the end of the data (the final ".") has
// been written to the server, a send without a reply (a timeout, a lost
// connection, a cancelled context) is mail.DeliveryUnknown, never
// mail.Retryable, as the server may have taken the message. Before that, any
// failure is mail.Retryable (or another category that is not sent): the
// server cannot have taken it. A failure to reach the server at all (the
// connection refused, a name that does not resolve, a failed TLS handshake,
// a timeout or a lost connection before MAIL FROM) is also marked with
// mail.ErrUnavailable, so that the queue spends no attempt on an outage.
// Throttling replies are mail.RateLimited (see Send).
//
// # Recipients
//
// The transaction is driven here, over go-mail's SMTP client, rather than
// with go-mail's Client.Send: that one (sendSingleMsg in v0.8.1) sends RSET
// and gives up the whole message as soon as one RCPT TO is refused, and it
// does not tell whether the final "." was written. The rules, which never
// drop a recipient silently and never send to one twice:
//
//   - a recipient refused with a 5xx is refused for good: the message goes to
//     the others, and Receipt.Refused lists it with its code;
//   - "too many recipients" (452, or the enhanced code 4.5.3: a limit of the
//     server on one transaction, RFC 5321 §4.5.3.1.10) defers the rest to
//     another transaction on the same connection, once the message has gone
//     to the accepted ones, and so on while each transaction takes at least
//     one recipient;
//   - any other 4xx on a recipient (a throttle, a mailbox busy) while nothing
//     has been sent yet resets the transaction: nothing is sent, and the
//     receipt takes the category, code and reason of that reply, so the queue
//     retries the whole message later, every recipient with it;
//   - a recipient that still cannot be sent once the message has gone to
//     others (its later transaction refused or failed) is listed in
//     Receipt.Refused with the reply's code (a 4xx code: it was not sent, and
//     the queue does not retry it), or code 0 when the end of that
//     transaction's data had no reply (it may have gone);
//   - when every recipient is refused, nothing is sent and the receipt takes
//     the category, code and reason of the first refusal, with Refused
//     listing them all.
package smtp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/alexify/mailer/clock"
	"github.com/alexify/mailer/mail"
)

// TLSPolicy tells whether and how a connection uses TLS.
type TLSPolicy int

const (
	// TLSMandatory starts TLS with STARTTLS and refuses to send in clear: a
	// server that does not offer STARTTLS gives a mail.Configuration receipt.
	// The default (the zero value). On port 465 it means TLSImplicit.
	TLSMandatory TLSPolicy = iota
	// TLSOpportunistic starts TLS when the server offers STARTTLS and goes
	// on in clear when it does not. Only when set: an attacker on the path
	// can strip STARTTLS and read the credentials and the message.
	TLSOpportunistic
	// TLSNone never starts TLS: for a server on loopback (tests, demos).
	TLSNone
	// TLSImplicit starts TLS right after the TCP connection, before the
	// greeting (port 465, "submissions", RFC 8314 §3.3).
	TLSImplicit
)

// String returns the policy's name.
func (p TLSPolicy) String() string {
	switch p {
	case TLSMandatory:
		return "mandatory"
	case TLSOpportunistic:
		return "opportunistic"
	case TLSNone:
		return "none"
	case TLSImplicit:
		return "implicit"
	}
	return "TLSPolicy(" + strconv.Itoa(int(p)) + ")"
}

// The defaults a zero field of Config takes.
const (
	// DefaultTimeout is the Timeout of a Config that gives none.
	DefaultTimeout = 30 * time.Second
	// DefaultPort is the Port of a Config that gives none (submission);
	// under TLSImplicit it is ImplicitTLSPort.
	DefaultPort = 587
	// ImplicitTLSPort is the port of submission over implicit TLS
	// ("submissions", RFC 8314 §7.3), the default under TLSImplicit.
	ImplicitTLSPort = 465
	// DefaultMaxConnections is the MaxConnections of a Config that gives
	// none: few enough for a provider's limit per client (Postfix allows 50
	// by default), enough for a worker of a few concurrent jobs.
	DefaultMaxConnections = 4
	// DefaultIdleTimeout is the IdleTimeout of a Config that gives none:
	// well below the 5 minutes a server waits for a command (RFC 5321
	// §4.5.3.2.7), so a pooled connection is seldom found closed.
	DefaultIdleTimeout = 30 * time.Second
	// DefaultMaxMessages is the MaxMessages of a Config that gives none.
	DefaultMaxMessages = 100
	// DefaultRateLimitWait is the RetryAfter of a mail.RateLimited receipt:
	// an SMTP server never says how long to wait, and the rate limits of a
	// server (Postfix's anvil, the providers' per-minute quotas) count per
	// minute.
	DefaultRateLimitWait = time.Minute
)

// Config sets up a Transport.
type Config struct {
	// Host is the server's host name or IP address. Required. It is also
	// the name the server's certificate is checked against, unless
	// TLSConfig.ServerName says otherwise.
	Host string
	// Port is the server's TCP port; 0 means DefaultPort (587), or
	// ImplicitTLSPort (465) under TLSImplicit.
	Port int
	// Username and Password are the credentials; with an empty Username the
	// transport does not authenticate. The mechanism is the first the server
	// offers of SCRAM-SHA-256, SCRAM-SHA-1, CRAM-MD5, PLAIN and LOGIN; PLAIN
	// and LOGIN are used only over TLS or to a loopback host (localhost,
	// 127.0.0.1, ::1).
	Username, Password string
	// TLS is the TLS policy; the zero value is TLSMandatory (STARTTLS
	// required).
	TLS TLSPolicy
	// TLSConfig configures TLS; nil means the system roots, ServerName Host
	// and TLS 1.2 at least. A config without ServerName gets Host as its
	// ServerName (a config with only a custom CA, RootCAs, checks the
	// certificate against Host).
	TLSConfig *tls.Config
	// HELO is the name given in EHLO; empty means the host name of the
	// machine.
	HELO string
	// Timeout bounds the dial, and then each step of the session (the
	// greeting to the authentication, RSET, MAIL FROM, each RCPT TO, DATA,
	// the writing of the message, the wait for the reply to its end) anew; 0
	// means DefaultTimeout (30s). The context given to Send bounds the
	// whole send besides, the wait for a free connection included.
	Timeout time.Duration
	// MaxConnections is the most connections open at once, busy and idle
	// together; 0 means DefaultMaxConnections (4). A Send waits for a free
	// one, as long as its context allows.
	MaxConnections int
	// IdleTimeout is how long an idle connection is kept for the next Send;
	// 0 means DefaultIdleTimeout (30s).
	IdleTimeout time.Duration
	// MaxMessages is the most messages sent on one connection before it is
	// closed with QUIT; 0 means DefaultMaxMessages (100), 1 a connection per
	// message.
	MaxMessages int
	// RateLimitWait is the RetryAfter of a mail.RateLimited receipt; 0 means
	// DefaultRateLimitWait (1 minute).
	RateLimitWait time.Duration
	// Clock tells the time of the idle timeout; nil means the wall clock.
	Clock clock.Clock
}

// Transport sends messages over SMTP. It implements mail.Transport and is
// safe for concurrent use.
type Transport struct {
	cfg       Config
	implicit  bool
	tlsConfig *tls.Config
	clock     clock.Clock
	pool      *pool
}

var _ mail.Transport = (*Transport)(nil)

// New checks cfg, fills in its defaults and returns a Transport. It does not
// connect (Check does). It fails when Host is empty, Port, Timeout,
// MaxConnections, IdleTimeout, MaxMessages or RateLimitWait is out of range
// or TLS is not one of the policies.
func New(cfg Config) (*Transport, error) {
	if err := defaults(&cfg); err != nil {
		return nil, err
	}
	t := &Transport{cfg: cfg, clock: cfg.Clock}
	if t.clock == nil {
		t.clock = clock.Real()
	}
	t.implicit = cfg.TLS == TLSImplicit || (cfg.TLS == TLSMandatory && cfg.Port == ImplicitTLSPort)
	if cfg.TLSConfig != nil {
		t.tlsConfig = cfg.TLSConfig.Clone()
	} else {
		t.tlsConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if t.tlsConfig.ServerName == "" {
		t.tlsConfig.ServerName = cfg.Host
	}
	t.pool = newPool(cfg.MaxConnections, cfg.Clock == nil)
	return t, nil
}

// defaults fills in the zero fields of cfg and checks it.
func defaults(cfg *Config) error {
	if cfg.Host == "" {
		return errors.New("smtp: Config.Host is required")
	}
	if cfg.TLS < TLSMandatory || cfg.TLS > TLSImplicit {
		return fmt.Errorf("smtp: unknown %v", cfg.TLS)
	}
	if cfg.Port == 0 {
		cfg.Port = DefaultPort
		if cfg.TLS == TLSImplicit {
			cfg.Port = ImplicitTLSPort
		}
	}
	if cfg.Port < 1 || cfg.Port > 65535 {
		return fmt.Errorf("smtp: Config.Port %d out of range", cfg.Port)
	}
	for _, f := range []struct {
		name string
		d    *time.Duration
		def  time.Duration
	}{
		{"Timeout", &cfg.Timeout, DefaultTimeout},
		{"IdleTimeout", &cfg.IdleTimeout, DefaultIdleTimeout},
		{"RateLimitWait", &cfg.RateLimitWait, DefaultRateLimitWait},
	} {
		if *f.d == 0 {
			*f.d = f.def
		}
		if *f.d < 0 {
			return fmt.Errorf("smtp: Config.%s is negative", f.name)
		}
	}
	for _, f := range []struct {
		name string
		n    *int
		def  int
	}{
		{"MaxConnections", &cfg.MaxConnections, DefaultMaxConnections},
		{"MaxMessages", &cfg.MaxMessages, DefaultMaxMessages},
	} {
		if *f.n == 0 {
			*f.n = f.def
		}
		if *f.n < 0 {
			return fmt.Errorf("smtp: Config.%s is negative", f.name)
		}
	}
	if hasCRLF(cfg.HELO) || hasCRLF(cfg.Host) {
		return errors.New("smtp: Config.Host or HELO contains CR or LF")
	}
	return nil
}

func hasCRLF(s string) bool { return strings.ContainsAny(s, "\r\n") }

// Send sends msg and returns its receipt; the error is nil exactly when the
// receipt is mail.Accepted, and is otherwise a *mail.Error with the same
// receipt and the cause. Send does not retry what may have been sent; it
// dials again only when a pooled connection fails its RSET (nothing was
// sent on it), and sends the recipients a server deferred with "too many
// recipients" in a transaction of their own (see the package
// documentation).
//
// The categories:
//
//   - a 250 reply to the end of the data: Accepted, Code 250, ProviderID the
//     server's text after the code and the enhanced status code (such as
//     "Ok: queued as 4F2B31C0A4"; the texts of each transaction joined by
//     "; " when the recipients took more than one), Text the whole texts
//     so joined, Refused the recipients refused (see the package
//     documentation);
//   - a 421 whose enhanced status code is 4.7.x, or a 4xx whose enhanced
//     status code is 4.7.28, or 451 with 4.7.1, or any 4xx (421 included)
//     whose text speaks of a rate, of too many or
//     too much, of throttling or of slowing down (Postfix's "450 4.7.1
//     Error: too much mail from …" to MAIL FROM, "450 4.7.1 Error: too many
//     recipients from …" to RCPT TO, "421 4.7.0 … too many connections from
//     …" in place of the greeting): RateLimited, RetryAfter
//     Config.RateLimitWait (1 minute by default);
//   - any other 4xx reply (a 421 "Service shutting down" among them):
//     Retryable; before MAIL FROM (the greeting, EHLO, STARTTLS, AUTH)
//     marked with mail.ErrUnavailable as well, so that the queue takes it
//     for an outage and spends no attempt;
//   - 530, 534, 535, 538 (or the enhanced codes 5.7.8, 5.7.9, 5.7.11) at any
//     step: Auth;
//   - a 5xx that refuses relaying or access to this client or sender
//     ("Relay access denied", "Relaying denied", "Client host rejected", a
//     sender refused with "Access denied"): Configuration, the operator's to
//     fix (an unauthenticated or unknown sender), not the message's;
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
//   - a message larger than the SIZE the server announced: Rejected, Code 0,
//     before MAIL FROM;
//   - a refused or failed dial, a name that does not resolve, a failed TLS
//     handshake, a lost connection or a timeout before MAIL FROM: Retryable,
//     marked with mail.ErrUnavailable (errors.Is(err, mail.ErrUnavailable));
//   - a lost connection or a timeout after MAIL FROM and before the final
//     "." was written, and a context cancelled before then (the wait for a
//     connection included): Retryable (the cause is ctx.Err() when the
//     context ended);
//   - no reply to the end of the data (a timeout, a lost connection, a
//     context cancelled while waiting), or a reply that cannot be read:
//     DeliveryUnknown.
//
// A receipt of a server's reply has its Code and EnhancedCode (RFC 3463,
// when the text opens with one), the Reason "the reply to" and the step
// ("RCPT TO", "the end of the message", "the session's setup …"), and the
// reply's text in Text, every address replaced by mail.AddressPlaceholder:
// servers echo the subject, a display name or a line of the body, so the
// text never goes into the Reason, which the queue stores and logs above
// debug. A receipt of a failure without a reply has a Reason that describes
// it ("connection refused") and no Text. The cause of a server reply is a
// *textproto.Error whose Msg is the Text.
func (t *Transport) Send(ctx context.Context, msg *mail.Message) (mail.Receipt, error) {
	if err := ctx.Err(); err != nil {
		return fail(mail.Retryable, "cancelled before connecting", err)
	}
	p, err := payloadOf(msg)
	if err != nil {
		return invalidMessage(err)
	}
	if err := t.pool.acquire(ctx); err != nil {
		return fail(mail.Retryable, "cancelled while waiting for a free connection", err)
	}
	defer t.pool.release()

	c, r, err := t.conn(ctx)
	if c == nil {
		return r, err
	}
	stop := context.AfterFunc(ctx, c.d.close)
	s := &session{t: t, ctx: ctx, c: c.c, d: c.d}
	res := s.send(msg, p)
	if !stop() || ctx.Err() != nil {
		res.keep = false
	}
	t.put(c, res.keep)
	return res.receipt, res.err
}

// Check connects to the server, says EHLO, starts TLS and authenticates as a
// Send would, then says QUIT: a worker runs it at start, so that a wrong
// password, a certificate that does not verify or a server that cannot be
// reached is an error at once rather than a delay on every job. It returns
// nil when all went well, and otherwise a *mail.Error whose receipt tells
// what failed, as for Send: mail.Auth (credentials refused),
// mail.Configuration (TLS, no usable mechanism, a refusal of this client),
// mail.Retryable marked with mail.ErrUnavailable (the server cannot be
// reached), mail.RateLimited. Check does not use the pool.
func (t *Transport) Check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		_, err = fail(mail.Retryable, "cancelled before connecting", err)
		return err
	}
	c, _, err := t.dial(ctx)
	if c == nil {
		return err
	}
	defer c.d.close()
	stop := context.AfterFunc(ctx, c.d.close)
	defer stop()
	// The session was set up: QUIT is a courtesy whose failure changes
	// nothing.
	_ = c.c.UpdateDeadline(min(t.cfg.Timeout, 5*time.Second))
	_ = c.c.Quit()
	return nil
}

// Close says QUIT on the idle connections and closes them. A Send after
// Close works, on a connection of its own that it closes at its end.
func (t *Transport) Close() error {
	t.closePool()
	return nil
}

// fail returns the receipt and the error of a failed send.
func fail(cat mail.Category, reason string, cause error) (mail.Receipt, error) {
	r := mail.Receipt{Category: cat, Reason: reason}
	return r, &mail.Error{Receipt: r, Err: cause}
}

func invalidMessage(err error) (mail.Receipt, error) {
	return fail(mail.Validation, err.Error(), err)
}
