package idempotency_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alexify/mailer/clock"
	"github.com/alexify/mailer/mail"
	"github.com/alexify/mailer/mail/idempotency"
	"github.com/alexify/mailer/mail/memory"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func message(key string) *mail.Message {
	return &mail.Message{
		MessageID: "<m@example.com>", Date: t0, From: "a@example.com", To: []string{"b@example.com"},
		Subject: "Hi", Text: "Hi", IdempotencyKey: key,
	}
}

func newTransport(t *testing.T, inner mail.Transport, store idempotency.Store) *idempotency.Transport {
	t.Helper()
	tr, err := idempotency.New(inner, store, idempotency.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestAcceptedKeyAnswersTheStoredReceipt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := idempotency.NewMemoryStore(clock.NewFake(t0))
	inner := memory.New()
	tr := newTransport(t, inner, store)
	first, err := tr.Send(ctx, message("job-1"))
	if err != nil || first.Category != mail.Accepted {
		t.Fatalf("first send: %+v, %v", first, err)
	}
	// Another worker with its own Transport over the same store.
	again, err := newTransport(t, inner, store).Send(ctx, message("job-1"))
	if err != nil || again.Category != mail.Accepted || again.ProviderID != first.ProviderID {
		t.Fatalf("second send: %+v, %v; want the stored receipt %+v", again, err, first)
	}
	if n := inner.Attempts(); n != 1 {
		t.Errorf("the inner transport sent %d times, want 1", n)
	}
	// Another key sends.
	if _, err := tr.Send(ctx, message("job-2")); err != nil || inner.Attempts() != 2 {
		t.Errorf("another key: %v, %d sends", err, inner.Attempts())
	}
}

func TestCategoriesReleaseOrKeep(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cat      mail.Category
		released bool
	}{
		{mail.Retryable, true}, {mail.RateLimited, true}, {mail.Rejected, true}, {mail.Validation, true},
		{mail.Unsupported, true}, {mail.Auth, true}, {mail.Configuration, true},
		{mail.DeliveryUnknown, false}, {"something_new", false},
	} {
		t.Run(string(tc.cat), func(t *testing.T) {
			ctx := context.Background()
			store := idempotency.NewMemoryStore(clock.NewFake(t0))
			inner := memory.New()
			inner.Script(mail.Receipt{Category: tc.cat, Code: 451})
			tr := newTransport(t, inner, store)
			r, err := tr.Send(ctx, message("k"))
			var me *mail.Error
			if r.Category != tc.cat || !errors.As(err, &me) {
				t.Fatalf("first send: %+v, %v", r, err)
			}
			_, held := store.Get("k")
			if held == tc.released {
				t.Errorf("after %s the key is held: %t", tc.cat, held)
			}
			r, err = tr.Send(ctx, message("k"))
			if tc.released {
				if err != nil || r.Category != mail.Accepted || inner.Attempts() != 2 {
					t.Errorf("the retry after %s: %+v, %v, %d sends; want sent and accepted", tc.cat, r, err, inner.Attempts())
				}
			} else if r.Category != tc.cat || inner.Attempts() != 1 {
				t.Errorf("the attempt after %s: %+v, %d sends; want the stored receipt, no send", tc.cat, r, inner.Attempts())
			}
		})
	}
}

// panicking panics on its first send, between the reservation and the
// receipt, as a process killed mid-send would stop.
type panicking struct{ sends atomic.Int32 }

func (p *panicking) Send(ctx context.Context, m *mail.Message) (mail.Receipt, error) {
	if p.sends.Add(1) == 1 {
		panic("killed mid-send")
	}
	return mail.Receipt{Category: mail.Accepted, Code: 250}, nil
}

func TestSendKilledBetweenReservationAndReceipt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fc := clock.NewFake(t0)
	store := idempotency.NewMemoryStore(fc)
	inner := &panicking{}
	func() {
		defer func() {
			if p := recover(); p == nil {
				t.Fatal("the panic was swallowed")
			}
		}()
		_, _ = newTransport(t, inner, store).Send(ctx, message("job-1"))
	}()
	e, ok := store.Get("job-1")
	if !ok || e.Receipt != nil {
		t.Fatalf("after the kill: entry %+v, %t; want a reservation without receipt", e, ok)
	}
	// The next attempt, in another worker, within the lease: no send.
	fc.Advance(idempotency.DefaultLeaseDuration - time.Second)
	r, err := newTransport(t, inner, store).Send(ctx, message("job-1"))
	if r.Category != mail.DeliveryUnknown || !errors.Is(err, idempotency.ErrInFlight) {
		t.Errorf("the next attempt: %+v, %v; want delivery_unknown, ErrInFlight", r, err)
	}
	if n := inner.sends.Load(); n != 1 {
		t.Errorf("the inner transport was called %d times, want 1", n)
	}
	// Past the lease, after the workers were down for long, still no
	// second send: the run that died may have sent it.
	fc.Advance(time.Hour)
	if r, err := newTransport(t, inner, store).Send(ctx, message("job-1")); r.Category != mail.DeliveryUnknown || !errors.Is(err, idempotency.ErrInFlight) {
		t.Errorf("an hour later: %+v, %v; want delivery_unknown", r, err)
	}
	if n := inner.sends.Load(); n != 1 {
		t.Errorf("the inner transport was called %d times, want 1", n)
	}
	// Only once a receipt would have been forgotten is the key free.
	fc.Advance(idempotency.DefaultReceiptTTL)
	if r, err := newTransport(t, inner, store).Send(ctx, message("job-1")); err != nil || r.Category != mail.Accepted {
		t.Errorf("past the receipt's time: %+v, %v", r, err)
	}
}

