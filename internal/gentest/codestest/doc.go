// Package codestest tests gen/codes from outside it: Lookup, Info and All
// against schema/codes.yaml's order and fields. It has no code of its own.
package codestest
