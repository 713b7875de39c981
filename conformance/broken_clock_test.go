package conformance_test

import (
	"context"
	"sync"
	"time"

	"github.com/alexify/mailer/mailqueue"
)

// brokenNow is the clock of the source a broken source wraps, set by
// TestBrokenSourcesFail in its child process.
var brokenNow func() time.Time

// fenceByClock refuses a settle or an extend whose lease ran out by the
// store's clock, as the stores did before a settle was fenced by its
// token alone.
type fenceByClock struct {
	mailqueue.Source
	mu    sync.Mutex
	until map[string]time.Time // by token
}

func newFenceByClock(s mailqueue.Source) mailqueue.Source {
	return &fenceByClock{Source: s, until: map[string]time.Time{}}
}

func (s *fenceByClock) Reserve(ctx context.Context, p mailqueue.ReserveParams) ([]*mailqueue.Lease, error) {
	ls, err := s.Source.Reserve(ctx, p)
	s.mu.Lock()
	for _, l := range ls {
		s.until[l.Token] = brokenNow().Add(p.LeaseDuration)
	}
	s.mu.Unlock()
	return ls, err
}

// ranOut reports whether the lease of token ran out; an extend moves it.
func (s *fenceByClock) ranOut(token string, extend time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.until[token]
	if !ok || !u.After(brokenNow()) {
		return true
	}
	if extend > 0 {
		s.until[token] = brokenNow().Add(extend)
	}
	return false
}

func (s *fenceByClock) Extend(ctx context.Context, p mailqueue.ExtendParams) (bool, error) {
	if s.ranOut(p.Token, p.Duration) {
		return false, nil
	}
	return s.Source.Extend(ctx, p)
}
func (s *fenceByClock) Ack(ctx context.Context, p mailqueue.AckParams) (bool, error) {
	if s.ranOut(p.Token, 0) {
		return false, nil
	}
	return s.Source.Ack(ctx, p)
}
func (s *fenceByClock) Retry(ctx context.Context, p mailqueue.RetryParams) (bool, error) {
	if s.ranOut(p.Token, 0) {
		return false, nil
	}
	return s.Source.Retry(ctx, p)
}
func (s *fenceByClock) Fail(ctx context.Context, p mailqueue.FailParams) (bool, error) {
	if s.ranOut(p.Token, 0) {
		return false, nil
	}
	return s.Source.Fail(ctx, p)
}
func (s *fenceByClock) Release(ctx context.Context, p mailqueue.ReleaseParams) (bool, error) {
	if s.ranOut(p.Token, 0) {
		return false, nil
	}
	return s.Source.Release(ctx, p)
}

// dueAtEnqueuedAt makes a job with no RunAt due at its producer's
// EnqueuedAt, as the queue did before the store's clock decided.
type dueAtEnqueuedAt struct{ mailqueue.Source }

func (s dueAtEnqueuedAt) Enqueue(ctx context.Context, jobs []mailqueue.NewJob) ([]mailqueue.EnqueueResult, error) {
	js := append([]mailqueue.NewJob(nil), jobs...)
	for i := range js {
		if js[i].RunAt.IsZero() {
			js[i].RunAt = js[i].EnqueuedAt
		}
	}
	return s.Source.Enqueue(ctx, js)
}

// noLeaseNow tells no store's now on its leases.
type noLeaseNow struct{ mailqueue.Source }

func (s noLeaseNow) Reserve(ctx context.Context, p mailqueue.ReserveParams) ([]*mailqueue.Lease, error) {
	ls, err := s.Source.Reserve(ctx, p)
	for _, l := range ls {
		l.Now = time.Time{}
	}
	return ls, err
}
