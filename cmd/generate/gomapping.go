package main

// The mapping of a schema to Go: the Go type of a value (goType), the
// conversion of a decoded JSON value into it for DecodeValue (goConv), and
// the conversion back into a JSON value for EncodeValue (goEnc). The three
// take the same decisions in the same order (const, named type, type
// keyword), so each is split the same way, one function per decision.

import (
	"fmt"

	"github.com/dave/jennifer/jen"
)

// emptyFunc is the test, on a field's Go value, of the value omitempty
// leaves out.
type emptyFunc = func(v jen.Code) jen.Code

// namedDef returns the named type of s when s is an object or an enum with a
// title, and nil for any other schema.
func (m *jobModel) namedDef(s *node) (*typeDef, error) {
	typ, _ := m.kwStr(s, "type")
	title, ok := m.kwStr(s, "title")
	if !ok || (typ != "object" && m.kw(s, "enum") == nil) {
		return nil, nil
	}
	return m.named(title, m.owner(s, "title"))
}

// plainString reports whether s is a string with no format and no
// contentEncoding: a Go string as it is in JSON.
func (m *jobModel) plainString(s *node) bool {
	typ, _ := m.kwStr(s, "type")
	return typ == "string" && m.kw(s, "format") == nil && m.kw(s, "contentEncoding") == nil
}

// stringMap reports whether s is an object whose additionalProperties is a
// schema, and then whether its values are plain strings (plainString) or
// typed otherwise, which DecodeValue and EncodeValue do not know.
func (m *jobModel) stringMap(s *node) (plain, other bool) {
	ap := m.kw(s, "additionalProperties")
	if ap == nil || ap.kind != 'o' {
		return false, false
	}
	if m.plainString(ap) {
		return true, false
	}
	_, typed := m.kwStr(ap, "type")
	return false, typed || ap.get("$ref") != nil
}

// goType maps a schema to a Go type. A field's struct or time is a pointer,
// so that omitempty leaves it out; in a slice or a map it is a value.
func (m *jobModel) goType(s *node, field bool) (func() *jen.Statement, error) {
	if _, err := m.resolve(s); err != nil {
		return nil, err
	}
	if c := m.kw(s, "const"); c != nil {
		return constType(c), nil
	}
	t, err := m.namedDef(s)
	if err != nil {
		return nil, err
	}
	if t != nil {
		id := func() *jen.Statement { return jen.Id(t.name) }
		if t.enum {
			return id, nil
		}
		return pointerIf(field, id), nil
	}
	typ, _ := m.kwStr(s, "type")
	switch typ {
	case "string":
		return m.stringType(s, field), nil
	case "integer":
		return jen.Int, nil
	case "number":
		return jen.Float64, nil
	case "boolean":
		return jen.Bool, nil
	case "array":
		return m.arrayType(s)
	case "object":
		return m.objectType(s)
	}
	if e := m.kw(s, "enum"); e != nil {
		if _, err := e.strings(); err == nil {
			return jen.String, nil
		}
	}
	return jen.Any, nil
}

// pointerIf makes the type f gives a pointer when field: a field's struct or
// time is a pointer, so that omitempty leaves it out.
func pointerIf(field bool, f func() *jen.Statement) func() *jen.Statement {
	if !field {
		return f
	}
	return func() *jen.Statement { return jen.Op("*").Add(f()) }
}

// constType is the Go type of the const c: an int for an integer, a float64
// for another number, a string, a bool, or any.
func constType(c *node) func() *jen.Statement {
	switch c.kind {
	case 'n':
		if _, err := c.num.Int64(); err == nil {
			return jen.Int
		}
		return jen.Float64
	case 's':
		return jen.String
	case 'b':
		return jen.Bool
	}
	return jen.Any
}

// stringType is the Go type of a string: []byte for base64 content, a
// time.Time for a date-time (a pointer in a field), or a string.
func (m *jobModel) stringType(s *node, field bool) func() *jen.Statement {
	if ce, _ := m.kwStr(s, "contentEncoding"); ce == "base64" {
		return func() *jen.Statement { return jen.Index().Byte() }
	}
	if f, _ := m.kwStr(s, "format"); f == "date-time" {
		return pointerIf(field, func() *jen.Statement { return jen.Qual("time", "Time") })
	}
	return jen.String
}

