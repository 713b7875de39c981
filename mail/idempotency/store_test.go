package idempotency_test

import (
	"testing"

	"github.com/alexify/mailer/clock"
	"github.com/alexify/mailer/mail/idempotency"
	"github.com/alexify/mailer/mail/idempotency/storetest"
)

// TestMemoryStore holds the memory store to idempotency.Store's contract,
// its entries running out on a fake clock.
func TestMemoryStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		fc := clock.NewFake(t0)
		return storetest.Harness{Store: idempotency.NewMemoryStore(fc), Advance: fc.Advance}
	})
}
