package main

import (
	"fmt"
	"regexp/syntax"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dave/jennifer/jen"

	"github.com/alexify/mailer/internal/schemafast"
)

// The fast path of the validator.
//
// jsonschema/v6 interprets the schema, which costs tens of microseconds a
// job, on every enqueue and every run. The generator therefore also compiles
// the schema into plain Go: one function per subschema that answers "valid
// for sure" (true) or "not known to be valid" (false). ValidateValue returns
// at once on true and asks jsonschema/v6 otherwise, so the library stays the
// authority on what is invalid and on every error it reports; the fast path
// only has to never say true of a value the library refuses. It is written
// to be stricter than the schema where that is simpler (an integer must be
// written without a fraction or an exponent; a date-time must match a plain
// RFC 3339 pattern), and FuzzValidate checks the one-way agreement.
//
// A keyword the fast path does not know makes its subschema answer false,
// so a schema change can make the fast path slower, never wrong.

// schemafastPkg is the package of the checks the fast path calls.
const schemafastPkg = "github.com/alexify/mailer/internal/schemafast"

// fastGen emits the fast-path functions of a schema.
type fastGen struct {
	m       *jobModel
	funcs   []jen.Code
	byPtr   map[string]string // the function of each subschema, by its pointer
	regexps []jen.Code        // the package-level compiled patterns
	reByPat map[string]string
	repeats map[string][2]int // the bounds of each fastClass
	n       int
}

// fastIgnored are the keywords that do not constrain a value: annotations,
// and the places subschemas are kept.
var fastIgnored = map[string]bool{
	"$schema": true, "$id": true, "$defs": true, "$comment": true, "title": true,
	"description": true, "examples": true, "default": true,
}

// fastFile returns the file of the fast path: fastValid and its helpers.
func (m *jobModel) fastFile() (*jen.File, error) {
	g := &fastGen{m: m, byPtr: map[string]string{}, reByPat: map[string]string{}, repeats: map[string][2]int{}}
	root, err := g.fn(m.root)
	if err != nil {
		return nil, err
	}
	f := m.newFile()
	f.Comment("fastValid reports whether v is valid for sure against the schema, by Go")
	f.Comment("code the generator compiled the schema into (cmd/generate/fastgen.go). False")
	f.Comment("means only \"not known to be valid\": ValidateValue then asks jsonschema/v6,")
	f.Comment("which stays the authority on what is invalid and why.")
	f.Func().Id("fastValid").Params(jen.Id("v").Any()).Bool().Block(jen.Return(jen.Id(root).Call(jen.Id("v"))))
	f.Line()
	for _, r := range g.regexps {
		f.Add(r)
	}
	for _, fn := range g.funcs {
		f.Add(fn)
		f.Line()
	}
	return f, nil
}

// fn returns the name of the function checking schema s, emitting it the
// first time.
func (g *fastGen) fn(s *node) (string, error) {
	if name, ok := g.byPtr[s.ptr]; ok {
		return name, nil
	}
	g.n++
	name := "fast" + strconv.Itoa(g.n)
	g.byPtr[s.ptr] = name
	body, err := g.body(s)
	if err != nil {
		return "", err
	}
	where := s.ptr
	if where == "" {
		where = "the root"
	}
	g.funcs = append(g.funcs, jen.Comment(name+" checks "+where+" of the schema.").Line().
		Func().Id(name).Params(jen.Id("v").Any()).Bool().Block(body...))
	return name, nil
}

// no is the statement a keyword the fast path cannot check compiles to.
func no() []jen.Code { return []jen.Code{jen.Return(jen.False())} }

// keywordGroup compiles some keywords of a schema into checks of v, marking
// in handled those it read. ok false means the fast path cannot check them:
// the schema's function then answers false.
type keywordGroup func(s *node, handled map[string]bool) (checks []jen.Code, ok bool, err error)