// arrayType is the Go type of an array: a slice of its items' type, or
// []any when its items have no schema.
func (m *jobModel) arrayType(s *node) (func() *jen.Statement, error) {
	items := m.kw(s, "items")
	if items == nil || items.kind != 'o' {
		return func() *jen.Statement { return jen.Index().Any() }, nil
	}
	elem, err := m.goType(items, false)
	if err != nil {
		return nil, err
	}
	return func() *jen.Statement { return jen.Index().Add(elem()) }, nil
}

// objectType is the Go type of an object without a title: a map of its
// additionalProperties' type, or map[string]any. An object with properties
// must have a title, the name of its Go type.
func (m *jobModel) objectType(s *node) (func() *jen.Statement, error) {
	if m.kw(s, "properties") != nil {
		return nil, fmt.Errorf("%s: an object with properties needs a title (its Go type name)", displayPtr(s.ptr))
	}
	if ap := m.kw(s, "additionalProperties"); ap != nil && ap.kind == 'o' {
		if _, typed := m.kwStr(ap, "type"); typed || ap.get("$ref") != nil {
			elem, err := m.goType(ap, false)
			if err != nil {
				return nil, err
			}
			return func() *jen.Statement { return jen.Map(jen.String()).Add(elem()) }, nil
		}
	}
	return func() *jen.Statement { return jen.Map(jen.String()).Any() }, nil
}

// goConv is goType's twin: the conversion of a decoded JSON value into the
// Go type goType gives the schema s, for DecodeValue.
func (m *jobModel) goConv(s *node, field bool) (convFunc, error) {
	if _, err := m.resolve(s); err != nil {
		return nil, err
	}
	if c := m.kw(s, "const"); c != nil {
		return constConv(c), nil
	}
	t, err := m.namedDef(s)
	if err != nil {
		return nil, err
	}
	if t != nil {
		return namedConv(t, field), nil
	}
	typ, _ := m.kwStr(s, "type")
	switch typ {
	case "string":
		return m.stringConv(s, field), nil
	case "integer":
		return convCall("Int"), nil
	case "number":
		return convCall("Float"), nil
	case "boolean":
		return convCall("Bool"), nil
	case "array":
		return m.arrayConv(s)
	case "object":
		return m.objectConv(s)
	}
	return convSame, nil
}

// convCall converts a value by the decoder's method of that name.
func convCall(method string) convFunc {
	return func(d, v jen.Code) jen.Code { return jen.Add(d).Dot(method).Call(v) }
}

// convSame keeps a decoded value as it is.
func convSame(_, v jen.Code) jen.Code { return v }

// constConv converts the value of the const c by its kind.
func constConv(c *node) convFunc {
	switch c.kind {
	case 'n':
		if _, err := c.num.Int64(); err == nil {
			return convCall("Int")
		}
		return convCall("Float")
	case 's':
		return convCall("String")
	case 'b':
		return convCall("Bool")
	}
	return convSame
}

// namedConv converts a value into the named type t: an enum from its
// string, a struct by its generated decode function (a value, not a pointer,
// outside a field).
func namedConv(t *typeDef, field bool) convFunc {
	if t.enum {
		return func(d, v jen.Code) jen.Code { return jen.Id(t.name).Call(jen.Add(d).Dot("String").Call(v)) }
	}
	return func(d, v jen.Code) jen.Code {
		e := jen.Id("decode"+t.name).Call(d, jen.Add(d).Dot("Object").Call(v))
		if field {
			return e
		}
		// A value that is not an object decodes to nil (d holds the error):
		// the zero value then, not a nil dereference.
		return jen.Func().Params().Id(t.name).Block(
			jen.If(jen.Id("p").Op(":=").Add(e), jen.Id("p").Op("!=").Nil()).Block(jen.Return(jen.Op("*").Id("p"))),
			jen.Return(jen.Id(t.name).Values()),
		).Call()
	}
}

