package idempotency_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/alexify/mailer/clock"
	"github.com/alexify/mailer/mail"
	"github.com/alexify/mailer/mail/idempotency"
	"github.com/alexify/mailer/mail/memory"
)

// ttlStore is a memory store that remembers the time-to-live of each
// reservation and receipt.
type ttlStore struct {
	*idempotency.MemoryStore
	mu                 sync.Mutex
	reserved, complete []time.Duration
}

func (s *ttlStore) Reserve(ctx context.Context, key, token string, ttl time.Duration) (*idempotency.Entry, error) {
	s.mu.Lock()
	s.reserved = append(s.reserved, ttl)
	s.mu.Unlock()
	return s.MemoryStore.Reserve(ctx, key, token, ttl)
}

func (s *ttlStore) Complete(ctx context.Context, key, token string, r mail.Receipt, ttl time.Duration) (bool, error) {
	s.mu.Lock()
	s.complete = append(s.complete, ttl)
	s.mu.Unlock()
	return s.MemoryStore.Complete(ctx, key, token, r, ttl)
}

// TestDefaultLeaseDuration: a transport given no LeaseDuration holds a key
// at least 10 minutes before its receipt; given no ReceiptTTL, it keeps a
// receipt a day, and a reservation as long.
func TestDefaultLeaseDuration(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                  string
		opts                  idempotency.Options
		wantReserve, wantKeep time.Duration
	}{
		{"the defaults", idempotency.Options{}, 24 * time.Hour, 24 * time.Hour},
		{"a receipt kept a minute", idempotency.Options{ReceiptTTL: time.Minute}, 10 * time.Minute, time.Minute},
		{"a lease of an hour", idempotency.Options{LeaseDuration: time.Hour, ReceiptTTL: time.Minute}, time.Hour, time.Minute},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			store := &ttlStore{MemoryStore: idempotency.NewMemoryStore(clock.NewFake(t0))}
			tr, err := idempotency.New(memory.New(), store, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tr.Send(context.Background(), message("k1")); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]time.Duration{tc.wantReserve}, store.reserved); diff != "" {
				t.Errorf("reserved for (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]time.Duration{tc.wantKeep}, store.complete); diff != "" {
				t.Errorf("receipt kept for (-want +got):\n%s", diff)
			}
		})
	}
}
