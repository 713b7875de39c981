package redis

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/alexify/mailer/gen/codes"
)

// EvictionCheckInterval is how often a running worker reads the server's
// maxmemory-policy again (and the IdempotencyStore, as it is used): a
// policy changed away from noeviction while the queue runs (a CONFIG SET,
// a managed Redis that changed it) is logged as queue.store_unsafe, as an
// evicted job is a job lost and an evicted lease or idempotency key a
// message that may go twice (bullmq.md, Notes: maxmemory-policy
// noeviction).
const EvictionCheckInterval = time.Minute

// The states of a policyWatch.
const (
	policyUnknown int32 = iota // never read
	policySafe                 // noeviction
	policyUnsafe               // another policy, or one that cannot be read; told
)

// policyWatch remembers what the server's maxmemory-policy was last read
// as, so that a change away from noeviction is logged once, when it
// happens, and not every minute after.
type policyWatch struct {
	state atomic.Int32
}

// observe takes a read of the policy (readEvictionPolicy's answer) and
// logs queue.store_unsafe on log when it is unsafe and the last read was
// not. A read that failed counts as unsafe only when the policy was never
// read: a server that does not answer for a moment has not changed its
// policy.
func (w *policyWatch) observe(log *slog.Logger, what string, bad string, err error) {
	switch {
	case err != nil:
		if w.state.CompareAndSwap(policyUnknown, policyUnsafe) {
			log.Warn(string(codes.QueueStoreUnsafe), "store", what, "reason", "maxmemory-policy cannot be read: "+err.Error())
			return
		}
		log.Debug(string(codes.QueueStoreUnsafe), "store", what, "reason", "maxmemory-policy not read again", "err", err)
	case bad != "":
		if w.state.Swap(policyUnsafe) != policyUnsafe {
			log.Warn(string(codes.QueueStoreUnsafe), "store", what, "reason", "maxmemory-policy is "+bad+", not noeviction: a key evicted is a job lost or a message sent twice")
		}
	default:
		w.state.Store(policySafe)
	}
}

// readEvictionPolicy reads maxmemory-policy on c (on every master of a
// cluster), and returns "" when it is noeviction everywhere, else the
// policy found (quoted, with the master's address on a cluster), or the
// error of a read.
func readEvictionPolicy(ctx context.Context, c goredis.UniversalClient) (string, error) {
	read := func(ctx context.Context, c goredis.UniversalClient) (string, error) {
		m, err := c.ConfigGet(ctx, "maxmemory-policy").Result()
		if err != nil {
			return "", err
		}
		if p := m["maxmemory-policy"]; p != "noeviction" {
			return fmt.Sprintf("%q", p), nil
		}
		return "", nil
	}
	cc, ok := c.(*goredis.ClusterClient)
	if !ok {
		return read(ctx, c)
	}
	// ForEachMaster reads the masters at once: any one bad policy will do.
	var bad atomic.Pointer[string]
	err := cc.ForEachMaster(ctx, func(ctx context.Context, m *goredis.Client) error {
		p, err := read(ctx, m)
		if err == nil && p != "" {
			p += " on " + m.Options().Addr
			bad.CompareAndSwap(nil, &p)
		}
		return err
	})
	if p := bad.Load(); p != nil {
		return *p, err
	}
	return "", err
}

// watchEviction reads the server's policy every EvictionCheckInterval
// until ctx is done, logging a change away from noeviction
// (policyWatch.observe). It runs while a runner listens (Notify), and
// stops with the listening.
func (s *Source) watchEviction(ctx context.Context) {
	for {
		t := s.clk.NewTimer(EvictionCheckInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		bad, err := readEvictionPolicy(rctx, s.c)
		cancel()
		if ctx.Err() != nil {
			return
		}
		s.policy.observe(s.log, s.tag, bad, err)
	}
}

// run listens to the queue's wake-ups and watches its server's eviction
// policy until ctx is done, then closes done.
func (n *notifier) run(ctx context.Context, done chan struct{}) {
	listened := make(chan struct{})
	go n.listen(ctx, listened)
	n.src.watchEviction(ctx)
	<-listened
	close(done)
}
