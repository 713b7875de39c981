// Package gentest is the home of the tests of the generated packages. They
// live here, outside gen/, so that gen/ holds only what go generate writes
// (as sqlc keeps its end-to-end tests in internal/endtoend, apart from the
// code it generates): jobv1test tests gen/jobv1, codestest tests gen/codes.
// The tests reach the unexported parts of gen/jobv1 they need through
// internal/genhook.
package gentest
