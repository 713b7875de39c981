package conformance_test

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alexify/mailer/clock"
	"github.com/alexify/mailer/conformance"
	"github.com/alexify/mailer/drivers/memory"
	"github.com/alexify/mailer/mailqueue"
)

func memoryHarness(t *testing.T) conformance.Harness {
	fc := clock.NewFake(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	src := mustMemorySource(t, memory.Options{Clock: fc})
	return conformance.Harness{Source: src, Now: fc.Now, Advance: fc.Advance, DedupeWindow: mailqueue.DefaultDedupeWindow, RetainFailed: mailqueue.DefaultRetainFailed}
}

// TestMemorySource holds the memory source to the contract.
func TestMemorySource(t *testing.T) {
	conformance.TestSource(t, memoryHarness)
}

// TestMemorySourceRetainData runs the contract on the memory source with
// the other policies of the messages of finished jobs: the operations
// tell DataKept and ErrNoData by them.
func TestMemorySourceRetainData(t *testing.T) {
	for _, rd := range []mailqueue.RetainData{mailqueue.RetainAllData, mailqueue.RetainNoData} {
		t.Run(string(rd), func(t *testing.T) {
			conformance.TestSource(t, func(t *testing.T) conformance.Harness {
				fc := clock.NewFake(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
				src := mustMemorySource(t, memory.Options{Clock: fc, RetainData: rd})
				return conformance.Harness{Source: src, Now: fc.Now, Advance: fc.Advance, RetainData: rd}
			})
		})
	}
}

// TestMemorySourceRealClock runs the contract on the wall clock, as a
// source on a server runs it.
func TestMemorySourceRealClock(t *testing.T) {
	if testing.Short() {
		t.Skip("sleeps through leases; -short")
	}
	conformance.TestSource(t, func(t *testing.T) conformance.Harness {
		return conformance.Harness{Source: mustMemorySource(t, memory.Options{})}
	})
}

// brokenSources are sources that break the contract in one way each; the
// suite must fail on every one.
var brokenSources = map[string]func(mailqueue.Source) mailqueue.Source{
	"ignores the token": func(s mailqueue.Source) mailqueue.Source { return ignoreToken{s} },
	"spends an attempt on release": func(s mailqueue.Source) mailqueue.Source {
		return releaseAsRetry{s}
	},
	"loses MaxAttempts": func(s mailqueue.Source) mailqueue.Source { return fixedMaxAttempts{s} },
	"lists the failed jobs newest first": func(s mailqueue.Source) mailqueue.Source {
		return newestFailedFirst{s.(*memory.Source)}
	},
	"forgets the keys of the jobs it purges": func(s mailqueue.Source) mailqueue.Source {
		return purgeForgetsKeys{s.(*memory.Source)}
	},
	"resends without forgetting the key": func(s mailqueue.Source) mailqueue.Source {
		return resendAsRetry{s.(*memory.Source)}
	},
	"fences a late settle by the clock": newFenceByClock,
	"is due at the producer's clock":    func(s mailqueue.Source) mailqueue.Source { return dueAtEnqueuedAt{s} },
	"tells no Lease.Now":                func(s mailqueue.Source) mailqueue.Source { return noLeaseNow{s} },
}

// purgeForgetsKeys is an Operator whose Purge forgets the jobs whole, so
// that an enqueue under a purged key is sent again.
type purgeForgetsKeys struct{ *memory.Source }

func (s purgeForgetsKeys) Purge(ctx context.Context, p mailqueue.PurgeParams) (int, error) {
	p.ForgetKeys = true
	return s.Source.Purge(ctx, p)
}

// resendAsRetry is an Operator whose Resend is RetryFailed: the stored
// receipt would answer, and nothing would be sent.
type resendAsRetry struct{ *memory.Source }

func (s resendAsRetry) Resend(ctx context.Context, p mailqueue.ResendParams) error {
	return s.RetryFailed(ctx, p.ID)
}

// newestFailedFirst is an Operator whose Failed lists the newest first.
type newestFailedFirst struct{ *memory.Source }

func (s newestFailedFirst) Failed(ctx context.Context, limit int) ([]mailqueue.JobRow, error) {
	rows, err := s.Source.Failed(ctx, limit)
	slices.Reverse(rows)
	return rows, err
}

// fixedMaxAttempts leases every job as if it had 5 attempts.
type fixedMaxAttempts struct{ mailqueue.Source }

func (s fixedMaxAttempts) Reserve(ctx context.Context, p mailqueue.ReserveParams) ([]*mailqueue.Lease, error) {
	ls, err := s.Source.Reserve(ctx, p)
	for _, l := range ls {
		l.MaxAttempts = 5
	}
	return ls, err
}

// ignoreToken settles with whatever token the job holds now.
type ignoreToken struct{ mailqueue.Source }

func (s ignoreToken) current(id string) string { return tokens.get(id) }

func (s ignoreToken) Reserve(ctx context.Context, p mailqueue.ReserveParams) ([]*mailqueue.Lease, error) {
	ls, err := s.Source.Reserve(ctx, p)
	for _, l := range ls {
		tokens.set(l.ID, l.Token)
	}
	return ls, err
}
func (s ignoreToken) Ack(ctx context.Context, p mailqueue.AckParams) (bool, error) {
	p.Token = s.current(p.ID)
	return s.Source.Ack(ctx, p)
}
func (s ignoreToken) Extend(ctx context.Context, p mailqueue.ExtendParams) (bool, error) {
	p.Token = s.current(p.ID)
	return s.Source.Extend(ctx, p)
}
func (s ignoreToken) Retry(ctx context.Context, p mailqueue.RetryParams) (bool, error) {
	p.Token = s.current(p.ID)
	return s.Source.Retry(ctx, p)
}
func (s ignoreToken) Fail(ctx context.Context, p mailqueue.FailParams) (bool, error) {
	p.Token = s.current(p.ID)
	return s.Source.Fail(ctx, p)
}
func (s ignoreToken) Release(ctx context.Context, p mailqueue.ReleaseParams) (bool, error) {
	p.Token = s.current(p.ID)
	return s.Source.Release(ctx, p)
}

// releaseAsRetry spends an attempt on each release.
type releaseAsRetry struct{ mailqueue.Source }

func (s releaseAsRetry) Release(ctx context.Context, p mailqueue.ReleaseParams) (bool, error) {
	return s.Retry(ctx, mailqueue.RetryParams{ID: p.ID, Token: p.Token, Delay: p.Delay, Code: p.Code})
}

// TestBrokenSourcesFail runs the suite on each broken source in a child
// process and expects it to fail, naming the subtest that catches it.
func TestBrokenSourcesFail(t *testing.T) {
	if name := os.Getenv("CONFORMANCE_BROKEN"); name != "" {
		wrap := brokenSources[name]
		conformance.TestSource(t, func(t *testing.T) conformance.Harness {
			h := memoryHarness(t)
			brokenNow = h.Now
			h.Source = wrap(h.Source)
			return h
		})
		return
	}
	want := map[string]string{
		"ignores the token":                      "Fencing/StaleToken",
		"spends an attempt on release":           "Settle/ReleaseSpendsNoAttempt",
		"loses MaxAttempts":                      "Enqueue/Reserve",
		"lists the failed jobs newest first":     "Ops/Failed",
		"forgets the keys of the jobs it purges": "Ops/Purge",
		"resends without forgetting the key":     "Ops/Resend",
		"fences a late settle by the clock":      "Fencing/LateSettleApplies",
		"is due at the producer's clock":         "Clock/DueAtTheStoresNow",
		"tells no Lease.Now":                     "Clock/LeaseTellsTheStoresNow",
	}
	for name := range brokenSources {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestBrokenSourcesFail$", "-test.v")
			cmd.Env = append(os.Environ(), "CONFORMANCE_BROKEN="+name)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed a source that %s:\n%s", name, out)
			}
			if !strings.Contains(string(out), "--- FAIL: TestBrokenSourcesFail/"+want[name]) {
				t.Errorf("the suite did not fail %s for a source that %s:\n%s", want[name], name, out)
			}
		})
	}
}
