package idempotency

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/alexify/mailer/clock"
	"github.com/alexify/mailer/mail"
)

// MemoryStore is a Store in the memory of one process: for a single worker
// process and for tests. Workers in several processes need a shared store.
// It is safe for concurrent use.
type MemoryStore struct {
	clock clock.Clock

	mu      sync.Mutex
	entries map[string]memoryEntry
}

type memoryEntry struct {
	token   string
	receipt *mail.Receipt
	expires time.Time
}

var _ Store = (*MemoryStore)(nil)

// NewMemoryStore returns an empty MemoryStore whose entries expire by clk
// (clock.NewFake in tests); the wall clock when clk is nil.
func NewMemoryStore(clk clock.Clock) *MemoryStore {
	if clk == nil {
		clk = clock.Real()
	}
	return &MemoryStore{clock: clk, entries: map[string]memoryEntry{}}
}

// live returns the entry of key when it has not expired, dropping it when
// it has. The caller holds mu.
func (s *MemoryStore) live(key string) (memoryEntry, bool) {
	e, ok := s.entries[key]
	if !ok {
		return memoryEntry{}, false
	}
	if !s.clock.Now().Before(e.expires) {
		delete(s.entries, key)
		return memoryEntry{}, false
	}
	return e, true
}

// Reserve implements Store.
func (s *MemoryStore) Reserve(ctx context.Context, key, token string, ttl time.Duration) (*Entry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.live(key); ok {
		return e.entry(), nil
	}
	s.entries[key] = memoryEntry{token: token, expires: s.clock.Now().Add(ttl)}
	return nil, nil
}

// Complete implements Store.
func (s *MemoryStore) Complete(ctx context.Context, key, token string, receipt mail.Receipt, ttl time.Duration) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.live(key)
	if !ok || e.token != token || e.receipt != nil {
		return false, nil
	}
	r := cloneReceipt(receipt)
	s.entries[key] = memoryEntry{token: token, receipt: &r, expires: s.clock.Now().Add(ttl)}
	return true, nil
}

// Release implements Store.
func (s *MemoryStore) Release(ctx context.Context, key, token string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.live(key)
	if !ok || e.token != token || e.receipt != nil {
		return false, nil
	}
	delete(s.entries, key)
	return true, nil
}

// Forget implements Store: it deletes the entry of key, whatever it holds.
func (s *MemoryStore) Forget(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.entries, key)
	return nil
}

// Get returns a copy of the live entry of key, for tests and inspection.
func (s *MemoryStore) Get(key string) (*Entry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.live(key)
	if !ok {
		return nil, false
	}
	return e.entry(), true
}

func (e memoryEntry) entry() *Entry {
	out := &Entry{Token: e.token}
	if e.receipt != nil {
		r := cloneReceipt(*e.receipt)
		out.Receipt = &r
	}
	return out
}

func cloneReceipt(r mail.Receipt) mail.Receipt {
	r.Refused = slices.Clone(r.Refused)
	return r
}
