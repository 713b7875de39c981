package memory_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/alexify/mailer/mail"
	"github.com/alexify/mailer/mail/memory"
)

func msg(id string) *mail.Message {
	return &mail.Message{MessageID: "<" + id + "@example.com>", Date: time.Unix(0, 0), From: "a@example.com", To: []string{"b@example.com"}, Text: "hi"}
}

func TestScriptThenAccepted(t *testing.T) {
	t.Parallel()
	tr := memory.New()
	tr.Script(
		mail.Receipt{Category: mail.Retryable, Code: 451},
		mail.Receipt{Category: mail.DeliveryUnknown},
	)
	var got []mail.Category
	for i := range 3 {
		r, err := tr.Send(context.Background(), msg("m"+string(rune('0'+i))))
		if (err == nil) != (r.Category == mail.Accepted) {
			t.Fatalf("receipt %+v with error %v", r, err)
		}
		var me *mail.Error
		if err != nil && (!errors.As(err, &me) || me.Receipt.Category != r.Category) {
			t.Fatalf("error %v is not a *mail.Error with the receipt", err)
		}
		got = append(got, r.Category)
	}
	want := []mail.Category{mail.Retryable, mail.DeliveryUnknown, mail.Accepted}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("categories %v, want %v", got, want)
		}
	}
	if tr.Sent() != 1 || tr.Attempts() != 3 || len(tr.Messages()) != 3 {
		t.Errorf("Sent %d Attempts %d Messages %d", tr.Sent(), tr.Attempts(), len(tr.Messages()))
	}
	if tr.Messages()[2].MessageID != "<m2@example.com>" {
		t.Errorf("order: %v", tr.Messages()[2].MessageID)
	}
}

func TestOnSendAndCopies(t *testing.T) {
	t.Parallel()
	tr := memory.New()
	tr.OnSend(func(ctx context.Context, m *mail.Message) (mail.Receipt, error) {
		return mail.Receipt{Category: mail.Rejected, Code: 550}, nil
	})
	m := msg("x")
	r, err := tr.Send(context.Background(), m)
	if r.Category != mail.Rejected || err == nil {
		t.Fatalf("%+v %v", r, err)
	}
	m.To[0] = "changed@example.com"
	if tr.Messages()[0].To[0] != "b@example.com" {
		t.Error("the recorded message follows the caller's changes")
	}
	tr.Reset()
	if r, err := tr.Send(context.Background(), m); err != nil || r.Category != mail.Accepted || tr.Attempts() != 1 {
		t.Errorf("after Reset: %+v %v", r, err)
	}
}

func TestCancelled(t *testing.T) {
	t.Parallel()
	tr := memory.New()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r, err := tr.Send(ctx, msg("x"))
	if r.Category != mail.Retryable || !errors.Is(err, context.Canceled) || tr.Attempts() != 0 {
		t.Errorf("%+v %v %d", r, err, tr.Attempts())
	}
}

func TestConcurrent(t *testing.T) {
	t.Parallel()
	tr := memory.New()
	tr.Script(make([]mail.Receipt, 50)...)
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() {
			_, _ = tr.Send(context.Background(), msg("c"))
			_ = tr.Messages()
		})
	}
	wg.Wait()
	if tr.Sent() != 100 || tr.Attempts() != 100 {
		t.Errorf("Sent %d Attempts %d", tr.Sent(), tr.Attempts())
	}
}
