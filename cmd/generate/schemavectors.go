package main

// The vectors derived from the schema itself: the generator walks
// schema/job.v1.json and makes, for each constraint of each property (type,
// enum, const, minLength, maxLength, pattern, format, contentEncoding,
// minimum, maximum, minItems, maxItems, minProperties, maxProperties,
// required, additionalProperties, propertyNames), a valid job at the
// constraint's bound where it has one and an invalid job just past it,
// with the pointer and the keyword expected. A new rule of the schema
// brings its vectors with go generate.
//
// The values are made by rule from a full valid job; the expected errors
// are said by the rule, with package regexp for the patterns the value is
// also held to. Nothing here asks the validator.

import (
	"encoding/base64"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/alexify/mailer/internal/schemarules"
)

// slot is a place of the job a subschema applies to: its pointer's tokens,
// the job it is in (the full clear job or the sealed one) and its keywords,
// merged along $ref.
type slot struct {
	path   []string
	sealed bool
	kw     map[string]*node
}

func (s slot) pointer() string {
	var b strings.Builder
	for _, t := range s.path {
		b.WriteString("/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(t))
	}
	return b.String()
}

// fullJob is a valid clear job with every property, the base of the
// derived vectors.
func fullJob() map[string]any {
	return map[string]any{
		"v": 1, "kind": "content", "template": "reset-password", "locale": "pt-BR",
		"context": map[string]any{"name": "Ada"}, "subject": "Your invoice",
		"content": map[string]any{"html": "<p>Hi</p>", "text": "Hi"},
		"from":    "Shop <shop@example.com>", "to": []any{"ada@example.com"}, "cc": []any{"c@example.com"},
		"bcc": []any{"b@example.com"}, "replyTo": []any{"help@example.com"},
		"headers": map[string]any{"X-Campaign": "spring"},
		"attachments": []any{
			map[string]any{"filename": "invoice.pdf", "contentType": "application/pdf", "content": "aGVsbG8=", "contentId": "inv@example.com", "disposition": "attachment"},
			map[string]any{"ref": "invoices/42.pdf"},
		},
		"messageId": "<abc.123@example.com>", "idempotencyKey": "invoice:1",
		"scheduledAt": "2026-11-30T12:00:00Z", "expiresAt": "2026-12-01T12:00:00Z",
		"tenantId": "acme", "correlationId": "c-1", "maxAttempts": 5, "priority": "high",
		"hash": vHash, "kid": "k1", "mac": vMAC, "enqueuedAt": "2026-11-30T12:00:00Z",
		"trace": map[string]any{"traceparent": "00-0123456789abcdef0123456789abcdef-0123456789abcdef-01", "tracestate": "a=b"},
	}
}

// addSchemaVectors appends the vectors derived from job.v1.json in schema
// to f's valid and invalid sections.
func addSchemaVectors(schema fs.FS, f *vectorsFile) error {
	raw, err := fs.ReadFile(schema, "job.v1.json")
	if err != nil {
		return err
	}
	m, err := readJobSchema("job.v1.json", raw)
	if err != nil {
		return err
	}
	valid, invalid, err := schemaVectors(m)
	if err != nil {
		return err
	}
	f.Valid = append(f.Valid, valid...)
	f.Invalid = append(f.Invalid, invalid...)
	return nil
}

// schemaVectors returns the derived valid and invalid vectors.
func schemaVectors(m *jobModel) ([]jobVector, []invalidVector, error) {
	d := &deriver{m: m}
	clearNode, err := m.root.at("/$defs/clear")
	if err != nil {
		return nil, nil, err
	}
	sealedNode, err := m.root.at("/$defs/sealed")
	if err != nil {
		return nil, nil, err
	}
	if err := d.object(nil, false, clearNode); err != nil {
		return nil, nil, err
	}
	if err := d.object(nil, true, sealedNode); err != nil {
		return nil, nil, err
	}
	return d.valid, d.invalid, nil
}

type deriver struct {
	m       *jobModel
	valid   []jobVector
	invalid []invalidVector
}

// keywords merges the keywords of s and of the schemas its $ref leads to,
// the nearer first.
func (d *deriver) keywords(s *node) map[string]*node {
	kw := map[string]*node{}
	for range 32 {
		for _, k := range s.keys {
			if _, ok := kw[k]; !ok && k != "$ref" {
				kw[k] = s.vals[k]
			}
		}
		ref, ok := s.getStr("$ref")
		if !ok {
			break
		}
		t, err := d.m.root.at(strings.TrimPrefix(ref, "#"))
		if err != nil {
			break
		}
		s = t
	}
	return kw
}

// base is the job the vectors of the place path start from: the sealed
// job, or the least clear job with the property path begins with taken
// from the full job, so that each vector holds little besides its value.
func (d *deriver) base(sealed bool, path []string) map[string]any {
	if sealed {
		return sealedJob()
	}
	job := map[string]any{
		"v": 1, "kind": "content", "subject": "Hi", "content": map[string]any{"text": "Hi"},
		"from": "shop@example.com", "to": []any{"ada@example.com"},
	}
	if len(path) == 0 {
		return job
	}
	job[path[0]] = fullJob()[path[0]]
	// An attachment's property: the attachment of the full job that has it.
	if items, ok := job[path[0]].([]any); ok && len(path) >= 3 {
		for _, it := range items {
			if o, ok := it.(map[string]any); ok && o[path[2]] != nil {
				job[path[0]] = []any{o}
				break
			}
		}
	}
	return job
}

// object derives the vectors of the object schema s at path and of its
// properties, items and additional properties.
func (d *deriver) object(path []string, sealed bool, s *node) error {
	sl := slot{path: path, sealed: sealed, kw: d.keywords(s)}
	if len(path) > 0 {
		d.constraints(sl)
	}
	d.objectKeywords(sl)
	if props := sl.kw["properties"]; props != nil {
		for _, name := range props.keys {
			if err := d.value(append(slices.Clip(path), name), sealed, props.vals[name]); err != nil {
				return err
			}
		}
	}
	if add := sl.kw["additionalProperties"]; add != nil && add.kind == 'o' {
		if obj, ok := valueAt(d.base(sealed, path), path).(map[string]any); ok && len(obj) > 0 {
			return d.value(append(slices.Clip(path), sortedKeys(obj)[0]), sealed, add)
		}
	}
	return nil
}

// value derives the vectors of the schema s at path: an object or an
// array is walked into.
func (d *deriver) value(path []string, sealed bool, s *node) error {
	kw := d.keywords(s)
	if t, ok := strKw(kw, "type"); ok {
		switch t {
		case "object":
			if kw["properties"] != nil || kw["additionalProperties"] != nil || kw["propertyNames"] != nil || kw["minProperties"] != nil || kw["maxProperties"] != nil {
				return d.object(path, sealed, s)
			}
		case "array":
			sl := slot{path: path, sealed: sealed, kw: kw}
			d.constraints(sl)
			d.arrayKeywords(sl)
			if items := kw["items"]; items != nil {
				if arr, ok := valueAt(d.base(sealed, path), path).([]any); ok && len(arr) > 0 {
					return d.value(append(slices.Clip(path), "0"), sealed, items)
				}
			}
			return nil
		}
	}
	d.constraints(slot{path: path, sealed: sealed, kw: kw})
	return nil
}

func sortedKeys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// cloneJSON copies a JSON value deeply.
func cloneJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, y := range x {
			out[k] = cloneJSON(y)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, y := range x {
			out[i] = cloneJSON(y)
		}
		return out
	}
	return v
}

