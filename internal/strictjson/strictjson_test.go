package strictjson

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCheck is a table of every refusal of Check with the pointer and the
// path of the value at fault.
func TestCheck(t *testing.T) {
	deep := func(n int) string { // n arrays, one in the other, around 1
		return strings.Repeat("[", n) + "1" + strings.Repeat("]", n)
	}
	tests := []struct {
		name, in      string
		pointer, path string // of the fault; "-" for none
		reason        string // a part of the reason
		syntax        bool
	}{
		{"an object", `{"s":"Hi","n":[1,2.5,-3e2,true,false,null,{}]}`, "-", "", "", false},
		{"escapes", `{"s":"\ud83d\ude00 \u00e9 \\u00e9 \" \\ \/ \b\f\n\r\t"}`, "-", "", "", false},
		{"a scalar", ` "x" `, "-", "", "", false},
		{"2^53-1", `{"n":[9007199254740991,-9007199254740991,9007199254740991.4,1e15,0.1e-400]}`, "-", "", "", false},
		{"1e21 and up", `{"n":[1e21,1E30,-1.5e300,1.7976931348623157e308]}`, "-", "", "", false},

		{"a name twice", `{"to":["a@example.com"],"to":["b@example.com"]}`, "/to", "to", "appears twice", false},
		{"a name twice, escaped", `{"a":1,"\u0061":2}`, "/a", "a", "appears twice", false},
		{"a name twice, deeper", `{"x":[{"a":1},{"b":{"c":1,"d":2,"c":3}}]}`, "/x/1/b/c", "x[1].b.c", "appears twice", false},
		{"a name twice among many", `{"a0":0,"a1":1,"a2":2,"a3":3,"a4":4,"a5":5,"a6":6,"a7":7,"a8":8,"a9":9,"b0":0,"b1":1,"b2":2,"b3":3,"b4":4,"b5":5,"b6":6,"b7":7,"a3":3}`, "/a3", "a3", "appears twice", false},
		{"a name twice, odd characters", `{"h":{"a/b~c":1,"a/b~c":2}}`, "/h/a~1b~0c", `h["a/b~c"]`, "appears twice", false},
		{"one name in two objects", `{"a":{"a":1},"b":{"a":1}}`, "-", "", "", false},

		{"invalid UTF-8", "{\"s\":[\"ok\",\"Hi\xff\"]}", "/s/1", "s[1]", "not valid UTF-8", false},
		{"a UTF-8 surrogate", "{\"s\":\"\xed\xa0\x80\"}", "/s", "s", "not valid UTF-8", false},
		{"invalid UTF-8 in a name", "{\"c\":{\"\xff\":1}}", "/c", "c", "member name that is not valid UTF-8", false},
		{"a lone high surrogate", `{"s":"Hi\ud800"}`, "/s", "s", "lone high surrogate", false},
		{"a lone low surrogate", `{"s":"\udc00Hi"}`, "/s", "s", "lone low surrogate", false},
		{"a high surrogate then a letter", `{"s":"\ud800\u0041"}`, "/s", "s", "lone high surrogate", false},
		{"a lone surrogate in a name", `{"c":{"\ud800":1}}`, "/c", "c", "member name with a \\u escape of a lone high surrogate", false},

		{"2^53+1", `{"context":{"id":9007199254740993}}`, "/context/id", "context.id", "beyond 2^53-1", false},
		{"2^53", `{"n":9007199254740992}`, "/n", "n", "beyond 2^53-1", false},
		{"-2^53", `{"n":-9007199254740992}`, "/n", "n", "beyond 2^53-1", false},
		{"2^53 as a fraction", `{"n":9007199254740991.9}`, "/n", "n", "beyond 2^53-1", false},
		{"1e16", `{"n":[1e16]}`, "/n/0", "n[0]", "beyond 2^53-1", false},
		{"1e21 less a little", `{"n":[9.99999999999999e20]}`, "/n/0", "n[0]", "beyond 2^53-1", false},
		{"a big integer of 31 digits", `{"n":1000000000000000000000000000000}`, "/n", "n", "beyond 2^53-1", false},
		{"beyond a double", `{"n":1e400}`, "/n", "n", "beyond what a double can hold", false},
		{"beyond a double, negative", `{"n":-1.8e308}`, "/n", "n", "beyond what a double can hold", false},

		{"64 levels below the context", `{"context":{"v":` + deep(63) + `}}`, "-", "", "", false},
		{"65 levels below the context", `{"context":{"v":` + deep(64) + `}}`, "/context/v" + strings.Repeat("/0", 64), "context.v" + strings.Repeat("[0]", 64), "nests deeper than 66", false},
		{"an empty array at the limit", `{"context":{"v":` + strings.Repeat("[", 64) + strings.Repeat("]", 64) + `}}`, "-", "", "", false},
		{"an array past the limit", `{"context":{"v":` + strings.Repeat("[", 65) + strings.Repeat("]", 65) + `}}`, "/context/v" + strings.Repeat("/0", 64), "context.v" + strings.Repeat("[0]", 64), "nests deeper", false},
		{"deep nesting", strings.Repeat("[", 5000) + strings.Repeat("]", 5000), "/0/0" + strings.Repeat("/0", 64), "[0][0]" + strings.Repeat("[0]", 64), "nests deeper", false},
		{"nesting encoding/json refuses", strings.Repeat("[", 100000) + strings.Repeat("]", 100000), "", "", "not valid JSON", true},
		{"a name twice, then not JSON", `{"a":1,"a":2`, "", "", "not valid JSON", true},
		{"invalid UTF-8, then not JSON", "[\"\xff\",]", "", "", "not valid JSON", true},

		{"empty", ``, "", "", "ends before a value", true},
		{"cut", `{"a":`, "", "", "ends before a value", true},
		{"two values", `{} {}`, "", "", "data after", true},
		{"a stray bracket", `{"a":1}]`, "", "", "data after", true},
		{"a control character", "{\"s\":\"a\nb\"}", "", "", "control character", true},
		{"a short escape", `{"s":"\u12"}`, "", "", "four hexadecimal digits", true},
		{"an unknown escape", `{"s":"\x"}`, "", "", "unknown escape", true},
		{"a leading zero", `{"n":01}`, "", "", "leading zero", true},
		{"a bare minus", `{"n":-}`, "", "", "without digits", true},
		{"a dot without digits", `{"n":1.}`, "", "", "after '.'", true},
		{"an exponent without digits", `{"n":1e+}`, "", "", "exponent", true},
		{"a trailing comma", `{"a":1,}`, "", "", "must start with its name", true},
		{"a missing colon", `{"a" 1}`, "", "", "followed by ':'", true},
		{"an array without a comma", `[1 2]`, "", "", "',' or ']'", true},
		{"an unquoted name", `{a:1}`, "", "", "must start with its name", true},
		{"a bad literal", `{"a":tru}`, "", "", "cannot start", true},
		{"NaN", `{"a":NaN}`, "", "", "cannot start", true},
		{"a BOM", "\xef\xbb\xbf{}", "", "", "cannot start", true},
		{"an unclosed string", `{"a":"b`, "", "", "inside a string", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Check([]byte(tc.in))
			if tc.pointer == "-" {
				if err != nil {
					t.Fatalf("Check = %v, want nil", err)
				}
				if _, derr := Decode([]byte(tc.in)); derr != nil {
					t.Fatalf("Check takes what Decode refuses: %v", derr)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Check = %v, want an *Error", err)
			}
			got := []any{e.Pointer, e.Path, e.Syntax, strings.Contains(e.Reason, tc.reason)}
			if diff := cmp.Diff([]any{tc.pointer, tc.path, tc.syntax, true}, got); diff != "" {
				t.Errorf("Check: %q (-want +got):\n%s", e.Reason, diff)
			}
			if e.Offset < 0 || e.Offset > len(tc.in) {
				t.Errorf("offset %d out of the text", e.Offset)
			}
			if tc.syntax {
				// Text Check calls not JSON is not JSON to encoding/json.
				if json.Valid([]byte(tc.in)) {
					t.Errorf("encoding/json takes it")
				}
			}
		})
	}
}

