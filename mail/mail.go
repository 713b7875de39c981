// Package mail holds the message a worker builds from a job, the transports
// that send it and the receipts they give back.
//
// A Message is built into MIME with github.com/wneessen/go-mail. Its
// Message-ID and Content-IDs are fixed by the producer at enqueue, so every
// attempt of a job sends the same message (spec: "What a job holds").
//
// The transports of the kit: mail/smtp (SMTP, STARTTLS by policy),
// mail/memory (keeps the messages, for tests), mail/file (writes .eml
// files) and mail/idempotency (wraps any transport so that a message goes
// at most once per idempotency key); mail/smtptest is a scriptable SMTP
// server for tests.
package mail

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// Checker is an optional interface of a Transport that can tell whether it
// can send without sending anything (for SMTP: connect, EHLO, STARTTLS,
// AUTH, QUIT). The queue's circuit breaker probes a Checker while it is
// open; a transport without one is probed by letting one job through.
// Check returns nil when the transport can send, an error wrapping
// ErrUnavailable when it cannot be reached, another error when it was
// reached and refused (a wrong password), and an error wrapping
// errors.ErrUnsupported when it cannot check (a wrapper whose inner
// transport has no Check).
type Checker interface {
	Check(ctx context.Context) error
}

// Deduper is an optional interface of a Transport that says whether it
// sends a message at most once per Message.IdempotencyKey: the
// IdempotencyTransport does, and so does a transport that gives the key to
// a provider that dedupes by it. A worker whose transport does not dedupe
// and that sends a redelivered run again warns at start that a lost lease
// may send a message twice (spec: "Once per key").
type Deduper interface {
	Dedupes() bool
}

// Message is one mail message, ready to build and send. Addresses are in
// RFC 5322 form ("Ada <ada@example.com>" or "ada@example.com").
type Message struct {
	// MessageID is the Message-ID header with its angle brackets, such as
	// "<0b9c…@example.com>". Required: the queue fixes it at enqueue.
	MessageID string
	// Date is the Date header. The queue sets it from the job's enqueuedAt,
	// so every attempt carries the same date.
	Date time.Time
	// From is the author mailbox; its address is also the envelope sender.
	From string
	// To, Cc and Bcc are the recipients. Bcc goes into the envelope only.
	To, Cc, Bcc []string
	// ReplyTo is the Reply-To header, when not empty.
	ReplyTo []string
	// Subject is the Subject header (RFC 2047-encoded when not ASCII).
	Subject string
	// HTML and Text are the bodies; at least one is set. Both make a
	// multipart/alternative message.
	HTML, Text string
	// Headers are extra header fields, written in the order of their names.
	Headers map[string]string
	// Attachments are the parts besides the bodies.
	Attachments []Attachment
	// IdempotencyKey is the key a transport that takes one gives its
	// provider; the queue sets it to the job's id.
	IdempotencyKey string
}

// Attachment is a part of a message besides its bodies.
type Attachment struct {
	// Filename is the name the recipient sees.
	Filename string
	// ContentType is the media type, such as "image/png"; empty means
	// application/octet-stream.
	ContentType string
	// ContentID is the Content-ID without angle brackets; an inline part is
	// referenced from the HTML as "cid:" + ContentID.
	ContentID string
	// Inline marks a part the HTML shows (Content-Disposition: inline).
	Inline bool
	// Data holds the bytes.
	Data []byte
}

// Category tells what a send came to, and so what the queue does next:
// Accepted is done; DeliveryUnknown fails the job for good, as the message
// may have gone; Retryable and RateLimited retry it; Rejected, Validation
// and Unsupported fail it at once; Auth and Configuration wait for the
// operator (spec: "What the queue does with an attempt").
type Category string

// The categories of a receipt.
const (
	// Accepted: the server or provider took the message. The job is done.
	Accepted Category = "accepted"
	// Retryable: a failure provably before the message was taken (a 4xx
	// reply, a connection refused). Retried after the backoff.
	Retryable Category = "retryable"
	// RateLimited: the provider asked to slow down; retried no sooner than
	// RetryAfter, and may pause the queue or the tenant.
	RateLimited Category = "rate_limited"
	// Rejected: the server refused the message or its recipients (5xx).
	// Failed at once.
	Rejected Category = "rejected"
	// Validation: the message is malformed for the server (555, a syntax
	// error). Failed at once.
	Validation Category = "validation"
	// Unsupported: the message needs what the server does not offer (such as
	// SMTPUTF8). Failed at once.
	Unsupported Category = "unsupported"
	// Auth: the credentials were refused (530, 534, 535). An operator's
	// failure: retried after the operator delay.
	Auth Category = "auth"
	// Configuration: the transport is set up wrong (TLS required but not
	// offered). An operator's failure: retried after the operator delay.
	Configuration Category = "configuration"
	// DeliveryUnknown: the message may have gone (a timeout or a lost
	// connection after the data was sent). Never sent blindly again.
	DeliveryUnknown Category = "delivery_unknown"
)