// body compiles the schema s into the statements of its function: the
// checks of every keyword group, in a fixed order (the order in which the
// functions of the subschemas are named), then true. A keyword no group
// knows makes the function answer false.
func (g *fastGen) body(s *node) ([]jen.Code, error) {
	if s.kind == 'b' {
		return []jen.Code{jen.Return(jen.Lit(s.b))}, nil
	}
	if s.kind != 'o' {
		return nil, fmt.Errorf("%s: a schema is an object or a boolean", displayPtr(s.ptr))
	}
	keys := append([]string(nil), s.keys...)
	sort.Strings(keys)
	handled := map[string]bool{}
	for _, k := range keys {
		if fastIgnored[k] || strings.HasPrefix(k, "x-") {
			handled[k] = true
		}
	}
	groups := []keywordGroup{
		g.refKeyword, typeKeyword, constKeyword, enumKeyword,
		func(s *node, handled map[string]bool) ([]jen.Code, bool, error) {
			return g.stringKeywords(s, handled), true, nil
		},
		func(s *node, handled map[string]bool) ([]jen.Code, bool, error) {
			checks, ok := g.numberKeywords(s, handled)
			return checks, ok, nil
		},
		g.arrayKeywords, g.objectKeywords, g.logicKeywords,
	}
	var out []jen.Code
	for _, group := range groups {
		checks, ok, err := group(s, handled)
		if err != nil {
			return nil, err
		}
		if !ok {
			return no(), nil
		}
		out = append(out, checks...)
	}
	for _, k := range keys {
		if !handled[k] {
			return no(), nil // a keyword the fast path does not know
		}
	}
	return append(out, jen.Return(jen.True())), nil
}

// falseUnless is the statement "if !cond { return false }".
func falseUnless(cond jen.Code) jen.Code {
	return jen.If(jen.Op("!").Add(cond)).Block(jen.Return(jen.False()))
}

// refKeyword compiles $ref, which applies beside the other keywords
// (2020-12). The fast path follows only a reference into the schema itself.
func (g *fastGen) refKeyword(s *node, handled map[string]bool) ([]jen.Code, bool, error) {
	ref, ok := s.getStr("$ref")
	if !ok {
		return nil, true, nil
	}
	handled["$ref"] = true
	t, err := g.m.root.at(strings.TrimPrefix(ref, "#"))
	if err != nil || !strings.HasPrefix(ref, "#") {
		return nil, false, nil
	}
	name, err := g.fn(t)
	if err != nil {
		return nil, false, err
	}
	return []jen.Code{falseUnless(jen.Id(name).Call(jen.Id("v")))}, true, nil
}

// typeKeyword compiles a type given as one name; a list of types is left to
// jsonschema/v6.
func typeKeyword(s *node, handled map[string]bool) ([]jen.Code, bool, error) {
	t, ok := s.getStr("type")
	if !ok {
		return nil, s.get("type") == nil, nil
	}
	handled["type"] = true
	check, ok := fastTypeCheck(t)
	if !ok {
		return nil, false, nil
	}
	return []jen.Code{falseUnless(check)}, true, nil
}

// constKeyword compiles a const string or integer.
func constKeyword(s *node, handled map[string]bool) ([]jen.Code, bool, error) {
	c := s.get("const")
	if c == nil {
		return nil, true, nil
	}
	handled["const"] = true
	var call jen.Code
	switch c.kind {
	case 's':
		call = jen.Qual(schemafastPkg, "ConstString").Call(jen.Id("v"), jen.Lit(c.str))
	case 'n':
		n, err := strconv.ParseInt(string(c.num), 10, 64)
		if err != nil {
			return nil, false, nil
		}
		call = jen.Qual(schemafastPkg, "ConstInt").Call(jen.Id("v"), jen.Lit(n))
	default:
		return nil, false, nil
	}
	return []jen.Code{falseUnless(call)}, true, nil
}

// enumKeyword compiles an enum of strings.
func enumKeyword(s *node, handled map[string]bool) ([]jen.Code, bool, error) {
	e := s.get("enum")
	if e == nil {
		return nil, true, nil
	}
	handled["enum"] = true
	vals, err := e.strings()
	if err != nil {
		return nil, false, nil
	}
	args := make([]jen.Code, 0, len(vals)+1)
	args = append(args, jen.Id("v"))
	for _, v := range vals {
		args = append(args, jen.Lit(v))
	}
	return []jen.Code{falseUnless(jen.Qual(schemafastPkg, "Enum").Call(args...))}, true, nil
}

func fastTypeCheck(t string) (jen.Code, bool) {
	switch t {
	case "object":
		return jen.Qual(schemafastPkg, "IsObject").Call(jen.Id("v")), true
	case "array":
		return jen.Qual(schemafastPkg, "IsArray").Call(jen.Id("v")), true
	case "string":
		return jen.Qual(schemafastPkg, "IsString").Call(jen.Id("v")), true
	case "integer":
		return jen.Qual(schemafastPkg, "IsInteger").Call(jen.Id("v")), true
	case "boolean":
		return jen.Qual(schemafastPkg, "IsBool").Call(jen.Id("v")), true
	}
	return nil, false
}

