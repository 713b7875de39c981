package strictjson

// The fuzz target of Check. go test runs its seeds only; fuzz it with
//
//	go test ./internal/strictjson -run '^$' -fuzz '^FuzzCheck$' -fuzztime 20000x

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/alexify/mailer/internal/jcs"
)

// FuzzCheck: Check never panics; it takes only JSON, and every JSON text
// it takes decodes and has a canonical form that it takes too; text that is
// not JSON it refuses as syntax; the pointer of any other refusal is in the
// value encoding/json reads.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{
		`{"a":1,"b":[true,null,"x"]}`, `{"a":1,"a":2}`, `{"s":"\ud800"}`, "{\"s\":\"\xff\"}", `[9007199254740993]`,
		`{"n":1e400}`, `[[[[[[]]]]]]`, `{"a/b~":{"\u0061":1,"a":2}}`, `"\ud83d\ude00"`, ` 1 `, `{"a":1}]`, `-0.0e-0`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := Check(data)
		valid := json.Valid(data)
		if err == nil {
			if !valid {
				t.Fatalf("Check takes text encoding/json refuses")
			}
			v, derr := Decode(data)
			if derr != nil {
				t.Fatalf("Check takes what Decode refuses: %v", derr)
			}
			canon, cerr := jcs.Marshal(v)
			if cerr != nil {
				t.Fatalf("Check takes a value with no canonical form: %v", cerr)
			}
			if err := Check(canon); err != nil {
				t.Fatalf("Check refuses the canonical form of what it took: %v\n%s", err, canon)
			}
			return
		}
		var e *Error
		if !errors.As(err, &e) || e.Reason == "" {
			t.Fatalf("Check = %v, want an *Error with a reason", err)
		}
		if !valid && !e.Syntax && e.Offset > len(data) {
			t.Fatalf("offset %d beyond the text", e.Offset)
		}
		if e.Syntax {
			if valid {
				t.Fatalf("Check calls JSON not JSON: %v", err)
			}
			if e.Pointer != "" {
				t.Fatalf("a syntax error with a pointer: %+v", e)
			}
			return
		}
		if !valid {
			return // a fault before the text's syntax error
		}
		v, derr := Decode(data)
		if derr != nil {
			return // two values, or a depth encoding/json refuses
		}
		if !resolves(v, e.Pointer) {
			t.Fatalf("the pointer %q is not in the value: %v", e.Pointer, err)
		}
	})
}

// resolves reports whether the JSON pointer p names a value in v (with
// names as encoding/json decodes them: U+FFFD for bytes that are not
// UTF-8).
func resolves(v any, p string) bool {
	if p == "" {
		return true
	}
	for _, tok := range strings.Split(p[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := v.(type) {
		case map[string]any:
			x, ok := c[tok]
			if !ok {
				return false
			}
			v = x
		case []any:
			found := false
			for i := range c {
				if tok == itoa(i) {
					v, found = c[i], true
					break
				}
			}
			if !found {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }
