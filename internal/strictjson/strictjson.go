// Package strictjson reads JSON text the way the queue must read a job:
// only text that every JSON parser reads as the same value (I-JSON, RFC
// 7493). Check refuses text that is not UTF-8, a \u escape of a lone
// surrogate and an object with two members of one name, which encoding/json
// accepts (it replaces the first two with U+FFFD and keeps the last of the
// names), numbers beyond 2^53-1 or a double, and nesting past MaxDepth, so
// that a job is never verified as one message and sent as another. The
// worker's opening of a stored job, EnqueueJSON, jobv1.Validate and mailq
// validate share it, so their verdicts on a text never differ. Numbers are
// kept as json.Number, so that they are written back as they were read.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
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
// queue reads a job: a stored one, the opened part of a sealed one, or the
// JSON a producer hands EnqueueJSON. It refuses first what Check refuses
// (an *Error with the pointer of the value at fault): text that is not
// UTF-8 or escapes a lone surrogate (encoding/json would turn either into
// U+FFFD, and the job would be read as another message than the one its
// producer hashed), duplicate member names (I-JSON, RFC 7493, which RFC 8785
// asks for: with two names alike, what is verified and what is sent could
// differ between readers), numbers beyond MaxSafeInteger or a double, and
// values deeper than MaxDepth (docs/wire.md, "What a worker checks").
func DecodeObject(data []byte) (map[string]any, error) {
	if err := Check(data); err != nil {
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
	return obj, nil
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
