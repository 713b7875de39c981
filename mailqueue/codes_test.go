package mailqueue_test

import (
	"os"
	"strings"
	"testing"

	"github.com/alexify/mailer/gen/codes"
)

// TestCodesCoverTheSpec keeps schema/codes.yaml equal to the spec's Codes
// table: every code of the spec is there, and a code the spec lacks says
// where it comes from.
func TestCodesCoverTheSpec(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../schema/spec-codes.txt")
	if err != nil {
		t.Fatal(err)
	}
	spec := map[codes.Code]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			spec[codes.Code(line)] = true
		}
	}
	if len(spec) != 51 {
		t.Fatalf("the spec's table has 51 codes; read %d", len(spec))
	}
	for c := range spec {
		if _, ok := codes.Lookup(c); !ok {
			t.Errorf("the spec's code %s is not in schema/codes.yaml", c)
		}
	}
	for _, info := range codes.All() {
		if !spec[info.Code] && !strings.HasPrefix(info.Spec, "mailer") {
			t.Errorf("%s is not in the spec's table, and its spec field does not say it is the kit's own", info.Code)
		}
		if info.Where == codes.WhereFailure && info.State == "" {
			t.Errorf("%s is a failure without a state", info.Code)
		}
	}
}
