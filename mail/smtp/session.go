package smtp

import (
	"context"
	"errors"
	"io"
	"net/textproto"
	"strconv"
	"strings"

	gmsmtp "github.com/wneessen/go-mail/smtp"

	"github.com/alexify/mailer/mail"
)

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

// result is how a send ended: its receipt and error, and whether its
// connection is in a known state and may be reused.
type result struct {
	receipt mail.Receipt
	err     error
	keep    bool
}

func resultOf(r mail.Receipt, err error, keep bool) result {
	return result{receipt: r, err: err, keep: keep}
}

// session is one send on its connection.
type session struct {
	t   *Transport
	ctx context.Context
	c   *gmsmtp.Client
	d   *trackedDialer
}

// send fits the message to the server, checks its size and runs as many
// transactions as its recipients need (see the package documentation).
func (s *session) send(msg *mail.Message, p payload) result {
	if res, ok := s.fit(msg, &p); !ok {
		return res
	}
	params, res, ok := s.params(msg, p)
	if !ok {
		return res
	}
	tx := &transactions{s: s, p: p, params: params}
	return tx.run()
}

// fit gives a server that does not offer SMTPUTF8 the message of
// mail.Message.ASCII, when the message needs it: addresses in UTF-8 go only
// to a server that offers SMTPUTF8. A message that has no ASCII form ends
// the send, before MAIL FROM.
func (s *session) fit(msg *mail.Message, p *payload) (result, bool) {
	if ok, _ := s.c.Extension("SMTPUTF8"); ok || !msg.NeedsSMTPUTF8() {
		return result{}, true
	}
	am, err := msg.ASCII()
	if err == nil {
		*p, err = payloadOf(am)
	}
	if err == nil {
		return result{}, true
	}
	if errors.Is(err, mail.ErrNeedsSMTPUTF8) {
		r, err := fail(mail.Unsupported, "a local part is not ASCII, and the server does not offer SMTPUTF8", err)
		return resultOf(r, err, true), false
	}
	r, err := invalidMessage(err)
	return resultOf(r, err, true), false
}

// params returns the parameters of MAIL FROM: SIZE= when the server offers
// SIZE (RFC 1870), SMTPUTF8 when an address needs it (RFC 6531), BODY=8BITMIME
// when the data has a byte above 127 and the server offers 8BITMIME
// (RFC 6152). A message larger than the server's SIZE ends the send.
func (s *session) params(msg *mail.Message, p payload) ([]string, result, bool) {
	var params []string
	if ok, arg := s.c.Extension("SIZE"); ok {
		limit, err := strconv.ParseInt(strings.TrimSpace(arg), 10, 64)
		if err == nil && limit > 0 && int64(len(p.data)) > limit {
			r, err := fail(mail.Rejected, "the message ("+strconv.Itoa(len(p.data))+" bytes) is larger than the server takes ("+strconv.FormatInt(limit, 10)+" bytes, EHLO SIZE)", nil)
			return nil, resultOf(r, err, true), false
		}
		params = append(params, "SIZE="+strconv.Itoa(len(p.data)))
	}
	if ok, _ := s.c.Extension("8BITMIME"); ok && has8bit(p.data) {
		params = append(params, "BODY=8BITMIME")
	}
	if ok, _ := s.c.Extension("SMTPUTF8"); ok && msg.NeedsSMTPUTF8() {
		params = append(params, "SMTPUTF8")
	}
	return params, result{}, true
}

func has8bit(data []byte) bool {
	for _, b := range data {
		if b >= 0x80 {
			return true
		}
	}
	return false
}

// transactions sends one message in as many transactions as the server's
// limit on recipients needs.
type transactions struct {
	s      *session
	p      payload
	params []string

	sent    bool     // a transaction's data was taken
	ids     []string // the ProviderID of each transaction taken
	texts   []string // the text of the server's reply to the end of each one
	refused []mail.RefusedRecipient
	first   *textproto.Error // the first refusal of a recipient
	keep    bool
}

// run sends the transactions while recipients are left and each takes at
// least one. The failure of the first transaction is the send's; a failure
// of a later one leaves its recipients in Refused.
func (tx *transactions) run() result {
	tx.keep = true
	pending := tx.p.rcpts
	for len(pending) > 0 {
		deferred, end := tx.one(pending)
		if end != nil {
			if !tx.sent {
				return *end
			}
			break
		}
		pending = deferred
	}
	r := mail.Receipt{
		Category: mail.Accepted, Code: 250, Refused: tx.refused,
		ProviderID: strings.Join(tx.ids, "; "), Text: strings.Join(tx.texts, "; "),
	}
	return resultOf(r, nil, tx.keep)
}

