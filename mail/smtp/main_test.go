package smtp_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine is still running once
// they are done: a worker, a timer or a connection left behind is a leak.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
