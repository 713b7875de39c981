package mailqueue

import (
	"encoding/json"
	"math"
	"net"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"

	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/internal/jcs"
)

// textOnly has a MarshalText of its own.
type textOnly struct{ S string }

func (textOnly) MarshalText() ([]byte, error) { return []byte("t"), nil }

// ptrJSON has a MarshalJSON on its pointer only.
type ptrJSON struct{ S string }

func (*ptrJSON) MarshalJSON() ([]byte, error) { return []byte(`"p"`), nil }

func ptrTo(v any) *any { return &v }

// contextCase is a value given alone to checkContext, under "v", and the
// faults it gives: "pointer: the start of the reason" (none for a value
// that round-trips).
type contextCase struct {
	name string
	v    any
	want []string
}

// scalarContextCases are the values that hold no other.
func scalarContextCases() []contextCase {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return []contextCase{
		{"nil", nil, nil},
		{"a bool", true, nil},
		{"a string", "Ada", nil},
		{"a string not UTF-8", "Ren\xe9", []string{"/context/v: is not valid UTF-8"}},
		{"an int at 2^53-1", maxSafeInteger, nil},
		{"an int beyond 2^53-1", int64(maxSafeInteger + 1), []string{"/context/v: is an integer beyond"}},
		{"an int below -(2^53-1)", int64(-maxSafeInteger - 1), []string{"/context/v: is an integer beyond"}},
		{"an int8", int8(-3), nil},
		{"a uint at 2^53-1", uint64(maxSafeInteger), nil},
		{"a uint beyond 2^53-1", uint64(maxSafeInteger + 1), []string{"/context/v: is an integer beyond"}},
		{"a uintptr", uintptr(1), nil},
		{"a float", 1.5, nil},
		{"a float32", float32(1.5), nil},
		{"NaN", math.NaN(), []string{"/context/v: is NaN or an infinity"}},
		{"an infinity", math.Inf(-1), []string{"/context/v: is NaN or an infinity"}},
		{"a complex", complex(1, 2), []string{"/context/v: is a complex128, which JSON cannot hold"}},
		{"a func", func() {}, []string{"/context/v: is a func, which JSON cannot hold"}},
		{"a channel", make(chan int), []string{"/context/v: is a chan, which JSON cannot hold"}},
		{"an unsafe pointer", unsafe.Pointer(&created), []string{"/context/v: is a unsafe.Pointer, which JSON cannot hold"}},
	}
}