// one runs one transaction for pending and returns the recipients it
// deferred to the next one, or how it failed (end). A failure once another
// transaction was taken lists the recipients it leaves unsent in Refused.
func (tx *transactions) one(pending []string) (deferred []string, end *result) {
	s := tx.s
	if err := s.step("MAIL FROM", func() error { return s.mail(tx.p.from, tx.params) }); err != nil {
		return nil, tx.abort(pending, s.t.beforeEnd(s.ctx, "MAIL FROM", err))
	}
	accepted, deferred, limit, end := tx.recipients(pending)
	if end != nil {
		return nil, end
	}
	if len(accepted) == 0 {
		return nil, tx.noneAccepted(deferred, limit)
	}
	w, err := s.data(tx.p.data)
	if err != nil {
		return nil, tx.abort(append(accepted, deferred...), s.t.beforeEnd(s.ctx, "DATA", err))
	}
	s.d.resetWriteFail()
	if err := w.Close(); err != nil {
		res := s.t.endFailure(s.ctx, s.d, err)
		if tx.sent && res.receipt.Category == mail.DeliveryUnknown {
			// The others had it already; these may have it too, and are
			// never sent again.
			res.receipt.Reason = "no reply to the end of the message, which may have gone: " + res.receipt.Reason
		}
		return nil, tx.abort(append(accepted, deferred...), res)
	}
	if dc, ok := w.(*gmsmtp.DataCloser); ok {
		resp := dc.ServerResponse()
		tx.ids = append(tx.ids, mail.Redact(strings.TrimSpace(enhancedPrefix.ReplaceAllString(resp, ""))))
		tx.texts = append(tx.texts, mail.Redact(resp))
	}
	tx.sent = true
	return deferred, nil
}

// abort ends a transaction with res; once another transaction was taken,
// the recipients it leaves unsent go into Refused with res's code and
// reason.
func (tx *transactions) abort(unsent []string, res result) *result {
	tx.keep = tx.keep && res.keep
	if tx.sent {
		reason := res.receipt.Text
		if reason == "" {
			reason = res.receipt.Reason
		}
		tx.refuse(unsent, res.receipt.Code, reason)
	}
	return &res
}

// refuse lists rcpts in Refused.
func (tx *transactions) refuse(rcpts []string, code int, reason string) {
	for _, r := range rcpts {
		tx.refused = append(tx.refused, mail.RefusedRecipient{Address: r, Code: code, Reason: reason})
	}
}

// recipients sends RCPT TO for pending and sorts them: accepted; deferred
// to the next transaction after the server's limit on recipients (limit, its
// reply); refused (into tx.refused). Before anything was sent, a 4xx that is
// not the limit (a throttle, a mailbox busy) resets the transaction and ends
// the send with that reply, so that the queue retries the whole message and
// no recipient is lost; a failure without a reply ends the transaction.
func (tx *transactions) recipients(pending []string) (accepted, deferred []string, limit *textproto.Error, end *result) {
	s := tx.s
	for i, rcpt := range pending {
		err := s.step("RCPT TO", func() error { return s.c.Rcpt("<" + rcpt + ">") })
		var te *textproto.Error
		switch {
		case err == nil:
			accepted = append(accepted, rcpt)
			continue
		case !errors.As(err, &te):
			return nil, nil, nil, tx.abort(append(accepted, pending[i:]...), s.t.beforeEnd(s.ctx, "RCPT TO", err))
		case tooManyRecipients(te.Code, te.Msg):
			// The server takes no more in this transaction: the rest go in
			// the next one (RFC 5321 §4.5.3.1.10).
			return accepted, pending[i:], te, nil
		case te.Code == 421 && tx.sent:
			// The server closes the channel: the rest of this transaction
			// is not sent.
			return nil, nil, nil, tx.abort(append(accepted, pending[i:]...), s.t.beforeEnd(s.ctx, "RCPT TO", err))
		}
		tx.refuse([]string{rcpt}, te.Code, mail.Redact(te.Msg))
		if tx.first == nil {
			tx.first = te
		}
		if te.Code/100 == 4 && !tx.sent {
			res := s.t.beforeEnd(s.ctx, "RCPT TO", err)
			return nil, nil, nil, tx.reset(res)
		}
	}
	return accepted, nil, nil, nil
}

// noneAccepted ends a transaction in which no recipient was accepted: the
// deferred ones (after limit) go into Refused too. Before anything was sent,
// the send ends with the first refusal.
func (tx *transactions) noneAccepted(deferred []string, limit *textproto.Error) *result {
	if limit != nil {
		tx.refuse(deferred, limit.Code, mail.Redact(limit.Msg))
		if tx.first == nil {
			tx.first = limit
		}
	}
	if tx.sent {
		res := tx.reset(result{keep: true})
		tx.keep = tx.keep && res.keep
		return res
	}
	r, err := tx.s.t.reply(classify(tx.first.Code, tx.first.Msg), tx.first, "RCPT TO")
	return tx.reset(resultOf(r, err, tx.first.Code != 421))
}

