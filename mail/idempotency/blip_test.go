package idempotency_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alexify/mailer/clock"
	"github.com/alexify/mailer/mail"
	"github.com/alexify/mailer/mail/idempotency"
	"github.com/alexify/mailer/mail/memory"
)

// blipStore is a MemoryStore whose Complete and Release fail (the store
// does not answer) the first fails times, counting the tries.
type blipStore struct {
	*idempotency.MemoryStore
	fails atomic.Int32
	tries atomic.Int32
}

func (s *blipStore) Complete(ctx context.Context, key, token string, r mail.Receipt, ttl time.Duration) (bool, error) {
	s.tries.Add(1)
	if s.fails.Add(-1) >= 0 {
		return false, errors.New("connection refused")
	}
	return s.MemoryStore.Complete(ctx, key, token, r, ttl)
}

func (s *blipStore) Release(ctx context.Context, key, token string) (bool, error) {
	s.tries.Add(1)
	if s.fails.Add(-1) >= 0 {
		return false, errors.New("connection refused")
	}
	return s.MemoryStore.Release(ctx, key, token)
}

// waitTimer waits until the fake clock has a timer: the Transport waits
// before its next try.
func waitTimer(t *testing.T, fc *clock.Fake) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for fc.Timers() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no timer within 5s")
		}
		time.Sleep(time.Millisecond)
	}
}

type sendResult struct {
	r   mail.Receipt
	err error
}

// TestCompleteRetriedThroughABlip: a Complete the store does not answer
// twice is tried again after 50 ms, then 100 ms; the receipt is stored,
// so the send again answers it and sends nothing.
func TestCompleteRetriedThroughABlip(t *testing.T) {
	fc := clock.NewFake(t0)
	store := &blipStore{MemoryStore: idempotency.NewMemoryStore(fc)}
	store.fails.Store(2)
	inner := memory.New()
	tr, err := idempotency.New(inner, store, idempotency.Options{Clock: fc})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan sendResult, 1)
	go func() {
		r, err := tr.Send(context.Background(), message("job-1"))
		done <- sendResult{r, err}
	}()
	for i, wait := range []time.Duration{50 * time.Millisecond, 100 * time.Millisecond} {
		waitTimer(t, fc)
		if n := store.tries.Load(); n != int32(i+1) {
			t.Fatalf("%d tries before wait %d", n, i+1)
		}
		fc.Advance(wait)
	}
	res := <-done
	if res.err != nil || res.r.Category != mail.Accepted || store.tries.Load() != 3 {
		t.Fatalf("Send = %+v, %v after %d tries; want accepted after 3", res.r, res.err, store.tries.Load())
	}
	if e, ok := store.Get("job-1"); !ok || e.Receipt == nil || e.Receipt.Category != mail.Accepted {
		t.Fatalf("the entry after the blip: %+v; want the accepted receipt", e)
	}
	if r, err := tr.Send(context.Background(), message("job-1")); err != nil || r.Category != mail.Accepted || inner.Attempts() != 1 {
		t.Errorf("the send again: %+v, %v, %d sends; want the stored receipt, 1 send", r, err, inner.Attempts())
	}
}

// TestReleaseRetriedThroughABlip: a Release the store does not answer
// once is tried again, so the retry of a message that did not go sends
// instead of answering DeliveryUnknown.
func TestReleaseRetriedThroughABlip(t *testing.T) {
	fc := clock.NewFake(t0)
	store := &blipStore{MemoryStore: idempotency.NewMemoryStore(fc)}
	store.fails.Store(1)
	inner := memory.New()
	inner.Script(mail.Receipt{Category: mail.Retryable, Reason: "451"})
	tr, err := idempotency.New(inner, store, idempotency.Options{Clock: fc})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan sendResult, 1)
	go func() {
		r, err := tr.Send(context.Background(), message("job-1"))
		done <- sendResult{r, err}
	}()
	waitTimer(t, fc)
	fc.Advance(50 * time.Millisecond)
	if res := <-done; res.r.Category != mail.Retryable {
		t.Fatalf("Send = %+v, %v; want the retryable receipt", res.r, res.err)
	}
	if _, ok := store.Get("job-1"); ok {
		t.Fatal("the key is still reserved after a release that went through on its second try")
	}
	if r, err := tr.Send(context.Background(), message("job-1")); err != nil || r.Category != mail.Accepted || inner.Attempts() != 2 {
		t.Errorf("the retry: %+v, %v, %d sends; want accepted, 2 sends", r, err, inner.Attempts())
	}
}

