package smtp

import (
	"errors"
	"io"
	"net"
	"net/textproto"
	"regexp"
	"strings"
	"syscall"

	"github.com/alexify/mailer/mail"
)

// enhancedPrefix is an enhanced status code (RFC 3463) at the start of a
// reply's text.
var enhancedPrefix = regexp.MustCompile(`^\s*[245]\.\d{1,3}\.\d{1,3}\s*`)

var enhancedCode = regexp.MustCompile(`^\s*([245]\.\d{1,3}\.\d{1,3})\b`)

// rateText is what the text of a throttling reply says: a rate, too many or
// too much of something, throttling, slowing down (the replies of Postfix's
// anvil, "too much mail from", "too many recipients from", "too many
// connections from", and of the large providers).
var rateText = regexp.MustCompile(`(?i)\brate\b|rate[ -]?limit|\btoo (many|much)\b|throttl|slow down|\bslowdown\b`)

// operatorText is what the text of a refusal says when it refuses this
// client or its sender rather than the message: relaying denied to an
// unauthenticated client, the client's host refused, "Access denied" (what
// Postfix's "reject" says, as in "Relay access denied", "Recipient address
// rejected: Access denied" to a client that did not authenticate, "Sender
// address rejected: Access denied").
var operatorText = regexp.MustCompile(`(?i)access denied|relaying (denied|not (allowed|permitted))|relay not permitted|client host rejected`)

// enhanced returns the enhanced status code that opens a reply's text, or "".
func enhanced(text string) string {
	if m := enhancedCode.FindStringSubmatch(text); m != nil {
		return m[1]
	}
	return ""
}

// tooManyRecipients tells whether a reply to RCPT TO is the server's limit
// on the recipients of one transaction (RFC 5321 §4.5.3.1.10: 452, "too many
// recipients"; the enhanced code 4.5.3), after which the rest go in another
// transaction. A throttle that counts recipients over time ("450 4.7.1
// Error: too many recipients from …") is not.
func tooManyRecipients(code int, text string) bool {
	enh := enhanced(text)
	return code/100 == 4 && (enh == "4.5.3" || (code == 452 && enh == "" && strings.Contains(strings.ToLower(text), "too many recipients")))
}

// classify maps a reply code, with the enhanced status code that may open
// its text and the text itself, to a category (see Send for the table).
func classify(code int, text string) mail.Category {
	enh := enhanced(text)
	switch {
	case code >= 200 && code < 400:
		// A positive reply where a failure was expected cannot happen here.
		return mail.Retryable
	case code == 530 || code == 534 || code == 535 || code == 538,
		enh == "5.7.8" || enh == "5.7.9" || enh == "5.7.11":
		return mail.Auth
	case code >= 400 && code < 500:
		if rateLimited(code, enh, text) {
			return mail.RateLimited
		}
		return mail.Retryable
	case code >= 500 && code < 600 && operatorText.MatchString(text):
		return mail.Configuration
	case code == 500 || code == 501 || code == 555:
		return mail.Validation
	case enh == "5.6.7":
		return mail.Unsupported
	case code >= 500 && code < 600:
		return mail.Rejected
	}
	return mail.Retryable
}

// rateLimited tells whether a 4xx reply asks the client to slow down.
func rateLimited(code int, enh, text string) bool {
	switch {
	case code == 421 && (strings.HasPrefix(enh, "4.7.") || rateText.MatchString(text)):
		// The server closes the channel because this client comes too
		// often ("421 4.7.0 … too many connections from …").
		return true
	case code == 421:
		// The server closes the channel for a reason of its own ("421
		// 4.3.2 Service shutting down"): not a rate. Before MAIL FROM it
		// is an outage (nothing was sent: the job waits, its attempt not
		// spent, and the breaker probes); later it is retryable.
		return false
	case enh == "4.5.3":
		// Too many recipients in one transaction: a limit, not a rate.
		return false
	case enh == "4.7.28", code == 451 && enh == "4.7.1":
		return true
	}
	return rateText.MatchString(text)
}

// describe names a failure without a reply, without any address.
func describe(err error) string {
	var (
		ne  net.Error
		dns *net.DNSError
	)
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.As(err, &dns):
		if dns.IsNotFound {
			return "the host name does not resolve"
		}
		return "the host name could not be resolved"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed by the server"
	case errors.Is(err, net.ErrClosed):
		return "connection closed"
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	}
	return mail.Redact(err.Error())
}

func redactedReply(te *textproto.Error) error {
	return &textproto.Error{Code: te.Code, Msg: mail.Redact(te.Msg)}
}

// reply returns the receipt and error of a server's refusal of category cat
// at step (a command, "the end of the message", "the session's setup"); a
// rate limit carries RetryAfter. The reply's codes and the step make the
// Reason; its text, which may quote the message, goes to Text alone.
func (t *Transport) reply(cat mail.Category, te *textproto.Error, step string) (mail.Receipt, error) {
	r := mail.Receipt{Category: cat, Code: te.Code, EnhancedCode: enhanced(te.Msg), Reason: "the reply to " + step, Text: mail.Redact(te.Msg)}
	if cat == mail.RateLimited {
		r.RetryAfter = t.cfg.RateLimitWait
	}
	return r, &mail.Error{Receipt: r, Err: redactedReply(te)}
}

// replyFailure maps a server's refusal at step (err holds a
// *textproto.Error).
func (t *Transport) replyFailure(err error, step string) (mail.Receipt, error) {
	var te *textproto.Error
	if !errors.As(err, &te) {
		return fail(mail.Retryable, describe(err), err)
	}
	return t.reply(classify(te.Code, te.Msg), te, step)
}

// dropsConnection tells whether a reply closes the channel (421): the
// connection is not kept.
func dropsConnection(err error) bool {
	var te *textproto.Error
	return !errors.As(err, &te) || te.Code == 421
}

// isReply tells whether err is a server's reply.
func isReply(err error) bool {
	var te *textproto.Error
	return errors.As(err, &te)
}
