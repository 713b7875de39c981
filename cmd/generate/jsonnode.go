package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// node is a JSON value that keeps the order of an object's members, which
// encoding/json's map[string]any loses: the schema's property order is the
// generated struct's field order.
type node struct {
	kind  byte // 'o' object, 'a' array, 's' string, 'n' number, 'b' bool, 'z' null
	keys  []string
	vals  map[string]*node
	items []*node
	str   string
	num   json.Number
	b     bool
	ptr   string // the JSON pointer of the value in its document
}

func parseJSON(data []byte) (*node, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	n, err := parseValue(dec, "")
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON value")
	}
	return n, nil
}

func parseValue(dec *json.Decoder, ptr string) (*node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	return parseToken(dec, tok, ptr)
}

func parseToken(dec *json.Decoder, tok json.Token, ptr string) (*node, error) {
	n := &node{ptr: ptr}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n.kind = 'o'
			n.vals = map[string]*node{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k := kt.(string)
				if _, dup := n.vals[k]; dup {
					return nil, fmt.Errorf("%s: duplicate key %q", displayPtr(ptr), k)
				}
				v, err := parseValue(dec, ptr+"/"+escapePtr(k))
				if err != nil {
					return nil, err
				}
				n.keys = append(n.keys, k)
				n.vals[k] = v
			}
		case '[':
			n.kind = 'a'
			for i := 0; dec.More(); i++ {
				v, err := parseValue(dec, ptr+"/"+strconv.Itoa(i))
				if err != nil {
					return nil, err
				}
				n.items = append(n.items, v)
			}
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return nil, err
		}
	case string:
		n.kind, n.str = 's', t
	case json.Number:
		n.kind, n.num = 'n', t
	case bool:
		n.kind, n.b = 'b', t
	case nil:
		n.kind = 'z'
	}
	return n, nil
}

// get returns the member k of an object, or nil.
func (n *node) get(k string) *node {
	if n == nil || n.kind != 'o' {
		return nil
	}
	return n.vals[k]
}

// getStr returns the member k of an object when it is a string.
func (n *node) getStr(k string) (string, bool) {
	v := n.get(k)
	if v == nil || v.kind != 's' {
		return "", false
	}
	return v.str, true
}

// strings returns the strings of an array, or an error naming what is not a string.
func (n *node) strings() ([]string, error) {
	if n.kind != 'a' {
		return nil, fmt.Errorf("%s: want an array of strings", displayPtr(n.ptr))
	}
	out := make([]string, 0, len(n.items))
	for _, it := range n.items {
		if it.kind != 's' {
			return nil, fmt.Errorf("%s: want a string", displayPtr(it.ptr))
		}
		out = append(out, it.str)
	}
	return out, nil
}

// at resolves a JSON pointer from n.
func (n *node) at(ptr string) (*node, error) {
	if ptr == "" {
		return n, nil
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, fmt.Errorf("bad JSON pointer %q", ptr)
	}
	cur := n
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch cur.kind {
		case 'o':
			cur = cur.vals[tok]
		case 'a':
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(cur.items) {
				return nil, fmt.Errorf("JSON pointer %q: no item %q", ptr, tok)
			}
			cur = cur.items[i]
		default:
			cur = nil
		}
		if cur == nil {
			return nil, fmt.Errorf("JSON pointer %q: nothing at %q", ptr, tok)
		}
	}
	return cur, nil
}

func escapePtr(tok string) string {
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
}

func displayPtr(ptr string) string {
	return "#" + ptr
}
