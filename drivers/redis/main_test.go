package redis_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/alexify/mailer/internal/codetest"
	"github.com/alexify/mailer/internal/leaktest"
)

// TestMain fails the package's tests when a goroutine is still running once
// they are done: a worker, a timer or a connection left behind is a leak.
// The default logger records the codes it hears (internal/codetest).
func TestMain(m *testing.M) {
	codetest.InstallDefault()
	// A worker process of the fault tests (the test binary run again) keeps
	// a watcher of its parent for its whole life (faulttest.ExitWithParent).
	leaktest.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/alexify/mailer/drivers/redis/internal/faulttest.ExitWithParent.func1"))
}
