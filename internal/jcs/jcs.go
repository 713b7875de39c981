// Package jcs writes JSON in the JSON Canonicalization Scheme of RFC 8785:
// object members sorted by the UTF-16 code units of their names, no
// whitespace, numbers as ECMAScript writes them, strings with the fewest
// escapes. The queue hashes, signs and stores jobs in this form, so that a
// producer in another language that follows docs/wire.md writes the same
// bytes.
//
// cmd/generate/vectors.go writes the same form with code of its own, on
// purpose: the vectors it computes check this package independently.
package jcs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
)

// Marshal returns v, a JSON value as json.Decoder with UseNumber gives it
// (map[string]any, []any, string, json.Number, float64, bool, nil), in the
// JSON Canonicalization Scheme of RFC 8785. docs/wire.md states the rule for
// producers in other languages.
//
// It fails for a value of another type, for a NaN or an infinity, and for a
// json.Number that is not a number float64 can hold (such as "1e400").
func Marshal(v any) ([]byte, error) {
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

// Hash returns the lowercase hexadecimal SHA-256 of the canonical JSON of
// v. It fails where Marshal fails.
func Hash(v any) (string, error) {
	c, err := Marshal(v)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:]), nil
}
