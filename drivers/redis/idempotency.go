package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/alexify/mailer/mail"
	"github.com/alexify/mailer/mail/idempotency"
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
type IdempotencyStore struct {
	c   goredis.UniversalClient
	pfx string
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
// prefix (DefaultIdempotencyPrefix when empty) on c. The server must not
// evict keys (maxmemory-policy noeviction): an evicted reservation is a
// message that may be sent twice.
func NewIdempotencyStore(c goredis.UniversalClient, prefix string) *IdempotencyStore {
	if prefix == "" {
		prefix = DefaultIdempotencyPrefix
	}
	return &IdempotencyStore{c: c, pfx: prefix + ":idem:"}
}

type completed struct {
	Token   string       `json:"token"`
	Receipt mail.Receipt `json:"receipt"`
}

// Reserve implements idempotency.Store.
func (s *IdempotencyStore) Reserve(ctx context.Context, key, token string, ttl time.Duration) (*idempotency.Entry, error) {
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
