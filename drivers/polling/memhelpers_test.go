package polling_test

import (
	"testing"

	"github.com/alexify/mailer/drivers/memory"
	"github.com/alexify/mailer/drivers/polling"
	"github.com/alexify/mailer/mailqueue"
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

// mustPolling returns a polling driver over src, failing the test when the
// options are refused.
func mustPolling(t testing.TB, src mailqueue.Source, opts polling.Options) *polling.Driver {
	t.Helper()
	d, err := polling.New(src, opts)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