// TestCompleteGivenUpWhenTheSendEnds: while the store does not answer,
// Complete is tried until the send's context ends (the run's lease is
// about to be lost), then the key stays reserved: an attempt again
// answers DeliveryUnknown, never a second send.
func TestCompleteGivenUpWhenTheSendEnds(t *testing.T) {
	fc := clock.NewFake(t0)
	store := &blipStore{MemoryStore: idempotency.NewMemoryStore(fc)}
	store.fails.Store(1 << 30)
	inner := memory.New()
	tr, err := idempotency.New(inner, store, idempotency.Options{Clock: fc})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan sendResult, 1)
	go func() {
		r, err := tr.Send(ctx, message("job-1"))
		done <- sendResult{r, err}
	}()
	for range 5 {
		waitTimer(t, fc)
		fc.Advance(2 * time.Second)
	}
	cancel()
	res := <-done
	if res.err != nil || res.r.Category != mail.Accepted {
		t.Fatalf("Send = %+v, %v; want the inner transport's receipt", res.r, res.err)
	}
	if n := store.tries.Load(); n < 5 {
		t.Errorf("%d tries of Complete, want one a wait", n)
	}
	r, err := tr.Send(context.Background(), message("job-1"))
	if r.Category != mail.DeliveryUnknown || !errors.Is(err, idempotency.ErrInFlight) || inner.Attempts() != 1 {
		t.Errorf("the attempt again: %+v, %v, %d sends; want DeliveryUnknown (in flight), 1 send", r, err, inner.Attempts())
	}
}

// TestMemoryStoreForget: Forget deletes a reservation or a receipt, and a
// key that holds none is no error; the next reserve takes the key.
func TestMemoryStoreForget(t *testing.T) {
	ctx := context.Background()
	s := idempotency.NewMemoryStore(clock.NewFake(t0))
	if err := s.Forget(ctx, "none"); err != nil {
		t.Errorf("Forget of no entry: %v", err)
	}
	for _, complete := range []bool{false, true} {
		if e, err := s.Reserve(ctx, "k", "a", time.Hour); e != nil || err != nil {
			t.Fatalf("reserve: %+v, %v", e, err)
		}
		if complete {
			if ok, err := s.Complete(ctx, "k", "a", mail.Receipt{Category: mail.DeliveryUnknown}, time.Hour); !ok || err != nil {
				t.Fatalf("complete: %t, %v", ok, err)
			}
		}
		if err := s.Forget(ctx, "k"); err != nil {
			t.Fatal(err)
		}
		if _, ok := s.Get("k"); ok {
			t.Errorf("Forget (completed %t) left the entry", complete)
		}
	}
}

// retriedReserve is a MemoryStore whose Reserve is made twice, as a client
// that retries a command whose answer a restart lost: the second call
// finds the reservation the first made.
type retriedReserve struct{ *idempotency.MemoryStore }

func (s retriedReserve) Reserve(ctx context.Context, key, token string, ttl time.Duration) (*idempotency.Entry, error) {
	if _, err := s.MemoryStore.Reserve(ctx, key, token, ttl); err != nil {
		return nil, err
	}
	return s.MemoryStore.Reserve(ctx, key, token, ttl)
}

// TestOwnReservationAnsweredLate: a reserve that finds the reservation of
// its own token (made by a first try whose answer was lost) sends, and is
// not taken for a send in flight.
func TestOwnReservationAnsweredLate(t *testing.T) {
	inner := memory.New()
	store := retriedReserve{idempotency.NewMemoryStore(clock.NewFake(t0))}
	r, err := newTransport(t, inner, store).Send(context.Background(), message("job-1"))
	if err != nil || r.Category != mail.Accepted || inner.Attempts() != 1 {
		t.Errorf("Send = %+v, %v, %d sends; want accepted, sent once", r, err, inner.Attempts())
	}
	if e, ok := store.Get("job-1"); !ok || e.Receipt == nil || e.Receipt.Category != mail.Accepted {
		t.Errorf("the key after the send: %+v, %t; want the accepted receipt", e, ok)
	}
}
