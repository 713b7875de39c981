package conformance_test

import (
	"testing"

	"github.com/alexify/mailer/drivers/memory"
)

// mustMemorySource returns a memory source of opts, failing the test when
// the options are refused.
func mustMemorySource(t testing.TB, opts memory.Options) *memory.Source {
	t.Helper()
	s, err := memory.NewSource(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
