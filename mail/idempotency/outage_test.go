package idempotency_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/alexify/mailer/clock"
	"github.com/alexify/mailer/mail"
	"github.com/alexify/mailer/mail/idempotency"
	"github.com/alexify/mailer/mail/memory"
)

// errOOM is what a full Redis with maxmemory-policy noeviction answers.
var errOOM = errors.New("OOM command not allowed when used memory > 'maxmemory'")

// downStore is a store whose every call fails with err when err is set,
// and goes to the memory store otherwise.
type downStore struct {
	idempotency.Store
	err error
}

func (s downStore) Reserve(ctx context.Context, key, token string, ttl time.Duration) (*idempotency.Entry, error) {
	if s.err != nil {
		return nil, s.err
	}
	return s.Store.Reserve(ctx, key, token, ttl)
}

func (s downStore) Release(ctx context.Context, key, token string) (bool, error) {
	if s.err != nil {
		return false, s.err
	}
	return s.Store.Release(ctx, key, token)
}

// checking is a memory transport with a Check that answers err.
type checking struct {
	*memory.Transport
	err error
}

func (c checking) Check(context.Context) error { return c.err }

// TestStoreFailureIsAnOutage: a store that fails before the send (down, or
// full) sends nothing and answers an error matching ErrStore and
// mail.ErrUnavailable, which the queue takes as an outage (issue 10,
// point 1).
func TestStoreFailureIsAnOutage(t *testing.T) {
	inner := memory.New()
	store := downStore{Store: idempotency.NewMemoryStore(clock.NewFake(t0)), err: errOOM}
	r, err := newTransport(t, inner, store).Send(context.Background(), message("job-1"))
	var me *mail.Error
	if !errors.As(err, &me) || !cmp.Equal(me.Receipt, r) {
		t.Fatalf("Send: %v (%T), want a *mail.Error carrying the receipt", err, err)
	}
	for _, target := range []error{mail.ErrUnavailable, idempotency.ErrStore, errOOM} {
		if !errors.Is(err, target) {
			t.Errorf("Send: %v does not match %v", err, target)
		}
	}
	if r.Category != mail.Retryable || inner.Attempts() != 0 {
		t.Errorf("receipt %s with %d sends; want retryable, nothing sent", r.Category, inner.Attempts())
	}
}

// TestCheck: Check tries the store, then the inner transport's Check; an
// inner transport without Check says it cannot (errors.ErrUnsupported), so
// the breaker probes with a job.
func TestCheck(t *testing.T) {
	refused := errors.New("535 authentication failed")
	unreachable := errors.Join(mail.ErrUnavailable, errors.New("connection refused"))
	tests := []struct {
		name     string
		inner    mail.Transport
		storeErr error
		want     []error // errors.Is for each; none for a nil error
	}{
		{"the store is full", checking{memory.New(), nil}, errOOM, []error{mail.ErrUnavailable, idempotency.ErrStore, errOOM}},
		{"the inner transport has no Check", memory.New(), nil, []error{errors.ErrUnsupported}},
		{"the inner transport checks", checking{memory.New(), nil}, nil, nil},
		{"the inner transport is unreachable", checking{memory.New(), unreachable}, nil, []error{mail.ErrUnavailable}},
		{"the inner transport refuses", checking{memory.New(), refused}, nil, []error{refused}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem := idempotency.NewMemoryStore(clock.NewFake(t0))
			tr, err := idempotency.New(tt.inner, downStore{Store: mem, err: tt.storeErr}, idempotency.Options{NewToken: func() string { return "tok" }})
			if err != nil {
				t.Fatal(err)
			}
			err = tr.Check(context.Background())
			if len(tt.want) == 0 && err != nil {
				t.Fatalf("Check: %v, want nil", err)
			}
			if len(tt.want) > 0 && err == nil {
				t.Fatal("Check: nil, want an error")
			}
			for _, target := range tt.want {
				if !errors.Is(err, target) {
					t.Errorf("Check: %v does not match %v", err, target)
				}
			}
			if tt.storeErr == nil {
				// Check leaves no key of its own behind: its key reserves
				// again.
				if e, err := mem.Reserve(context.Background(), "idempotency-check:tok", "other", time.Minute); e != nil || err != nil {
					t.Errorf("reserve after Check: %v, %v", e, err)
				}
			}
		})
	}
}

func TestDedupes(t *testing.T) {
	var tr mail.Transport = newTransport(t, memory.New(), idempotency.NewMemoryStore(clock.NewFake(t0)))
	d, ok := tr.(mail.Deduper)
	if !ok || !d.Dedupes() {
		t.Error("the Transport does not say it dedupes")
	}
}