// TestCheckAllocations: Check reads a job without decoding it.
func TestCheckAllocations(t *testing.T) {
	data := []byte(`{"v":1,"kind":"template","template":"welcome","from":"Shop <shop@example.com>","to":["ada@example.com","bob@example.com"],"context":{"user":{"name":"Ada","n":[1,2.5,3]},"items":[{"a":1},{"a":2},{"a":3}]}}`)
	if n := testing.AllocsPerRun(100, func() { _ = Check(data) }); n > 4 {
		t.Errorf("Check allocates %v times a job, want at most 4", n)
	}
}

func TestNumberFault(t *testing.T) {
	tests := []struct{ in, want string }{
		{"1", ""}, {"-9007199254740991", ""}, {"1.5e300", ""}, {"1.5e20", "beyond 2^53-1"}, {"9007199254740993", "beyond 2^53-1"},
		{"100000000000000000000000", "beyond 2^53-1"}, {"1e23", ""},
		{"1e400", "beyond what a double"}, {"x", "not a number"}, {"NaN", "not a number"}, {"Inf", "not a number"},
	}
	for _, tc := range tests {
		got := NumberFault(tc.in)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("NumberFault(%s) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestDecode(t *testing.T) {
	tests := []struct {
		in   string
		want any // nil for an error
	}{
		{`{"a":1.50,"b":[true,null]}`, map[string]any{"a": json.Number("1.50"), "b": []any{true, nil}}},
		{" [1] \n", []any{json.Number("1")}},
		{`"x"`, "x"},
		{`{"a":1} {}`, nil},
		{`{"a":1} x`, nil},
		// d.More answers false before a ']' or a '}': they are trailing
		// data all the same.
		{`{"a":1}]`, nil},
		{`{"a":1}}`, nil},
		{`[1]]`, nil},
		{``, nil},
		{`{"a":}`, nil},
	}
	for _, tc := range tests {
		got, err := Decode([]byte(tc.in))
		if tc.want == nil {
			if err == nil {
				t.Errorf("Decode(%q) = %v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil {
			t.Errorf("Decode(%q): %v", tc.in, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Decode(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}

func TestDecodeObject(t *testing.T) {
	tests := []struct {
		in string
		ok bool
	}{
		{`{"a":1,"b":{"a":2}}`, true},    // canonical: no scan for names
		{`{ "b":{"a":2}, "a":1 }`, true}, // not canonical: scanned, no name twice
		{`{"a":[{"a":1},{"a":2}]}`, true},
		{`{"a":1,"a":1}`, false},
		{`{"a":1, "a":2}`, false},
		{`{"x":{"a":1,"b":2,"a":3}}`, false},
		{`{"x":[{"a":1,"a":1}]}`, false},
		{`{"x":[1,{"b":{"c":1}},2],"x":0}`, false},
		{`{"a":1}]`, false},
		{`[{"a":1}]`, false}, // not an object
		{`"a"`, false},
		{`{"s":"\ud800"}`, false},
		{"{\"s\":\"\xff\"}", false},
		{`{"n":1e400}`, false},
		{`{"n":9007199254740993}`, false},
	}
	for _, tc := range tests {
		if _, err := DecodeObject([]byte(tc.in)); (err == nil) != tc.ok {
			t.Errorf("DecodeObject(%s) = %v, want ok %t", tc.in, err, tc.ok)
		}
	}
}

// BenchmarkDecodeObject reads a stored job of about 1 KiB, canonical, as
// the worker does.
func BenchmarkDecodeObject(b *testing.B) {
	data := []byte(`{"context":{"items":[{"n":1,"name":"a"},{"n":2,"name":"b"}],"user":{"createdAt":"2024-01-02T03:04:05Z","name":"Ada"}},"enqueuedAt":"2026-01-01T00:00:00.000Z","from":"Shop <shop@example.com>","hash":"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","headers":{"X-Campaign":"spring"},"idempotencyKey":"reset-password:42","kind":"template","locale":"pt-BR","maxAttempts":5,"messageId":"<0123456789abcdef@example.com>","priority":"normal","template":"reset-password","to":["ada@example.com","Bob <bob@example.org>"],"v":1}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := DecodeObject(data); err != nil {
			b.Fatal(err)
		}
	}
}
