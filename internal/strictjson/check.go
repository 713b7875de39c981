package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxSafeInteger is the largest integer every JSON reader keeps exactly:
// 2^53-1, ECMAScript's Number.MAX_SAFE_INTEGER (RFC 7493 section 2.2). An
// integer beyond it loses digits in a double (9007199254740993 reads as
// 9007199254740992) and is refused; see NumberFault.
const MaxSafeInteger = 1<<53 - 1

// MaxDepth is how deep a value of a checked text may sit, the top value at
// 1 and each value inside an array or an object one deeper than it: a
// job's object is at 1, its context at 2, and the context holds 64 levels
// below itself, the limit mailqueue applies to the context of a Go job. A
// scalar is a level: [[1]] is 3 deep, [[]] is 2.
const MaxDepth = 66

// Error is a fault Check found in a JSON text. It never quotes the text.
type Error struct {
	// Pointer is the RFC 6901 JSON pointer of the value at fault: the
	// member whose name appears twice, the string that is not UTF-8 or
	// escapes a lone surrogate, the number out of range, the value too
	// deep. For a fault in a member name it is the object's; for text that
	// is not JSON at all it is "", the whole text.
	Pointer string
	// Path is Pointer as a dotted path, written as jobv1's field errors
	// write it: context.user[0], headers["a b"]; "" for the whole text.
	Path string
	// Offset is the byte offset in the text where the fault was found.
	Offset int
	// Reason says what is wrong, in English, without the value.
	Reason string
	// Syntax is true when the text is not JSON (RFC 8259) at all, false
	// for JSON that a strict reader refuses.
	Syntax bool
}

// Error returns the place and the reason.
func (e *Error) Error() string {
	where := e.Path
	if where == "" {
		where = "the JSON text"
	}
	return "strictjson: " + where + ": " + e.Reason
}

// Check reports whether data is one JSON value (RFC 8259) that every
// reader reads as the same value, I-JSON (RFC 7493): UTF-8 (section 2.1),
// no \u escape of a lone surrogate (a \uD800-\uDFFF not in a high-low pair),
// no object with two members of one name (section 2.3), no number whose
// magnitude is above MaxSafeInteger or that a double cannot hold (section
// 2.2), no value deeper than MaxDepth; white space only around the value.
// It returns nil or an *Error for the first fault, in text order, but a
// syntax error first: text that is not JSON is told so (and nesting past
// encoding/json's 10000 levels is not JSON to it). It reads data once and
// allocates little: nothing is decoded.
func Check(data []byte) error {
	s := scanner{data: data}
	s.path, s.names = s.buf[:0], s.nameBuf[:0]
	s.ws()
	err := s.value()
	if err == nil {
		s.ws()
		if s.pos < len(s.data) {
			return s.syntax("has data after the JSON value")
		}
		return nil
	}
	// Text that is not JSON is refused as such, even when a fault of
	// JSON comes first in it: the scan stopped there, so encoding/json
	// (whose scanner keeps no recursion) tells whether the rest is JSON.
	var e *Error
	if errors.As(err, &e) && !e.Syntax && !json.Valid(data) {
		return &Error{Offset: e.Offset, Reason: "is not valid JSON", Syntax: true}
	}
	return err
}

// step is one level of the path to the value being read: a member name
// (index < 0) or an array index.
type step struct {
	name  []byte
	index int
	// first is where the object's names start in the scanner's names; set
	// holds them instead once there are more than smallObject.
	first int
	set   map[string]struct{}
}

type scanner struct {
	data []byte
	pos  int
	path []step
	// names are the member names read so far of the objects on the path,
	// innermost last, for the duplicate check: slices of data, or decoded
	// when escaped.
	names [][]byte
	// buf is the path's first levels, so that a job's path takes no
	// allocation.
	buf [16]step
	// nameBuf is the names' first entries, for the same reason.
	nameBuf [32][]byte
}

// smallObject is how many names an object's duplicate check compares one
// by one before it takes a map.
const smallObject = 16

