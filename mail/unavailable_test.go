package mail_test

import (
	"errors"
	"syscall"
	"testing"

	"github.com/alexify/mailer/mail"
)

func TestUnavailable(t *testing.T) {
	tests := []struct {
		name  string
		cause error
	}{
		{"with a cause", syscall.ECONNREFUSED},
		{"without a cause", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := mail.Unavailable("connection refused", tt.cause)
			if r.Category != mail.Retryable || r.Code != 0 || r.Reason != "connection refused" {
				t.Errorf("receipt = %+v, want retryable, code 0, the reason", r)
			}
			if !errors.Is(err, mail.ErrUnavailable) {
				t.Errorf("errors.Is(%v, ErrUnavailable) = false", err)
			}
			if tt.cause != nil && !errors.Is(err, tt.cause) {
				t.Errorf("errors.Is(%v, cause) = false", err)
			}
			var me *mail.Error
			if !errors.As(err, &me) || me.Receipt.Category != r.Category || me.Receipt.Reason != r.Reason {
				t.Errorf("errors.As *mail.Error = %+v, want the receipt %+v", me, r)
			}
		})
	}
	if mail.ErrUnavailable.Receipt.Category != mail.Retryable {
		t.Errorf("ErrUnavailable's category = %s, want retryable", mail.ErrUnavailable.Receipt.Category)
	}
	if other := (&mail.Error{Receipt: mail.Receipt{Category: mail.Retryable, Code: 451}}); errors.Is(other, mail.ErrUnavailable) {
		t.Error("a plain retryable error is ErrUnavailable")
	}
}
