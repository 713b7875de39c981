// Package memory is a mail.Transport that keeps the messages in memory, for
// tests: it records each message it is given and answers with the receipts
// it was scripted with, then Accepted.
package memory

import (
	"context"
	"strconv"
	"sync"

	"github.com/alexify/mailer/mail"
)

// SendFunc decides the outcome of a send in place of the default. It gets
// the message as Send got it (not a copy) and returns what Send returns; a
// non-Accepted receipt with a nil error is given an *mail.Error.
type SendFunc func(ctx context.Context, msg *mail.Message) (mail.Receipt, error)

// Transport records messages and answers scripted receipts. The zero value
// is ready to use; it is safe for concurrent use.
type Transport struct {
	mu       sync.Mutex
	messages []*mail.Message
	accepted int
	script   []mail.Receipt
	sendFunc SendFunc
}

var _ mail.Transport = (*Transport)(nil)

// New returns an empty Transport.
func New() *Transport { return &Transport{} }

// Script queues receipts: the next sends answer them in order, one each,
// before the SendFunc and the default. A receipt with an empty Category
// counts as Accepted.
func (t *Transport) Script(receipts ...mail.Receipt) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.script = append(t.script, receipts...)
}

// OnSend sets the hook that decides a send once the script is used up; nil
// removes it.
func (t *Transport) OnSend(f SendFunc) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sendFunc = f
}

// Send records a copy of msg and answers, in this order: the next scripted
// receipt; else the SendFunc; else Accepted, Code 250, ProviderID
// "memory-N", N the number of the message recorded (counting from 1, as
// Messages lists them). A context already done gives Retryable
// with ctx.Err() and records nothing. The error is nil exactly when the
// receipt is Accepted; otherwise it is an *mail.Error.
func (t *Transport) Send(ctx context.Context, msg *mail.Message) (mail.Receipt, error) {
	if err := ctx.Err(); err != nil {
		r := mail.Receipt{Category: mail.Retryable, Reason: "cancelled"}
		return r, &mail.Error{Receipt: r, Err: err}
	}
	t.mu.Lock()
	t.messages = append(t.messages, msg.Clone())
	n := len(t.messages)
	var (
		r        mail.Receipt
		scripted bool
		f        = t.sendFunc
	)
	if len(t.script) > 0 {
		r, scripted = t.script[0], true
		t.script = t.script[1:]
	}
	t.mu.Unlock()

	var err error
	switch {
	case scripted:
		if r.Category == "" {
			r.Category = mail.Accepted
		}
	case f != nil:
		r, err = f(ctx, msg)
		if r.Category == "" && err == nil {
			r.Category = mail.Accepted
		}
	default:
		r = mail.Receipt{Category: mail.Accepted, Code: 250, ProviderID: "memory-" + strconv.Itoa(n)}
	}
	if r.Category == mail.Accepted && err == nil {
		t.mu.Lock()
		t.accepted++
		t.mu.Unlock()
		return r, nil
	}
	if err == nil {
		err = &mail.Error{Receipt: r}
	}
	return r, err
}

// Messages returns copies of every message Send was given (whatever came of
// it), in order.
func (t *Transport) Messages() []*mail.Message {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]*mail.Message, len(t.messages))
	for i, m := range t.messages {
		out[i] = m.Clone()
	}
	return out
}

// Sent returns how many sends were Accepted.
func (t *Transport) Sent() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.accepted
}

// Attempts returns how many messages Send recorded (every call but those
// with a context already done).
func (t *Transport) Attempts() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.messages)
}

// Reset forgets the messages, the counts, the script and the SendFunc.
func (t *Transport) Reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.messages, t.accepted, t.script, t.sendFunc = nil, 0, nil, nil
}
