// Package strictjson reads JSON text the way the queue must read a stored
// job: only text that every JSON parser reads as the same value. It refuses
// text that is not UTF-8, a \u escape of a lone surrogate and an object
// with two members of one name, which encoding/json accepts (it replaces
// the first two with U+FFFD and keeps the last of the names), so that a job
// is never verified as one message and sent as another. Numbers are kept as
// json.Number, so that they are written back as they were read.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"unicode/utf8"

	"github.com/alexify/mailer/internal/jcs"
)

// Decode decodes data, one JSON value, into a generic JSON value
// (map[string]any, []any, string, json.Number, bool, nil), keeping numbers
// as json.Number so that they are written back as they were read. It fails
// on text that is not JSON or holds more than one value. It does not check
// the text as DecodeObject does.
func Decode(data []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	// Only white space may follow. d.More alone would let a stray ']' or
	// '}' through, as it answers false before the end of an array or an
	// object.
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the JSON value")
	}
	return v, nil
}

// DecodeObject decodes data, one JSON object, numbers as json.Number, as the
// queue reads a stored job or the opened part of a sealed one. It refuses
// text that is not UTF-8 or escapes a lone surrogate (encoding/json would turn either into
// U+FFFD, and the job would be read as another message than the one its
// producer hashed) and duplicate member names (I-JSON, RFC 7493, which
// RFC 8785 asks for: with two names alike, what is verified and what is
// sent could differ between readers). Bytes in canonical JSON, as this kit
// stores them, hold no name twice (a second one would be lost and the bytes
// would differ); only other bytes take the slower scan for them
// (docs/wire.md).
func DecodeObject(data []byte) (map[string]any, error) {
	if err := checkText(data); err != nil {
		return nil, err
	}
	v, err := Decode(data)
	if err != nil {
		return nil, err
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("not an object")
	}
	canon, err := jcs.Marshal(obj)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(canon, data) {
		if err := checkNoDuplicates(data); err != nil {
			return nil, err
		}
	}
	return obj, nil
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

// checkNoDuplicates walks the tokens of data and fails on an object with two
// members of one name.
func checkNoDuplicates(data []byte) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	type frame struct {
		names  map[string]bool
		object bool
		key    bool // the next token of an object is a name
	}
	var stack []*frame
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.key {
			if name, ok := tok.(string); ok {
				if top.names[name] {
					return errors.New("a name appears twice in one object")
				}
				top.names[name] = true
				top.key = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{names: map[string]bool{}, object: true, key: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		// A value ended: the parent object expects a name next.
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].key = true
		}
	}
}
