package main

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/dave/jennifer/jen"
)

// jobModel is what the generator reads from a job schema: the Go types, the
// two shapes (clear and sealed) and the rules the validator adds.
type jobModel struct {
	pkg           string // the Go package, jobv1 for job.v1.json
	file          string // the schema's file name
	raw           []byte // the schema, byte for byte
	id            string // the schema's $id
	root          *node
	discriminator string   // the property that marks the sealed shape (root if.required)
	clear, sealed *typeDef // root else and then
	types         []*typeDef
	byNode        map[*node]*typeDef
	byName        map[string]*typeDef
	version       int
	versionDoc    string
	reserved      []reservedRule
	forbidden     []forbiddenRule
	after         []afterRule // x-after (rulesgen.go)
	inAll         []inAllRule // x-maxItemsInAll (rulesgen.go)
}

type typeDef struct {
	name      string
	doc       string
	enum      bool
	values    []string
	valueDocs map[string]string
	fields    []fieldDef
}

type fieldDef struct {
	name, json string
	typ        func() *jen.Statement
	conv       convFunc                  // the expression turning a decoded JSON value into typ
	enc        encFunc                   // the expression turning the Go value into a JSON value
	empty      func(v jen.Code) jen.Code // the test omitempty leaves the field out by
	ts         string                    // the TypeScript type
	tsDoc      string                    // the schema's description, for the TypeScript declarations
	required   bool
	doc        string
}

// encFunc returns the expression that turns the Go value v of a field's
// type into the JSON value encoding/json would decode its JSON into (with
// UseNumber), with the schemafast.Encoder e.
type encFunc func(e, v jen.Code) jen.Code

// convFunc returns the expression that turns the JSON value v (as
// encoding/json decodes it into an any, with UseNumber) into a field's Go
// type, with the schemafast.Decoder d.
type convFunc func(d, v jen.Code) jen.Code

// reservedRule is an x-reserved<Things> annotation on a property of the clear
// shape: names that property's object may not have.
type reservedRule struct {
	property string
	rule     string // reservedHeader for x-reservedHeaders
	names    []string
}

// forbiddenRule is a {"not": {"required": [...]}} schema: the validator
// reports each forbidden property that is present, at its own pointer.
type forbiddenRule struct {
	location string // the JSON pointer of the schema holding "not"
	names    []string
	message  string
}

var pkgNameRE = regexp.MustCompile(`^[a-z][a-z0-9]*$`)