func valueAt(v any, path []string) any {
	for _, t := range path {
		switch x := v.(type) {
		case map[string]any:
			v = x[t]
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

// setAt returns a copy of job with the value at path set to v, or removed
// when remove is true; a map key may be renamed with rename.
func setAt(job map[string]any, path []string, v any, remove bool) map[string]any {
	out := cloneJSON(job).(map[string]any)
	var parent any = out
	for _, t := range path[:len(path)-1] {
		parent = valueAt(parent, []string{t})
	}
	last := path[len(path)-1]
	switch p := parent.(type) {
	case map[string]any:
		if remove {
			delete(p, last)
		} else {
			p[last] = v
		}
	case []any:
		i, _ := strconv.Atoi(last)
		p[i] = v
	}
	return out
}

func (d *deriver) worker(errs []fieldVector) outcomeVector {
	for _, e := range errs {
		if e.Rule == "additionalProperties" {
			return outcomeVector{Action: "release", Code: "queue.unsupported_version"}
		}
	}
	return outcomeVector{Action: "fail", Code: "queue.invalid_job"}
}

func (d *deriver) ok(sl slot, what string, job map[string]any) {
	d.valid = append(d.valid, jobVector{Name: "schema: " + displayPtr(sl.pointer()) + " " + what, Job: job})
}

func (d *deriver) bad(sl slot, what string, job map[string]any, errs ...fieldVector) {
	slices.SortFunc(errs, func(a, b fieldVector) int {
		if c := strings.Compare(a.Pointer, b.Pointer); c != 0 {
			return c
		}
		return strings.Compare(a.Rule, b.Rule)
	})
	d.invalid = append(d.invalid, invalidVector{Name: "schema: " + displayPtr(sl.pointer()) + " " + what, Job: job, Errors: errs, Code: "queue.invalid_job", Worker: d.worker(errs)})
}

func intOf(n *node) (int, bool) {
	if n == nil || n.kind != 'n' {
		return 0, false
	}
	i, err := strconv.Atoi(string(n.num))
	return i, err == nil
}

// inAll returns the x-maxItemsInAll rule naming the top-level property
// name, if any.
func (d *deriver) inAll(name string) (inAllRule, bool) {
	for _, r := range d.m.inAll {
		if slices.Contains(r.properties, name) {
			return r, true
		}
	}
	return inAllRule{}, false
}

// constraints derives the vectors of the keywords that apply to any type
// (type, enum, const) and to strings and numbers.
func (d *deriver) constraints(sl slot) {
	base := d.base(sl.sealed, sl.path)
	ptr := sl.pointer()
	at := func(v any) map[string]any { return setAt(base, sl.path, v, false) }
	if t := sl.kw["type"]; t != nil && t.kind == 's' {
		wrong := map[string]any{"string": 1, "integer": "1", "object": []any{}, "array": map[string]any{}}[t.str]
		// A failing type, const, enum or format is the only error of its
		// subschema (jsonschema/v6 returns at the first of them).
		d.bad(sl, "type "+t.str+": a value of another type", at(wrong), fieldVector{ptr, "type"})
	}
	if e := sl.kw["enum"]; e != nil {
		vals, _ := e.strings()
		if len(vals) > 0 {
			d.ok(sl, "enum: its last value", at(vals[len(vals)-1]))
		}
		d.bad(sl, "enum: a value not listed", at("zz-not-listed"), fieldVector{ptr, "enum"})
	}
	if c := sl.kw["const"]; c != nil && c.kind == 'n' {
		d.bad(sl, "const: another value", at(0), fieldVector{ptr, "const"})
	}
	d.numberConstraints(sl, at)
	d.stringConstraints(sl, at)
}

func (d *deriver) numberConstraints(sl slot, at func(any) map[string]any) {
	ptr := sl.pointer()
	if n, ok := intOf(sl.kw["minimum"]); ok {
		d.ok(sl, fmt.Sprintf("minimum %d: at the bound", n), at(n))
		d.bad(sl, fmt.Sprintf("minimum %d: one below", n), at(n-1), fieldVector{ptr, "minimum"})
	}
	if n, ok := intOf(sl.kw["maximum"]); ok {
		d.ok(sl, fmt.Sprintf("maximum %d: at the bound", n), at(n))
		d.bad(sl, fmt.Sprintf("maximum %d: one above", n), at(n+1), fieldVector{ptr, "maximum"})
	}
}

// fills are the texts a string is lengthened with, tried in turn until the
// result matches the property's pattern.
var fills = []string{"a", "0", "a ", "-a"}

// stringConstraints derives minLength, maxLength, pattern, format and
// contentEncoding.
func (d *deriver) stringConstraints(sl slot, at func(any) map[string]any) {
	ptr := sl.pointer()
	baseVal, isString := valueAt(d.base(sl.sealed, sl.path), sl.path).(string)
	if !isString {
		return
	}
	var re *regexp.Regexp
	if p, ok := strKw(sl.kw, "pattern"); ok {
		re = regexp.MustCompile(p)
	}
	format, _ := strKw(sl.kw, "format")
	matches := func(s string) bool { return re == nil || re.MatchString(s) }
	encoding, _ := strKw(sl.kw, "contentEncoding")
	// errsOf are the errors of s made for the keyword kw: a failing format
	// is the only error of its subschema (jsonschema/v6 returns at it), and
	// the other string keywords are reported together.
	errsOf := func(s, kw string) []fieldVector {
		if format == "mailbox" && (len([]rune(s)) < 3 || strings.ContainsAny(s, "\x00\x01\n")) {
			return []fieldVector{{ptr, "format"}}
		}
		if _, ok := schemarules.CompareInstants(s, s); format == "date-time" && !ok {
			return []fieldVector{{ptr, "format"}}
		}
		out := []fieldVector{{ptr, kw}}
		if kw != "pattern" && !matches(s) {
			out = append(out, fieldVector{ptr, "pattern"})
		}
		if _, err := base64.StdEncoding.DecodeString(s); encoding == "base64" && err != nil && kw != "contentEncoding" {
			out = append(out, fieldVector{ptr, "contentEncoding"})
		}
		return out
	}
	sized := func(n int) (string, bool) { return d.sized(baseVal, n, format, matches) }
	if n, ok := intOf(sl.kw["minLength"]); ok && n > 0 {
		if s, ok := sized(n); ok {
			d.ok(sl, fmt.Sprintf("minLength %d: at the bound", n), at(s))
		}
		short := ""
		if format != "mailbox" {
			short, _ = sized(n - 1)
		} else {
			short = strings.Repeat("a", n-1)
		}
		d.bad(sl, fmt.Sprintf("minLength %d: one short", n), at(short), errsOf(short, "minLength")...)
	}
	if n, ok := intOf(sl.kw["maxLength"]); ok {
		if s, ok := sized(n); ok {
			d.ok(sl, fmt.Sprintf("maxLength %d: at the bound", n), at(s))
		}
		if s, ok := sized(n + 1); ok {
			d.bad(sl, fmt.Sprintf("maxLength %d: one over", n), at(s), errsOf(s, "maxLength")...)
		}
	}
	if re != nil {
		for _, c := range []string{"\x01", "\n", ".", "#", "<", ":", "é"} {
			s := c + string([]rune(baseVal)[1:])
			if !re.MatchString(s) {
				d.bad(sl, "pattern: a character it does not take", at(s), errsOf(s, "pattern")...)
				break
			}
		}
	}
	d.formatConstraints(sl, at, baseVal, format, encoding, matches)
}

// formatConstraints derives format and contentEncoding.
func (d *deriver) formatConstraints(sl slot, at func(any) map[string]any, baseVal, format, encoding string, matches func(string) bool) {
	ptr := sl.pointer()
	switch format {
	case "date-time":
		d.ok(sl, "format date-time: a fraction and an offset", at(strings.TrimSuffix(baseVal, "Z")+".5-00:30"))
		d.bad(sl, "format date-time: hour 25", at(strings.Replace(baseVal, "T12:", "T25:", 1)), fieldVector{ptr, "format"})
	case "mailbox":
		d.bad(sl, "format mailbox: not an address", at("not a mailbox"), fieldVector{ptr, "format"})
	}
	if encoding == "base64" {
		s := strings.TrimRight(baseVal, "=")
		s = s[:len(s)-1]
		if len(s)%4 != 0 && matches(s) {
			d.bad(sl, "contentEncoding base64: cut short", at(s), fieldVector{ptr, "contentEncoding"})
		}
	}
}

// sized returns base made n characters long, matching the pattern: cut,
// or lengthened with a fill (before the last character of a date-time, as
// zeros of its fraction; at the start of a mailbox; after the first
// character of one in angle brackets; at the end of the others).
func (d *deriver) sized(base string, n int, format string, matches func(string) bool) (string, bool) {
	r := []rune(base)
	if format == "date-time" {
		head := strings.TrimSuffix(base, "Z")
		if len(head) == len(base) || n < len(base)+2 {
			return "", false
		}
		s := head + "." + strings.Repeat("0", n-len(base)-1) + "Z"
		return s, matches(s)
	}
	if n <= len(r) {
		if format == "mailbox" {
			s := "a@b" + strings.Repeat("c", max(0, n-3))
			if n >= 3 && matches(s) {
				return s, true
			}
			return "", false
		}
		s := string(r[:n])
		return s, n > 0 && matches(s) || n == 0
	}
	for _, fill := range fills {
		pad := []rune(strings.Repeat(fill, n))[:n-len(r)]
		var s string
		switch {
		case format == "mailbox":
			s = string(pad) + base
		case strings.HasPrefix(base, "<"):
			s = "<" + string(pad) + base[1:]
		default:
			s = base + string(pad)
		}
		if matches(s) && len([]rune(s)) == n {
			return s, true
		}
	}
	return "", false
}

// arrayKeywords derives minItems and maxItems, with the x-maxItemsInAll
// rule an array is named in.
func (d *deriver) arrayKeywords(sl slot) {
	base := d.base(sl.sealed, sl.path)
	ptr := sl.pointer()
	item := func(i int) any {
		if sl.pointer() == "/attachments" {
			return map[string]any{"ref": "r" + itoa(i)}
		}
		return "r" + itoa(i) + "@x.y"
	}
	list := func(n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = item(i)
		}
		return out
	}
	rule, counted := inAllRule{}, false
	if len(sl.path) == 1 {
		rule, counted = d.inAll(sl.path[0])
	}
	// alone is base with the array set to v and the other arrays of its
	// x-maxItemsInAll rule at their least (absent, or one item when
	// required).
	alone := func(v []any) (map[string]any, int) {
		job := setAt(base, sl.path, v, false)
		others := 0
		if counted {
			for _, p := range rule.properties {
				if p == sl.path[0] {
					continue
				}
				if slices.Contains(d.m.clearRequired(), p) {
					job[p] = []any{"o@x.example"}
					others++
				} else {
					delete(job, p)
				}
			}
		}
		return job, others
	}
	if n, ok := intOf(sl.kw["minItems"]); ok {
		job, _ := alone(list(n))
		d.ok(sl, fmt.Sprintf("minItems %d: at the bound", n), job)
		job, _ = alone(list(n - 1))
		d.bad(sl, fmt.Sprintf("minItems %d: one short", n), job, fieldVector{ptr, "minItems"})
	}
	if n, ok := intOf(sl.kw["maxItems"]); ok {
		_, others := alone(nil)
		good := n
		if counted && good+others > rule.max {
			good = rule.max - others
		}
		job, _ := alone(list(good))
		d.ok(sl, fmt.Sprintf("maxItems %d: %d items", n, good), job)
		job, others = alone(list(n + 1))
		errs := []fieldVector{{ptr, "maxItems"}}
		if counted && n+1+others > rule.max {
			errs = append(errs, fieldVector{"/" + rule.properties[0], inAllRuleName})
		}
		d.bad(sl, fmt.Sprintf("maxItems %d: one over", n), job, errs...)
	}
}

// objectKeywords derives required, additionalProperties, minProperties,
// maxProperties and propertyNames.
func (d *deriver) objectKeywords(sl slot) {
	base := d.base(sl.sealed, sl.path)
	ptr := sl.pointer()
	obj, _ := valueAt(base, sl.path).(map[string]any)
	if obj == nil {
		return
	}
	with := func(v map[string]any) map[string]any {
		if len(sl.path) == 0 {
			return v
		}
		return setAt(base, sl.path, v, false)
	}
	if r := sl.kw["required"]; r != nil {
		names, _ := r.strings()
		for _, n := range names {
			if len(sl.path) == 0 && n == d.m.discriminator {
				continue // without it, the job is of the other shape
			}
			o := cloneJSON(obj).(map[string]any)
			delete(o, n)
			d.bad(sl, "required: without "+n, with(o), fieldVector{ptr + "/" + n, "required"})
		}
	}
	if a := sl.kw["additionalProperties"]; a != nil && a.kind == 'b' && !a.b {
		o := cloneJSON(obj).(map[string]any)
		o["zz"] = true
		d.bad(sl, "additionalProperties: a property it does not know", with(o), fieldVector{ptr + "/zz", "additionalProperties"})
	}
	if n, ok := intOf(sl.kw["minProperties"]); ok && n > 0 {
		d.bad(sl, fmt.Sprintf("minProperties %d: one short", n), with(map[string]any{}), fieldVector{ptr, "minProperties"})
	}
	if n, ok := intOf(sl.kw["maxProperties"]); ok {
		o := map[string]any{}
		for i := range n {
			o["X-H"+itoa(i)] = "v"
		}
		d.ok(sl, fmt.Sprintf("maxProperties %d: at the bound", n), with(o))
		o = cloneJSON(o).(map[string]any)
		o["X-H"+itoa(n)] = "v"
		d.bad(sl, fmt.Sprintf("maxProperties %d: one over", n), with(o), fieldVector{ptr, "maxProperties"})
	}
	if pn := sl.kw["propertyNames"]; pn != nil {
		if p, ok := pn.getStr("pattern"); ok {
			re := regexp.MustCompile(p)
			for _, name := range []string{"X-" + strings.Repeat("N", 74), "X-" + strings.Repeat("N", 75), "X:Y", "X Y", "X-é"} {
				o := cloneJSON(obj).(map[string]any)
				o[name] = "v"
				if re.MatchString(name) {
					d.ok(sl, "propertyNames: a name of "+itoa(len(name))+" it takes", with(o))
				} else {
					d.bad(sl, fmt.Sprintf("propertyNames: the name %q", name), with(o), fieldVector{ptr + "/" + name, "propertyNames"})
				}
			}
		}
	}
}

// clearRequired returns the clear shape's required properties.
func (m *jobModel) clearRequired() []string {
	n, err := m.root.at("/$defs/clear/required")
	if err != nil {
		return nil
	}
	names, _ := n.strings()
	return names
}

// strKw returns the keyword k of kw when it is a string.
func strKw(kw map[string]*node, k string) (string, bool) {
	n := kw[k]
	if n == nil || n.kind != 's' {
		return "", false
	}
	return n.str, true
}