// intKw reads an integer keyword.
func intKw(s *node, k string, handled map[string]bool) (int64, bool, bool) {
	n := s.get(k)
	if n == nil {
		return 0, false, true
	}
	handled[k] = true
	if n.kind != 'n' {
		return 0, false, false
	}
	v, err := strconv.ParseInt(string(n.num), 10, 64)
	return v, true, err == nil
}

func (g *fastGen) regexp(pattern string) string {
	if name, ok := g.reByPat[pattern]; ok {
		return name
	}
	name := "fastRE" + strconv.Itoa(len(g.reByPat)+1)
	g.reByPat[pattern] = name
	g.regexps = append(g.regexps, jen.Var().Id(name).Op("=").Qual("regexp", "MustCompile").Call(jen.Lit(pattern)).Line())
	return name
}

// classRepeat compiles a pattern of the shape ^[class]{min,max}$ (or *, +)
// whose class is decided by its ASCII characters (every character beyond
// ASCII in it, or none) into a call of schemafast.Repeat, which decides it
// exactly as package regexp does. Other patterns stay regular expressions.
func (g *fastGen) classRepeat(pattern string) (jen.Code, bool) {
	if name, ok := g.reByPat[pattern]; ok {
		if !strings.HasPrefix(name, "fastClass") {
			return nil, false
		}
		return g.repeatCall(name), true
	}
	cls, least, most, ok := classOf(pattern)
	if !ok {
		return nil, false
	}
	lo, hi, nonASCII := cls.Lo, cls.Hi, cls.NonASCII
	name := "fastClass" + strconv.Itoa(len(g.reByPat)+1)
	g.reByPat[pattern] = name
	g.regexps = append(g.regexps, jen.Comment(name+" is the class of "+pattern+".").Line().
		Var().Id(name).Op("=").Op("&").Qual(schemafastPkg, "Class").Values(jen.Dict{
		jen.Id("Lo"): jen.Lit(lo), jen.Id("Hi"): jen.Lit(hi), jen.Id("NonASCII"): jen.Lit(nonASCII),
	}).Line())
	g.repeats[name] = [2]int{least, most}
	return g.repeatCall(name), true
}

func (g *fastGen) repeatCall(name string) jen.Code {
	b := g.repeats[name]
	return jen.Qual(schemafastPkg, "Repeat").Call(jen.Id("s"), jen.Id(name), jen.Lit(b[0]), jen.Lit(b[1]))
}

// stringKeywords compiles minLength, maxLength, pattern, format and
// contentEncoding: they apply to strings only.
func (g *fastGen) stringKeywords(s *node, handled map[string]bool) []jen.Code {
	var checks []jen.Code
	minL, hasMin, ok1 := intKw(s, "minLength", handled)
	maxL, hasMax, ok2 := intKw(s, "maxLength", handled)
	if !ok1 || !ok2 {
		return no()
	}
	if hasMin || hasMax {
		if !hasMax {
			maxL = -1
		}
		checks = append(checks, jen.If(jen.Op("!").Qual(schemafastPkg, "Length").Call(jen.Id("s"), jen.Lit(int(minL)), jen.Lit(int(maxL)))).Block(jen.Return(jen.False())))
	}
	if p, ok := s.getStr("pattern"); ok {
		handled["pattern"] = true
		if call, ok := g.classRepeat(p); ok {
			checks = append(checks, jen.If(jen.Op("!").Add(call)).Block(jen.Return(jen.False())))
		} else {
			checks = append(checks, jen.If(jen.Op("!").Id(g.regexp(p)).Dot("MatchString").Call(jen.Id("s"))).Block(jen.Return(jen.False())))
		}
	}
	if f, ok := s.getStr("format"); ok {
		handled["format"] = true
		switch f {
		case "date-time":
			checks = append(checks, jen.If(jen.Op("!").Qual(schemafastPkg, "DateTime").Call(jen.Id("s"))).Block(jen.Return(jen.False())))
		case "mailbox":
			checks = append(checks, jen.If(jen.Id("validateMailbox").Call(jen.Id("s")).Op("!=").Nil()).Block(jen.Return(jen.False())))
		default:
			return no()
		}
	}
	if e, ok := s.getStr("contentEncoding"); ok {
		handled["contentEncoding"] = true
		if e != "base64" {
			return no()
		}
		checks = append(checks, jen.If(jen.Op("!").Qual(schemafastPkg, "Base64").Call(jen.Id("s"))).Block(jen.Return(jen.False())))
	}
	if len(checks) == 0 {
		return nil
	}
	return []jen.Code{jen.If(jen.List(jen.Id("s"), jen.Id("ok")).Op(":=").Id("v").Assert(jen.String()), jen.Id("ok")).Block(checks...)}
}

