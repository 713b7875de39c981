package postgres

import (
	"testing"

	"github.com/alexify/mailer/conformance"
	"github.com/alexify/mailer/internal/pgtest"
	"github.com/alexify/mailer/mailqueue"
)

// TestConformance holds the source to the public contract on the real
// server, each subtest in a schema of its own: on a shifted and on the
// database's own clock, with and without tenant fairness, and with every
// RetainData, the variants in parallel (each subtest has its own schema).
func TestConformance(t *testing.T) {
	p := pgtest.Pool(t)
	for _, f := range []mailqueue.Fairness{mailqueue.FairnessNone, mailqueue.FairnessTenant} {
		t.Run("Fairness="+string(f)+"/VirtualClock", func(t *testing.T) {
			t.Parallel()
			conformance.TestSource(t, virtualHarness(p, Options{Fairness: f}))
		})
		t.Run("Fairness="+string(f)+"/ServerClock", func(t *testing.T) {
			t.Parallel()
			if testing.Short() && f == mailqueue.FairnessTenant {
				t.Skip("sleeps through leases; -short")
			}
			conformance.TestSource(t, serverHarness(p, Options{Fairness: f}))
		})
	}
	for _, rd := range []mailqueue.RetainData{mailqueue.RetainAllData, mailqueue.RetainNoData} {
		t.Run("RetainData="+string(rd)+"/VirtualClock", func(t *testing.T) {
			t.Parallel()
			conformance.TestSource(t, virtualHarness(p, Options{RetainData: rd}))
		})
	}
}