// stringConv converts a string into the Go type stringType gives it.
func (m *jobModel) stringConv(s *node, field bool) convFunc {
	if ce, _ := m.kwStr(s, "contentEncoding"); ce == "base64" {
		return convCall("Bytes")
	}
	if f, _ := m.kwStr(s, "format"); f == "date-time" {
		if field {
			return convCall("Time")
		}
		return func(d, v jen.Code) jen.Code { return jen.Op("*").Add(d).Dot("Time").Call(v) }
	}
	return convCall("String")
}

// arrayConv converts an array into the slice arrayType gives it: plain
// strings by the decoder's Strings, other items one by one.
func (m *jobModel) arrayConv(s *node) (convFunc, error) {
	items := m.kw(s, "items")
	if items == nil || items.kind != 'o' {
		return convCall("Array"), nil
	}
	if m.plainString(items) {
		return convCall("Strings"), nil
	}
	elemType, err := m.goType(items, false)
	if err != nil {
		return nil, err
	}
	elem, err := m.goConv(items, false)
	if err != nil {
		return nil, err
	}
	return func(d, v jen.Code) jen.Code {
		return jen.Func().Params().Index().Add(elemType()).Block(
			jen.Id("a").Op(":=").Add(d).Dot("Array").Call(v),
			jen.If(jen.Id("a").Op("==").Nil()).Block(jen.Return(jen.Nil())),
			jen.Id("out").Op(":=").Make(jen.Index().Add(elemType()), jen.Len(jen.Id("a"))),
			jen.For(jen.List(jen.Id("i"), jen.Id("x")).Op(":=").Range().Id("a")).Block(
				jen.Id("out").Index(jen.Id("i")).Op("=").Add(elem(d, jen.Id("x"))),
			),
			jen.Return(jen.Id("out")),
		).Call()
	}, nil
}

// objectConv converts an object without a title: a map of plain strings by
// the decoder's StringMap, any other object as it is. A map of other typed
// values is not known to DecodeValue.
func (m *jobModel) objectConv(s *node) (convFunc, error) {
	plain, other := m.stringMap(s)
	if plain {
		return convCall("StringMap"), nil
	}
	if other {
		return nil, fmt.Errorf("%s: DecodeValue knows maps of strings only", displayPtr(s.ptr))
	}
	return convCall("Object"), nil
}

// goEnc is goConv's inverse: the conversion of a field's Go value into a
// JSON value, and the test of the value omitempty leaves out, for
// EncodeValue.
func (m *jobModel) goEnc(s *node, field bool) (encFunc, emptyFunc, error) {
	if _, err := m.resolve(s); err != nil {
		return nil, nil, err
	}
	if c := m.kw(s, "const"); c != nil {
		return constEnc(c, s)
	}
	t, err := m.namedDef(s)
	if err != nil {
		return nil, nil, err
	}
	if t != nil {
		enc, empty := namedEnc(t, field)
		return enc, empty, nil
	}
	typ, _ := m.kwStr(s, "type")
	switch typ {
	case "string":
		enc, empty := m.stringEnc(s, field)
		return enc, empty, nil
	case "integer":
		return encCall("Int"), isZero(jen.Lit(0)), nil
	case "number":
		return encCall("Float"), isZero(jen.Lit(0.0)), nil
	case "boolean":
		return encCall("Bool"), isZero(jen.False()), nil
	case "array":
		return m.arrayEnc(s)
	case "object":
		return m.objectEnc(s)
	}
	// Any other schema is an any in Go (goType).
	return encCall("Any"), isNil, nil
}

// encCall encodes a value by the encoder's method of that name.
func encCall(method string) encFunc {
	return func(e, v jen.Code) jen.Code { return jen.Add(e).Dot(method).Call(v) }
}

// encSame keeps a value as it is: a string is its own JSON value.
func encSame(_, v jen.Code) jen.Code { return v }

// isZero tests a value against zero.
func isZero(zero jen.Code) emptyFunc {
	return func(v jen.Code) jen.Code { return jen.Add(v).Op("==").Add(zero) }
}

