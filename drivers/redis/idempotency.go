package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/alexify/mailer/clock"
	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/mail"
	"github.com/alexify/mailer/mail/idempotency"
	"github.com/alexify/mailer/mailqueue"
)

// IdempotencyStore is an idempotency.Store on Redis, shared by every worker
// that uses the same server and prefix, so that a message goes at most once
// per key across processes (spec: "Several processes"). Reserve
// is SET key "R"+token NX PX ttl (and a GET of the entry in place when the
// key is taken); Complete and Release are Lua scripts that compare the
// stored token before they write (scripts/idem_*.lua). Entries expire by
// the server's clock. Each key is a key of its own, prefix:idem:<key>, and
// every call touches one key, so the store spreads over the slots of a
// Redis Cluster. It is safe for concurrent use.
//
// The server must not evict keys: an evicted reservation or receipt is a
// message that may be sent twice. The store reads maxmemory-policy at the
// first Reserve and again at most every EvictionCheckInterval as it is
// used (one CONFIG GET a minute, on the way of a Reserve), and logs a
// policy other than noeviction, or a change away from it, as
// queue.store_unsafe; OpenIdempotencyStore also checks it at once.
type IdempotencyStore struct {
	c   goredis.UniversalClient
	pfx string
	log *slog.Logger

	clk       clock.Clock  // times the checks of the policy; a fake one in tests
	policy    policyWatch  // the eviction policy as last read
	nextCheck atomic.Int64 // when to read the policy again (Unix ns); 0: at the next Reserve
}

var _ idempotency.Store = (*IdempotencyStore)(nil)

// DefaultIdempotencyPrefix is the key prefix of NewIdempotencyStore when
// it is given none.
const DefaultIdempotencyPrefix = "mailer"

var (
	scriptIdemComplete = newPlainScript("idem_complete.lua")
	scriptIdemRelease  = newPlainScript("idem_release.lua")
)

// NewIdempotencyStore returns the store of the idempotency keys under
// prefix (DefaultIdempotencyPrefix when empty) on c, logging to
// slog.Default(). It makes no call: the server's eviction policy is read
// at the first Reserve (see IdempotencyStore); OpenIdempotencyStore checks
// it at once.
func NewIdempotencyStore(c goredis.UniversalClient, prefix string) *IdempotencyStore {
	if prefix == "" {
		prefix = DefaultIdempotencyPrefix
	}
	return &IdempotencyStore{c: c, pfx: prefix + ":idem:", log: slog.Default(), clk: clock.Real()}
}

// IdempotencyOptions configure OpenIdempotencyStore. The zero value takes
// the defaults.
type IdempotencyOptions struct {
	// Prefix is the key prefix of the entries (DefaultIdempotencyPrefix).
	Prefix string
	// EvictionPolicyWarnOnly logs a maxmemory-policy other than noeviction,
	// or one that cannot be read, as queue.store_unsafe instead of
	// refusing to open, as Options.EvictionPolicyWarnOnly does for a
	// queue.
	EvictionPolicyWarnOnly bool
	// KeepClientLogger leaves go-redis's own logger as it is (see
	// Options.KeepClientLogger).
	KeepClientLogger bool
	// Logger hears what the store does; slog.Default() when nil.
	Logger *slog.Logger
}

// OpenIdempotencyStore checks that the server does not evict keys and
// returns the store of the idempotency keys on c. It returns an error
// wrapping ErrEvictionPolicy for a maxmemory-policy other than noeviction
// or one that cannot be read (unless opts.EvictionPolicyWarnOnly), or the
// server's error when it does not answer. The policy is then read again as
// the store is used (see IdempotencyStore).
func OpenIdempotencyStore(ctx context.Context, c goredis.UniversalClient, opts IdempotencyOptions) (*IdempotencyStore, error) {
	if c == nil {
		return nil, &mailqueue.OptionError{Package: "redis", Option: "the client", Rule: "is required"}
	}
	s := NewIdempotencyStore(c, opts.Prefix)
	if opts.Logger != nil {
		s.log = opts.Logger
	}
	if !opts.KeepClientLogger {
		routeClientLog(s.log)
	}
	if err := c.Ping(ctx).Err(); err != nil {
		return nil, fmt.Errorf("redis: the server does not answer: %w", err)
	}
	bad, err := readEvictionPolicy(ctx, c)
	switch {
	case err != nil:
		err = fmt.Errorf("%w: cannot read it: %w", ErrEvictionPolicy, err)
	case bad != "":
		err = fmt.Errorf("%w, not %s", ErrEvictionPolicy, bad)
	}
	s.nextCheck.Store(s.clk.Now().Add(EvictionCheckInterval).UnixNano())
	if err == nil {
		s.policy.state.Store(policySafe)
		return s, nil
	}
	if !opts.EvictionPolicyWarnOnly {
		return nil, err
	}
	s.policy.state.Store(policyUnsafe)
	s.log.Warn(string(codes.QueueStoreUnsafe), "store", "idempotency", "reason", err.Error())
	return s, nil
}

