package redis

import (
	"context"
	"errors"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/alexify/mailer/mailqueue"
)

// TestOptionsRefused: Open and OpenSource refuse each value they cannot
// honour with an *OptionError naming the option and the value, before
// they ask the server anything (the client here reaches no server).
func TestOptionsRefused(t *testing.T) {
	t.Parallel()
	c := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	tests := []struct {
		opts Options
		want string
	}{
		{Options{}, "redis: Options.Client is required"},
		{Options{Client: c, Prefix: "a{b"}, `redis: Options.Prefix "a{b" holds { or }: the driver makes the queue's hash tag of it`},
		{Options{Client: c, Queue: "q}"}, `redis: Options.Queue "q}" holds { or }: the driver makes the queue's hash tag of it`},
		{Options{Client: c, Queue: "q\xff"}, `redis: Options.Queue "q\xff" is not valid UTF-8`},
		{Options{Client: c, Fairness: "tenants"}, `redis: Options.Fairness "tenants" is not one of none, tenant`},
		{Options{Client: c, RetainData: "some"}, `redis: Options.RetainData "some" is not one of failed, all, none`},
		{Options{Client: c, DedupeWindow: -time.Hour}, "redis: Options.DedupeWindow -1h0m0s is negative"},
		{Options{Client: c, RetainFailed: -time.Hour}, "redis: Options.RetainFailed -1h0m0s is negative"},
		{Options{Client: c, LeaseDuration: -time.Second}, "redis: Options.LeaseDuration -1s is negative"},
		{Options{Client: c, PollInterval: -time.Second}, "redis: Options.PollInterval -1s is negative"},
		{Options{Client: c, CloseTimeout: -time.Second}, "redis: Options.CloseTimeout -1s is negative"},
	}
	ctx := context.Background()
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			var oe *mailqueue.OptionError
			if s, err := OpenSource(ctx, tc.opts); s != nil || !errors.As(err, &oe) || err.Error() != tc.want {
				t.Errorf("OpenSource = %v, %v; want an *OptionError %q", s, err, tc.want)
			}
			if q, err := Open(ctx, tc.opts); q != nil || !errors.As(err, &oe) || err.Error() != tc.want {
				t.Errorf("Open = %v, %v; want an *OptionError %q", q, err, tc.want)
			}
		})
	}
}
