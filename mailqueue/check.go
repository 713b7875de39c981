package mailqueue

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/internal/strictjson"
)

// maxContextDepth is how many levels of JSON a context may hold below
// itself: deeper values would not decode in every JSON parser. It is the
// depth to which jobv1.EncodeValue writes a context itself, and the
// worker's reading of the JSON takes as much (strictjson.MaxDepth: the
// job's object and its context are two levels more).
const maxContextDepth = 64

// checkValues refuses what a job's Go values hold that its JSON would not
// keep: the context's values (checkContext), strings that are not UTF-8
// (JSON would replace their bytes with U+FFFD), and times whose year is not
// 1 to 9999 (RFC 3339 cannot write them).
func checkValues(job *jobv1.Job) []FieldError {
	errs := checkContext(job.Context)
	v := reflect.ValueOf(job).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "context" || name == "" || name == "-" {
			continue
		}
		errs = append(errs, checkStrings(v.Field(i), "/"+name)...)
	}
	return errs
}

var timeType = reflect.TypeFor[time.Time]()

// checkStrings walks a value of the job (not its context) for strings that
// are not UTF-8 and times out of RFC 3339's range.
func checkStrings(v reflect.Value, ptr string) []FieldError {
	bad := func(reason string) []FieldError {
		return []FieldError{{Pointer: ptr, Path: pathOf(ptr), Rule: "json", Reason: reason}}
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return checkStrings(v.Elem(), ptr)
	case reflect.String:
		if !utf8.ValidString(v.String()) {
			return bad("is not valid UTF-8")
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return nil // bytes, written as base64
		}
		var errs []FieldError
		for i := 0; i < v.Len(); i++ {
			errs = append(errs, checkStrings(v.Index(i), ptr+"/"+strconv.Itoa(i))...)
		}
		return errs
	case reflect.Map:
		var errs []FieldError
		iter := v.MapRange()
		for iter.Next() {
			k := iter.Key().String()
			if !utf8.ValidString(k) {
				errs = append(errs, bad("has a name that is not valid UTF-8")...)
				continue
			}
			errs = append(errs, checkStrings(iter.Value(), ptr+"/"+pointerEscape(k))...)
		}
		return errs
	case reflect.Struct:
		if v.Type() == timeType {
			if y := v.Interface().(time.Time).UTC().Year(); y < 1 || y > 9999 {
				return bad("is a time whose year is not 1 to 9999, which RFC 3339 cannot write")
			}
			return nil
		}
		var errs []FieldError
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			if name == "" || name == "-" || !t.Field(i).IsExported() {
				continue
			}
			errs = append(errs, checkStrings(v.Field(i), ptr+"/"+name)...)
		}
		return errs
	}
	return nil
}

// maxSafeInteger is the largest integer a JSON number keeps exactly in every
// language (2^53 - 1, ECMAScript's Number.MAX_SAFE_INTEGER).
const maxSafeInteger = strictjson.MaxSafeInteger

var (
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	rawMessageType    = reflect.TypeFor[json.RawMessage]()
	numberType        = reflect.TypeFor[json.Number]()
)

// checkContext refuses a context that does not round-trip through JSON
// unchanged, as a worker in any language must render the context the
// producer gave (spec: "What a job holds"): a value with a JSON
// encoding of its own (time.Time, a type with MarshalJSON or MarshalText), a
// NaN or an infinity, an integer beyond 2^53-1 (an int, a json.Number or
// an integral float below 1e21: the worker's reading of the JSON refuses
// the same), a channel, a function, a
// complex number, a map with keys that are not strings, or a cycle. It
// returns one FieldError per bad value, with its path from "context".
func checkContext(ctx map[string]any) []FieldError {
	c := contextChecker{seen: map[uintptr]bool{}}
	c.walk(reflect.ValueOf(ctx), "/context")
	return c.errs
}

type contextChecker struct {
	seen  map[uintptr]bool
	errs  []FieldError
	depth int
}

func (c *contextChecker) fail(pointer, reason string) {
	c.errs = append(c.errs, FieldError{Pointer: pointer, Path: pathOf(pointer), Rule: "json", Reason: reason})
}

// walk checks the value v at the JSON pointer ptr and, through the walk*
// methods, everything it holds.
//
// The depth counts the values on the path from the context, the context
// itself at 1: a JSON level each. An interface or a pointer is no level of
// the JSON, so what it holds is walked at its own depth.
func (c *contextChecker) walk(v reflect.Value, ptr string) {
	if !v.IsValid() {
		return // nil
	}
	switch v.Kind() {
	case reflect.Interface:
		if !v.IsNil() {
			c.walk(v.Elem(), ptr)
		}
		return
	case reflect.Pointer:
		c.walkPointer(v, ptr)
		return
	}
	c.depth++
	defer func() { c.depth-- }()
	if c.depth > maxContextDepth+1 {
		c.fail(ptr, "nests deeper than "+strconv.Itoa(maxContextDepth)+" levels")
		return
	}
	if c.encodesItself(v, ptr) {
		return
	}
	switch v.Kind() {
	case reflect.Slice:
		c.walkSlice(v, ptr)
	case reflect.Array:
		c.walkElems(v, ptr)
	case reflect.Map:
		c.walkMap(v, ptr)
	case reflect.Struct:
		c.walkStruct(v, ptr)
	default:
		c.checkScalar(v, ptr)
	}
}

