package main

// The cross-field rules of the schema: what JSON Schema cannot say of one
// value alone, written in the schema's own extensions so that the rule's
// data lives in the schema (docs/wire.md, "The checks every producer must
// add"):
//
//	"x-after": {"expiresAt": "scheduledAt"}
//	    expiresAt, when given with scheduledAt, is a later instant.
//	"x-maxItemsInAll": [{"properties": ["to", "cc", "bcc"], "maxItems": 1000}]
//	    the arrays hold at most maxItems items in all.
//
// Both sit on the clear shape. The generator emits gen/jobv1/rules.gen.go:
// the rules as data and checkRules, which the validator calls beside the
// reserved rules (checkReserved), so the fast path answers for them too.

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dave/jennifer/jen"
)

// schemarulesPkg holds the checks the generated rules call.
const schemarulesPkg = "github.com/alexify/mailer/internal/schemarules"

// afterRule is one member of x-after: property, a date-time, must be a
// later instant than than when both are given.
type afterRule struct {
	property, than string
}

// inAllRule is one item of x-maxItemsInAll.
type inAllRule struct {
	properties []string
	max        int
}

// The rule names a FieldError carries for the cross-field rules.
const (
	afterRuleName = "after"
	inAllRuleName = "maxItemsInAll"
)

// readCrossRules reads x-after and x-maxItemsInAll of the clear shape s.
// Every property they name must be one of the shape's; an x-after property
// must be a date-time and an x-maxItemsInAll one an array.
func (m *jobModel) readCrossRules(s *node) error {
	props := s.get("properties")
	isFormat := func(name, format string) bool {
		p := props.get(name)
		if p == nil {
			return false
		}
		f, _ := m.kwStr(p, "format")
		return f == format
	}
	if a := s.get("x-after"); a != nil {
		if a.kind != 'o' {
			return fmt.Errorf("%s: x-after is an object of property names", displayPtr(a.ptr))
		}
		for _, k := range a.keys {
			than, ok := a.getStr(k)
			if !ok || !isFormat(k, "date-time") || !isFormat(than, "date-time") {
				return fmt.Errorf("%s/%s: x-after names two date-time properties of the shape", displayPtr(a.ptr), k)
			}
			m.after = append(m.after, afterRule{property: k, than: than})
		}
	}
	if a := s.get("x-maxItemsInAll"); a != nil {
		if a.kind != 'a' {
			return fmt.Errorf("%s: x-maxItemsInAll is an array", displayPtr(a.ptr))
		}
		for _, it := range a.items {
			names, err := it.get("properties").strings()
			if err != nil || len(names) == 0 {
				return fmt.Errorf("%s: needs properties, a list of array properties", displayPtr(it.ptr))
			}
			for _, n := range names {
				p := props.get(n)
				if p == nil {
					return fmt.Errorf("%s: %q is not a property of the shape", displayPtr(it.ptr), n)
				}
				if t, _ := m.kwStr(p, "type"); t != "array" {
					return fmt.Errorf("%s: %q is not an array", displayPtr(it.ptr), n)
				}
			}
			maxNode := it.get("maxItems")
			if maxNode == nil || maxNode.kind != 'n' {
				return fmt.Errorf("%s: needs maxItems, an integer", displayPtr(it.ptr))
			}
			n, err := strconv.Atoi(string(maxNode.num))
			if err != nil || n < 0 {
				return fmt.Errorf("%s: maxItems is not a count", displayPtr(it.ptr))
			}
			m.inAll = append(m.inAll, inAllRule{properties: names, max: n})
		}
	}
	return nil
}

// rulesFile is rules.gen.go: the cross-field rules and checkRules.
func (m *jobModel) rulesFile() *jen.File {
	f := m.newFile()
	f.ImportName(schemarulesPkg, "schemarules")
	f.Comment(comment("afterRule is a member of the schema's x-after: property, when given with than, must be a later instant."))
	f.Type().Id("afterRule").Struct(jen.List(id("property"), id("than")).String())
	f.Line()
	f.Comment(comment("afterRules are the x-after of the clear shape, read from the schema by cmd/generate."))
	f.Var().Id("afterRules").Op("=").Index().Id("afterRule").ValuesFunc(func(g *jen.Group) {
		for _, r := range m.after {
			g.Values(jen.Dict{id("property"): lit(r.property), id("than"): lit(r.than)})
		}
	})
	f.Line()
	f.Comment(comment("inAllRule is an item of the schema's x-maxItemsInAll: the arrays of properties hold at most max items in all. It is reported at the first of them."))
	f.Type().Id("inAllRule").Struct(id("properties").Index().String(), id("max").Int(), id("message").String())
	f.Line()
	f.Comment(comment("inAllRules are the x-maxItemsInAll of the clear shape, read from the schema by cmd/generate."))
	f.Var().Id("inAllRules").Op("=").Index().Id("inAllRule").ValuesFunc(func(g *jen.Group) {
		for _, r := range m.inAll {
			names := make([]jen.Code, len(r.properties))
			for i, n := range r.properties {
				names[i] = lit(n)
			}
			g.Values(jen.Dict{
				id("properties"): jen.Index().String().Values(names...),
				id("max"):        lit(r.max),
				id("message"):    lit(fmt.Sprintf("%s must hold at most %d items in all", listWords(r.properties), r.max)),
			})
		}
	})
	f.Line()
	f.Comment(comment(fmt.Sprintf("checkRules applies the cross-field rules of the schema (x-after: %s; x-maxItemsInAll: %s) to job, a clear job. A value of the wrong type or format is left to the schema's own keywords.", afterRuleName, inAllRuleName)))
	f.Func().Id("checkRules").Params(id("job").Map(jen.String()).Any()).Index().Id("FieldError").Block(
		jen.Var().Id("errs").Index().Id("FieldError"),
		jen.For(jen.List(id("_"), id("r")).Op(":=").Range().Id("afterRules")).Block(
			jen.List(id("a"), id("ok1")).Op(":=").Id("job").Index(id("r").Dot("property")).Assert(jen.String()),
			jen.List(id("b"), id("ok2")).Op(":=").Id("job").Index(id("r").Dot("than")).Assert(jen.String()),
			jen.If(jen.Op("!").Id("ok1").Op("||").Op("!").Id("ok2")).Block(jen.Continue()),
			jen.If(jen.List(id("c"), id("ok")).Op(":=").Qual(schemarulesPkg, "CompareInstants").Call(id("a"), id("b")), id("ok").Op("&&").Id("c").Op("<=").Lit(0)).Block(
				id("errs").Op("=").Append(id("errs"), id("fieldError").Call(id("job"), jen.Index().String().Values(id("r").Dot("property")), lit(afterRuleName), lit("must be a later instant than ").Op("+").Id("r").Dot("than"))),
			),
		),
		jen.For(jen.List(id("_"), id("r")).Op(":=").Range().Id("inAllRules")).Block(
			jen.If(jen.Qual(schemarulesPkg, "CountItems").Call(id("job"), id("r").Dot("properties").Op("...")).Op(">").Id("r").Dot("max")).Block(
				id("errs").Op("=").Append(id("errs"), id("fieldError").Call(id("job"), jen.Index().String().Values(id("r").Dot("properties").Index(lit(0))), lit(inAllRuleName), id("r").Dot("message"))),
			),
		),
		ret(id("errs")),
	)
	return f
}

// listWords writes names as "a, b and c".
func listWords(names []string) string {
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
