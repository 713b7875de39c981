package redis

import (
	"context"
	"strconv"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/alexify/mailer/conformance"
	"github.com/alexify/mailer/drivers/redis/internal/redistest"
	"github.com/alexify/mailer/mailqueue"
)

// newSource opens a source under a prefix of its own on c, and deletes its
// keys when the test ends.
func newSource(t testing.TB, c goredis.UniversalClient, opts Options) *Source {
	t.Helper()
	opts.Client = c
	if opts.Prefix == "" {
		opts.Prefix = redistest.Prefix(t)
	}
	src, err := OpenSource(context.Background(), opts)
	if err != nil {
		t.Fatalf("OpenSource: %v", err)
	}
	t.Cleanup(func() {
		if _, err := src.Obliterate(context.Background()); err != nil {
			t.Errorf("Obliterate: %v", err)
		}
	})
	return src
}

// advance moves the source's view of the server's clock forward: every
// script adds the shift to TIME.
func (s *Source) advance(d time.Duration) { s.shift.Add(d.Milliseconds()) }

// virtualHarness runs the contract on the server's clock shifted by the
// suite (Advance), so that it can drive leases, delays and retention
// without sleeping.
func virtualHarness(c goredis.UniversalClient, opts Options) func(t *testing.T) conformance.Harness {
	return func(t *testing.T) conformance.Harness {
		src := newSource(t, c, opts)
		return conformance.Harness{
			Source: src, Now: src.now, Advance: src.advance,
			DedupeWindow: src.opts.DedupeWindow, RetainFailed: src.opts.RetainFailed, RetainData: src.opts.RetainData,
		}
	}
}

// serverHarness runs the contract on the server's own clock: the suite
// sleeps through short leases.
func serverHarness(c goredis.UniversalClient, opts Options) func(t *testing.T) conformance.Harness {
	return func(t *testing.T) conformance.Harness {
		src := newSource(t, c, opts)
		return conformance.Harness{Source: src, RetainData: src.opts.RetainData}
	}
}

// runConformance runs the contract on c, on a shifted and on the real
// clock, with and without tenant fairness.
func runConformance(t *testing.T, c goredis.UniversalClient) {
	for _, f := range []mailqueue.Fairness{mailqueue.FairnessNone, mailqueue.FairnessTenant} {
		t.Run("Fairness="+string(f)+"/VirtualClock", func(t *testing.T) {
			conformance.TestSource(t, virtualHarness(c, Options{Fairness: f}))
		})
		t.Run("Fairness="+string(f)+"/ServerClock", func(t *testing.T) {
			if testing.Short() && f == mailqueue.FairnessTenant {
				t.Skip("sleeps through leases; -short")
			}
			conformance.TestSource(t, serverHarness(c, Options{Fairness: f}))
		})
	}
	for _, rd := range []mailqueue.RetainData{mailqueue.RetainAllData, mailqueue.RetainNoData} {
		t.Run("RetainData="+string(rd)+"/VirtualClock", func(t *testing.T) {
			conformance.TestSource(t, virtualHarness(c, Options{RetainData: rd}))
		})
	}
}

// jobsAt lists the jobs of a state from offset, as the cursor of the
// page that begins there would (the Source's cursor is the offset).
func jobsAt(s *Source, state mailqueue.JobState, offset, limit int) ([]mailqueue.JobRow, error) {
	cursor := ""
	if offset > 0 {
		cursor = strconv.Itoa(offset)
	}
	page, err := s.Jobs(context.Background(), mailqueue.JobsParams{State: state, Cursor: cursor, Limit: limit})
	return page.Rows, err
}

// dataOf returns the stored JSON of a job, read from its hash.
func dataOf(t testing.TB, s *Source, id string) []byte {
	t.Helper()
	b, err := s.c.HGet(context.Background(), s.pfx+"job:"+id, "data").Bytes()
	if err != nil {
		t.Fatalf("the data of %s: %v", id, err)
	}
	return b
}
