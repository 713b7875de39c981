package mailqueue

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// canonicalJSON writes v, a JSON value as json.Decoder with UseNumber gives
// it (map[string]any, []any, string, json.Number, float64, bool, nil), in the
// JSON Canonicalization Scheme of RFC 8785: object members sorted by the
// UTF-16 code units of their names, no whitespace, numbers as ECMAScript
// writes them, strings with the fewest escapes. docs/wire.md states the rule
// for producers in other languages.
func canonicalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := writeCanonical(&b, v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func writeCanonical(b *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		if x {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case string:
		writeCanonicalString(b, x)
	case json.Number:
		if plainInteger(string(x)) {
			// ECMAScript writes an integer below 10^15 as its digits.
			b.WriteString(string(x))
			return nil
		}
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return fmt.Errorf("canonical JSON: number %q: %w", x, err)
		}
		s, err := esNumber(f)
		if err != nil {
			return err
		}
		b.WriteString(s)
	case float64:
		s, err := esNumber(x)
		if err != nil {
			return err
		}
		b.WriteString(s)
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeCanonical(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, compareUTF16)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeCanonicalString(b, k)
			b.WriteByte(':')
			if err := writeCanonical(b, x[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		return fmt.Errorf("canonical JSON: unexpected %T", v)
	}
	return nil
}

// compareUTF16 orders strings by their UTF-16 code units (RFC 8785 section
// 3.2.3). That is the byte order of their UTF-8 except between a character
// above U+FFFF and one from U+E000 to U+FFFF, whose UTF-8 starts with a byte
// of 0xEE or more: only names holding such bytes take the slow way.
func compareUTF16(a, b string) int {
	if !hasHighBytes(a) && !hasHighBytes(b) {
		return strings.Compare(a, b)
	}
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}

func hasHighBytes(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0xEE {
			return true
		}
	}
	return false
}

// writeCanonicalString writes s as JSON with the fewest escapes (RFC 8785
// section 3.2.2.2): only '"', '\\' and the control characters are escaped,
// the short forms where JSON has them; every other character goes as its
// UTF-8. Runs of bytes that need no escape are copied whole.
func writeCanonicalString(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b.WriteString(s[start:i])
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			const hex = "0123456789abcdef"
			b.WriteString(`\u00`)
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xf])
		}
		start = i + 1
	}
	b.WriteString(s[start:])
	b.WriteByte('"')
}

// plainInteger reports whether s is an integer of at most 15 digits written
// without sign, leading zero, fraction or exponent: a number every JSON
// parser keeps exactly and ECMAScript writes back the same. "-0" is not one
// (it is written "0").
func plainInteger(s string) bool {
	if s == "" || len(s) > 16 {
		return false
	}
	d := s
	if d[0] == '-' {
		d = d[1:]
	}
	if d == "" || len(d) > 15 || d[0] == '0' {
		return s == "0"
	}
	for i := 0; i < len(d); i++ {
		if d[i] < '0' || d[i] > '9' {
			return false
		}
	}
	return true
}

// esNumber writes f as ECMAScript's Number.prototype.toString does
// (ECMA-262 section 7.1.12.1), which RFC 8785 section 3.2.2.3 requires.
func esNumber(f float64) (string, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "", fmt.Errorf("canonical JSON: %v is not a JSON number", f)
	}
	if f == 0 {
		return "0", nil
	}
	sign := ""
	if f < 0 {
		sign, f = "-", -f
	}
	// Shortest digits that round-trip, and the decimal exponent.
	e := strconv.FormatFloat(f, 'e', -1, 64)
	mant, expStr, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	exp, _ := strconv.Atoi(expStr)
	k, n := len(digits), exp+1
	var s string
	switch {
	case k <= n && n <= 21:
		s = digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		s = digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		s = "0." + strings.Repeat("0", -n) + digits
	default:
		s = digits[:1]
		if k > 1 {
			s += "." + digits[1:]
		}
		if n-1 >= 0 {
			s += "e+" + strconv.Itoa(n-1)
		} else {
			s += "e-" + strconv.Itoa(-(n - 1))
		}
	}
	return sign + s, nil
}

// notHashed are the fields of a clear job the hash leaves out: the envelope
// (what the queue adds around the message) and the delivery parameters, so
// that a producer that enqueues the same message again with a new expiresAt,
// schedule, priority or correlation id is told a duplicate, not refused
// (docs/wire.md, "The hash").
var notHashed = []string{"hash", "kid", "mac", "enc", "enqueuedAt", "trace", "scheduledAt", "expiresAt", "correlationId", "priority", "maxAttempts"}

// hashOf returns the hash of a clear job given as its decoded JSON object:
// the lowercase hexadecimal SHA-256 of its canonical JSON (RFC 8785) without
// the fields the hash leaves out (docs/wire.md).
func hashOf(job map[string]any) (string, error) {
	m := make(map[string]any, len(job))
	for k, v := range job {
		if !slices.Contains(notHashed, k) {
			m[k] = v
		}
	}
	c, err := canonicalJSON(m)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:]), nil
}

// decodeJSON decodes data into a generic JSON value, keeping numbers as
// json.Number so that they are written back as they were read.
func decodeJSON(data []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	return v, nil
}

// checkText refuses JSON text that is not UTF-8 or that escapes a lone
// surrogate (a \uD800-\uDFFF not in a high-low pair), which JSON parsers
// read in different ways (RFC 8259 section 8.2).
func checkText(data []byte) error {
	if !utf8.Valid(data) {
		return errors.New("the JSON text is not valid UTF-8")
	}
	for i := 0; i < len(data); i++ {
		if data[i] != '\\' {
			continue
		}
		if i+1 < len(data) && data[i+1] != 'u' {
			i++ // an escape of one character, such as \\ or \"
			continue
		}
		u, ok := hex4(data, i+2)
		if !ok {
			return errors.New("a \\u escape without four hexadecimal digits")
		}
		switch {
		case u >= 0xDC00 && u <= 0xDFFF:
			return errors.New("a \\u escape of a lone low surrogate")
		case u >= 0xD800 && u <= 0xDBFF:
			lo, ok := hex4(data, i+8)
			if !ok || data[i+6] != '\\' || data[i+7] != 'u' || lo < 0xDC00 || lo > 0xDFFF {
				return errors.New("a \\u escape of a lone high surrogate")
			}
			i += 11
		default:
			i += 5
		}
	}
	return nil
}

func hex4(data []byte, at int) (rune, bool) {
	if at+4 > len(data) {
		return 0, false
	}
	var u rune
	for _, c := range data[at : at+4] {
		switch {
		case c >= '0' && c <= '9':
			u = u<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			u = u<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			u = u<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return u, true
}
