package jcs_test

// The canonical JSON vectors of docs/wire.md (gen/vectors/vectors.json,
// written by cmd/generate with code of its own, the RFC 8785 examples copied
// from the RFC): Marshal must agree with every one.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"strconv"
	"testing"

	"github.com/alexify/mailer/internal/jcs"
	"github.com/alexify/mailer/internal/strictjson"
)

// vectorsFile is the part of the vectors this package checks.
type vectorsFile struct {
	Canonical []struct{ Name, Input, Canonical string }
	Numbers   []struct {
		Bits, Canonical string
		Error           bool
	}
	Stored []struct{ Name, Data string }
}

func readVectors(t testing.TB) *vectorsFile {
	t.Helper()
	b, err := os.ReadFile("../../gen/vectors/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var f vectorsFile
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Canonical) == 0 || len(f.Numbers) == 0 || len(f.Stored) == 0 {
		t.Fatal("a section of the vectors is empty")
	}
	return &f
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func TestVectorsCanonical(t *testing.T) {
	f := readVectors(t)
	for _, v := range f.Canonical {
		in, err := strictjson.Decode([]byte(v.Input))
		if err != nil {
			t.Fatalf("%s: %v", v.Name, err)
		}
		got, err := jcs.Marshal(in)
		if err != nil || string(got) != v.Canonical {
			t.Errorf("%s: got %s (%v), want %s", v.Name, got, err, v.Canonical)
		}
	}
	for _, v := range f.Numbers {
		bits, err := strconv.ParseUint(v.Bits, 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		got, err := jcs.Marshal(math.Float64frombits(bits))
		if v.Error {
			if err == nil {
				t.Errorf("%s: got %s, want an error", v.Bits, got)
			}
			continue
		}
		if err != nil || string(got) != v.Canonical {
			t.Errorf("%s: got %s (%v), want %s", v.Bits, got, err, v.Canonical)
		}
		// The same number read from its shortest text gives the same bytes.
		if again, _ := jcs.Marshal(json.Number(v.Canonical)); string(again) != v.Canonical {
			t.Errorf("%s read back: %s", v.Canonical, again)
		}
	}
}