// Receipt is what a transport tells of a send.
type Receipt struct {
	// Category is what the send came to.
	Category Category
	// Code is the SMTP reply code, or the HTTP status of a provider; 0 when
	// there was no reply.
	Code int
	// EnhancedCode is the enhanced status code (RFC 3463) that opened the
	// server's reply, such as "5.7.1"; empty when it gave none.
	EnhancedCode string
	// Reason says what failed in the transport's own words, such as
	// "connection refused" or "the reply to RCPT TO": never an address, and
	// never the text of the message or of the server's reply. The queue
	// stores it with the job (the reason mailq failed shows) and logs it
	// above debug, beside Category, Code and EnhancedCode.
	Reason string
	// Text is the text of the server's reply (or of the provider's answer)
	// as it came, every address replaced by AddressPlaceholder and its line
	// breaks by spaces (Redact); empty when there was no reply. Servers
	// echo what they refuse, so it may quote the subject, a display name or
	// a line of the body: the queue logs it at debug only (the record
	// queue.job.detail) and never stores it. A Classify hook may read it;
	// for a transport's error that is no *Error, the worker gives the hook
	// a Retryable receipt whose Text is the error's text.
	Text string
	// RetryAfter is the least delay before a retry, when the server asked
	// for one (an HTTP Retry-After), or the transport's choice for a rate
	// limit whose server names none (mail/smtp: Config.RateLimitWait, 1
	// minute by default); 0 otherwise.
	RetryAfter time.Duration
	// ProviderID is the id the server gave the message, when it gave one
	// (the queue id in an SMTP 250 reply, a provider's message id).
	ProviderID string
	// Refused lists the recipients the server refused while it took the
	// message for the others: a 5xx code refused it for good; a 4xx code, or
	// 0 (no reply), means it was not sent, or may have been (0), and the
	// queue does not send it again. When the send failed (nothing was sent),
	// it lists the refusals met before the failure, and the receipt takes
	// the category, code and reason of the one that decided it.
	Refused []RefusedRecipient
}

// RefusedRecipient is one recipient a server refused.
type RefusedRecipient struct {
	// Address is the refused address.
	Address string
	// Code is the SMTP reply code.
	Code int
	// Reason is the text of the server's reply, without any address (see
	// Redact), or the transport's description when there was no reply. Like
	// Receipt.Text it may quote the message: the queue does not log it.
	Reason string
}

// Transport sends a message and reports the outcome as a receipt.
//
// Send returns a receipt whatever happened; the error is non-nil exactly
// when the category is not Accepted, and is then an *Error carrying the same
// receipt. A transport must not retry on its own beyond what provably was not
// sent: the queue retries, and each retry inside the transport would hold the
// job and multiply its attempts (spec: "Tenants in turn", last paragraph).
type Transport interface {
	Send(ctx context.Context, msg *Message) (Receipt, error)
}

// Error is the error of a send that was not accepted.
type Error struct {
	// Receipt is the receipt of the failed send.
	Receipt Receipt
	// Err is the underlying cause, when there is one. It may hold what
	// Receipt.Text holds (mail/smtp's is the server's *textproto.Error): its
	// text is for debug logs only.
	Err error
}

// Error returns the category, the code, the enhanced status code and the
// reason: never the text of the reply (Receipt.Text).
func (e *Error) Error() string {
	s := "mail: " + string(e.Receipt.Category)
	if e.Receipt.Code != 0 {
		s += " " + strconv.Itoa(e.Receipt.Code)
	}
	if e.Receipt.EnhancedCode != "" {
		s += " " + e.Receipt.EnhancedCode
	}
	if e.Receipt.Reason != "" {
		s += ": " + e.Receipt.Reason
	}
	return s
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// ErrUnavailable marks the failure of a send whose transport could not be
// reached, so that nothing was sent: a connection refused, a host name that
// does not resolve, a TLS handshake that fails, a timeout before MAIL FROM,
// an idempotency store that does not answer. Such a send is an outage, not a
// fault of the message: the queue gives the job back without spending its
// attempt and may stop reserving until the transport answers again.
//
// The error a transport returns for such a send is an *Error of category
// Retryable whose cause wraps ErrUnavailable, so that
// errors.Is(err, ErrUnavailable) is true; make it with Unavailable. A
// Retryable error without it (a 4xx reply, a connection lost during the
// transaction) may be the message's own, and spends an attempt as before.
// ErrUnavailable itself is an *Error of category Retryable, so a transport
// may also return it as it is.
var ErrUnavailable = &Error{Receipt: Receipt{Category: Retryable, Reason: "the transport is unavailable"}}

// Unavailable returns the receipt and error of a send that failed because
// the transport could not be reached (see ErrUnavailable): category
// Retryable, code 0, the given reason (which must hold no address), and an
// error for which errors.Is(err, ErrUnavailable) is true and which wraps
// cause too (cause may be nil).
func Unavailable(reason string, cause error) (Receipt, error) {
	r := Receipt{Category: Retryable, Reason: reason}
	wrapped := error(ErrUnavailable)
	if cause != nil {
		wrapped = fmt.Errorf("%w: %w", ErrUnavailable, cause)
	}
	return r, &Error{Receipt: r, Err: wrapped}
}
