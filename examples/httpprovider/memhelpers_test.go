package httpprovider_test

import (
	"testing"

	"github.com/alexify/mailer/drivers/memory"
)

// mustMemory returns a memory queue of opts, failing the test when the
// options are refused.
func mustMemory(t testing.TB, opts memory.Options) *memory.Queue {
	t.Helper()
	q, err := memory.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return q
}
