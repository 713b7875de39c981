package mailqueue_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/alexify/mailer/drivers/memory"
	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/mail"
	"github.com/alexify/mailer/mailqueue"
)

// answering is a transport that answers one receipt and one error.
type answering struct {
	receipt mail.Receipt
	err     error
}

func (a answering) Send(context.Context, *mail.Message) (mail.Receipt, error) {
	return a.receipt, a.err
}

// TestInvalidMessageAndReceipt: a send whose error says the job makes no
// message fails it with queue.invalid_message, whatever receipt comes with
// it; a receipt that is not accepted with no error, and an accepted one with
// an error, fail it with queue.invalid_receipt. None is retried.
func TestInvalidMessageAndReceipt(t *testing.T) {
	t.Parallel()
	invalid := fmt.Errorf("mail: build: %w", mail.ErrInvalidMessage)
	tests := []struct {
		name string
		tr   answering
		want codes.Code
	}{
		{"ErrInvalidMessage, no receipt", answering{err: invalid}, codes.QueueInvalidMessage},
		{"ErrInvalidMessage in a *mail.Error with a retryable receipt", answering{
			receipt: mail.Receipt{Category: mail.Retryable},
			err:     &mail.Error{Receipt: mail.Receipt{Category: mail.Retryable}, Err: invalid},
		}, codes.QueueInvalidMessage},
		{"no error, no receipt", answering{}, codes.QueueInvalidReceipt},
		{"no error, a retryable receipt", answering{receipt: mail.Receipt{Category: mail.Retryable, Code: 451}}, codes.QueueInvalidReceipt},
		{"no error, a rate limit", answering{receipt: mail.Receipt{Category: mail.RateLimited, Code: 429}}, codes.QueueInvalidReceipt},
		{"no error, delivery unknown", answering{receipt: mail.Receipt{Category: mail.DeliveryUnknown}}, codes.QueueInvalidReceipt},
		{"an error, an accepted receipt", answering{receipt: mail.Receipt{Category: mail.Accepted, Code: 250}, err: errors.New("and yet")}, codes.QueueInvalidReceipt},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, mailqueue.WorkerConfig{Transport: tc.tr}, memory.Options{}).start()
			id := h.enqueue(contentJob())
			h.drain()
			events := h.sink.Events(id)
			last := events[len(events)-1]
			if last.State != mailqueue.AuditFailed || last.Code != tc.want || last.Attempt != 1 {
				t.Errorf("last audit event %+v; want failed, %s, attempt 1", last, tc.want)
			}
			recs := h.logs.find(string(codes.QueueJobFailed))
			if len(recs) != 1 || recs[0].Attrs["code"] != string(tc.want) {
				t.Errorf("queue.job.failed records %+v; want one with code %s", recs, tc.want)
			} else if tc.want == codes.QueueInvalidMessage && !strings.Contains(recs[0].Attrs["reason"], "does not make a message") {
				t.Errorf("reason %q", recs[0].Attrs["reason"])
			}
		})
	}
}
