// Package httpprovider is an example mail.Transport for a mail provider with
// an HTTP API, to copy and adapt: it posts the message as JSON and gives the
// provider the message's IdempotencyKey, which the queue's worker sets to the
// job's id, in an Idempotency-Key header. A provider that dedupes by that
// key then sends a job once however many times a worker posts it: a run
// again of a job whose run before died posts the same key, and the provider
// answers it without sending twice (spec: "Once per key").
//
// The program in cmd/httpprovider runs it against a fake provider on
// loopback (go run ./examples/httpprovider/cmd/httpprovider); see README.md.
//
// The replies map to receipts so that the worker retries what may succeed
// later, fails what never will, and never sends twice what may have gone
// (spec: "What the queue does with an attempt"):
//
//	2xx                  Accepted, ProviderID the "id" of the JSON reply
//	429                  RateLimited, RetryAfter from the Retry-After header
//	5xx                  Retryable, RetryAfter from Retry-After when given
//	401, 403             Auth (the operator's to fix)
//	409                  DeliveryUnknown: the key is in flight at the provider
//	other 4xx            Rejected
//	a dial error         Retryable, with mail.ErrUnavailable: the request
//	                     never left, an outage of the provider
//	no reply otherwise   DeliveryUnknown: the request may have been taken
//	                     (a timeout, a lost connection, a cancelled context)
//
// The JSON posted is
//
//	{"messageId", "date", "from", "to", "cc", "bcc", "replyTo", "subject",
//	 "html", "text", "headers", "attachments": [{"filename", "contentType",
//	 "contentId", "inline", "content" (base64)}]}
//
// with the fields of mail.Message; a real provider has its own shape.
package httpprovider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/alexify/mailer/clock"
	"github.com/alexify/mailer/mail"
)

// Config configures a Transport.
type Config struct {
	// Endpoint is the URL the messages are posted to. Required.
	Endpoint string
	// APIKey, when set, goes as "Authorization: Bearer <APIKey>".
	APIKey string
	// Client sends the requests; http.DefaultClient when nil. Give it a
	// Timeout: a reply that does not come is DeliveryUnknown.
	Client *http.Client
	// Clock reads the time a Retry-After date is counted from; the wall
	// clock when nil.
	Clock clock.Clock
}

// Transport posts messages to an HTTP provider. It implements
// mail.Transport and is safe for concurrent use.
type Transport struct {
	cfg Config
}

var (
	_ mail.Transport = (*Transport)(nil)
	_ mail.Deduper   = (*Transport)(nil)
)

// Dedupes reports true (mail.Deduper): the provider gets the message's
// IdempotencyKey and sends a key once, so the queue's worker does not warn
// that a lost lease may send twice. A copy of this example for a provider
// that takes no key must return false, or drop the method.
func (t *Transport) Dedupes() bool { return true }

// New returns a Transport for cfg. It fails when Endpoint is empty.
func New(cfg Config) (*Transport, error) {
	if cfg.Endpoint == "" {
		return nil, errors.New("httpprovider: Config.Endpoint is required")
	}
	if cfg.Client == nil {
		cfg.Client = http.DefaultClient
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real()
	}
	return &Transport{cfg: cfg}, nil
}

// payload is the JSON posted for a message.
type payload struct {
	MessageID   string            `json:"messageId"`
	Date        string            `json:"date"`
	From        string            `json:"from"`
	To          []string          `json:"to,omitempty"`
	Cc          []string          `json:"cc,omitempty"`
	Bcc         []string          `json:"bcc,omitempty"`
	ReplyTo     []string          `json:"replyTo,omitempty"`
	Subject     string            `json:"subject"`
	HTML        string            `json:"html,omitempty"`
	Text        string            `json:"text,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"`
	Attachments []attachment      `json:"attachments,omitempty"`
}

type attachment struct {
	Filename    string `json:"filename"`
	ContentType string `json:"contentType,omitempty"`
	ContentID   string `json:"contentId,omitempty"`
	Inline      bool   `json:"inline,omitempty"`
	Content     []byte `json:"content"`
}

