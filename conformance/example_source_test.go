package conformance_test

import "testing"

// TestMeteredSource runs the conformance test of the example's source
// (example_test.go), so the code the example shows is held to the contract.
func TestMeteredSource(t *testing.T) {
	testMeteredSource(t)
}
