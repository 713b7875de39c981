// Package storetest holds an idempotency.Store to its contract: the tests a
// store of mail/idempotency must pass, whatever keeps its entries (the
// memory store, the Redis driver's, the PostgreSQL driver's, or one of your
// own). Call Run from a test of the store's package:
//
//	func TestStore(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) storetest.Harness {
//			return storetest.Harness{Store: newEmptyStore(t)}
//		})
//	}
//
// The contract is the one idempotency.Store documents: a reserve takes a key
// that holds no live entry, and of concurrent reserves exactly one wins;
// Complete and Release compare the token; an entry runs out by its
// time-to-live on the store's clock; Forget drops an entry whoever holds
// it; two transports on one store never send a key twice, and a key in
// flight on one is delivery_unknown on the other.
package storetest

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alexify/mailer/mail"
	"github.com/alexify/mailer/mail/idempotency"
)

// Harness is a store under test.
type Harness struct {
	// Store is a store that holds no entry yet, for this test alone.
	Store idempotency.Store
	// Advance moves the store's clock forward by d. Leave it nil for a
	// store on a clock of its own (a server's): the time-to-live test then
	// waits in real time, a few tens of milliseconds.
	Advance func(d time.Duration)
}

// Run runs every test of the contract as a subtest, each on a harness of
// its own from newHarness.
func Run(t *testing.T, newHarness func(t *testing.T) Harness) {
	t.Helper()
	tests := []struct {
		name string
		run  func(t *testing.T, h Harness)
	}{
		{"Complete", testComplete},
		{"Release", testRelease},
		{"TimeToLive", testTimeToLive},
		{"Concurrent", testConcurrent},
		{"Forget", testForget},
		{"TransportShared", testTransportShared},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, newHarness(t)) })
	}
}

// receipt is a receipt with every field a store must keep.
var receipt = mail.Receipt{Category: mail.Accepted, Code: 250, ProviderID: "q-1", RetryAfter: time.Second,
	Refused: []mail.RefusedRecipient{{Address: "x@example.com", Code: 550, Reason: "no such user"}}}

// testComplete: a reserve takes only a free key; Complete and Release by
// another token change nothing; a completed key answers its receipt.
func testComplete(t *testing.T, h Harness) {
	ctx, s := t.Context(), h.Store
	e, err := s.Reserve(ctx, "k", "t1", time.Minute)
	if err != nil || e != nil {
		t.Fatalf("first Reserve = %+v, %v; want reserved", e, err)
	}
	e, err = s.Reserve(ctx, "k", "t2", time.Minute)
	if err != nil || e == nil || e.Token != "t1" || e.Receipt != nil {
		t.Fatalf("second Reserve = %+v, %v; want the reservation of t1", e, err)
	}
	if ok, err := s.Complete(ctx, "k", "t2", mail.Receipt{Category: mail.Accepted}, time.Minute); ok || err != nil {
		t.Errorf("Complete by another token = %t, %v", ok, err)
	}
	if ok, err := s.Release(ctx, "k", "t2"); ok || err != nil {
		t.Errorf("Release by another token = %t, %v", ok, err)
	}
	if ok, err := s.Complete(ctx, "k", "t1", receipt, time.Minute); !ok || err != nil {
		t.Fatalf("Complete = %t, %v", ok, err)
	}
	if ok, _ := s.Complete(ctx, "k", "t1", receipt, time.Minute); ok {
		t.Error("a second Complete succeeded")
	}
	if ok, _ := s.Release(ctx, "k", "t1"); ok {
		t.Error("Release of a completed key succeeded")
	}
	e, err = s.Reserve(ctx, "k", "t3", time.Minute)
	if err != nil || e == nil || e.Token != "t1" || e.Receipt == nil || e.Receipt.ProviderID != "q-1" || e.Receipt.RetryAfter != time.Second || len(e.Receipt.Refused) != 1 {
		t.Fatalf("Reserve of a completed key = %+v, %v; want its receipt", e, err)
	}
}

// testRelease: a released key is free to reserve again.
func testRelease(t *testing.T, h Harness) {
	ctx, s := t.Context(), h.Store
	if e, err := s.Reserve(ctx, "r", "t1", time.Minute); e != nil || err != nil {
		t.Fatalf("Reserve = %+v, %v; want reserved", e, err)
	}
	if ok, err := s.Release(ctx, "r", "t1"); !ok || err != nil {
		t.Fatalf("Release = %t, %v", ok, err)
	}
	if e, err := s.Reserve(ctx, "r", "t2", time.Minute); e != nil || err != nil {
		t.Errorf("Reserve after Release = %+v, %v; want reserved", e, err)
	}
}