// reset ends an open transaction with RSET, and gives res the recipients
// refused so far; a connection whose RSET fails is not kept.
func (tx *transactions) reset(res result) *result {
	s := tx.s
	if res.keep {
		res.keep = s.step("RSET", s.c.Reset) == nil
	}
	res.receipt.Refused = tx.refused
	var me *mail.Error
	if errors.As(res.err, &me) {
		me.Receipt.Refused = tx.refused
	}
	return &res
}

// mail says MAIL FROM with params. go-mail's Client.Mail is not used: it
// adds BODY=8BITMIME and SMTPUTF8 whenever the server offers them, and knows
// no SIZE.
func (s *session) mail(from string, params []string) error {
	if hasCRLF(from) {
		return errCRLF
	}
	line := "MAIL FROM:<" + from + ">"
	for _, p := range params {
		line += " " + p
	}
	id, err := s.c.Text.Cmd("%s", line)
	if err != nil {
		return err
	}
	s.c.Text.StartResponse(id)
	defer s.c.Text.EndResponse(id)
	_, _, err = s.c.Text.ReadResponse(250)
	return err
}

var errCRLF = errors.New("smtp: an address must not contain CR or LF")

// data sends DATA and writes the message, all but its end.
func (s *session) data(data []byte) (io.WriteCloser, error) {
	var w io.WriteCloser
	if err := s.step("DATA", func() (err error) { w, err = s.c.Data(); return err }); err != nil {
		return nil, err
	}
	if err := s.step("writing the message", func() error { _, err := w.Write(data); return err }); err != nil {
		return nil, err
	}
	if err := s.ctx.Err(); err != nil {
		return nil, &cancelled{step: "the end of the message", err: err}
	}
	if err := s.c.UpdateDeadline(s.t.cfg.Timeout); err != nil {
		return nil, err
	}
	return w, nil
}

// step runs one command before the end of the data, with the context
// checked and the deadline renewed first.
func (s *session) step(name string, f func() error) error {
	if err := s.ctx.Err(); err != nil {
		return &cancelled{step: name, err: err}
	}
	if err := s.c.UpdateDeadline(s.t.cfg.Timeout); err != nil {
		return err
	}
	return f()
}

// cancelled is a step not run as the context ended.
type cancelled struct {
	step string
	err  error
}

func (c *cancelled) Error() string { return "cancelled before " + c.step }
func (c *cancelled) Unwrap() error { return c.err }

// beforeEnd maps the failure of a step before the final "." was written:
// the server cannot have taken the message. A reply is mapped by classify,
// and the connection kept unless it was a 421; a failure without a reply
// drops the connection.
func (t *Transport) beforeEnd(ctx context.Context, step string, err error) result {
	if isReply(err) {
		r, err := t.replyFailure(err, step)
		return resultOf(r, err, !dropsConnection(err))
	}
	var c *cancelled
	switch {
	case errors.As(err, &c):
		r, err := fail(mail.Retryable, c.Error(), c.err)
		return resultOf(r, err, false)
	case ctx.Err() != nil:
		r, err := fail(mail.Retryable, "cancelled at "+step, ctx.Err())
		return resultOf(r, err, false)
	case errors.Is(err, errCRLF), strings.Contains(err.Error(), "must not contain CR or LF"):
		r, err := fail(mail.Validation, "an address contains CR or LF", err)
		return resultOf(r, err, false)
	}
	r, err := fail(mail.Retryable, step+": "+describe(err), err)
	return resultOf(r, err, false)
}

// endFailure maps the failure of the end of the data (Close writes the
// final "." and reads the reply). Once the "." is written, a send without a
// reply may have gone: DeliveryUnknown.
func (t *Transport) endFailure(ctx context.Context, d *trackedDialer, err error) result {
	switch {
	case isReply(err):
		r, err := t.replyFailure(err, "the end of the message")
		return resultOf(r, err, !dropsConnection(err))
	case d.writeFailed():
		// The final "." could not be written: the server cannot have
		// taken the message.
		return t.beforeEnd(ctx, "writing the end of the message", err)
	case ctx.Err() != nil:
		r, err := fail(mail.DeliveryUnknown, "cancelled while waiting for the reply to the end of the message", ctx.Err())
		return resultOf(r, err, false)
	}
	r, err := fail(mail.DeliveryUnknown, "no reply to the end of the message: "+describe(err), err)
	return resultOf(r, err, false)
}