// numberKeywords compiles minimum and maximum, on integers.
func (g *fastGen) numberKeywords(s *node, handled map[string]bool) ([]jen.Code, bool) {
	minV, hasMin, ok1 := intKw(s, "minimum", handled)
	maxV, hasMax, ok2 := intKw(s, "maximum", handled)
	if !ok1 || !ok2 {
		return nil, false
	}
	if !hasMin && !hasMax {
		return nil, true
	}
	var checks []jen.Code
	if hasMin {
		checks = append(checks, jen.Id("n").Op("<").Lit(minV))
	}
	if hasMax {
		checks = append(checks, jen.Id("n").Op(">").Lit(maxV))
	}
	cond := checks[0]
	if len(checks) == 2 {
		cond = jen.Add(checks[0]).Op("||").Add(checks[1])
	}
	return []jen.Code{
		jen.If(jen.Qual(schemafastPkg, "IsNumber").Call(jen.Id("v"))).Block(
			jen.List(jen.Id("n"), jen.Id("ok")).Op(":=").Qual(schemafastPkg, "Int").Call(jen.Id("v")),
			jen.If(jen.Op("!").Id("ok").Op("||").Add(cond)).Block(jen.Return(jen.False())),
		),
	}, true
}

// arrayKeywords compiles minItems, maxItems and items.
func (g *fastGen) arrayKeywords(s *node, handled map[string]bool) ([]jen.Code, bool, error) {
	minI, hasMin, ok1 := intKw(s, "minItems", handled)
	maxI, hasMax, ok2 := intKw(s, "maxItems", handled)
	if !ok1 || !ok2 {
		return nil, false, nil
	}
	var checks []jen.Code
	if hasMin {
		checks = append(checks, jen.If(jen.Len(jen.Id("a")).Op("<").Lit(int(minI))).Block(jen.Return(jen.False())))
	}
	if hasMax {
		checks = append(checks, jen.If(jen.Len(jen.Id("a")).Op(">").Lit(int(maxI))).Block(jen.Return(jen.False())))
	}
	if items := s.get("items"); items != nil {
		handled["items"] = true
		name, err := g.fn(items)
		if err != nil {
			return nil, false, err
		}
		checks = append(checks, jen.For(jen.List(jen.Id("_"), jen.Id("x")).Op(":=").Range().Id("a")).Block(
			jen.If(jen.Op("!").Id(name).Call(jen.Id("x"))).Block(jen.Return(jen.False())),
		))
	}
	if len(checks) == 0 {
		return nil, true, nil
	}
	return []jen.Code{jen.If(jen.List(jen.Id("a"), jen.Id("ok")).Op(":=").Id("v").Assert(jen.Index().Any()), jen.Id("ok")).Block(checks...)}, true, nil
}

// objectKeywords compiles properties, required, additionalProperties,
// propertyNames, minProperties and maxProperties.
func (g *fastGen) objectKeywords(s *node, handled map[string]bool) ([]jen.Code, bool, error) {
	minP, hasMin, ok1 := intKw(s, "minProperties", handled)
	maxP, hasMax, ok2 := intKw(s, "maxProperties", handled)
	if !ok1 || !ok2 {
		return nil, false, nil
	}
	var checks []jen.Code
	if hasMin {
		checks = append(checks, jen.If(jen.Len(jen.Id("o")).Op("<").Lit(int(minP))).Block(jen.Return(jen.False())))
	}
	if hasMax {
		checks = append(checks, jen.If(jen.Len(jen.Id("o")).Op(">").Lit(int(maxP))).Block(jen.Return(jen.False())))
	}
	if r := s.get("required"); r != nil {
		handled["required"] = true
		names, err := r.strings()
		if err != nil {
			return nil, false, nil
		}
		for _, n := range names {
			checks = append(checks, jen.If(jen.List(jen.Id("_"), jen.Id("ok")).Op(":=").Id("o").Index(jen.Lit(n)), jen.Op("!").Id("ok")).Block(jen.Return(jen.False())))
		}
	}
	loop, ok, err := g.propertyLoop(s, handled)
	if err != nil || !ok {
		return nil, false, err
	}
	checks = append(checks, loop...)
	if len(checks) == 0 {
		return nil, true, nil
	}
	return []jen.Code{jen.If(jen.List(jen.Id("o"), jen.Id("ok")).Op(":=").Id("v").Assert(jen.Map(jen.String()).Any()), jen.Id("ok")).Block(checks...)}, true, nil
}

