package redis

import (
	"context"
	"testing"

	"github.com/alexify/mailer/drivers/redis/internal/redistest"
)

// TestCluster starts a three-master Redis Cluster on loopback ports and
// holds the driver to the contract on it: every key of a queue shares its
// hash tag, so each script runs on the one master of the queue's slot.
func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Redis Cluster; -short")
	}
	c := redistest.StartCluster(t)
	t.Run("Conformance", func(t *testing.T) { runConformance(t, c) })
	t.Run("Wake", func(t *testing.T) { testWake(t, c) })
	t.Run("Operations", func(t *testing.T) { testOperations(t, c) })
	t.Run("EvictionPolicy", func(t *testing.T) {
		// Read on every master: noeviction on all of them.
		if bad, err := readEvictionPolicy(context.Background(), c); bad != "" || err != nil {
			t.Errorf("readEvictionPolicy on the cluster = %q, %v; want noeviction everywhere", bad, err)
		}
	})
	t.Run("QueuesOnSeveralSlots", func(t *testing.T) {
		// Queues of several names land on several masters; each works.
		for _, q := range []string{"a", "b", "c", "d", "e", "f"} {
			src := newSource(t, c, Options{Queue: q})
			res, err := src.Enqueue(context.Background(), []mailqueueNewJob{testJob("j-" + q)})
			if err != nil || len(res) != 1 || res[0].Duplicate {
				t.Fatalf("queue %s: Enqueue = %+v, %v", q, res, err)
			}
		}
	})
}
