package redis

import (
	"context"
	"testing"

	"github.com/alexify/mailer/drivers/redis/internal/redistest"
	"github.com/alexify/mailer/mail/idempotency/storetest"
)

func idemStore(t *testing.T) *IdempotencyStore {
	c := redistest.Standalone(t)
	s := NewIdempotencyStore(c, redistest.Prefix(t))
	t.Cleanup(func() {
		keys, _ := c.Keys(context.Background(), globEscape(s.pfx)+"*").Result()
		if len(keys) > 0 {
			c.Del(context.Background(), keys...)
		}
	})
	return s
}

// TestIdempotencyStore holds the store to idempotency.Store's contract
// (mail/idempotency/storetest), on the real server, a fresh store for each
// test; its entries run out on the server's clock.
func TestIdempotencyStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		return storetest.Harness{Store: idemStore(t)}
	})
}
