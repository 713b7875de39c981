package jobv1test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/alexify/mailer/gen/jobv1"
)

// TestValidateStrictJSON: Validate reads the text as the worker reads a
// stored job (internal/strictjson), and each refusal is one error of rule
// json at the pointer of the value at fault.
func TestValidateStrictJSON(t *testing.T) {
	head := `{"v":1,"kind":"template","template":"welcome","from":"shop@example.com",`
	tests := []struct {
		name, in      string
		pointer, path string
		message       string
	}{
		{"a name twice", head + `"to":["ada@example.com"],"to":["eve@example.net"]}`, "/to", "to", "appears twice"},
		{"invalid UTF-8", head + "\"to\":[\"ada@example.com\"],\"subject\":\"Hi\xff\"}", "/subject", "subject", "not valid UTF-8"},
		{"a lone surrogate", head + `"to":["ada@example.com"],"subject":"Hi \ud800"}`, "/subject", "subject", "lone high surrogate"},
		{"an integer beyond 2^53-1", head + `"to":["ada@example.com"],"context":{"id":9007199254740993}}`, "/context/id", "context.id", "beyond 2^53-1"},
		{"a number beyond a double", head + `"to":["ada@example.com"],"context":{"n":[1e999]}}`, "/context/n/0", "context.n[0]", "beyond what a double"},
		{"too deep", head + `"to":["ada@example.com"],"context":{"v":` + strings.Repeat("[", 65) + strings.Repeat("]", 65) + `}}`,
			"/context/v" + strings.Repeat("/0", 64), "context.v" + strings.Repeat("[0]", 64), "nests deeper"},
		{"not JSON", head, "", "", "is not valid JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var ve *jobv1.ValidationError
			if err := jobv1.Validate([]byte(tc.in)); !errors.As(err, &ve) {
				t.Fatalf("Validate = %v, want a *ValidationError", err)
			}
			if len(ve.Errors) != 1 || ve.More != 0 {
				t.Fatalf("errors %v (and %d more), want one", ve.Errors, ve.More)
			}
			fe := ve.Errors[0]
			got := []any{fe.Pointer, fe.Path, fe.Rule, strings.Contains(fe.Message, tc.message)}
			if diff := cmp.Diff([]any{tc.pointer, tc.path, "json", true}, got); diff != "" {
				t.Errorf("%q (-want +got):\n%s", fe.Message, diff)
			}
		})
	}
}

// TestValidateErrorCap: a report stops after MaxErrors errors and says how
// many more there were.
func TestValidateErrorCap(t *testing.T) {
	for _, n := range []int{jobv1.MaxErrors - 1, jobv1.MaxErrors, jobv1.MaxErrors + 1, 5000} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			to := make([]string, n)
			for i := range to {
				to[i] = `"not a mailbox"`
			}
			data := `{"v":1,"kind":"template","template":"welcome","from":"shop@example.com","to":[` + strings.Join(to, ",") + `]}`
			var ve *jobv1.ValidationError
			if err := jobv1.Validate([]byte(data)); !errors.As(err, &ve) {
				t.Fatalf("Validate = %v", err)
			}
			total := len(ve.Errors) + ve.More
			if len(ve.Errors) > jobv1.MaxErrors || total < n || (total > jobv1.MaxErrors) != (ve.More > 0) {
				t.Fatalf("%d errors listed and %d more, for %d bad recipients", len(ve.Errors), ve.More, n)
			}
			if !strings.HasPrefix(ve.Errors[0].Pointer, "/to") {
				t.Errorf("first error at %s, want /to or below", ve.Errors[0].Pointer)
			}
			if want := " (and " + strconv.Itoa(total-1) + " more)"; !strings.HasSuffix(ve.Error(), want) {
				t.Errorf("Error() = %q, want it to end in %q", ve.Error(), want)
			}
		})
	}
}
