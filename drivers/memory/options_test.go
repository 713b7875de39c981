package memory_test

import (
	"errors"
	"testing"
	"time"

	"github.com/alexify/mailer/drivers/memory"
	"github.com/alexify/mailer/mailqueue"
)

// TestOptionsRefused: New and NewSource refuse each value they cannot
// honour with an *OptionError naming the option and the value; a zero
// value takes the default.
func TestOptionsRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		opts memory.Options
		want string
	}{
		{memory.Options{Fairness: "tenants"}, `memory: Options.Fairness "tenants" is not one of none, tenant`},
		{memory.Options{RetainData: "some"}, `memory: Options.RetainData "some" is not one of failed, all, none`},
		{memory.Options{MaxJobs: -1}, "memory: Options.MaxJobs -1 is negative"},
		{memory.Options{RetainFinished: -1}, "memory: Options.RetainFinished -1 is negative"},
		{memory.Options{DedupeWindow: -time.Hour}, "memory: Options.DedupeWindow -1h0m0s is negative"},
		{memory.Options{RetainFailed: -time.Hour}, "memory: Options.RetainFailed -1h0m0s is negative"},
		{memory.Options{LeaseDuration: -time.Second}, "memory: Options.LeaseDuration -1s is negative"},
		{memory.Options{PollInterval: -time.Second}, "memory: Options.PollInterval -1s is negative"},
		{memory.Options{CloseTimeout: -time.Second}, "memory: Options.CloseTimeout -1s is negative"},
		{memory.Options{Queue: "q\xff"}, `memory: Options.Queue "q\xff" is not valid UTF-8`},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			var oe *mailqueue.OptionError
			if s, err := memory.NewSource(tc.opts); s != nil || !errors.As(err, &oe) || err.Error() != tc.want {
				t.Errorf("NewSource = %v, %v; want an *OptionError %q", s, err, tc.want)
			}
			if q, err := memory.New(tc.opts); q != nil || !errors.As(err, &oe) || err.Error() != tc.want {
				t.Errorf("New = %v, %v; want an *OptionError %q", q, err, tc.want)
			}
		})
	}
	for _, opts := range []memory.Options{{}, {Fairness: mailqueue.FairnessTenant, RetainData: mailqueue.RetainNoData, MaxJobs: 1}} {
		if _, err := memory.New(opts); err != nil {
			t.Errorf("New(%+v): %v", opts, err)
		}
	}
}

// TestQueueName: the source and the queue (through the polling driver)
// answer Options.Queue, "mail" by default, as mailqueue.QueueNamer.
func TestQueueName(t *testing.T) {
	t.Parallel()
	for opt, want := range map[string]string{"": memory.DefaultQueue, "billing": "billing"} {
		q, err := memory.New(memory.Options{Queue: opt})
		if err != nil {
			t.Fatal(err)
		}
		var d mailqueue.Driver = q
		n, ok := d.(mailqueue.QueueNamer)
		if !ok || n.QueueName() != want || q.Source().QueueName() != want {
			t.Errorf("Options.Queue %q: the queue's name is %v, want %q", opt, n, want)
		}
	}
}
