package polling_test

import (
	"errors"
	"testing"
	"time"

	"github.com/alexify/mailer/drivers/memory"
	"github.com/alexify/mailer/drivers/polling"
	"github.com/alexify/mailer/mailqueue"
)

// TestOptionsRefused: New refuses a negative duration (a mistake, not a
// request for the default) and a missing source, with an *OptionError
// naming the option and the value.
func TestOptionsRefused(t *testing.T) {
	t.Parallel()
	src := mustMemorySource(t, memory.Options{})
	tests := []struct {
		src  mailqueue.Source
		opts polling.Options
		want string
	}{
		{nil, polling.Options{}, "polling: the Source is required"},
		{src, polling.Options{PollInterval: -time.Second}, "polling: Options.PollInterval -1s is negative"},
		{src, polling.Options{LeaseDuration: -time.Minute}, "polling: Options.LeaseDuration -1m0s is negative"},
		{src, polling.Options{CloseTimeout: -time.Millisecond}, "polling: Options.CloseTimeout -1ms is negative"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			var oe *mailqueue.OptionError
			if d, err := polling.New(tc.src, tc.opts); d != nil || !errors.As(err, &oe) || err.Error() != tc.want {
				t.Errorf("New = %v, %v; want an *OptionError %q", d, err, tc.want)
			}
		})
	}
	if _, err := polling.New(src, polling.Options{}); err != nil {
		t.Errorf("New with the zero values: %v, want the defaults", err)
	}
}
