package main

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// tsFile returns the TypeScript declarations of the job's types, for
// producers in Node (gen/typescript/job.v1.d.ts). They say the shapes only;
// the schema and the vectors say the rest (docs/wire.md).
func (m *jobModel) tsFile() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "// %s\n// %s\n\n", header, sourceLine(m.file))
	fmt.Fprintf(&b, "// The types of the mail job format of schema/%s, for producers in\n", m.file)
	fmt.Fprintf(&b, "// TypeScript. They give the shapes; validate with the schema (ajv) and\n")
	fmt.Fprintf(&b, "// compute hash, ids and mac as docs/wire.md says.\n")
	for _, t := range m.types {
		b.WriteString("\n")
		writeTSDoc(&b, "", t.doc)
		if t.enum {
			vals := make([]string, len(t.values))
			for i, v := range t.values {
				vals[i] = strconv.Quote(v)
			}
			fmt.Fprintf(&b, "export type %s = %s;\n", t.name, strings.Join(vals, " | "))
			continue
		}
		fmt.Fprintf(&b, "export interface %s {\n", t.name)
		for _, fd := range t.fields {
			writeTSDoc(&b, "  ", fd.tsDoc)
			opt := "?"
			if fd.required {
				opt = ""
			}
			fmt.Fprintf(&b, "  %s%s: %s;\n", fd.json, opt, fd.ts)
		}
		b.WriteString("}\n")
	}
	fmt.Fprintf(&b, "\n/** A job as a store holds it: the clear shape or the sealed one (with %s). */\n", m.discriminator)
	fmt.Fprintf(&b, "export type StoredJob = %s | %s;\n", m.clear.name, m.sealed.name)
	return b.Bytes()
}

func writeTSDoc(b *bytes.Buffer, indent, doc string) {
	doc = strings.TrimSpace(strings.ReplaceAll(doc, "*/", "* /"))
	if doc == "" {
		return
	}
	fmt.Fprintf(b, "%s/**\n", indent)
	for _, line := range strings.Split(doc, "\n") {
		fmt.Fprintf(b, "%s * %s\n", indent, strings.TrimRight(line, " "))
	}
	fmt.Fprintf(b, "%s */\n", indent)
}

// tsType is goType's twin for TypeScript.
func (m *jobModel) tsType(s *node) (string, error) {
	if _, err := m.resolve(s); err != nil {
		return "", err
	}
	if c := m.kw(s, "const"); c != nil {
		return constTS(c), nil
	}
	typ, _ := m.kwStr(s, "type")
	if title, ok := m.kwStr(s, "title"); ok && (typ == "object" || m.kw(s, "enum") != nil) {
		return title, nil
	}
	switch typ {
	case "string":
		return m.stringTS(s), nil
	case "integer", "number":
		return "number", nil
	case "boolean":
		return "boolean", nil
	case "array":
		return m.arrayTS(s)
	case "object":
		return m.objectTS(s)
	}
	if e := m.kw(s, "enum"); e != nil {
		if vals, err := e.strings(); err == nil {
			for i, v := range vals {
				vals[i] = strconv.Quote(v)
			}
			return strings.Join(vals, " | "), nil
		}
	}
	return "unknown", nil
}

// constTS is the TypeScript type of the const c: its literal.
func constTS(c *node) string {
	switch c.kind {
	case 'n':
		return string(c.num)
	case 's':
		return strconv.Quote(c.str)
	case 'b':
		return strconv.FormatBool(c.b)
	}
	return "unknown"
}

// stringTS is the TypeScript type of a string, with a comment for base64
// content and for a date-time, which are strings in JSON.
func (m *jobModel) stringTS(s *node) string {
	if ce, _ := m.kwStr(s, "contentEncoding"); ce == "base64" {
		return "string /* base64 */"
	}
	if f, _ := m.kwStr(s, "format"); f == "date-time" {
		return "string /* RFC 3339 date-time */"
	}
	return "string"
}

// arrayTS is the TypeScript type of an array: elem[], or Array<elem> when
// the element's type has a comment or a union in it.
func (m *jobModel) arrayTS(s *node) (string, error) {
	items := m.kw(s, "items")
	if items == nil || items.kind != 'o' {
		return "unknown[]", nil
	}
	elem, err := m.tsType(items)
	if err != nil {
		return "", err
	}
	if strings.Contains(elem, " ") {
		return "Array<" + elem + ">", nil
	}
	return elem + "[]", nil
}

// objectTS is the TypeScript type of an object without a title: a Record of
// its additionalProperties' type, or of unknown.
func (m *jobModel) objectTS(s *node) (string, error) {
	if ap := m.kw(s, "additionalProperties"); ap != nil && ap.kind == 'o' {
		if _, typed := m.kwStr(ap, "type"); typed || ap.get("$ref") != nil {
			elem, err := m.tsType(ap)
			if err != nil {
				return "", err
			}
			return "Record<string, " + elem + ">", nil
		}
	}
	return "Record<string, unknown>", nil
}