// checkPolicy reads the server's eviction policy when it is time to
// (nextCheck), one caller at a time, and logs it (policyWatch.observe).
func (s *IdempotencyStore) checkPolicy(ctx context.Context) {
	now := s.clk.Now()
	next := s.nextCheck.Load()
	if now.UnixNano() < next || !s.nextCheck.CompareAndSwap(next, now.Add(EvictionCheckInterval).UnixNano()) {
		return
	}
	bad, err := readEvictionPolicy(ctx, s.c)
	if ctx.Err() != nil {
		return
	}
	s.policy.observe(s.log, "idempotency", bad, err)
}

type completed struct {
	Token   string       `json:"token"`
	Receipt mail.Receipt `json:"receipt"`
}

// Reserve implements idempotency.Store.
func (s *IdempotencyStore) Reserve(ctx context.Context, key, token string, ttl time.Duration) (*idempotency.Entry, error) {
	s.checkPolicy(ctx)
	k := s.pfx + key
	for try := 0; try < 3; try++ {
		ok, err := s.c.SetNX(ctx, k, "R"+token, ttl).Result()
		if err != nil {
			return nil, fmt.Errorf("redis: idempotency reserve: %w", err)
		}
		if ok {
			return nil, nil
		}
		v, err := s.c.Get(ctx, k).Result()
		if errors.Is(err, goredis.Nil) {
			continue // the entry expired between the two calls: reserve again
		}
		if err != nil {
			return nil, fmt.Errorf("redis: idempotency reserve: %w", err)
		}
		return parseEntry(v)
	}
	return nil, errors.New("redis: idempotency reserve: the key keeps expiring under the call")
}

func parseEntry(v string) (*idempotency.Entry, error) {
	switch {
	case strings.HasPrefix(v, "R"):
		return &idempotency.Entry{Token: v[1:]}, nil
	case strings.HasPrefix(v, "C"):
		var c completed
		if err := json.Unmarshal([]byte(v[1:]), &c); err != nil {
			return nil, fmt.Errorf("redis: idempotency entry: %w", err)
		}
		return &idempotency.Entry{Token: c.Token, Receipt: &c.Receipt}, nil
	}
	return nil, fmt.Errorf("redis: idempotency entry of an unknown shape")
}

// Complete implements idempotency.Store.
func (s *IdempotencyStore) Complete(ctx context.Context, key, token string, receipt mail.Receipt, ttl time.Duration) (bool, error) {
	b, err := json.Marshal(completed{Token: token, Receipt: receipt})
	if err != nil {
		return false, fmt.Errorf("redis: idempotency complete: %w", err)
	}
	ms := max(ttl.Milliseconds(), 1)
	n, err := scriptIdemComplete.Run(ctx, s.c, []string{s.pfx + key}, token, "C"+string(b), ms).Int()
	if err != nil {
		return false, fmt.Errorf("redis: idempotency complete: %w", err)
	}
	return n == 1, nil
}

// Release implements idempotency.Store.
func (s *IdempotencyStore) Release(ctx context.Context, key, token string) (bool, error) {
	n, err := scriptIdemRelease.Run(ctx, s.c, []string{s.pfx + key}, token).Int()
	if err != nil {
		return false, fmt.Errorf("redis: idempotency release: %w", err)
	}
	return n == 1, nil
}

// Forget implements idempotency.Store: it deletes the entry of key, a
// reservation or a receipt (DEL), so that the next send under key goes.
func (s *IdempotencyStore) Forget(ctx context.Context, key string) error {
	if err := s.c.Del(ctx, s.pfx+key).Err(); err != nil {
		return fmt.Errorf("redis: idempotency forget: %w", err)
	}
	return nil
}
