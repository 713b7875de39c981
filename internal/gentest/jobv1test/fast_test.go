package jobv1test

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/internal/genhook"
)

// fastAgrees fails the test when the fast path says valid of a value the
// schema (jsonschema/v6) refuses: the one thing the fast path must never do.
func fastAgrees(t testing.TB, data []byte) (fast, full bool) {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return false, false
	}
	sch, err := genhook.JobV1.Compiled()
	if err != nil {
		t.Fatal(err)
	}
	fast = genhook.JobV1.FastValid(v)
	full = sch.Validate(v) == nil
	if fast && !full {
		t.Fatalf("the fast path says valid, the schema refuses:\n%s\n%v", data, sch.Validate(v))
	}
	return fast, full
}

// vectorJobs returns the valid and the invalid jobs of gen/vectors.
func vectorJobs(t testing.TB) (valid, invalid [][]byte) {
	t.Helper()
	data, err := os.ReadFile("../../../gen/vectors/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var vec struct {
		Valid, Invalid []struct {
			Job json.RawMessage `json:"job"`
		}
	}
	if err := json.Unmarshal(data, &vec); err != nil {
		t.Fatal(err)
	}
	for _, v := range vec.Valid {
		valid = append(valid, v.Job)
	}
	for _, v := range vec.Invalid {
		invalid = append(invalid, v.Job)
	}
	return valid, invalid
}

func TestFastPath(t *testing.T) {
	valid, invalid := vectorJobs(t)
	valid = append(valid, []byte(validTemplate), []byte(validContent), []byte(validSealed))
	for _, job := range valid {
		if fast, full := fastAgrees(t, job); !fast || !full {
			t.Errorf("a valid job: fast %t, schema %t; the fast path should take it:\n%s", fast, full, job)
		}
	}
	for _, job := range invalid {
		fastAgrees(t, job)
		if jobv1.Validate(job) == nil {
			t.Errorf("an invalid job passed Validate:\n%s", job)
		}
	}
}

// FuzzFastPath checks on any input that the fast path never says valid of a
// value the schema refuses. Run it with: go test ./internal/gentest/jobv1test -run '^$' -fuzz FuzzFastPath -fuzztime 30s
func FuzzFastPath(f *testing.F) {
	valid, invalid := vectorJobs(f)
	for _, j := range append(valid, invalid...) {
		f.Add(j)
	}
	f.Add([]byte(validTemplate))
	f.Add([]byte(validContent))
	f.Add([]byte(validSealed))
	f.Fuzz(func(t *testing.T, data []byte) {
		fastAgrees(t, data)
	})
}

func TestMailboxRefusesInvisibleCharacters(t *testing.T) {
	for _, s := range []string{"a@ex\u200bample.com", "a\u200d@example.com", "Ada <a@exam\u00adple.com>", "a@example.com\u202e"} {
		if genhook.JobV1.Mailbox(s) == nil {
			t.Errorf("%q passed", s)
		}
	}
	if err := genhook.JobV1.Mailbox("Zoë <zoe@bücher.example>"); err != nil {
		t.Errorf("an IDN mailbox: %v", err)
	}
}

// decodeBoth decodes data with Decode and with DecodeValue and fails the
// test when they differ.
func decodeBoth(t testing.TB, data []byte) {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return
	}
	j1, s1, err1 := jobv1.Decode(data)
	j2, s2, err2 := jobv1.DecodeValue(obj)
	if (err1 == nil) != (err2 == nil) {
		// DecodeValue is for validated values: only compare on those.
		if jobv1.ValidateValue(v) == nil {
			t.Fatalf("Decode error %v, DecodeValue error %v, on a valid job:\n%s", err1, err2, data)
		}
		return
	}
	if err1 != nil {
		return
	}
	if diff := cmp.Diff(j1, j2); diff != "" {
		t.Fatalf("Decode and DecodeValue differ (-Decode +DecodeValue):\n%s\n%s", diff, data)
	}
	if diff := cmp.Diff(s1, s2); diff != "" {
		t.Fatalf("Decode and DecodeValue differ on a sealed job (-Decode +DecodeValue):\n%s", diff)
	}
}

func TestDecodeValueIsDecode(t *testing.T) {
	valid, invalid := vectorJobs(t)
	for _, job := range append(append(valid, invalid...), []byte(validTemplate), []byte(validContent), []byte(validSealed)) {
		decodeBoth(t, job)
	}
}

