package conformance_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alexify/mailer/clock"
	"github.com/alexify/mailer/conformance"
	"github.com/alexify/mailer/drivers/memory"
	"github.com/alexify/mailer/drivers/polling"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/mail"
	mmemory "github.com/alexify/mailer/mail/memory"
	"github.com/alexify/mailer/mailqueue"
)

// meteredSource stands for a store of your own: a mailqueue.Source that
// counts the settles of another one (the memory source), as a wrapper that
// adds metrics would. It has neither of the optional interfaces
// (mailqueue.Pauser, polling.SettleReserver), so the suite skips their
// subtests, saying why.
type meteredSource struct {
	mailqueue.Source
	settles atomic.Int64
}

func (s *meteredSource) Ack(ctx context.Context, p mailqueue.AckParams) (bool, error) {
	s.settles.Add(1)
	return s.Source.Ack(ctx, p)
}

func (s *meteredSource) Retry(ctx context.Context, p mailqueue.RetryParams) (bool, error) {
	s.settles.Add(1)
	return s.Source.Retry(ctx, p)
}

func (s *meteredSource) Fail(ctx context.Context, p mailqueue.FailParams) (bool, error) {
	s.settles.Add(1)
	return s.Source.Fail(ctx, p)
}

func (s *meteredSource) Release(ctx context.Context, p mailqueue.ReleaseParams) (bool, error) {
	s.settles.Add(1)
	return s.Source.Release(ctx, p)
}

// The retention of the store under test, told to the suite so that its
// retention subtests run.
const (
	dedupeWindow = 24 * time.Hour
	retainFailed = 7 * 24 * time.Hour
)

// newMeteredSource returns an empty source on clk.
func newMeteredSource(clk clock.Clock) (*meteredSource, error) {
	inner, err := memory.NewSource(memory.Options{Clock: clk, DedupeWindow: dedupeWindow, RetainFailed: retainFailed})
	if err != nil {
		return nil, err
	}
	return &meteredSource{Source: inner}, nil
}

// meteredHarness gives each subtest of conformance.TestSource a fresh,
// empty source on a fake clock, which the suite moves forward instead of
// sleeping through leases and delays.
func meteredHarness(t *testing.T) conformance.Harness {
	fc := clock.NewFake(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	src, err := newMeteredSource(fc)
	if err != nil {
		t.Fatal(err)
	}
	return conformance.Harness{Source: src, Now: fc.Now, Advance: fc.Advance, DedupeWindow: dedupeWindow, RetainFailed: retainFailed}
}

// testMeteredSource is the whole conformance test of a store: one call,
// one subtest per rule of the contract. In the store's own package it is
// named TestMeteredSource (an example file cannot hold a test, so here it
// is called by TestMeteredSource in example_source_test.go).
func testMeteredSource(t *testing.T) {
	conformance.TestSource(t, meteredHarness)
}

// A store of your own is held to the contract of mailqueue.Source by one
// call of TestSource in its tests (testMeteredSource above). A source that
// passes works with the polling driver and the worker, as this example
// shows by sending a job through it.
func ExampleTestSource() {
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	fc := clock.NewFake(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	src, err := newMeteredSource(fc)
	if err != nil {
		fmt.Println(err)
		return
	}
	driver, err := polling.New(src, polling.Options{Clock: fc, Logger: quiet})
	if err != nil {
		fmt.Println(err)
		return
	}
	queue, err := mailqueue.New(mailqueue.Config{Driver: driver, Clock: fc, Logger: quiet})
	if err != nil {
		fmt.Println(err)
		return
	}
	transport := mmemory.New()
	sent := make(chan struct{})
	transport.OnSend(func(ctx context.Context, msg *mail.Message) (mail.Receipt, error) {
		close(sent)
		return mail.Receipt{Category: mail.Accepted, Code: 250}, nil
	})
	worker, err := queue.NewWorker(mailqueue.WorkerConfig{Transport: transport})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := worker.Start(); err != nil {
		fmt.Println(err)
		return
	}
	_, err = queue.Enqueue(ctx, &jobv1.Job{
		Kind: jobv1.KindContent, Subject: "Hello", Content: &jobv1.Content{Text: "Hello"},
		From: "Acme <no-reply@example.com>", To: []string{"ada@example.com"}, IdempotencyKey: "hello:1",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	<-sent
	// Close waits for the run in flight, which settles the job.
	if err := worker.Close(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("sent:", transport.Sent(), "settles:", src.settles.Load())
	// Output:
	// sent: 1 settles: 1
}