// isEmpty tests a slice or a map for no elements.
func isEmpty(v jen.Code) jen.Code { return jen.Len(v).Op("==").Lit(0) }

// isNil tests a pointer or an interface for nil.
var isNil = isZero(jen.Nil())

// constEnc encodes the value of the const c by its kind: EncodeValue knows
// numbers, strings and booleans.
func constEnc(c, s *node) (encFunc, emptyFunc, error) {
	switch c.kind {
	case 'n':
		if _, err := c.num.Int64(); err == nil {
			return encCall("Int"), isZero(jen.Lit(0)), nil
		}
		return encCall("Float"), isZero(jen.Lit(0.0)), nil
	case 's':
		return encSame, isZero(jen.Lit("")), nil
	case 'b':
		return encCall("Bool"), isZero(jen.False()), nil
	}
	return nil, nil, fmt.Errorf("%s: EncodeValue knows const numbers, strings and booleans only", displayPtr(s.ptr))
}

// namedEnc encodes a value of the named type t: an enum as its string, a
// struct by its generated encode function (a field holds a pointer to it,
// which omitempty leaves out when nil; an element holds a value, never left
// out).
func namedEnc(t *typeDef, field bool) (encFunc, emptyFunc) {
	if t.enum {
		return func(_, v jen.Code) jen.Code { return jen.String().Call(v) }, isZero(jen.Lit(""))
	}
	if field {
		return func(e, v jen.Code) jen.Code { return jen.Id("encode"+t.name).Call(e, v) }, isNil
	}
	return func(e, v jen.Code) jen.Code { return jen.Id("encode"+t.name).Call(e, jen.Op("&").Add(v)) }, nil
}

// stringEnc encodes the Go value stringType gives a string.
func (m *jobModel) stringEnc(s *node, field bool) (encFunc, emptyFunc) {
	if ce, _ := m.kwStr(s, "contentEncoding"); ce == "base64" {
		return encCall("Bytes"), isEmpty
	}
	if f, _ := m.kwStr(s, "format"); f == "date-time" {
		if field {
			return func(e, v jen.Code) jen.Code { return jen.Add(e).Dot("Time").Call(jen.Op("*").Add(v)) }, isNil
		}
		return encCall("Time"), nil
	}
	return encSame, isZero(jen.Lit(""))
}

// arrayEnc encodes a slice: plain strings by the encoder's Strings, other
// items one by one. EncodeValue needs the items' schema.
func (m *jobModel) arrayEnc(s *node) (encFunc, emptyFunc, error) {
	items := m.kw(s, "items")
	if items == nil || items.kind != 'o' {
		return nil, nil, fmt.Errorf("%s: EncodeValue needs typed items", displayPtr(s.ptr))
	}
	if m.plainString(items) {
		return encCall("Strings"), isEmpty, nil
	}
	elem, _, err := m.goEnc(items, false)
	if err != nil {
		return nil, nil, err
	}
	return func(e, v jen.Code) jen.Code {
		return jen.Func().Params().Index().Any().Block(
			jen.Id("out").Op(":=").Make(jen.Index().Any(), jen.Len(v)),
			jen.For(jen.Id("i").Op(":=").Range().Add(v)).Block(
				jen.Id("out").Index(jen.Id("i")).Op("=").Add(elem(e, jen.Add(v).Index(jen.Id("i")))),
			),
			jen.Return(jen.Id("out")),
		).Call()
	}, isEmpty, nil
}

// objectEnc encodes a map without a title: of plain strings by the
// encoder's StringMap, any other object by Object. A map of other typed
// values is not known to EncodeValue.
func (m *jobModel) objectEnc(s *node) (encFunc, emptyFunc, error) {
	plain, other := m.stringMap(s)
	if plain {
		return encCall("StringMap"), isEmpty, nil
	}
	if other {
		return nil, nil, fmt.Errorf("%s: EncodeValue knows maps of strings only", displayPtr(s.ptr))
	}
	return encCall("Object"), isEmpty, nil
}