// propertyLoop compiles properties, additionalProperties and propertyNames
// into one loop over the object o: the name of each property checked by
// propertyNames' function, its value by the function of its property or
// else of additionalProperties.
func (g *fastGen) propertyLoop(s *node, handled map[string]bool) ([]jen.Code, bool, error) {
	props := s.get("properties")
	addl := s.get("additionalProperties")
	names := s.get("propertyNames")
	if props == nil && addl == nil && names == nil {
		return nil, true, nil
	}
	handled["properties"], handled["additionalProperties"], handled["propertyNames"] = true, true, true
	var loop []jen.Code
	if names != nil {
		fn, err := g.fn(names)
		if err != nil {
			return nil, false, err
		}
		loop = append(loop, falseUnless(jen.Id(fn).Call(jen.Id("k"))))
	}
	cases, ok, err := g.propertyCases(props, addl)
	if err != nil || !ok {
		return nil, false, err
	}
	if len(cases) > 0 {
		loop = append(loop, jen.Switch(jen.Id("k")).Block(cases...))
	}
	if len(loop) == 0 {
		return nil, true, nil
	}
	xName := "x"
	if len(cases) == 0 {
		xName = "_"
	}
	return []jen.Code{jen.For(jen.List(jen.Id("k"), jen.Id(xName)).Op(":=").Range().Id("o")).Block(loop...)}, true, nil
}

// propertyCases compiles the cases of the switch on a property's name k:
// one per property of props, and a default for additionalProperties unless
// it allows any value.
func (g *fastGen) propertyCases(props, addl *node) ([]jen.Code, bool, error) {
	var cases []jen.Code
	if props != nil {
		if props.kind != 'o' {
			return nil, false, nil
		}
		for _, k := range props.keys {
			fn, err := g.fn(props.vals[k])
			if err != nil {
				return nil, false, err
			}
			cases = append(cases, jen.Case(jen.Lit(k)).Block(falseUnless(jen.Id(fn).Call(jen.Id("x")))))
		}
	}
	switch {
	case addl == nil || addl.kind == 'b' && addl.b:
		// Any other property.
	case addl.kind == 'b' && !addl.b:
		cases = append(cases, jen.Default().Block(jen.Return(jen.False())))
	default:
		fn, err := g.fn(addl)
		if err != nil {
			return nil, false, err
		}
		cases = append(cases, jen.Default().Block(falseUnless(jen.Id(fn).Call(jen.Id("x")))))
	}
	return cases, true, nil
}

// logicKeywords compiles allOf, if/then/else and not. The condition of an
// if and the schema of a not must be decided exactly, not conservatively:
// they are compiled by exact, which knows only required, type and the
// properties holding those and const.
func (g *fastGen) logicKeywords(s *node, handled map[string]bool) ([]jen.Code, bool, error) {
	var out []jen.Code
	if all := s.get("allOf"); all != nil {
		handled["allOf"] = true
		if all.kind != 'a' {
			return nil, false, nil
		}
		for _, sub := range all.items {
			fn, err := g.fn(sub)
			if err != nil {
				return nil, false, err
			}
			out = append(out, jen.If(jen.Op("!").Id(fn).Call(jen.Id("v"))).Block(jen.Return(jen.False())))
		}
	}
	if cond := s.get("if"); cond != nil {
		handled["if"], handled["then"], handled["else"] = true, true, true
		test, ok := g.exact(cond)
		if !ok {
			return nil, false, nil
		}
		var then, els jen.Code = jen.Null(), jen.Null()
		if t := s.get("then"); t != nil {
			fn, err := g.fn(t)
			if err != nil {
				return nil, false, err
			}
			then = jen.If(jen.Op("!").Id(fn).Call(jen.Id("v"))).Block(jen.Return(jen.False()))
		}
		if e := s.get("else"); e != nil {
			fn, err := g.fn(e)
			if err != nil {
				return nil, false, err
			}
			els = jen.If(jen.Op("!").Id(fn).Call(jen.Id("v"))).Block(jen.Return(jen.False()))
		}
		out = append(out, jen.If(test).Block(then).Else().Block(els))
	} else if s.get("then") != nil || s.get("else") != nil {
		handled["then"], handled["else"] = true, true // without if, they are ignored
	}
	if not := s.get("not"); not != nil {
		handled["not"] = true
		test, ok := g.exact(not)
		if !ok {
			return nil, false, nil
		}
		out = append(out, jen.If(test).Block(jen.Return(jen.False())))
	}
	return out, true, nil
}

