package mailqueue_test

import (
	"os"
	"testing"

	"github.com/alexify/mailer/internal/codetest"
)

// TestMain makes the default logger record the codes it hears, for the test
// generated from schema/codes.yaml (internal/codetest).
func TestMain(m *testing.M) {
	codetest.InstallDefault()
	os.Exit(m.Run())
}
