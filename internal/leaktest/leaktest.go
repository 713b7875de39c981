// Package leaktest checks, once a package's tests are done, that none of
// their goroutines is still running (go.uber.org/goleak), giving slow
// goroutines time to end: on a loaded machine a connection's goroutine can
// take longer to return after its Close than goleak's own retries wait,
// and a leak is a goroutine that stays, not one that is late.
package leaktest

import (
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// Patience is how long VerifyTestMain waits for the goroutines to end.
const Patience = 10 * time.Second

// VerifyTestMain runs the tests of m, then fails the package (exit status
// 1, the leaked goroutines printed) when goroutines other than those opts
// ignore are still running after Patience. It does not return.
func VerifyTestMain(m *testing.M, opts ...goleak.Option) {
	code := m.Run()
	if code == 0 {
		deadline := time.Now().Add(Patience)
		for {
			err := goleak.Find(opts...)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				fmt.Fprintf(os.Stderr, "leaktest: goroutines still running %v after the tests: %v\n", Patience, err)
				code = 1
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	os.Exit(code)
}