// containerContextCases are the values with a JSON encoding of their own
// and those that hold others.
func containerContextCases() []contextCase {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cycleMap := map[string]any{}
	cycleMap["self"] = cycleMap
	cycleSlice := []any{nil}
	cycleSlice[0] = cycleSlice
	type node struct{ Next *node }
	cyclePtr := &node{}
	cyclePtr.Next = cyclePtr
	shared := map[string]any{"a": 1}
	// deep returns n arrays, one in the other, around a string.
	deep := func(n int) any {
		var v any = "leaf"
		for i := 0; i < n; i++ {
			v = []any{v}
		}
		return v
	}
	var nilPtr *node
	var nilMap map[string]any
	var nilSlice []any
	var nilIntMap map[int]string
	type tagged struct {
		Name    string `json:"name,omitempty"`
		Skipped func() `json:"-"`
		Plain   int
	}
	return []contextCase{
		{"a valid json.RawMessage", json.RawMessage(`{"a":[1]}`), nil},
		{"an invalid json.RawMessage", json.RawMessage(`{"a":`), []string{"/context/v: is a json.RawMessage that is not valid JSON"}},
		{"a json.Number", json.Number("1.5e3"), nil},
		{"a json.Number not a number", json.Number("x"), []string{"/context/v: is not a number"}},
		{"a json.Number too large", json.Number("1e400"), []string{"/context/v: is a number beyond what a double can hold"}},
		{"a json.Number beyond 2^53-1", json.Number("9007199254740993"), []string{"/context/v: is an integer beyond 2^53-1"}},
		{"a json.Number of 2^53-1", json.Number("-9007199254740991"), nil},
		{"a json.Number 1e16", json.Number("1e16"), []string{"/context/v: is an integer beyond 2^53-1"}},
		{"a json.Number 1e21", json.Number("1e21"), nil},
		{"a float64 beyond 2^53-1", float64(1 << 53), []string{"/context/v: is an integer beyond 2^53-1"}},
		{"a float64 of -2^53+1", -float64(maxSafeInteger), nil},
		{"a float32 beyond 2^53-1", float32(1e20), []string{"/context/v: is an integer beyond 2^53-1"}},
		{"a float64 of 1e30", 1e30, nil},
		{"a time", created, []string{"/context/v: is a time.Time, which has a JSON encoding of its own"}},
		{"a *time.Time", &created, []string{"/context/v: is a *time.Time, which has a JSON encoding of its own"}},
		{"a MarshalText", textOnly{"a"}, []string{"/context/v: is a mailqueue.textOnly, which has a JSON encoding of its own"}},
		{"a net.IP", net.IPv4(192, 0, 2, 1), []string{"/context/v: is a net.IP, which has a JSON encoding of its own"}},
		{"a MarshalJSON on the pointer, by value", ptrJSON{"a"}, nil}, // not addressable: encoding/json writes the struct
		{"a MarshalJSON on the pointer, in an array", [1]ptrJSON{{"a"}}, nil},
		{"a MarshalJSON on the pointer, by pointer", &ptrJSON{"a"}, []string{"/context/v: is a *mailqueue.ptrJSON, which has a JSON encoding of its own"}},
		{"a MarshalJSON on the pointer, in a struct behind a pointer", &struct{ P ptrJSON }{}, []string{"/context/v/P: is a mailqueue.ptrJSON, which has a JSON encoding of its own"}},
		{"a nil pointer", nilPtr, nil},
		{"a nil map", nilMap, nil},
		{"a nil slice", nilSlice, nil},
		{"a nil map with int keys", nilIntMap, []string{"/context/v: is a map whose keys are not strings"}},
		{"a map with int keys", map[int]string{1: "a"}, []string{"/context/v: is a map whose keys are not strings"}},
		{"a map key not UTF-8", map[string]any{"\xff": 1}, []string{"/context/v: has a key that is not valid UTF-8"}},
		{"a map key with / and ~", map[string]any{"a/b~c": math.NaN()}, []string{"/context/v/a~1b~0c: is NaN or an infinity"}},
		{"a []byte", []byte("x"), []string{"/context/v: is a []byte, which JSON turns into a base64 string"}},
		{"a slice", []any{1, "a", math.NaN()}, []string{"/context/v/2: is NaN or an infinity"}},
		{"an array", [2]any{math.NaN(), 1}, []string{"/context/v/0: is NaN or an infinity"}},
		{"a struct", tagged{Name: "Ada", Skipped: func() {}, Plain: maxSafeInteger + 1}, []string{"/context/v/Plain: is an integer beyond"}},
		{"a struct with unexported fields", struct{ name string }{"Ada"}, []string{"/context/v: is a struct { name string } with unexported fields"}},
		{"an interface in a slice", []any{any(math.Inf(1))}, []string{"/context/v/0: is NaN or an infinity"}},
		{"a map cycle", cycleMap, []string{"/context/v/self: is a cycle"}},
		{"a slice cycle", cycleSlice, []string{"/context/v/0: is a cycle"}},
		{"a pointer cycle", cyclePtr, []string{"/context/v/Next: is a cycle"}},
		{"one map twice, not a cycle", []any{shared, shared}, nil},
		// The value of "v" is the first level below the context: 63 arrays
		// and their string are 64 levels, one more array is too deep,
		// whether the levels are interfaces or typed.
		{"64 levels", deep(maxContextDepth - 1), nil},
		{"64 levels behind pointers", ptrTo(deep(maxContextDepth - 1)), nil},
		{"65 levels", deep(maxContextDepth), []string{"/context/v" + strings.Repeat("/0", maxContextDepth) + ": nests deeper than 64 levels"}},
		{"4 typed levels", [][][]string{{{"leaf"}}}, nil},
		{"two faults", []any{math.NaN(), make(chan int)}, []string{"/context/v/0: is NaN or an infinity", "/context/v/1: is a chan, which JSON cannot hold"}},
	}
}

// TestCheckContext takes every path of the context's walk.
func TestCheckContext(t *testing.T) {
	tests := append(scalarContextCases(), containerContextCases()...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for i, fe := range checkContext(map[string]any{"v": tc.v}) {
				if fe.Rule != "json" || fe.Path != pathOf(fe.Pointer) {
					t.Errorf("fault %d: rule %q, path %q of pointer %q", i, fe.Rule, fe.Path, fe.Pointer)
				}
				got = append(got, fe.Pointer+": "+fe.Reason)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tc.want[i]) {
					t.Errorf("fault %d (-want +got):\n%s", i, cmp.Diff(tc.want[i], got[i]))
				}
			}
		})
	}
}

// TestDeepContextRoundTrips enqueues a context 64 levels deep, the most
// checkContext lets through, and opens it as a worker does: what the
// producer accepts, the worker reads back the same.
func TestDeepContextRoundTrips(t *testing.T) {
	var v any = "leaf"
	for i := 0; i < maxContextDepth-1; i++ {
		v = []any{v}
	}
	q, err := New(Config{Driver: nopDriver{}})
	if err != nil {
		t.Fatal(err)
	}
	job := &jobv1.Job{
		Kind: jobv1.KindTemplate, Template: "welcome", From: "shop@example.com", To: []string{"ada@example.com"},
		IdempotencyKey: "deep", Context: map[string]any{"v": v},
	}
	nj, _, perr := q.prepare(t.Context(), job)
	if perr != nil {
		t.Fatal(perr)
	}
	got, o := openJob(t.Context(), nj.Data, q.openParams(nj.ID))
	if o != nil {
		t.Fatalf("openJob: %+v", o)
	}
	// Compared as canonical JSON: cmp.Diff takes time exponential in the
	// depth of nested slices.
	want, _ := jcs.Marshal(map[string]any{"v": v})
	if g, err := jcs.Marshal(got.Context); err != nil || string(g) != string(want) {
		t.Errorf("context %s (%v), want %s", g, err, want)
	}
}
