// Package schemafast holds the checks the generated fast path of the job
// validator calls (cmd/generate/fastgen.go). Each answers for one JSON
// Schema keyword, on a value as encoding/json decodes it (map[string]any,
// []any, string, json.Number or float64, bool, nil).
//
// The checks that feed a "valid for sure" answer are conservative: where
// the schema's rule has corner cases (an integer written 1.0, a date-time
// written in lower case), they answer false and leave the value to
// jsonschema/v6. The checks the fast path needs exact (HasAll,
// AbsentOrEquals, the type tests other than IsInteger) are exact.
package schemafast

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// IsObject reports whether v is a JSON object.
func IsObject(v any) bool { _, ok := v.(map[string]any); return ok }

// IsArray reports whether v is a JSON array.
func IsArray(v any) bool { _, ok := v.([]any); return ok }

// IsString reports whether v is a JSON string.
func IsString(v any) bool { _, ok := v.(string); return ok }

// IsBool reports whether v is true or false.
func IsBool(v any) bool { _, ok := v.(bool); return ok }

// IsNumber reports whether v is a JSON number.
func IsNumber(v any) bool {
	switch v.(type) {
	case json.Number, float64:
		return true
	}
	return false
}

// IsInteger reports whether v is an integer written plainly (conservative:
// 1.0 and 1e0 are integers to JSON Schema but answer false here).
func IsInteger(v any) bool { _, ok := Int(v); return ok }

// Int returns v as an int64 when it is an integer written plainly.
func Int(v any) (int64, bool) {
	switch n := v.(type) {
	case json.Number:
		if strings.ContainsAny(string(n), ".eE") {
			return 0, false
		}
		i, err := strconv.ParseInt(string(n), 10, 64)
		return i, err == nil
	case float64:
		if n != math.Trunc(n) || math.Abs(n) > 1<<53 {
			return 0, false
		}
		return int64(n), true
	}
	return 0, false
}

// ConstString reports whether v is the string s.
func ConstString(v any, s string) bool { x, ok := v.(string); return ok && x == s }

// ConstInt reports whether v is the integer n written plainly.
func ConstInt(v any, n int64) bool { i, ok := Int(v); return ok && i == n }

// Enum reports whether v is one of the strings vals.
func Enum(v any, vals ...string) bool {
	s, ok := v.(string)
	if !ok {
		return false
	}
	for _, x := range vals {
		if s == x {
			return true
		}
	}
	return false
}

// Length reports whether s has from least to most characters (code points,
// as JSON Schema counts them); most < 0 is no maximum.
func Length(s string, least, most int) bool {
	n := utf8.RuneCountInString(s)
	return n >= least && (most < 0 || n <= most)
}

var dateTimeRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$`)

// DateTime reports whether s is an RFC 3339 date-time in its plain form
// (upper-case T and Z) that names a real instant. A fraction may have any
// count of digits, as RFC 3339 allows; the digits past the ninth do not
// change whether the instant is real, so only nine are given to time.Parse.
func DateTime(s string) bool {
	if !dateTimeRE.MatchString(s) {
		return false
	}
	if dot := strings.IndexByte(s, '.'); dot >= 0 {
		end := dot + 1
		for end < len(s) && s[end] >= '0' && s[end] <= '9' {
			end++
		}
		if end-dot-1 > 9 {
			s = s[:dot+10] + s[end:]
		}
	}
	_, err := time.Parse(time.RFC3339Nano, s)
	return err == nil
}

// Base64 reports whether s is standard base64 with padding.
func Base64(s string) bool {
	_, err := base64.StdEncoding.DecodeString(s)
	return err == nil
}

// HasAll reports whether v, when it is an object, has every name (JSON
// Schema's required; a value that is not an object passes it).
func HasAll(v any, names ...string) bool {
	o, ok := v.(map[string]any)
	if !ok {
		return true
	}
	for _, n := range names {
		if _, ok := o[n]; !ok {
			return false
		}
	}
	return true
}

// AbsentOrEquals decides {"properties": {name: {"const": s}}} exactly: true
// when v is not an object, has no name, or has name equal to the string s.
func AbsentOrEquals(v any, name, s string) bool {
	o, ok := v.(map[string]any)
	if !ok {
		return true
	}
	x, ok := o[name]
	if !ok {
		return true
	}
	str, ok := x.(string)
	return ok && str == s
}

// Class is a set of characters: the ASCII ones by bit (Lo for 0 to 63, Hi
// for 64 to 127), and every character beyond ASCII or none. The generator
// compiles a pattern such as ^[^\x00-\x1f\x7f]+$ into one, which a byte loop
// decides faster than the regular expression.
type Class struct {
	Lo, Hi   uint64
	NonASCII bool
}

// Repeat reports whether s is made of least to most characters of c (most
// < 0 is no maximum). It decides ^c{least,most}$ as package regexp does, invalid
// UTF-8 included (a byte that is not UTF-8 is U+FFFD, beyond ASCII).
func Repeat(s string, c *Class, least, most int) bool {
	n := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b < 64 && c.Lo&(1<<b) == 0 || b >= 64 && c.Hi&(1<<(b-64)) == 0 {
				return false
			}
			i++
		} else {
			if !c.NonASCII {
				return false
			}
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
		}
		n++
		if most >= 0 && n > most {
			return false
		}
	}
	return n >= least
}

// Decoder turns the values of a JSON object, as encoding/json decodes them
// with UseNumber, into the Go values of the generated types (DecodeValue),
// the way encoding/json would decode the object's JSON into them. Each
// method returns the zero value on a value of the wrong kind and records
// the first such error.
type Decoder struct {
	err error
}

// Err returns the first error met.
func (d *Decoder) Err() error { return d.err }

func (d *Decoder) fail(what string, v any) {
	if d.err == nil {
		d.err = fmt.Errorf("a %T where a %s belongs", v, what)
	}
}

// Unknown records a property the Go type does not have (as
// json.Decoder.DisallowUnknownFields refuses it).
func (d *Decoder) Unknown(name string) {
	if d.err == nil {
		d.err = fmt.Errorf("unknown property %q", name)
	}
}

// String returns v as a string.
func (d *Decoder) String(v any) string {
	s, ok := v.(string)
	if !ok {
		d.fail("string", v)
	}
	return s
}

// Bool returns v as a bool.
func (d *Decoder) Bool(v any) bool {
	b, ok := v.(bool)
	if !ok {
		d.fail("boolean", v)
	}
	return b
}

// Int returns v as an int: a JSON number of an integral value, however it
// is written (3, 3.0, 3e0: JSON Schema's "integer" is a value, not a
// notation, and canonical JSON writes all three as 3), within 2^53 in
// magnitude.
func (d *Decoder) Int(v any) int {
	switch n := v.(type) {
	case json.Number:
		i, err := strconv.ParseInt(string(n), 10, 64)
		if err != nil {
			f, ferr := strconv.ParseFloat(string(n), 64)
			if ferr != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
				d.fail("integer", v)
				return 0
			}
			i = int64(f)
		}
		if int64(int(i)) != i {
			d.fail("integer", v)
		}
		return int(i)
	case float64:
		if n != math.Trunc(n) || math.Abs(n) > math.MaxInt32 {
			d.fail("integer", v)
		}
		return int(n)
	}
	d.fail("integer", v)
	return 0
}

// Float returns v as a float64.
func (d *Decoder) Float(v any) float64 {
	switch n := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(n), 64)
		if err != nil {
			d.fail("number", v)
		}
		return f
	case float64:
		return n
	}
	d.fail("number", v)
	return 0
}

// Bytes returns v, standard base64 with padding, decoded.
func (d *Decoder) Bytes(v any) []byte {
	s, ok := v.(string)
	if !ok {
		d.fail("base64 string", v)
		return nil
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil && d.err == nil {
		d.err = fmt.Errorf("a string that is not base64: %w", err)
	}
	return b
}

// Time returns v, an RFC 3339 date-time, parsed as time.Time's UnmarshalJSON
// parses it.
func (d *Decoder) Time(v any) *time.Time {
	s, ok := v.(string)
	if !ok {
		d.fail("date-time string", v)
		return nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil && d.err == nil {
		d.err = fmt.Errorf("a string that is not an RFC 3339 date-time: %w", err)
	}
	return &t
}

// Object returns v as an object.
func (d *Decoder) Object(v any) map[string]any {
	o, ok := v.(map[string]any)
	if !ok {
		d.fail("object", v)
	}
	return o
}

// Array returns v as an array.
func (d *Decoder) Array(v any) []any {
	a, ok := v.([]any)
	if !ok {
		d.fail("array", v)
	}
	return a
}

// Strings returns v, an array of strings.
func (d *Decoder) Strings(v any) []string {
	a := d.Array(v)
	if a == nil {
		return nil
	}
	out := make([]string, len(a))
	for i, x := range a {
		out[i] = d.String(x)
	}
	return out
}

// StringMap returns v, an object of strings.
func (d *Decoder) StringMap(v any) map[string]string {
	o := d.Object(v)
	if o == nil {
		return nil
	}
	out := make(map[string]string, len(o))
	for k, x := range o {
		out[k] = d.String(x)
	}
	return out
}

// Encoder turns the Go values of the generated types into the values
// encoding/json would decode their JSON into with UseNumber (EncodeValue),
// without writing and reading the JSON. A value it cannot turn exactly (a
// context holding a struct, a typed map or slice other than of strings, a
// pointer, a time out of RFC 3339's years) makes OK false: the caller then
// goes through encoding/json.
type Encoder struct {
	bad bool
}

// OK reports whether every value was turned exactly.
func (e *Encoder) OK() bool { return !e.bad }

// Int returns n as a JSON number.
func (e *Encoder) Int(n int) any { return json.Number(strconv.Itoa(n)) }

// Float returns f as a JSON number.
func (e *Encoder) Float(f float64) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		e.bad = true
		return nil
	}
	return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
}

// Bool returns b.
func (e *Encoder) Bool(b bool) any { return b }

// Bytes returns b in standard base64, as encoding/json writes a []byte.
func (e *Encoder) Bytes(b []byte) any { return base64.StdEncoding.EncodeToString(b) }

// Time returns t as time.Time's MarshalJSON writes it (RFC 3339 with
// nanoseconds).
func (e *Encoder) Time(t time.Time) any {
	if y := t.Year(); y < 0 || y > 9999 {
		e.bad = true
	}
	return t.Format(time.RFC3339Nano)
}

// Strings returns a as a JSON array of strings.
func (e *Encoder) Strings(a []string) any {
	out := make([]any, len(a))
	for i, s := range a {
		out[i] = s
	}
	return out
}

// StringMap returns m as a JSON object of strings.
func (e *Encoder) StringMap(m map[string]string) any {
	out := make(map[string]any, len(m))
	for k, s := range m {
		out[k] = s
	}
	return out
}

// Object returns m, a map of plain values (what encoding/json decodes into
// an any, and Go numbers, []string and map[string]string), as JSON values.
func (e *Encoder) Object(m map[string]any) any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = e.plain(v, 0)
	}
	return out
}

func (e *Encoder) plain(v any, depth int) any {
	if depth > 64 {
		e.bad = true
		return nil
	}
	switch x := v.(type) {
	case nil, string, bool, json.Number:
		return x
	case float64:
		return e.Float(x)
	case float32:
		return e.Float(float64(x))
	case int:
		return json.Number(strconv.FormatInt(int64(x), 10))
	case int64:
		return json.Number(strconv.FormatInt(x, 10))
	case int32:
		return json.Number(strconv.FormatInt(int64(x), 10))
	case uint:
		return json.Number(strconv.FormatUint(uint64(x), 10))
	case uint64:
		return json.Number(strconv.FormatUint(x, 10))
	case uint32:
		return json.Number(strconv.FormatUint(uint64(x), 10))
	case []any:
		if x == nil {
			return nil // encoding/json writes a nil slice as null
		}
		out := make([]any, len(x))
		for i, y := range x {
			out[i] = e.plain(y, depth+1)
		}
		return out
	case []string:
		if x == nil {
			return nil
		}
		return e.Strings(x)
	case map[string]any:
		if x == nil {
			return nil
		}
		out := make(map[string]any, len(x))
		for k, y := range x {
			out[k] = e.plain(y, depth+1)
		}
		return out
	case map[string]string:
		if x == nil {
			return nil
		}
		return e.StringMap(x)
	}
	e.bad = true
	return nil
}

// Any returns v, a plain value (see Object), as a JSON value.
func (e *Encoder) Any(v any) any { return e.plain(v, 0) }