// testTimeToLive: a reservation that ran out can be neither completed nor
// kept from another reserve; a receipt that ran out is gone too.
func testTimeToLive(t *testing.T, h Harness) {
	ctx, s := t.Context(), h.Store
	const ttl = 50 * time.Millisecond
	pass := func() {
		if h.Advance != nil {
			h.Advance(ttl + time.Millisecond)
			return
		}
		time.Sleep(ttl + 30*time.Millisecond) // the store's own clock: real time
	}
	if e, err := s.Reserve(ctx, "short", "t1", ttl); e != nil || err != nil {
		t.Fatalf("Reserve = %+v, %v; want reserved", e, err)
	}
	pass()
	if ok, _ := s.Complete(ctx, "short", "t1", receipt, time.Minute); ok {
		t.Error("Complete after the reservation ran out succeeded")
	}
	if e, err := s.Reserve(ctx, "short", "t2", time.Minute); e != nil || err != nil {
		t.Errorf("Reserve after the reservation ran out = %+v, %v; want reserved", e, err)
	}
	if ok, err := s.Complete(ctx, "short", "t2", receipt, ttl); !ok || err != nil {
		t.Fatalf("Complete = %t, %v", ok, err)
	}
	pass()
	if e, err := s.Reserve(ctx, "short", "t3", time.Minute); e != nil || err != nil {
		t.Errorf("Reserve after the receipt ran out = %+v, %v; want reserved", e, err)
	}
}

// testConcurrent: of concurrent reserves of a key, exactly one wins.
func testConcurrent(t *testing.T, h Harness) {
	ctx, s := t.Context(), h.Store
	var won atomic.Int32
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, err := s.Reserve(ctx, "race", "t"+strconv.Itoa(i), time.Minute)
			if err != nil {
				t.Error(err)
			}
			if e == nil && err == nil {
				won.Add(1)
			}
		}()
	}
	wg.Wait()
	if won.Load() != 1 {
		t.Errorf("%d reserves won, want 1", won.Load())
	}
}

// testForget: Forget drops a reservation or a receipt, whoever holds it,
// and the next reserve takes the key; a key with no entry is no error.
func testForget(t *testing.T, h Harness) {
	ctx, s := t.Context(), h.Store
	if err := s.Forget(ctx, "never"); err != nil {
		t.Errorf("Forget of a key with no entry: %v", err)
	}
	for _, complete := range []bool{false, true} {
		key := "f" + strconv.FormatBool(complete)
		if e, err := s.Reserve(ctx, key, "t1", time.Minute); e != nil || err != nil {
			t.Fatalf("Reserve = %+v, %v; want reserved", e, err)
		}
		if complete {
			if ok, err := s.Complete(ctx, key, "t1", receipt, time.Minute); !ok || err != nil {
				t.Fatalf("Complete = %t, %v", ok, err)
			}
		}
		if err := s.Forget(ctx, key); err != nil {
			t.Fatal(err)
		}
		if e, err := s.Reserve(ctx, key, "t2", time.Minute); e != nil || err != nil {
			t.Errorf("Reserve after Forget (completed %t) = %+v, %v; want reserved", complete, e, err)
		}
	}
}

// testTransportShared: two workers' transports share the store: a send
// again under a key is answered from the store, never sent twice, and a key
// in flight on one worker is delivery_unknown on the other.
func testTransportShared(t *testing.T, h Harness) {
	ctx := t.Context()
	var sent atomic.Int32
	release, inFlight := make(chan struct{}), make(chan struct{})
	inner := transportFunc(func(_ context.Context, m *mail.Message) (mail.Receipt, error) {
		sent.Add(1)
		if m.IdempotencyKey == "slow" {
			close(inFlight)
			<-release
		}
		return mail.Receipt{Category: mail.Accepted, Code: 250}, nil
	})
	a, err := idempotency.New(inner, h.Store, idempotency.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := idempotency.New(inner, h.Store, idempotency.Options{})
	if err != nil {
		t.Fatal(err)
	}
	msg := &mail.Message{IdempotencyKey: "job-1"}
	if r, err := a.Send(ctx, msg); err != nil || r.Category != mail.Accepted {
		t.Fatalf("first send: %+v, %v", r, err)
	}
	if r, err := b.Send(ctx, msg); err != nil || r.Category != mail.Accepted {
		t.Fatalf("the same key on another worker: %+v, %v", r, err)
	}
	if sent.Load() != 1 {
		t.Errorf("sent %d times, want 1", sent.Load())
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = a.Send(ctx, &mail.Message{IdempotencyKey: "slow"})
	}()
	<-inFlight
	r, err := b.Send(ctx, &mail.Message{IdempotencyKey: "slow"})
	if r.Category != mail.DeliveryUnknown || !errors.Is(err, idempotency.ErrInFlight) {
		t.Errorf("a key in flight on another worker: %+v, %v; want DeliveryUnknown, ErrInFlight", r, err)
	}
	close(release)
	<-done
	if sent.Load() != 2 {
		t.Errorf("sent %d times, want 2", sent.Load())
	}
}

type transportFunc func(ctx context.Context, m *mail.Message) (mail.Receipt, error)

func (f transportFunc) Send(ctx context.Context, m *mail.Message) (mail.Receipt, error) {
	return f(ctx, m)
}
