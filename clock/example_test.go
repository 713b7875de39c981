package clock_test

import (
	"fmt"
	"time"

	"github.com/alexify/mailer/clock"
)

// A fake clock moves only when the test moves it: a timer of an hour fires
// at once when the test advances the clock by an hour, and not a moment
// before, so a test of a backoff never sleeps.
func ExampleFake() {
	fc := clock.NewFake(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	t := fc.NewTimer(time.Hour)

	fc.Advance(59 * time.Minute)
	select {
	case <-t.C():
		fmt.Println("fired early")
	default:
		fmt.Println("waiting at", fc.Now().Format("15:04"), "timers:", fc.Timers())
	}

	fc.Advance(time.Minute)
	fmt.Println("fired at", (<-t.C()).Format("15:04"), "timers:", fc.Timers())
	// Output:
	// waiting at 09:59 timers: 1
	// fired at 10:00 timers: 0
}