// Send posts msg and maps the reply to a receipt, as the package
// documentation tells. The error is nil exactly when the receipt is
// Accepted, and is otherwise a *mail.Error. A message that does not build
// (mail.Build) is Validation, and nothing is posted.
func (t *Transport) Send(ctx context.Context, msg *mail.Message) (mail.Receipt, error) {
	if _, err := mail.Build(msg); err != nil {
		return fail(mail.Receipt{Category: mail.Validation, Reason: err.Error()}, err)
	}
	p := payload{
		MessageID: msg.MessageID, Date: msg.Date.UTC().Format(time.RFC3339), From: msg.From,
		To: msg.To, Cc: msg.Cc, Bcc: msg.Bcc, ReplyTo: msg.ReplyTo, Subject: msg.Subject,
		HTML: msg.HTML, Text: msg.Text, Headers: msg.Headers,
	}
	for _, a := range msg.Attachments {
		p.Attachments = append(p.Attachments, attachment{Filename: a.Filename, ContentType: a.ContentType, ContentID: a.ContentID, Inline: a.Inline, Content: a.Data})
	}
	body, err := json.Marshal(p)
	if err != nil {
		return fail(mail.Receipt{Category: mail.Validation, Reason: "the message does not encode as JSON"}, err)
	}
	if err := ctx.Err(); err != nil {
		return fail(mail.Receipt{Category: mail.Retryable, Reason: "cancelled before the request"}, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.cfg.Endpoint, bytes.NewReader(body))
	if err != nil {
		return fail(mail.Receipt{Category: mail.Configuration, Reason: "bad endpoint"}, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if msg.IdempotencyKey != "" {
		req.Header.Set("Idempotency-Key", msg.IdempotencyKey)
	}
	if t.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+t.cfg.APIKey)
	}
	resp, err := t.cfg.Client.Do(req)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return fail(mail.Receipt{Category: mail.Retryable, Reason: "could not connect to the provider"}, errors.Join(mail.ErrUnavailable, err))
		}
		return fail(mail.Receipt{Category: mail.DeliveryUnknown, Reason: "no reply from the provider: the message may have been taken"}, err)
	}
	defer func() { _ = resp.Body.Close() }() // read to its end below: nothing is lost
	reply, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	// The provider's own words may quote the message: they go to Text
	// (logged at debug only), never to the Reason the queue stores.
	r := mail.Receipt{Code: resp.StatusCode, Reason: "the provider answered " + strconv.Itoa(resp.StatusCode) + " " + http.StatusText(resp.StatusCode), Text: mail.Redact(textOf(resp, reply))}
	switch s := resp.StatusCode; {
	case s >= 200 && s < 300:
		r.Category = mail.Accepted
		var ok struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(reply, &ok)
		r.ProviderID = ok.ID
		return r, nil
	case s == http.StatusTooManyRequests:
		r.Category = mail.RateLimited
		r.RetryAfter = t.retryAfter(resp.Header.Get("Retry-After"))
	case s >= 500:
		r.Category = mail.Retryable
		r.RetryAfter = t.retryAfter(resp.Header.Get("Retry-After"))
	case s == http.StatusUnauthorized, s == http.StatusForbidden:
		r.Category = mail.Auth
	case s == http.StatusConflict:
		r.Category = mail.DeliveryUnknown
	case s >= 400:
		r.Category = mail.Rejected
	default:
		r.Category = mail.Retryable // 1xx, 3xx: not a reply this API gives
	}
	return fail(r, nil)
}

// retryAfter parses a Retry-After header (RFC 9110 section 10.2.3): a number
// of seconds or an HTTP date; 0 when absent or unreadable.
func (t *Transport) retryAfter(v string) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return 0
		}
		return time.Duration(n) * time.Second
	}
	if at, err := http.ParseTime(v); err == nil {
		if d := at.Sub(t.cfg.Clock.Now()); d > 0 {
			return d.Round(time.Second)
		}
	}
	return 0
}

// textOf returns the provider's error message when its reply is JSON with
// a "message" or "error" string, else the status text.
func textOf(resp *http.Response, body []byte) string {
	var e struct {
		Message string `json:"message"`
		Error   string `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil {
		if e.Message != "" {
			return e.Message
		}
		if e.Error != "" {
			return e.Error
		}
	}
	return fmt.Sprintf("%d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
}

func fail(r mail.Receipt, cause error) (mail.Receipt, error) {
	return r, &mail.Error{Receipt: r, Err: cause}
}
