package mailqueue

import (
	"math/rand/v2"
	"time"
)

// The backoff of a retry: 30 seconds, doubled per attempt, an hour at most,
// with full jitter, so that the retries of many jobs spread out (spec: "What
// the queue does with an attempt").
const (
	// BackoffBase is the backoff's ceiling after the first attempt.
	BackoffBase = 30 * time.Second
	// BackoffMax is the most the backoff's ceiling grows to.
	BackoffMax = time.Hour
)

// Backoff returns the delay before the retry that follows attempt (from 1):
// a uniformly random duration in [0, min(BackoffBase * 2^(attempt-1),
// BackoffMax)] ("full jitter").
func Backoff(attempt int) time.Duration {
	return time.Duration(rand.Int64N(int64(BackoffCeiling(attempt)) + 1))
}

// BackoffCeiling returns the most Backoff(attempt) gives.
func BackoffCeiling(attempt int) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	d := BackoffBase
	for i := 1; i < attempt; i++ {
		d *= 2
		if d >= BackoffMax {
			return BackoffMax
		}
	}
	return d
}

// retryAfterJitter returns a little jitter to add above a Retry-After, so that
// a rate limit does not bring every job back at once: up to a tenth of it,
// and at least up to a second.
func retryAfterJitter(retryAfter time.Duration) time.Duration {
	span := retryAfter / 10
	if span < time.Second {
		span = time.Second
	}
	return time.Duration(rand.Int64N(int64(span) + 1))
}