func readJobSchema(file string, raw []byte) (*jobModel, error) {
	root, err := parseJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	m := &jobModel{
		file:   file,
		raw:    raw,
		root:   root,
		byNode: map[*node]*typeDef{},
		byName: map[string]*typeDef{},
		pkg:    strings.ReplaceAll(strings.TrimSuffix(path.Base(file), ".json"), ".", ""),
	}
	if !pkgNameRE.MatchString(m.pkg) {
		return nil, fmt.Errorf("%s: the file name makes no Go package name (%q)", file, m.pkg)
	}
	if err := m.read(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return m, nil
}

// read reads the model from the schema: its $id, the two shapes of a job
// and their types, the version, the x-reserved rules and the forbidden
// property pairs.
func (m *jobModel) read() error {
	r := m.root
	if r.kind != 'o' {
		return fmt.Errorf("the schema is not an object")
	}
	m.id, _ = r.getStr("$id")
	if m.id == "" {
		return fmt.Errorf("the schema has no $id")
	}
	clearSchema, err := m.readShapes(r)
	if err != nil {
		return err
	}
	props := clearSchema.get("properties")
	if err := m.readVersion(props); err != nil {
		return err
	}
	if err := m.readReserved(props); err != nil {
		return err
	}
	if err := m.readCrossRules(clearSchema); err != nil {
		return err
	}
	return m.findForbidden(r)
}

// readShapes reads the two shapes of a job, {"if": {"required": [disc]},
// "then": sealed, "else": clear}, and makes their types. It returns the
// clear shape's schema.
func (m *jobModel) readShapes(r *node) (*node, error) {
	// The two shapes: {"if": {"required": [disc]}, "then": sealed, "else": clear}.
	ifs, then, els := r.get("if"), r.get("then"), r.get("else")
	if ifs == nil || then == nil || els == nil {
		return nil, fmt.Errorf("the root needs if/then/else telling the sealed shape (then) from the clear one (else)")
	}
	req := ifs.get("required")
	if req == nil {
		return nil, fmt.Errorf("#/if: needs required with the one property of the sealed shape")
	}
	names, err := req.strings()
	if err != nil || len(names) != 1 {
		return nil, fmt.Errorf("#/if/required: want exactly one property name")
	}
	m.discriminator = names[0]

	var shapes [2]*typeDef
	for i, s := range []*node{els, then} {
		t, err := m.resolve(s)
		if err != nil {
			return nil, err
		}
		title, _ := t.getStr("title")
		typ, _ := t.getStr("type")
		if title == "" || typ != "object" {
			return nil, fmt.Errorf("%s: a shape must be an object with a title", displayPtr(t.ptr))
		}
		if shapes[i], err = m.named(title, t); err != nil {
			return nil, err
		}
	}
	m.clear, m.sealed = shapes[0], shapes[1]
	sealedSchema, _ := m.resolve(then)
	if sealedSchema.get("properties").get(m.discriminator) == nil {
		return nil, fmt.Errorf("the sealed shape has no property %q", m.discriminator)
	}

	clearSchema, _ := m.resolve(els)
	return clearSchema, nil
}

// readVersion reads the version: the const integer of the clear shape's
// property v.
func (m *jobModel) readVersion(props *node) error {
	v := props.get("v")
	if v == nil {
		return fmt.Errorf("the clear shape has no property v")
	}
	c := m.kw(v, "const")
	if c == nil || c.kind != 'n' {
		return fmt.Errorf("the clear shape's v is not a const integer")
	}
	n, err := c.num.Int64()
	if err != nil {
		return fmt.Errorf("the clear shape's v is not a const integer")
	}
	m.version = int(n)
	m.versionDoc, _ = m.kwStr(v, "description")
	return nil
}

// readReserved reads the x-reserved<Things> annotations on the clear
// shape's properties: the names a property's object may not have.
func (m *jobModel) readReserved(props *node) error {
	for _, pname := range props.keys {
		p := props.vals[pname]
		for _, k := range p.keys {
			thing, ok := strings.CutPrefix(k, "x-reserved")
			if !ok || thing == "" {
				continue
			}
			list, err := p.vals[k].strings()
			if err != nil {
				return err
			}
			rr := reservedRule{property: pname, rule: "reserved" + strings.TrimSuffix(thing, "s")}
			for _, n := range list {
				rr.names = append(rr.names, strings.ToLower(n))
			}
			m.reserved = append(m.reserved, rr)
		}
	}
	return nil
}

// findForbidden collects every {"not": {"required": [...]}} in the schema.
func (m *jobModel) findForbidden(n *node) error {
	switch n.kind {
	case 'a':
		for _, it := range n.items {
			if err := m.findForbidden(it); err != nil {
				return err
			}
		}
	case 'o':
		if not := n.get("not"); not != nil && len(not.keys) == 1 && not.get("required") != nil {
			names, err := not.get("required").strings()
			if err != nil {
				return err
			}
			msg := "must not be given here"
			if parent, ok := strings.CutSuffix(n.ptr, "/then"); ok {
				if p, err := m.root.at(parent); err == nil {
					if ifReq := p.get("if").get("required"); ifReq != nil {
						if with, err := ifReq.strings(); err == nil && len(with) > 0 {
							msg = "must not be given together with " + strings.Join(with, " and ")
						}
					}
				}
			}
			m.forbidden = append(m.forbidden, forbiddenRule{location: n.ptr, names: names, message: msg})
		}
		for _, k := range n.keys {
			switch {
			case k == "const", k == "enum", k == "default", k == "examples", strings.HasPrefix(k, "x-"):
				continue
			}
			if err := m.findForbidden(n.vals[k]); err != nil {
				return err
			}
		}
	}
	return nil
}

// resolve follows $ref (local references only) to the schema that says what
// s is.
func (m *jobModel) resolve(s *node) (*node, error) {
	for range 32 {
		ref, ok := s.getStr("$ref")
		if !ok {
			return s, nil
		}
		frag, ok := strings.CutPrefix(ref, "#")
		if !ok {
			return nil, fmt.Errorf("%s: only local $ref (#/...) is supported, not %q", displayPtr(s.ptr), ref)
		}
		t, err := m.root.at(frag)
		if err != nil {
			return nil, fmt.Errorf("%s: $ref: %w", displayPtr(s.ptr), err)
		}
		s = t
	}
	return nil, fmt.Errorf("%s: $ref too deep or a cycle", displayPtr(s.ptr))
}

// kw returns keyword k of s, looking through $ref when s has none itself.
func (m *jobModel) kw(s *node, k string) *node {
	for range 32 {
		if v := s.get(k); v != nil {
			return v
		}
		ref, ok := s.getStr("$ref")
		if !ok {
			return nil
		}
		t, err := m.root.at(strings.TrimPrefix(ref, "#"))
		if err != nil {
			return nil
		}
		s = t
	}
	return nil
}

// owner returns the schema (s or one it refers to) that holds keyword k.
func (m *jobModel) owner(s *node, k string) *node {
	for range 32 {
		if s.get(k) != nil {
			return s
		}
		ref, ok := s.getStr("$ref")
		if !ok {
			return nil
		}
		t, err := m.root.at(strings.TrimPrefix(ref, "#"))
		if err != nil {
			return nil
		}
		s = t
	}
	return nil
}

func (m *jobModel) kwStr(s *node, k string) (string, bool) {
	v := m.kw(s, k)
	if v == nil || v.kind != 's' {
		return "", false
	}
	return v.str, true
}

// named returns the Go type of a schema with a title, making it the first time.
func (m *jobModel) named(title string, s *node) (*typeDef, error) {
	if t, ok := m.byNode[s]; ok {
		return t, nil
	}
	name, err := goName(title)
	if err != nil {
		return nil, fmt.Errorf("%s: title: %w", displayPtr(s.ptr), err)
	}
	if name != title {
		return nil, fmt.Errorf("%s: the title %q is not a Go type name (say %q)", displayPtr(s.ptr), title, name)
	}
	if _, dup := m.byName[name]; dup {
		return nil, fmt.Errorf("%s: two schemas are titled %q", displayPtr(s.ptr), title)
	}
	desc, _ := s.getStr("description")
	t := &typeDef{name: name, doc: docFor(name, desc)}
	m.byNode[s], m.byName[name] = t, t
	m.types = append(m.types, t)
	if e := s.get("enum"); e != nil {
		err = m.enumDef(t, s, e)
	} else {
		err = m.structDef(t, s)
	}
	if err != nil {
		return nil, err
	}
	return t, nil
}

// enumDef fills in the enum t from the schema s and its enum e: its values,
// each of which must make a constant name of its own, and their docs
// (x-enum-doc).
func (m *jobModel) enumDef(t *typeDef, s, e *node) error {
	if typ, _ := s.getStr("type"); typ != "string" {
		return fmt.Errorf("%s: an enum with a title must be of type string", displayPtr(s.ptr))
	}
	values, err := e.strings()
	if err != nil {
		return err
	}
	t.enum, t.values, t.valueDocs = true, values, map[string]string{}
	seen := map[string]string{}
	for _, v := range values {
		cn, err := goName(t.name + "_" + v)
		if err != nil {
			return fmt.Errorf("%s: enum value %q: %w", displayPtr(s.ptr), v, err)
		}
		if prev, dup := seen[cn]; dup {
			return fmt.Errorf("%s: enum values %q and %q both make %s", displayPtr(s.ptr), prev, v, cn)
		}
		seen[cn] = v
		if d, ok := s.get("x-enum-doc").getStr(v); ok {
			t.valueDocs[v] = d
		}
	}
	return nil
}

// structDef fills in the struct t from the object schema s: a field per
// property, in the schema's order, each of which must make a field name of
// its own.
func (m *jobModel) structDef(t *typeDef, s *node) error {
	props := s.get("properties")
	if props == nil || props.kind != 'o' {
		return fmt.Errorf("%s: an object with a title needs properties", displayPtr(s.ptr))
	}
	required, err := requiredOf(s, props)
	if err != nil {
		return err
	}
	seen := map[string]string{}
	for _, pname := range props.keys {
		p := props.vals[pname]
		fname, err := goName(pname)
		if err != nil {
			return fmt.Errorf("%s: %w", displayPtr(p.ptr), err)
		}
		if prev, dup := seen[fname]; dup {
			return fmt.Errorf("%s: properties %q and %q both make the field %s", displayPtr(s.ptr), prev, pname, fname)
		}
		seen[fname] = pname
		fd, err := m.field(fname, pname, p)
		if err != nil {
			return err
		}
		fd.required = required[pname]
		t.fields = append(t.fields, fd)
	}
	return nil
}

// requiredOf returns the required properties of the object schema s, each
// of which must be one of props.
func requiredOf(s, props *node) (map[string]bool, error) {
	required := map[string]bool{}
	r := s.get("required")
	if r == nil {
		return required, nil
	}
	names, err := r.strings()
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		if props.get(n) == nil {
			return nil, fmt.Errorf("%s: required %q is not a property", displayPtr(s.ptr), n)
		}
		required[n] = true
	}
	return required, nil
}

// field maps the property pname, of schema p, to the Go field fname: its Go
// type, its decoding and encoding, and its TypeScript type.
func (m *jobModel) field(fname, pname string, p *node) (fieldDef, error) {
	typ, err := m.goType(p, true)
	if err != nil {
		return fieldDef{}, err
	}
	conv, err := m.goConv(p, true)
	if err != nil {
		return fieldDef{}, err
	}
	ts, err := m.tsType(p)
	if err != nil {
		return fieldDef{}, err
	}
	enc, empty, err := m.goEnc(p, true)
	if err != nil {
		return fieldDef{}, err
	}
	desc, _ := m.kwStr(p, "description")
	return fieldDef{name: fname, json: pname, typ: typ, conv: conv, enc: enc, empty: empty, ts: ts, tsDoc: desc, doc: docFor(fname, desc)}, nil
}