// encodesItself checks a value whose JSON encoding is not that of its
// kind: a json.RawMessage must be valid JSON and a json.Number a finite
// number; any other type with a MarshalJSON or MarshalText of its own is
// refused, as it would not come back as it was. It reports whether it
// checked v.
func (c *contextChecker) encodesItself(v reflect.Value, ptr string) bool {
	t := v.Type()
	switch {
	case t == rawMessageType: // before the marshalers: it is one
		if !json.Valid(v.Bytes()) {
			c.fail(ptr, "is a json.RawMessage that is not valid JSON")
		}
		return true
	case t == numberType:
		// The rule the worker's reading of the JSON applies to a number
		// (strictjson.NumberFault): a finite double, and an integer within
		// 2^53-1.
		if reason := strictjson.NumberFault(v.String()); reason != "" {
			c.fail(ptr, reason)
		}
		return true
	case t.Implements(jsonMarshalerType) || t.Implements(textMarshalerType) ||
		reflect.PointerTo(t).Implements(jsonMarshalerType) && v.CanAddr():
		c.fail(ptr, ownEncoding(t))
		return true
	}
	return false
}

// ownEncoding is the reason a value with a JSON encoding of its own is
// refused.
func ownEncoding(t reflect.Type) string {
	return "is a " + t.String() + ", which has a JSON encoding of its own and would not come back as it was (pass a string, such as an RFC 3339 time)"
}

// walkPointer walks what a pointer points to, unless the pointer has a JSON
// encoding of its own or points back to a value being walked.
func (c *contextChecker) walkPointer(v reflect.Value, ptr string) {
	if v.IsNil() {
		return
	}
	if t := v.Type(); t.Implements(jsonMarshalerType) || t.Implements(textMarshalerType) {
		c.fail(ptr, ownEncoding(t))
		return
	}
	if !c.enter(v.Pointer(), ptr) {
		return
	}
	c.walk(v.Elem(), ptr)
	delete(c.seen, v.Pointer())
}

// walkSlice walks the elements of a slice; a []byte is refused, as JSON
// writes it as base64.
func (c *contextChecker) walkSlice(v reflect.Value, ptr string) {
	if v.IsNil() {
		return
	}
	if v.Type().Elem().Kind() == reflect.Uint8 {
		c.fail(ptr, "is a []byte, which JSON turns into a base64 string (pass a string)")
		return
	}
	if !c.enter(v.Pointer(), ptr) {
		return
	}
	c.walkElems(v, ptr)
	delete(c.seen, v.Pointer())
}

// walkElems walks the elements of a slice or an array, each at its index.
func (c *contextChecker) walkElems(v reflect.Value, ptr string) {
	for i := 0; i < v.Len(); i++ {
		c.walk(v.Index(i), ptr+"/"+strconv.Itoa(i))
	}
}

// walkMap walks the values of a map whose keys are strings, each at its
// key; a key that is not UTF-8 is refused.
func (c *contextChecker) walkMap(v reflect.Value, ptr string) {
	if v.Type().Key().Kind() != reflect.String {
		c.fail(ptr, "is a map whose keys are not strings, which would not come back as it was")
		return
	}
	if v.IsNil() {
		return
	}
	if !c.enter(v.Pointer(), ptr) {
		return
	}
	iter := v.MapRange()
	for iter.Next() {
		k := iter.Key().String()
		if !utf8.ValidString(k) {
			c.fail(ptr, "has a key that is not valid UTF-8, which JSON would not keep")
			continue
		}
		c.walk(iter.Value(), ptr+"/"+pointerEscape(k))
	}
	delete(c.seen, v.Pointer())
}

// walkStruct walks the fields of a struct, each at its JSON name; a struct
// with an unexported field is refused, as JSON leaves the field out.
func (c *contextChecker) walkStruct(v reflect.Value, ptr string) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			c.fail(ptr, "is a "+t.String()+" with unexported fields, which JSON leaves out (export them, or pass a map)")
			return
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		c.walk(v.Field(i), ptr+"/"+pointerEscape(name))
	}
}

// checkScalar checks a value that holds no other: a string must be UTF-8,
// an integer within 2^53-1 and a float finite and, when it is an integer
// below 1e21, within 2^53-1 too; a channel, a function, a
// complex number or an unsafe pointer is refused, as JSON cannot hold it.
func (c *contextChecker) checkScalar(v reflect.Value, ptr string) {
	const beyond = "is an integer beyond 2^53-1 (Number.MAX_SAFE_INTEGER), which JSON numbers do not keep exactly everywhere (pass a string)"
	switch v.Kind() {
	case reflect.Bool:
	case reflect.String:
		if !utf8.ValidString(v.String()) {
			c.fail(ptr, "is not valid UTF-8, which JSON would not keep")
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if n := v.Int(); n > maxSafeInteger || n < -maxSafeInteger {
			c.fail(ptr, beyond)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if v.Uint() > maxSafeInteger {
			c.fail(ptr, beyond)
		}
	case reflect.Float32, reflect.Float64:
		// NaN, an infinity, or an integral float beyond 2^53-1 that
		// canonical JSON writes as its digits (strictjson.FloatFault).
		if reason := strictjson.FloatFault(v.Float()); reason != "" {
			c.fail(ptr, reason)
		}
	default: // Chan, Func, Complex, UnsafePointer
		c.fail(ptr, "is a "+v.Kind().String()+", which JSON cannot hold")
	}
}

// enter marks a reference as being walked; a reference met again below
// itself is a cycle.
func (c *contextChecker) enter(p uintptr, ptr string) bool {
	if c.seen[p] {
		c.fail(ptr, "is a cycle: it holds itself")
		return false
	}
	c.seen[p] = true
	return true
}
