package codetest_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/internal/codetest"
)

// TestWantsAreTheTable keeps emitted_gen_test.go current: its codes and
// levels are those of gen/codes, which make gen-check keeps equal to
// schema/codes.yaml.
func TestWantsAreTheTable(t *testing.T) {
	t.Parallel()
	var want, got []codetest.Want
	for _, info := range codes.All() {
		want = append(want, codetest.Want{Code: info.Code, Level: info.Level})
	}
	for _, w := range wants {
		got = append(got, codetest.Want{Code: w.Code, Level: w.Level})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("emitted_gen_test.go is stale: run go generate ./... (-gen/codes +emitted_gen_test.go):\n%s", diff)
	}
}