func (s *scanner) ws() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

func (s *scanner) syntax(reason string) error {
	return &Error{Offset: s.pos, Reason: "is not valid JSON: " + reason, Syntax: true}
}

// fault is an error at the value being read.
func (s *scanner) fault(at int, reason string) error {
	return &Error{Pointer: s.pointer(), Path: s.dotted(), Offset: at, Reason: reason}
}

// value reads one value at the current path.
func (s *scanner) value() error {
	if len(s.path)+1 > MaxDepth {
		return s.fault(s.pos, "nests deeper than "+strconv.Itoa(MaxDepth)+" levels (the job's object at 1)")
	}
	if s.pos >= len(s.data) {
		return s.syntax("ends before a value")
	}
	switch c := s.data[s.pos]; {
	case c == '{':
		return s.object()
	case c == '[':
		return s.array()
	case c == '"':
		_, err := s.str(false)
		return err
	case c == '-' || c >= '0' && c <= '9':
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	}
	return s.syntax("a value cannot start here")
}

func (s *scanner) literal(word string) error {
	if !bytes.HasPrefix(s.data[s.pos:], []byte(word)) {
		return s.syntax("a value cannot start here")
	}
	s.pos += len(word)
	return nil
}

func (s *scanner) object() error {
	s.pos++ // {
	s.push(-1)
	top := len(s.path) - 1
	s.ws()
	if s.pos < len(s.data) && s.data[s.pos] == '}' {
		s.pos++
		s.pop()
		return nil
	}
	for {
		s.ws()
		if s.pos >= len(s.data) || s.data[s.pos] != '"' {
			return s.syntax("an object member must start with its name")
		}
		s.path[top].name = nil // a fault in the name is the object's
		name, err := s.str(true)
		if err != nil {
			return err
		}
		s.path[top].name = name
		if s.seen(top, name) {
			return s.fault(s.pos, "is a member name that appears twice in one object (I-JSON, RFC 7493 section 2.3)")
		}
		s.ws()
		if s.pos >= len(s.data) || s.data[s.pos] != ':' {
			return s.syntax("a member name must be followed by ':'")
		}
		s.pos++
		s.ws()
		if err := s.value(); err != nil {
			return err
		}
		s.ws()
		if s.pos >= len(s.data) {
			return s.syntax("ends inside an object")
		}
		switch s.data[s.pos] {
		case ',':
			s.pos++
		case '}':
			s.pos++
			s.pop()
			return nil
		default:
			return s.syntax("a member must be followed by ',' or '}'")
		}
	}
}

// push adds a level to the path: an object's (index -1) or an array's.
func (s *scanner) push(index int) {
	s.path = append(s.path, step{index: index, first: len(s.names)})
}

// pop drops the last level of the path and the names of its object.
func (s *scanner) pop() {
	top := len(s.path) - 1
	s.names = s.names[:s.path[top].first]
	s.path = s.path[:top]
}

// seen records name among the members of the object at level top and
// reports whether it was there already.
func (s *scanner) seen(top int, name []byte) bool {
	st := &s.path[top]
	if st.set != nil {
		if _, ok := st.set[string(name)]; ok {
			return true
		}
		st.set[string(name)] = struct{}{}
		return false
	}
	for _, n := range s.names[st.first:] {
		if bytes.Equal(n, name) {
			return true
		}
	}
	s.names = append(s.names, name)
	if len(s.names)-st.first > smallObject {
		st.set = make(map[string]struct{}, 2*smallObject)
		for _, n := range s.names[st.first:] {
			st.set[string(n)] = struct{}{}
		}
		s.names = s.names[:st.first]
	}
	return false
}

func (s *scanner) array() error {
	s.pos++ // [
	s.push(0)
	top := len(s.path) - 1
	s.ws()
	if s.pos < len(s.data) && s.data[s.pos] == ']' {
		s.pos++
		s.pop()
		return nil
	}
	for i := 0; ; i++ {
		s.path[top].index = i
		s.ws()
		if err := s.value(); err != nil {
			return err
		}
		s.ws()
		if s.pos >= len(s.data) {
			return s.syntax("ends inside an array")
		}
		switch s.data[s.pos] {
		case ',':
			s.pos++
		case ']':
			s.pos++
			s.pop()
			return nil
		default:
			return s.syntax("an element must be followed by ',' or ']'")
		}
	}
}

