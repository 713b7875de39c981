package postgres

import (
	"context"
	"testing"

	"github.com/alexify/mailer/internal/pgtest"
	"github.com/alexify/mailer/mail/idempotency/storetest"
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

// TestIdempotencyStore holds the store to idempotency.Store's contract
// (mail/idempotency/storetest), on the real server, a fresh store for each
// test; its entries run out on the server's clock.
func TestIdempotencyStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		return storetest.Harness{Store: idemStore(t)}
	})
}
