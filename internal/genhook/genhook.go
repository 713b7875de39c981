// Package genhook hands the tests of the generated packages the parts of
// them that are not their API. The tests live outside gen/ (in
// internal/gentest), so that gen/ holds only what go generate writes, and a
// test outside a package cannot call its unexported functions: the
// generated packages set the variables here in their init instead.
//
// Nothing but the generated packages sets these, and nothing but
// internal/gentest calls them.
package genhook

import "github.com/santhosh-tekuri/jsonschema/v6"

// JobV1 holds the validator of gen/jobv1 in its parts. gen/jobv1 sets it
// when it is imported.
var JobV1 struct {
	// FastValid is the generated fast path: true means the value is valid
	// for sure, false only that it is not known to be.
	FastValid func(v any) bool

	// Compiled returns the embedded schema compiled as ValidateValue uses
	// it, formats asserted (the mailbox format too) and contentEncoding
	// checked.
	Compiled func() (*jsonschema.Schema, error)

	// Mailbox is the check of the format mailbox: nil for a string that is
	// one mailbox an SMTP path can carry, and for a value that is not a
	// string.
	Mailbox func(v any) error
}