// str reads a string. For a member name (name true) it returns the name:
// a slice of data, or its decoded form when it holds an escape.
func (s *scanner) str(name bool) ([]byte, error) {
	what := "is a string"
	if name {
		what = "has a member name"
	}
	start := s.pos
	s.pos++ // "
	escaped := false
	for {
		// Runs of plain ASCII.
		for s.pos < len(s.data) {
			c := s.data[s.pos]
			if c == '"' || c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
				break
			}
			s.pos++
		}
		if s.pos >= len(s.data) {
			return nil, s.syntax("ends inside a string")
		}
		switch c := s.data[s.pos]; {
		case c == '"':
			s.pos++
			if !name {
				return nil, nil
			}
			raw := s.data[start+1 : s.pos-1]
			if !escaped {
				return raw, nil
			}
			return unescape(raw), nil
		case c < 0x20:
			return nil, s.syntax("a string holds a control character unescaped")
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(s.data[s.pos:])
			if r == utf8.RuneError && size <= 1 {
				return nil, s.fault(s.pos, what+" that is not valid UTF-8 (RFC 8259 section 8.1)")
			}
			s.pos += size
		default: // '\\'
			escaped = true
			if err := s.escape(what); err != nil {
				return nil, err
			}
		}
	}
}

// escape reads the escape at s.pos, in a string.
func (s *scanner) escape(what string) error {
	at := s.pos
	if s.pos+1 >= len(s.data) {
		return s.syntax("ends inside a string")
	}
	switch s.data[s.pos+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		s.pos += 2
		return nil
	case 'u':
	default:
		return s.syntax("a string holds an unknown escape")
	}
	u, ok := hex4(s.data, s.pos+2)
	if !ok {
		return s.syntax("a \\u escape without four hexadecimal digits")
	}
	s.pos += 6
	switch {
	case u >= 0xDC00 && u <= 0xDFFF:
		return s.fault(at, what+" with a \\u escape of a lone low surrogate (RFC 8259 section 8.2)")
	case u >= 0xD800 && u <= 0xDBFF:
		lo, ok := hex4(s.data, s.pos+2)
		if !ok || s.data[s.pos] != '\\' || s.data[s.pos+1] != 'u' || lo < 0xDC00 || lo > 0xDFFF {
			return s.fault(at, what+" with a \\u escape of a lone high surrogate (RFC 8259 section 8.2)")
		}
		s.pos += 6
	}
	return nil
}

// unescape decodes the text of a string that Check read already, so it is
// well formed.
func unescape(raw []byte) []byte {
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		switch raw[i] {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			u, _ := hex4(raw, i+1)
			i += 4
			if utf16.IsSurrogate(u) {
				lo, _ := hex4(raw, i+3)
				u = utf16.DecodeRune(u, lo)
				i += 6
			}
			out = utf8.AppendRune(out, u)
		default: // " \ /
			out = append(out, raw[i])
		}
	}
	return out
}