// exact returns an expression true exactly when v is valid against s, for
// the few keywords it can decide exactly; false when s has others.
func (g *fastGen) exact(s *node) (jen.Code, bool) {
	if s.kind != 'o' {
		return nil, false
	}
	var conds []jen.Code
	for _, k := range s.keys {
		switch {
		case fastIgnored[k] || strings.HasPrefix(k, "x-"):
		case k == "type":
			t, _ := s.getStr("type")
			c, ok := fastTypeCheck(t)
			if !ok || t == "integer" { // IsInteger is conservative
				return nil, false
			}
			conds = append(conds, c)
		case k == "required":
			names, err := s.get("required").strings()
			if err != nil {
				return nil, false
			}
			lits := []jen.Code{jen.Id("v")}
			for _, n := range names {
				lits = append(lits, jen.Lit(n))
			}
			conds = append(conds, jen.Qual(schemafastPkg, "HasAll").Call(lits...))
		case k == "properties":
			props := s.get("properties")
			for _, p := range props.keys {
				sub := props.vals[p]
				if sub.kind != 'o' || len(sub.keys) != 1 || sub.get("const") == nil || sub.get("const").kind != 's' {
					return nil, false
				}
				conds = append(conds, jen.Qual(schemafastPkg, "AbsentOrEquals").Call(jen.Id("v"), jen.Lit(p), jen.Lit(sub.get("const").str)))
			}
		default:
			return nil, false
		}
	}
	if len(conds) == 0 {
		return jen.True(), true
	}
	expr := jen.Add(conds[0])
	for _, c := range conds[1:] {
		expr = expr.Op("&&").Add(c)
	}
	return expr, true
}

// classOf reads a pattern of the shape ^[class]{min,max}$ (or *, +) whose
// class is decided by its ASCII characters: it holds every character beyond
// ASCII, or none. most < 0 is no maximum.
func classOf(pattern string) (cls schemafast.Class, least, most int, ok bool) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil || re.Op != syntax.OpConcat || len(re.Sub) != 3 ||
		re.Sub[0].Op != syntax.OpBeginText || re.Sub[2].Op != syntax.OpEndText {
		return cls, 0, 0, false
	}
	rep := re.Sub[1]
	switch rep.Op {
	case syntax.OpStar:
		least, most = 0, -1
	case syntax.OpPlus:
		least, most = 1, -1
	case syntax.OpRepeat:
		least, most = rep.Min, rep.Max
	default:
		return cls, 0, 0, false
	}
	if len(rep.Sub) != 1 || rep.Sub[0].Op != syntax.OpCharClass {
		return cls, 0, 0, false
	}
	var lo, hi uint64
	nonASCII := false
	r := rep.Sub[0].Rune
	for i := 0; i+1 < len(r); i += 2 {
		a, b := r[i], r[i+1]
		if b >= utf8.RuneSelf {
			// The range reaches beyond ASCII: it must hold all of it.
			if a > utf8.RuneSelf || b != unicode.MaxRune {
				return cls, 0, 0, false
			}
			nonASCII = true
			b = utf8.RuneSelf - 1
		}
		for c := a; c <= b; c++ {
			if c < 64 {
				lo |= 1 << uint(c)
			} else {
				hi |= 1 << uint(c-64)
			}
		}
	}
	return schemafast.Class{Lo: lo, Hi: hi, NonASCII: nonASCII}, least, most, true
}
