package memory_test

import (
	"testing"

	"github.com/alexify/mailer/internal/codetest"
	"github.com/alexify/mailer/internal/leaktest"
)

// TestMain fails the package's tests when a goroutine is still running once
// they are done: a worker, a timer or a connection left behind is a leak.
// The default logger records the codes it hears (internal/codetest).
func TestMain(m *testing.M) {
	codetest.InstallDefault()
	leaktest.VerifyTestMain(m)
}