// number reads a number and refuses one out of the range every reader
// keeps exactly.
func (s *scanner) number() error {
	start := s.pos
	digits := func() int {
		n := 0
		for s.pos < len(s.data) && s.data[s.pos] >= '0' && s.data[s.pos] <= '9' {
			s.pos++
			n++
		}
		return n
	}
	if s.data[s.pos] == '-' {
		s.pos++
	}
	intStart := s.pos
	switch n := digits(); {
	case n == 0:
		return s.syntax("a number without digits")
	case n > 1 && s.data[intStart] == '0':
		return s.syntax("a number with a leading zero")
	}
	plain := s.pos-intStart <= 15 // an integer of few digits: in range without parsing
	if s.pos < len(s.data) && s.data[s.pos] == '.' {
		s.pos++
		plain = false
		if digits() == 0 {
			return s.syntax("a number with no digits after '.'")
		}
	}
	if s.pos < len(s.data) && (s.data[s.pos] == 'e' || s.data[s.pos] == 'E') {
		s.pos++
		plain = false
		if s.pos < len(s.data) && (s.data[s.pos] == '+' || s.data[s.pos] == '-') {
			s.pos++
		}
		if digits() == 0 {
			return s.syntax("a number with no digits in its exponent")
		}
	}
	if plain {
		return nil
	}
	if reason := NumberFault(string(s.data[start:s.pos])); reason != "" {
		return s.fault(start, reason)
	}
	return nil
}

// NumberFault returns why the JSON number text is refused, or "" when it is
// not: a number a double cannot hold (its magnitude beyond
// 1.7976931348623157e308), an integer written without a fraction or an
// exponent whose magnitude is above MaxSafeInteger (9007199254740993 reads
// as 9007199254740992 in a double, exactly in other readers), or a number
// FloatFault refuses. It is the rule Check applies to each number, for a
// json.Number given in Go too. Text that is not a number is refused.
func NumberFault(text string) string {
	f, err := strconv.ParseFloat(text, 64)
	switch {
	case err != nil && math.IsInf(f, 0): // ErrRange
		return "is a number beyond what a double can hold (RFC 7493 section 2.2)"
	case err != nil || math.IsNaN(f) || math.IsInf(f, 0): // "NaN", "Inf" parse
		return "is not a number"
	case (f > MaxSafeInteger || f < -MaxSafeInteger) && !strings.ContainsAny(text, ".eE"):
		return beyondSafe
	}
	return FloatFault(f)
}

// beyondSafe is the reason of a number beyond MaxSafeInteger.
const beyondSafe = "is an integer beyond 2^53-1 (Number.MAX_SAFE_INTEGER), which JSON numbers do not keep exactly everywhere (RFC 7493 section 2.2; pass a string)"

// FloatFault returns why the double f is refused in a job, or "": NaN and
// the infinities, which JSON cannot hold, and a magnitude above
// MaxSafeInteger and below 1e21. Every such double is an integer, and
// canonical JSON (RFC 8785) writes it as its digits, which a reader that
// keeps integers exactly reads as another number than a double reader
// does. From 1e21 up canonical JSON writes the exponent form (1e+21), which
// every reader reads as a double.
func FloatFault(f float64) string {
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return "is NaN or an infinity, which JSON cannot hold"
	case (f > MaxSafeInteger || f < -MaxSafeInteger) && f < 1e21 && f > -1e21:
		return beyondSafe
	}
	return ""
}

// pointerEscaper escapes a reference token of a JSON pointer (RFC 6901).
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// pointer writes the path to the value being read as a JSON pointer.
func (s *scanner) pointer() string {
	var b strings.Builder
	for _, st := range s.path {
		switch {
		case st.index >= 0:
			b.WriteByte('/')
			b.WriteString(strconv.Itoa(st.index))
		case st.name == nil:
			// A fault in a member name (the last step): the object's.
			return b.String()
		default:
			b.WriteByte('/')
			b.WriteString(pointerEscaper.Replace(string(st.name)))
		}
	}
	return b.String()
}

// plainName matches the member names a dotted path writes bare (as jobv1
// writes them).
var plainName = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$-]*$`)

// dotted writes the path to the value being read as jobv1 writes a path:
// context.user[0], headers["a b"].
func (s *scanner) dotted() string {
	var b strings.Builder
	for _, st := range s.path {
		switch {
		case st.index >= 0:
			b.WriteString("[" + strconv.Itoa(st.index) + "]")
		case st.name == nil:
			// A fault in a member name (the last step): the object's.
			return b.String()
		case plainName.Match(st.name):
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.Write(st.name)
		default:
			b.WriteString("[" + strconv.Quote(string(st.name)) + "]")
		}
	}
	return b.String()
}
