package main

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestVectorsCommitted is the staleness check of gen/vectors/vectors.json.
func TestVectorsCommitted(t *testing.T) {
	got, err := Vectors(os.DirFS("../../schema"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../../" + vectorsPath)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s is stale: run go generate ./... from the root (-committed +generated):\n%s", vectorsPath, diff)
	}
	for range 3 {
		again, err := Vectors(os.DirFS("../../schema"))
		if err != nil || !bytes.Equal(again, got) {
			t.Fatalf("two runs of Vectors differ (%v)", err)
		}
	}
	if !json.Valid(got) {
		t.Error("the vectors are not JSON")
	}
}

// TestVectorsNumber pins the generator's own ECMAScript number writer on
// values past RFC 8785's appendix.
func TestVectorsNumber(t *testing.T) {
	for in, want := range map[float64]string{
		1: "1", -1.5: "-1.5", 1e21: "1e+21", 1e-7: "1e-7", 1.5e300: "1.5e+300", 123e-20: "1.23e-18", 0.1: "0.1", 1e20: "100000000000000000000",
	} {
		if got, err := vjcsNumber(in); err != nil || got != want {
			t.Errorf("vjcsNumber(%v) = %q, %v; want %q", in, got, err, want)
		}
	}
}
