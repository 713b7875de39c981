package main

import (
	"bytes"
	"fmt"
	"io/fs"

	"github.com/dave/jennifer/jen"
)

// codeCheckPath is where CodeCheck's output is written, under the output
// directory: beside the recorder it checks.
const codeCheckPath = "internal/codetest/emitted_gen_test.go"

// emittedNoneYet starts the emitted field of a code no part of the kit gives
// yet; the rest says why.
const emittedNoneYet = "none yet"

const codetestPkg = "github.com/alexify/mailer/internal/codetest"

// CodeCheck reads codes.yaml from schema and writes the test that fails
// when a code the table says the kit gives is logged by no test at the
// level the table gives, or a code marked emitted: none yet is logged.
func CodeCheck(schema fs.FS) ([]byte, error) {
	data, err := fs.ReadFile(schema, "codes.yaml")
	if err != nil {
		return nil, err
	}
	entries, err := readCodes(data)
	if err != nil {
		return nil, err
	}
	f := jen.NewFile("codetest_test")
	f.HeaderComment(header)
	f.HeaderComment("Source: schema/codes.yaml")
	f.ImportName(codetestPkg, "codetest")
	f.ImportName("github.com/alexify/mailer/gen/codes", "codes")
	codesPkg := "github.com/alexify/mailer/gen/codes"

	f.Comment("wants are the rows of schema/codes.yaml: each code with the level the")
	f.Comment("table gives it and, for a code no part of the kit gives yet, why.")
	f.Var().Id("wants").Op("=").Index().Qual(codetestPkg, "Want").ValuesFunc(func(g *jen.Group) {
		for _, c := range entries {
			d := jen.Dict{
				jen.Id("Code"):  jen.Qual(codesPkg, c.goName),
				jen.Id("Level"): jen.Qual("log/slog", levels[c.Level]),
			}
			if c.Emitted != "" {
				d[jen.Id("NotYet")] = jen.Lit(c.Emitted)
			}
			g.Line().Values(d)
		}
		g.Line()
	})
	f.Line()
	f.Comment("TestEveryCodeIsEmitted fails for each code of schema/codes.yaml that no")
	f.Comment("test of the kit logged at the level the table gives, and for each code")
	f.Comment("marked emitted: none yet that a test logged. It reads what the other")
	f.Comment("test packages recorded (make codes runs it after make test).")
	f.Func().Id("TestEveryCodeIsEmitted").Params(jen.Id("t").Op("*").Qual("testing", "T")).Block(
		jen.Qual(codetestPkg, "Check").Call(jen.Id("t"), jen.Id("wants")),
	)
	var buf bytes.Buffer
	if err := f.Render(&buf); err != nil {
		return nil, fmt.Errorf("rendering %s: %w", codeCheckPath, err)
	}
	return buf.Bytes(), nil
}
