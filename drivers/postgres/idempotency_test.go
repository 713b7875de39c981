package postgres

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alexify/mailer/internal/pgtest"
	"github.com/alexify/mailer/mail"
)

var ctx = context.Background()

func idemStore(t *testing.T) *IdempotencyStore {
	t.Helper()
	p := pgtest.Pool(t)
	s, err := OpenIdempotencyStore(ctx, p, newSchema(t, p))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestIdempotencyStore holds the store to idempotency.Store, as the Redis
// driver's is held: a reserve takes a key that holds no live entry,
// Complete and Release compare the token, and an entry runs out by its
// time-to-live on the database's clock; Forget drops an entry whoever
// holds it.
func TestIdempotencyStore(t *testing.T) {
	s := idemStore(t)
	r := mail.Receipt{Category: mail.Accepted, Code: 250, ProviderID: "q-1", RetryAfter: time.Second,
		Refused: []mail.RefusedRecipient{{Address: "x@example.com", Code: 550, Reason: "no such user"}}}
	t.Run("Complete", func(t *testing.T) { testIdemComplete(t, s, r) })
	t.Run("Release", func(t *testing.T) { testIdemRelease(t, s) })
	t.Run("TimeToLive", func(t *testing.T) { testIdemTimeToLive(t, s, r) })
}

// testIdemComplete: a reserve takes only a free key; Complete and
// Release by another token change nothing; a completed key answers its
// receipt.
func testIdemComplete(t *testing.T, s *IdempotencyStore, r mail.Receipt) {
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
	if ok, err := s.Complete(ctx, "k", "t1", r, time.Minute); !ok || err != nil {
		t.Fatalf("Complete = %t, %v", ok, err)
	}
	if ok, _ := s.Complete(ctx, "k", "t1", r, time.Minute); ok {
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

// testIdemRelease: a released key is free to reserve again.
func testIdemRelease(t *testing.T, s *IdempotencyStore) {
	if e, _ := s.Reserve(ctx, "r", "t1", time.Minute); e != nil {
		t.Fatal("not reserved")
	}
	if ok, err := s.Release(ctx, "r", "t1"); !ok || err != nil {
		t.Fatalf("Release = %t, %v", ok, err)
	}
	if e, _ := s.Reserve(ctx, "r", "t2", time.Minute); e != nil {
		t.Errorf("Reserve after Release = %+v, want reserved", e)
	}
}

// testIdemTimeToLive: a reservation that ran out can be neither completed
// nor kept from another reserve.
func testIdemTimeToLive(t *testing.T, s *IdempotencyStore, r mail.Receipt) {
	if e, _ := s.Reserve(ctx, "short", "t1", 50*time.Millisecond); e != nil {
		t.Fatal("not reserved")
	}
	time.Sleep(80 * time.Millisecond)
	if ok, _ := s.Complete(ctx, "short", "t1", r, time.Minute); ok {
		t.Error("Complete after the reservation ran out succeeded")
	}
	if e, _ := s.Reserve(ctx, "short", "t2", time.Minute); e != nil {
		t.Errorf("Reserve after the reservation ran out = %+v, want reserved", e)
	}
}

// TestIdempotencyStoreConcurrent: of concurrent reserves of a key, exactly
// one wins.
func TestIdempotencyStoreConcurrent(t *testing.T) {
	s := idemStore(t)
	var won atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, err := s.Reserve(ctx, "race", "t"+string(rune('a'+i)), time.Minute)
			if err != nil {
				t.Error(err)
			}
			if e == nil {
				won.Add(1)
			}
		}()
	}
	wg.Wait()
	if won.Load() != 1 {
		t.Errorf("%d reserves won, want 1", won.Load())
	}
}

// TestIdempotencyForget: Forget drops a receipt, and the key is free.
func TestIdempotencyForget(t *testing.T) {
	s := idemStore(t)
	if e, _ := s.Reserve(ctx, "f", "t1", time.Minute); e != nil {
		t.Fatal("not reserved")
	}
	if ok, err := s.Complete(ctx, "f", "t1", mail.Receipt{Category: mail.Accepted}, time.Minute); !ok || err != nil {
		t.Fatalf("Complete = %t, %v", ok, err)
	}
	if err := s.Forget(ctx, "f"); err != nil {
		t.Fatal(err)
	}
	if err := s.Forget(ctx, "never"); err != nil {
		t.Errorf("Forget of a key with no entry: %v", err)
	}
	if e, err := s.Reserve(ctx, "f", "t2", time.Minute); e != nil || err != nil {
		t.Errorf("Reserve after Forget = %+v, %v; want reserved", e, err)
	}
}