func TestContextCancelledMidSendKeepsTheKey(t *testing.T) {
	t.Parallel()
	store := idempotency.NewMemoryStore(clock.NewFake(t0))
	inner := memory.New()
	started := make(chan struct{})
	inner.OnSend(func(ctx context.Context, m *mail.Message) (mail.Receipt, error) {
		close(started)
		<-ctx.Done()
		return mail.Receipt{}, ctx.Err() // no receipt: it may have gone
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan mail.Receipt)
	go func() {
		r, _ := newTransport(t, inner, store).Send(ctx, message("job-1"))
		done <- r
	}()
	<-started
	cancel()
	if r := <-done; r.Category != mail.DeliveryUnknown {
		t.Fatalf("a send cancelled midway: %+v, want delivery_unknown", r)
	}
	inner.OnSend(nil)
	r, err := newTransport(t, inner, store).Send(context.Background(), message("job-1"))
	if r.Category != mail.DeliveryUnknown || err == nil || inner.Attempts() != 1 {
		t.Errorf("the next attempt: %+v, %v, %d sends; want delivery_unknown without a send", r, err, inner.Attempts())
	}
}

func TestConcurrentSendsOfOneKeySendOnce(t *testing.T) {
	t.Parallel()
	store := idempotency.NewMemoryStore(nil)
	inner := memory.New()
	tr := newTransport(t, inner, store)
	var wg sync.WaitGroup
	var accepted, unknown atomic.Int32
	for range 20 {
		wg.Go(func() {
			r, _ := tr.Send(context.Background(), message("job-1"))
			switch r.Category {
			case mail.Accepted:
				accepted.Add(1)
			case mail.DeliveryUnknown:
				unknown.Add(1)
			}
		})
	}
	wg.Wait()
	if inner.Attempts() != 1 || accepted.Load()+unknown.Load() != 20 || accepted.Load() < 1 {
		t.Errorf("%d sends, %d accepted, %d unknown; want 1 send", inner.Attempts(), accepted.Load(), unknown.Load())
	}
}

type failingStore struct{ idempotency.Store }

func (failingStore) Reserve(context.Context, string, string, time.Duration) (*idempotency.Entry, error) {
	return nil, errors.New("connection refused")
}

func TestStoreFailureSendsNothing(t *testing.T) {
	t.Parallel()
	inner := memory.New()
	r, err := newTransport(t, inner, failingStore{}).Send(context.Background(), message("job-1"))
	if r.Category != mail.Retryable || !errors.Is(err, idempotency.ErrStore) || inner.Attempts() != 0 {
		t.Errorf("%+v, %v, %d sends; want retryable, nothing sent", r, err, inner.Attempts())
	}
}

func TestNoKeyPassesThrough(t *testing.T) {
	t.Parallel()
	inner := memory.New()
	tr := newTransport(t, inner, idempotency.NewMemoryStore(nil))
	for range 2 {
		if _, err := tr.Send(context.Background(), message("")); err != nil {
			t.Fatal(err)
		}
	}
	if inner.Attempts() != 2 {
		t.Errorf("%d sends without a key, want 2", inner.Attempts())
	}
}

func TestMemoryStoreFencesByToken(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fc := clock.NewFake(t0)
	s := idempotency.NewMemoryStore(fc)
	if e, err := s.Reserve(ctx, "k", "a", time.Minute); e != nil || err != nil {
		t.Fatalf("reserve: %+v, %v", e, err)
	}
	if e, _ := s.Reserve(ctx, "k", "b", time.Minute); e == nil || e.Token != "a" {
		t.Fatalf("a second reserve: %+v; want a's reservation", e)
	}
	fc.Advance(time.Minute)
	if e, _ := s.Reserve(ctx, "k", "b", time.Minute); e != nil {
		t.Fatalf("reserve after the ttl: %+v; want reserved", e)
	}
	if ok, _ := s.Release(ctx, "k", "a"); ok {
		t.Error("a stale token released b's reservation")
	}
	if ok, _ := s.Complete(ctx, "k", "a", mail.Receipt{Category: mail.Accepted}, time.Hour); ok {
		t.Error("a stale token completed b's reservation")
	}
	if ok, _ := s.Complete(ctx, "k", "b", mail.Receipt{Category: mail.Accepted}, time.Hour); !ok {
		t.Error("b could not complete its reservation")
	}
	if ok, _ := s.Release(ctx, "k", "b"); ok {
		t.Error("a completed key was released")
	}
	fc.Advance(59 * time.Minute)
	if e, ok := s.Get("k"); !ok || e.Receipt == nil {
		t.Error("the receipt did not last its ttl")
	}
	fc.Advance(time.Minute)
	if _, ok := s.Get("k"); ok {
		t.Error("the receipt outlived its ttl")
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	if _, err := idempotency.New(nil, idempotency.NewMemoryStore(nil), idempotency.Options{}); err == nil {
		t.Error("no transport: accepted")
	}
	if _, err := idempotency.New(memory.New(), nil, idempotency.Options{}); err == nil {
		t.Error("no store: accepted")
	}
	if _, err := idempotency.New(memory.New(), idempotency.NewMemoryStore(nil), idempotency.Options{LeaseDuration: -1}); err == nil {
		t.Error("negative lease: accepted")
	}
}
