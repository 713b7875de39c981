package jcs_test

// The fuzz target of the canonical JSON. go test runs its seeds (the wire
// vectors) only; fuzz it with, for instance:
//
//	go test ./internal/jcs -run '^$' -fuzz '^FuzzCanonical$' -fuzztime 20000x

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/alexify/mailer/internal/jcs"
	"github.com/alexify/mailer/internal/strictjson"
)

// FuzzCanonical checks that what Marshal writes is JSON and that Marshal is
// idempotent: the canonical JSON of the canonical JSON is the same bytes.
func FuzzCanonical(f *testing.F) {
	v := readVectors(f)
	for _, c := range v.Canonical {
		f.Add([]byte(c.Input))
	}
	for _, s := range v.Stored {
		f.Add([]byte(s.Data))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := strictjson.Decode(data)
		if err != nil {
			return
		}
		c1, err := jcs.Marshal(in)
		if err != nil {
			return // a number out of range
		}
		if !json.Valid(c1) {
			t.Fatalf("not JSON: %s", c1)
		}
		again, err := strictjson.Decode(c1)
		if err != nil {
			t.Fatalf("the canonical JSON does not decode: %v", err)
		}
		c2, err := jcs.Marshal(again)
		if err != nil || !bytes.Equal(c1, c2) {
			t.Fatalf("not idempotent:\n%s\n%s (%v)", c1, c2, err)
		}
	})
}
