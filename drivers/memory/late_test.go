package memory_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/alexify/mailer/clock"
	"github.com/alexify/mailer/drivers/memory"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/mailqueue"
)

// TestLateSettlesKeepTheLanes: many leases run out, a reserve queues their
// jobs again (taking a high job only), and the late acks of a third of
// them take those out of the middle of their lanes: the others are leased
// once each, by priority, as redeliveries, and none of the acked, with and
// without tenant fairness.
func TestLateSettlesKeepTheLanes(t *testing.T) {
	for _, f := range []mailqueue.Fairness{mailqueue.FairnessNone, mailqueue.FairnessTenant} {
		t.Run(string(f), func(t *testing.T) {
			ctx := context.Background()
			fc := clock.NewFake(t0)
			src := mustMemorySource(t, memory.Options{Clock: fc, Fairness: f})
			tenants := []string{"A", "B", "C", ""}
			var jobs []mailqueue.NewJob
			for i := range 60 {
				p := jobv1.PriorityNormal
				if i%2 == 1 {
					p = jobv1.PriorityLow
				}
				jobs = append(jobs, newJob(fmt.Sprintf("j-%02d", i), p, tenants[i%len(tenants)], t0.Add(time.Duration(i)*time.Millisecond)))
			}
			if _, err := src.Enqueue(ctx, jobs); err != nil {
				t.Fatal(err)
			}
			fc.Advance(time.Second)
			ls, err := src.Reserve(ctx, mailqueue.ReserveParams{Limit: 60, LeaseDuration: time.Minute})
			if err != nil || len(ls) != 60 {
				t.Fatalf("Reserve: %d leases, %v; want 60", len(ls), err)
			}
			fc.Advance(2 * time.Minute)
			if _, err := src.Enqueue(ctx, []mailqueue.NewJob{newJob("high", jobv1.PriorityHigh, "A", fc.Now())}); err != nil {
				t.Fatal(err)
			}
			if h, err := src.Reserve(ctx, mailqueue.ReserveParams{Limit: 1, LeaseDuration: time.Hour}); err != nil || len(h) != 1 || h[0].ID != "high" {
				t.Fatalf("Reserve(limit 1) = %v, %v; want the high job", h, err)
			}
			acked := map[string]bool{}
			for i, l := range ls {
				if i%3 != 0 {
					continue
				}
				ok, err := src.Ack(ctx, mailqueue.AckParams{ID: l.ID, Token: l.Token})
				if err != nil || !ok {
					t.Fatalf("late Ack of %s = %t, %v; want true", l.ID, ok, err)
				}
				acked[l.ID] = true
			}
			again, err := src.Reserve(ctx, mailqueue.ReserveParams{Limit: 100, LeaseDuration: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			var got, want []string
			low := false
			for _, l := range again {
				got = append(got, l.ID)
				if l.Redeliveries != 1 || l.Attempt != 1 {
					t.Errorf("%s: attempt %d, %d redeliveries; want 1 and 1", l.ID, l.Attempt, l.Redeliveries)
				}
				if l.Priority == jobv1.PriorityLow {
					low = true
				} else if low {
					t.Errorf("%s (normal) leased after a low job", l.ID)
				}
			}
			for _, j := range jobs {
				if !acked[j.ID] {
					want = append(want, j.ID)
				}
			}
			sort.Strings(got)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("leased after the late acks (-want +got):\n%s", diff)
			}
			st, err := src.Stats(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if st.Queued != 0 || st.Running != 41 || st.Accepted != 20 {
				t.Errorf("Stats: queued %d, running %d, accepted %d; want 0, 41, 20", st.Queued, st.Running, st.Accepted)
			}
		})
	}
}