// FuzzDecodeValue checks on any valid input that DecodeValue decodes as
// Decode does. Run it with: go test ./internal/gentest/jobv1test -run '^$' -fuzz FuzzDecodeValue
func FuzzDecodeValue(f *testing.F) {
	valid, _ := vectorJobs(f)
	for _, j := range valid {
		f.Add(j)
	}
	f.Add([]byte(validTemplate))
	f.Add([]byte(validSealed))
	f.Fuzz(func(t *testing.T, data []byte) {
		if jobv1.Validate(data) != nil {
			return
		}
		decodeBoth(t, data)
	})
}

func TestMailboxRefusesAnAddressInTheDisplayName(t *testing.T) {
	for _, s := range []string{`"ada@example.com" <eve@example.net>`, `ada@example.com (evil@x.com)`} {
		if genhook.JobV1.Mailbox(s) == nil {
			t.Errorf("%q passed", s)
		}
	}
}

// numbersByValue compares JSON numbers by the float64 they name: encoding/json
// and EncodeValue may spell one differently (1e-06, 0.000001), and the hash
// and the stored bytes write it again in canonical form anyway.
var numbersByValue = cmp.Comparer(func(a, b json.Number) bool {
	fa, ea := a.Float64()
	fb, eb := b.Float64()
	return ea == nil && eb == nil && fa == fb || a == b
})

// encodeBoth turns j into a JSON value through encoding/json and through
// EncodeValue, and fails the test when they differ.
func encodeBoth(t testing.TB, j *jobv1.Job) {
	t.Helper()
	got, ok := jobv1.EncodeValue(j)
	raw, err := json.Marshal(j)
	if err != nil {
		if ok {
			t.Fatalf("encoding/json refuses a job EncodeValue takes: %v", err)
		}
		return
	}
	if !ok {
		return
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var want any
	if err := d.Decode(&want); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, any(got), numbersByValue); diff != "" {
		t.Fatalf("EncodeValue differs from encoding/json (-json +EncodeValue):\n%s", diff)
	}
}

func TestEncodeValueIsEncodingJSON(t *testing.T) {
	valid, _ := vectorJobs(t)
	for _, data := range append(valid, []byte(validTemplate), []byte(validContent)) {
		j, _, err := jobv1.Decode(data)
		if err != nil || j == nil {
			continue
		}
		encodeBoth(t, j)
	}
	at := time.Date(2026, 11, 30, 12, 0, 0, 123000000, time.FixedZone("x", 3600))
	encodeBoth(t, &jobv1.Job{V: 1, Kind: jobv1.KindContent, From: "a@example.com", To: []string{"b@example.com"},
		Context: map[string]any{"n": 1, "f": 0.000001, "big": 1e21, "neg": int64(-5), "u": uint(7), "s": []string{"a"}, "m": map[string]string{"k": "v"},
			"nested": []any{map[string]any{"x": nil, "y": true}, []any(nil)}, "nilmap": map[string]any(nil)},
		ScheduledAt: &at, Attachments: []jobv1.Attachment{{Filename: "a", Content: []byte{0, 1, 2}}, {Ref: "r"}}, Headers: map[string]string{"X-A": "b"}})
	if _, ok := jobv1.EncodeValue(&jobv1.Job{Context: map[string]any{"t": time.Now()}}); ok {
		t.Error("EncodeValue took a time.Time in the context")
	}
	if _, ok := jobv1.EncodeValue(&jobv1.Job{Context: map[string]any{"p": new(string)}}); ok {
		t.Error("EncodeValue took a pointer in the context")
	}
}

// FuzzEncodeValue checks on any job that EncodeValue gives what encoding/json
// does. Run it with: go test ./internal/gentest/jobv1test -run '^$' -fuzz FuzzEncodeValue
func FuzzEncodeValue(f *testing.F) {
	valid, _ := vectorJobs(f)
	for _, j := range valid {
		f.Add(j)
	}
	f.Add([]byte(validTemplate))
	f.Fuzz(func(t *testing.T, data []byte) {
		var j jobv1.Job
		d := json.NewDecoder(bytes.NewReader(data))
		d.UseNumber()
		if d.Decode(&j) != nil {
			return
		}
		encodeBoth(t, &j)
	})
}
