package postgres_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/alexify/mailer/internal/codetest"
	"github.com/alexify/mailer/internal/leaktest"
)

// TestMain fails the package's tests when a goroutine is still running once
// they are done: a worker, a LISTEN connection or a timer left behind is a
// leak. The default logger records the codes it hears (internal/codetest).
func TestMain(m *testing.M) {
	codetest.InstallDefault()
	leaktest.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/jackc/pgx/v5/pgxpool.(*Pool).backgroundHealthCheck"))
}
