package main

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/alexify/mailer/internal/strictjson"
)

// Short names for the jennifer code below.
var (
	id    = jen.Id
	lit   = jen.Lit
	ret   = jen.Return
	errID = jen.Err
)

func q(path, name string) *jen.Statement { return jen.Qual(path, name) }

// strictjsonPkg reads a job's JSON text as the queue's worker does.
const strictjsonPkg = "github.com/alexify/mailer/internal/strictjson"

func kindQ(name string) *jen.Statement { return jen.Op("*").Qual(kindPkg, name) }

// ifErr is "if err := call; err != nil { body }".
func ifErr(call jen.Code, body ...jen.Code) *jen.Statement {
	return jen.If(errID().Op(":=").Add(call), errID().Op("!=").Nil()).Block(body...)
}

// validateFile is validate.gen.go: the error types, Validate and
// ValidateValue, the compiled schema, the mailbox format, the flattening of
// the library's errors, the reserved rules and their helpers.
func (m *jobModel) validateFile() *jen.File {
	f := m.newFile()
	m.errorDecls(f)
	m.validateDecls(f)
	compiledDecl(f)
	m.propertyNamesDecls(f)
	mailboxDecls(f)
	flattenDecls(f)
	m.ruleDecls(f)
	m.helperDecls(f)
	return f
}

// errorDecls declares FieldError and ValidationError.
func (m *jobModel) errorDecls(f *jen.File) {
	pfx := m.pkg + ": "
	f.Comment(comment("FieldError is one bad value of a job."))
	f.Type().Id("FieldError").Struct(
		jen.Comment(comment(`Pointer is the RFC 6901 JSON pointer of the bad value, "" for the whole job: /context/user/createdAt, /to/0. For a missing property it is where the property belongs.`)),
		id("Pointer").String(),
		jen.Line(),
		jen.Comment(comment(`Path is Pointer as a dotted path: context.user.createdAt, to[0]; "" for the whole job.`)),
		id("Path").String(),
		jen.Line(),
		jen.Comment(comment(`Rule is the schema keyword that failed (required, pattern, format, additionalProperties, type, maxLength, enum, const, ...) or the rule the schema cannot say (`+m.reservedRuleNames()+`); json when the data is not JSON.`)),
		id("Rule").String(),
		jen.Line(),
		jen.Comment(comment(`Message says what is wrong, in English. It never quotes the bad value, which may be an address or a token.`)),
		id("Message").String(),
	)
	f.Line()
	f.Comment(comment("String returns the path, what is wrong and the rule."))
	f.Func().Params(id("e").Id("FieldError")).Id("String").Params().String().Block(
		id("where").Op(":=").Id("e").Dot("Path"),
		jen.If(id("where").Op("==").Lit("")).Block(id("where").Op("=").Lit("the job")),
		ret(id("where").Op("+").Lit(": ").Op("+").Id("e").Dot("Message").Op("+").Lit(" (").Op("+").Id("e").Dot("Rule").Op("+").Lit(")")),
	)

	// ValidationError.
	f.Line()
	f.Comment(comment("MaxErrors is the most FieldErrors a ValidationError lists; More counts the rest."))
	f.Const().Id("MaxErrors").Op("=").Lit(100)
	f.Line()
	f.Comment(comment("ValidationError is the error of Validate and ValidateValue: the bad values of a job."))
	f.Type().Id("ValidationError").Struct(
		jen.Comment(comment("Errors lists the bad values, sorted by Pointer then Rule: the first MaxErrors of them.")),
		id("Errors").Index().Id("FieldError"),
		jen.Line(),
		jen.Comment(comment("More is how many bad values there were beyond those Errors lists: 0 unless Errors holds MaxErrors.")),
		id("More").Int(),
	)
	f.Line()
	f.Comment(comment(`Error returns the first error and how many more there are: "... (and 2 more)".`))
	f.Func().Params(id("e").Op("*").Id("ValidationError")).Id("Error").Params().String().Block(
		jen.If(jen.Len(id("e").Dot("Errors")).Op("==").Lit(0)).Block(ret(lit(pfx+"invalid job"))),
		id("msg").Op(":=").Lit(pfx+"invalid job: ").Op("+").Id("e").Dot("Errors").Index(lit(0)).Dot("String").Call(),
		jen.If(id("n").Op(":=").Len(id("e").Dot("Errors")).Op("-").Lit(1).Op("+").Id("e").Dot("More"), id("n").Op(">").Lit(0)).Block(
			id("msg").Op("+=").Qual("fmt", "Sprintf").Call(lit(" (and %d more)"), id("n")),
		),
		ret(id("msg")),
	)
}

// validateDecls declares Validate and ValidateValue.
func (m *jobModel) validateDecls(f *jen.File) {
	pfx := m.pkg + ": "
	jsonErr := func(msg string) jen.Code {
		return ret(jen.Op("&").Id("ValidationError").Values(jen.Dict{
			id("Errors"): jen.Index().Id("FieldError").Values(jen.Values(jen.Dict{id("Rule"): lit("json"), id("Message"): lit(msg)})),
		}))
	}
	f.Line()
	f.Comment(comment(fmt.Sprintf("Validate checks data, the JSON of one job (clear or sealed), against %s and the rules the schema cannot say. It returns nil or a *ValidationError listing the bad values (the first MaxErrors). First it reads the text as the queue's worker reads a stored job (internal/strictjson, docs/wire.md \"What a worker checks\"): text that is not JSON, or JSON that readers could read as different values (a name twice in one object, text that is not UTF-8, a \\u escape of a lone surrogate, an integer beyond 2^53-1, a number beyond a double, nesting past %d levels), is one error of rule json at the pointer of the value at fault. It does not check the job's size: the queue's MaxJobBytes does, before this.", m.file, strictjson.MaxDepth)))
	f.Func().Id("Validate").Params(id("data").Index().Byte()).Error().Block(
		ifErr(q(strictjsonPkg, "Check").Call(id("data")),
			jen.Var().Id("se").Op("*").Qual(strictjsonPkg, "Error"),
			jen.If(jen.Op("!").Qual("errors", "As").Call(errID(), jen.Op("&").Id("se"))).Block(jsonErr("is not valid JSON")),
			ret(jen.Op("&").Id("ValidationError").Values(jen.Dict{
				id("Errors"): jen.Index().Id("FieldError").Values(jen.Values(jen.Dict{
					id("Pointer"): id("se").Dot("Pointer"), id("Path"): id("se").Dot("Path"),
					id("Rule"): lit("json"), id("Message"): id("se").Dot("Reason"),
				})),
			})),
		),
		jen.List(id("v"), errID()).Op(":=").Qual(strictjsonPkg, "Decode").Call(id("data")),
		jen.If(errID().Op("!=").Nil()).Block(jsonErr("is not valid JSON")),
		ret(id("ValidateValue").Call(id("v"))),
	)

	// ValidateValue.
	f.Line()
	f.Comment(comment("ValidateValue does the same as Validate for a JSON value already decoded (by a json.Decoder with UseNumber, or any value json.Unmarshal gives into an any). It panics only if the embedded schema does not compile, which the package's tests rule out."))
	f.Func().Id("ValidateValue").Params(id("v").Any()).Error().Block(
		jen.Comment("The fast path answers for the common, valid job; the library decides the rest."),
		jen.If(id("fastValid").Call(id("v")).Op("&&").Len(id("checkReserved").Call(id("v"))).Op("==").Lit(0)).Block(jen.Return(jen.Nil())),
		jen.List(id("sch"), errID()).Op(":=").Id("compiled").Call(),
		jen.If(errID().Op("!=").Nil()).Block(jen.Panic(lit(pfx+"the embedded schema does not compile: ").Op("+").Err().Dot("Error").Call())),
		jen.Var().Id("errs").Index().Id("FieldError"),
		ifErr(id("sch").Dot("Validate").Call(id("v")),
			jen.Var().Id("verr").Op("*").Qual(jsonschemaPkg, "ValidationError"),
			jen.If(q("errors", "As").Call(errID(), jen.Op("&").Id("verr"))).Block(
				id("errs").Op("=").Id("flatten").Call(id("v"), id("verr"), id("errs")),
			).Else().Block(
				id("errs").Op("=").Append(id("errs"), id("FieldError").Values(jen.Dict{id("Rule"): lit("schema"), id("Message"): lit("could not be checked against the schema")})),
			),
		),
		id("errs").Op("=").Append(id("errs"), id("checkReserved").Call(id("v")).Op("...")),
		jen.If(jen.Len(id("errs")).Op("==").Lit(0)).Block(ret(jen.Nil())),
		q("slices", "SortFunc").Call(id("errs"), jen.Func().Params(jen.List(id("a"), id("b")).Id("FieldError")).Int().Block(
			ret(q("cmp", "Or").Call(
				q("strings", "Compare").Call(id("a").Dot("Pointer"), id("b").Dot("Pointer")),
				q("strings", "Compare").Call(id("a").Dot("Rule"), id("b").Dot("Rule")),
				q("strings", "Compare").Call(id("a").Dot("Message"), id("b").Dot("Message")),
			)),
		)),
		id("errs").Op("=").Qual("slices", "Compact").Call(id("errs")),
		jen.If(jen.Len(id("errs")).Op(">").Id("MaxErrors")).Block(
			ret(jen.Op("&").Id("ValidationError").Values(jen.Dict{
				id("Errors"): id("errs").Index(jen.Empty(), id("MaxErrors"), id("MaxErrors")),
				id("More"):   jen.Len(id("errs")).Op("-").Id("MaxErrors"),
			})),
		),
		ret(jen.Op("&").Id("ValidationError").Values(jen.Dict{id("Errors"): id("errs")})),
	)
}

// compiledDecl declares compiled, the schema compiled once.
func compiledDecl(f *jen.File) {
	f.Line()
	f.Comment(comment("compiled compiles the embedded schema once, with formats asserted (and the mailbox format) and contentEncoding checked."))
	f.Var().Id("compiled").Op("=").Qual("sync", "OnceValues").Call(jen.Func().Params().Params(jen.Op("*").Qual(jsonschemaPkg, "Schema"), jen.Error()).Block(
		jen.List(id("doc"), errID()).Op(":=").Qual(jsonschemaPkg, "UnmarshalJSON").Call(q("strings", "NewReader").Call(id("schemaJSON"))),
		jen.If(errID().Op("!=").Nil()).Block(ret(jen.Nil(), errID())),
		id("c").Op(":=").Qual(jsonschemaPkg, "NewCompiler").Call(),
		id("c").Dot("AssertFormat").Call(),
		id("c").Dot("AssertContent").Call(),
		id("c").Dot("RegisterFormat").Call(jen.Op("&").Qual(jsonschemaPkg, "Format").Values(jen.Dict{id("Name"): lit("mailbox"), id("Validate"): id("validateMailbox")})),
		ifErr(id("c").Dot("AddResource").Call(id("schemaID"), id("doc")), ret(jen.Nil(), errID())),
		jen.List(id("sch"), errID()).Op(":=").Id("c").Dot("Compile").Call(id("schemaID")),
		jen.If(errID().Op("!=").Nil()).Block(ret(jen.Nil(), errID())),
		id("movePropertyNames").Call(id("sch"), jen.Map(jen.Op("*").Qual(jsonschemaPkg, "Schema")).Bool().Values()),
		ret(id("sch"), jen.Nil()),
	))
}

// mailboxDecls declares the format mailbox (validateMailbox) and the SMTP
// path rule it applies (smtpPath, dotAtom).
func mailboxDecls(f *jen.File) {
	f.Line()
	f.Comment(comment("validateMailbox is the format mailbox: one RFC 5322 mailbox that net/mail parses whole, without CR or LF, whose address an SMTP path carries unquoted (smtpPath): a quoted local part such as \"a> SIZE=1\"@example.com, which would smuggle ESMTP parameters into MAIL FROM or RCPT TO, is refused. Its errors do not quote the value."))
	f.Func().Id("validateMailbox").Params(id("v").Any()).Error().Block(
		jen.List(id("s"), id("ok")).Op(":=").Id("v").Assert(jen.String()),
		jen.If(jen.Op("!").Id("ok")).Block(ret(jen.Nil())),
		jen.If(q("strings", "ContainsAny").Call(id("s"), lit("\r\n"))).Block(ret(q("errors", "New").Call(lit("a mailbox has no CR or LF")))),
		jen.List(id("a"), errID()).Op(":=").Qual("net/mail", "ParseAddress").Call(id("s")),
		jen.If(errID().Op("!=").Nil()).Block(
			ret(q("errors", "New").Call(lit("not one RFC 5322 mailbox"))),
		),
		jen.If(jen.Op("!").Id("smtpPath").Call(id("a").Dot("Address"))).Block(
			ret(q("errors", "New").Call(lit("not an address an SMTP path carries unquoted (a quoted local part)"))),
		),
		jen.Comment("A display name that holds an address would be read for the address"),
		jen.Comment("(\"ada@example.com\" <eve@example.net>)."),
		jen.If(q("strings", "Contains").Call(id("a").Dot("Name"), lit("@"))).Block(
			ret(q("errors", "New").Call(lit("a display name holds an address"))),
		),
		jen.Comment("An invisible character (a zero-width space, a bidi control) would be"),
		jen.Comment("dropped or shown apart from where the mail goes (UTS 46 maps some away)."),
		jen.If(q("strings", "IndexFunc").Call(id("a").Dot("Address"), jen.Func().Params(id("r").Rune()).Bool().Block(
			ret(q("unicode", "Is").Call(q("unicode", "Cf"), id("r")).Op("||").Qual("unicode", "Is").Call(q("unicode", "Other_Default_Ignorable_Code_Point"), id("r"))),
		)).Op(">=").Lit(0)).Block(
			ret(q("errors", "New").Call(lit("an address holds an invisible character"))),
		),
		ret(jen.Nil()),
	)

	// smtpPath and dotAtom.
	f.Line()
	f.Comment(comment("smtpPath reports whether the addr-spec addr (unquoted, as net/mail gives it) goes into an SMTP path as it is (RFC 5321 section 4.1.2): its local part a dot-atom, its domain a dot-atom or an address literal in brackets without white space, brackets, angle brackets, quotes or backslashes. mail.DotString applies the same rule at the worker."))
	f.Func().Id("smtpPath").Params(id("addr").String()).Bool().Block(
		id("at").Op(":=").Qual("strings", "LastIndexByte").Call(id("addr"), jen.LitRune('@')),
		jen.If(id("at").Op("<=").Lit(0).Op("||").Id("at").Op("==").Len(id("addr")).Op("-").Lit(1)).Block(ret(jen.False())),
		jen.List(id("local"), id("domain")).Op(":=").List(id("addr").Index(jen.Empty(), id("at")), id("addr").Index(id("at").Op("+").Lit(1), jen.Empty())),
		jen.If(jen.Op("!").Id("dotAtom").Call(id("local"))).Block(ret(jen.False())),
		jen.If(q("strings", "HasPrefix").Call(id("domain"), lit("[")).Op("&&").Qual("strings", "HasSuffix").Call(id("domain"), lit("]"))).Block(
			id("inner").Op(":=").Id("domain").Index(jen.Lit(1), jen.Len(id("domain")).Op("-").Lit(1)),
			ret(id("inner").Op("!=").Lit("").Op("&&").Op("!").Qual("strings", "ContainsFunc").Call(id("inner"), jen.Func().Params(id("r").Rune()).Bool().Block(
				ret(id("r").Op("<=").LitRune(' ').Op("||").Id("r").Op(">=").Lit(0x7f).Op("||").Qual("strings", "ContainsRune").Call(lit("[]\\<>\""), id("r"))),
			))),
		),
		ret(id("dotAtom").Call(id("domain"))),
	)
	f.Line()
	f.Comment(comment("atext holds the ASCII atext characters of RFC 5322 section 3.2.3."))
	f.Const().Id("atext").Op("=").Lit("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!#$%&'*+-/=?^_`{|}~")
	f.Line()
	f.Comment(comment("dotAtom reports whether s is a dot-atom: runs of atext joined by single dots, letters beyond ASCII allowed as RFC 6531 allows them (no white space or control characters)."))
	f.Func().Id("dotAtom").Params(id("s").String()).Bool().Block(
		jen.If(id("s").Op("==").Lit("").Op("||").Qual("strings", "HasPrefix").Call(id("s"), lit(".")).Op("||").Qual("strings", "HasSuffix").Call(id("s"), lit(".")).Op("||").Qual("strings", "Contains").Call(id("s"), lit(".."))).Block(ret(jen.False())),
		jen.For(jen.List(id("_"), id("r")).Op(":=").Range().Id("s")).Block(
			jen.Switch().Block(
				jen.Case(id("r").Op("==").LitRune('.'), q("strings", "ContainsRune").Call(id("atext"), id("r"))).Block(),
				jen.Case(id("r").Op("<").Qual("unicode/utf8", "RuneSelf"), id("r").Op("==").Qual("unicode/utf8", "RuneError"), q("unicode", "IsSpace").Call(id("r")), q("unicode", "IsControl").Call(id("r"))).Block(ret(jen.False())),
			),
		),
		ret(jen.True()),
	)
}

func (m *jobModel) reservedRuleNames() string {
	names := make([]string, 0, len(m.reserved))
	for _, r := range m.reserved {
		names = append(names, r.rule)
	}
	if len(m.after) > 0 {
		names = append(names, afterRuleName)
	}
	if len(m.inAll) > 0 {
		names = append(names, inAllRuleName)
	}
	if len(names) == 0 {
		return "none in this schema"
	}
	return strings.Join(names, ", ")
}

// flattenDecls declares flatten, which turns the library's error tree into
// FieldErrors, and describe with the helpers of its messages.
func flattenDecls(f *jen.File) {
	flattenDecl(f)
	describeDecl(f)
	messageDecls(f)
}

// flattenDecl declares flatten.
func flattenDecl(f *jen.File) {
	appendErr := func(loc jen.Code, rule, msg jen.Code) jen.Code {
		return id("errs").Op("=").Append(id("errs"), id("fieldError").Call(id("root"), loc, rule, msg))
	}
	f.Line()
	f.Comment(comment("flatten appends the leaves of the library's error tree (the errors without causes; if/then/else, allOf and $ref only wrap them) as FieldErrors. A missing or extra property is reported at its own pointer, one FieldError each."))
	f.Func().Id("flatten").Params(id("root").Any(), id("e").Op("*").Qual(jsonschemaPkg, "ValidationError"), id("errs").Index().Id("FieldError")).Index().Id("FieldError").Block(
		id("loc").Op(":=").Id("e").Dot("InstanceLocation"),
		jen.If(jen.List(id("k"), id("ok")).Op(":=").Id("e").Dot("ErrorKind").Assert(kindQ("PropertyNames")), id("ok")).Block(
			ret(jen.Append(id("errs"), id("fieldError").Call(id("root"), id("child").Call(id("loc"), id("k").Dot("Property")), lit("propertyNames"), lit("is not an allowed property name")))),
		),
		jen.If(jen.Len(id("e").Dot("Causes")).Op(">").Lit(0)).Block(
			jen.For(jen.List(id("_"), id("c")).Op(":=").Range().Id("e").Dot("Causes")).Block(
				id("errs").Op("=").Id("flatten").Call(id("root"), id("c"), id("errs")),
			),
			ret(id("errs")),
		),
		jen.Switch(id("k").Op(":=").Id("e").Dot("ErrorKind").Assert(jen.Type())).Block(
			jen.Case(kindQ("Required")).Block(
				jen.For(jen.List(id("_"), id("name")).Op(":=").Range().Id("k").Dot("Missing")).Block(
					appendErr(id("child").Call(id("loc"), id("name")), lit("required"), lit("is required")),
				),
				ret(id("errs")),
			),
			jen.Case(kindQ("AdditionalProperties")).Block(
				jen.For(jen.List(id("_"), id("name")).Op(":=").Range().Id("k").Dot("Properties")).Block(
					appendErr(id("child").Call(id("loc"), id("name")), lit("additionalProperties"), lit("is not a property of this object")),
				),
				ret(id("errs")),
			),
			jen.Case(kindQ("Not")).Block(
				jen.List(id("_"), id("frag"), id("_")).Op(":=").Qual("strings", "Cut").Call(id("e").Dot("SchemaURL"), lit("#")),
				jen.If(jen.List(id("u"), errID()).Op(":=").Qual("net/url", "PathUnescape").Call(id("frag")), errID().Op("==").Nil()).Block(id("frag").Op("=").Id("u")),
				jen.List(id("rule"), id("ok")).Op(":=").Id("forbidden").Index(id("frag")),
				jen.List(id("obj"), id("isObj")).Op(":=").Id("valueAt").Call(id("root"), id("loc")).Assert(jen.Map(jen.String()).Any()),
				jen.If(jen.Op("!").Id("ok").Op("||").Op("!").Id("isObj")).Block(jen.Break()),
				id("n").Op(":=").Len(id("errs")),
				jen.For(jen.List(id("_"), id("name")).Op(":=").Range().Id("rule").Dot("names")).Block(
					jen.If(jen.List(id("_"), id("present")).Op(":=").Id("obj").Index(id("name")), id("present")).Block(
						appendErr(id("child").Call(id("loc"), id("name")), lit("not"), id("rule").Dot("message")),
					),
				),
				jen.If(jen.Len(id("errs")).Op(">").Id("n")).Block(ret(id("errs"))),
			),
		),
		jen.List(id("rule"), id("msg")).Op(":=").Id("describe").Call(id("e").Dot("ErrorKind")),
		ret(jen.Append(id("errs"), id("fieldError").Call(id("root"), id("loc"), id("rule"), id("msg")))),
	)
}

// describeDecl declares describe: a case per kind of the library's errors.
func describeDecl(f *jen.File) {
	type c struct {
		kind string
		msg  jen.Code
	}
	k := func(field string) *jen.Statement { return id("k").Dot(field) }
	sprintf := func(format string, args ...jen.Code) jen.Code {
		return q("fmt", "Sprintf").Call(append([]jen.Code{lit(format)}, args...)...)
	}
	cases := []c{
		{"Type", lit("must be ").Op("+").Qual("strings", "Join").Call(k("Want"), lit(" or ")).Op("+").Lit(", not ").Op("+").Add(k("Got"))},
		{"Enum", lit("must be one of ").Op("+").Id("jsonList").Call(k("Want"))},
		{"Const", lit("must be ").Op("+").Id("jsonText").Call(k("Want"))},
		{"Format", id("formatMessage").Call(k("Want"))},
		{"Pattern", lit("does not match the pattern ").Op("+").Add(k("Want"))},
		{"MinLength", sprintf("must have at least %d characters", k("Want"))},
		{"MaxLength", sprintf("must have at most %d characters", k("Want"))},
		{"MinItems", sprintf("must have at least %d items", k("Want"))},
		{"MaxItems", sprintf("must have at most %d items", k("Want"))},
		{"MinProperties", sprintf("must have at least %d properties", k("Want"))},
		{"MaxProperties", sprintf("must have at most %d properties", k("Want"))},
		{"Minimum", lit("must be at least ").Op("+").Add(k("Want")).Dot("RatString").Call()},
		{"Maximum", lit("must be at most ").Op("+").Add(k("Want")).Dot("RatString").Call()},
		{"ExclusiveMinimum", lit("must be more than ").Op("+").Add(k("Want")).Dot("RatString").Call()},
		{"ExclusiveMaximum", lit("must be less than ").Op("+").Add(k("Want")).Dot("RatString").Call()},
		{"MultipleOf", lit("must be a multiple of ").Op("+").Add(k("Want")).Dot("RatString").Call()},
		{"UniqueItems", sprintf("has the same item at %d and %d", k("Duplicates").Index(lit(0)), k("Duplicates").Index(lit(1)))},
		{"ContentEncoding", lit("is not valid ").Op("+").Add(k("Want"))},
		{"ContentMediaType", lit("is not valid ").Op("+").Add(k("Want"))},
		{"Not", lit("matches a schema it must not match")},
		{"OneOf", lit("matches more than one schema of oneOf")},
		{"Contains", lit("has no item that matches")},
	}
	f.Line()
	f.Comment(comment("describe gives the rule (the failing keyword) and a message that does not quote the value."))
	f.Func().Id("describe").Params(id("ek").Qual(jsonschemaPkg, "ErrorKind")).Params(id("rule"), id("msg").String()).Block(
		jen.List(id("rule"), id("msg")).Op("=").List(lit("schema"), lit("is not valid")),
		jen.If(id("kp").Op(":=").Id("ek").Dot("KeywordPath").Call(), jen.Len(id("kp")).Op(">").Lit(0)).Block(id("rule").Op("=").Id("kp").Index(lit(0))),
		jen.Switch(id("k").Op(":=").Id("ek").Assert(jen.Type())).BlockFunc(func(g *jen.Group) {
			g.Case(kindQ("InvalidJsonValue")).Block(ret(lit("type"), lit("is not a JSON value")))
			g.Case(kindQ("FalseSchema")).Block(ret(lit("false"), lit("is not allowed")))
			for _, cs := range cases {
				g.Case(kindQ(cs.kind)).Block(id("msg").Op("=").Add(cs.msg))
			}
		}),
		ret(id("rule"), id("msg")),
	)
}

// messageDecls declares formatMessage, jsonText and jsonList.
func messageDecls(f *jen.File) {
	f.Line()
	f.Comment(comment("formatMessage says what a value of a format is not."))
	f.Func().Id("formatMessage").Params(id("format").String()).String().Block(
		jen.Switch(id("format")).Block(
			jen.Case(lit("mailbox")).Block(ret(lit("is not a valid mailbox (RFC 5322)"))),
			jen.Case(lit("date-time")).Block(ret(lit("is not a valid date-time (RFC 3339)"))),
			jen.Case(lit("date")).Block(ret(lit("is not a valid date (RFC 3339)"))),
			jen.Case(lit("email")).Block(ret(lit("is not a valid email address"))),
		),
		ret(lit("is not a valid ").Op("+").Id("format")),
	)

	f.Line()
	f.Comment(comment("jsonText writes a value of the schema (a const, an enum value) as JSON."))
	f.Func().Id("jsonText").Params(id("v").Any()).String().Block(
		jen.List(id("b"), errID()).Op(":=").Qual("encoding/json", "Marshal").Call(id("v")),
		jen.If(errID().Op("!=").Nil()).Block(ret(q("fmt", "Sprint").Call(id("v")))),
		ret(jen.String().Parens(id("b"))),
	)
	f.Line()
	f.Comment(comment("jsonList writes values of the schema as JSON, separated by commas."))
	f.Func().Id("jsonList").Params(id("vs").Index().Any()).String().Block(
		id("s").Op(":=").Make(jen.Index().String(), jen.Len(id("vs"))),
		jen.For(jen.List(id("i"), id("v")).Op(":=").Range().Id("vs")).Block(id("s").Index(id("i")).Op("=").Id("jsonText").Call(id("v"))),
		ret(q("strings", "Join").Call(id("s"), lit(", "))),
	)
}

func (m *jobModel) ruleDecls(f *jen.File) {
	f.Line()
	f.Comment(comment("reservedRule is an x-reserved annotation of the schema: the names (lowercase; a trailing * makes a prefix) that a property's object may not have."))
	f.Type().Id("reservedRule").Struct(
		jen.List(id("property"), id("rule"), id("message")).String(),
		id("names").Index().String(),
	)
	f.Line()
	f.Comment(comment("match reports whether name, in any case, is one of the rule's names."))
	f.Func().Params(id("r").Id("reservedRule")).Id("match").Params(id("name").String()).Bool().Block(
		id("name").Op("=").Qual("strings", "ToLower").Call(id("name")),
		jen.For(jen.List(id("_"), id("n")).Op(":=").Range().Id("r").Dot("names")).Block(
			jen.If(jen.List(id("prefix"), id("ok")).Op(":=").Qual("strings", "CutSuffix").Call(id("n"), lit("*")), id("ok")).Block(
				jen.If(q("strings", "HasPrefix").Call(id("name"), id("prefix"))).Block(ret(jen.True())),
			).Else().If(id("name").Op("==").Id("n")).Block(ret(jen.True())),
		),
		ret(jen.False()),
	)

	f.Line()
	f.Comment(comment(fmt.Sprintf("reservedRules are the x-reserved annotations on the properties of the clear shape (%s), read from the schema by cmd/generate.", m.clear.name)))
	f.Var().Id("reservedRules").Op("=").Index().Id("reservedRule").ValuesFunc(func(g *jen.Group) {
		for _, r := range m.reserved {
			thing := strings.ToLower(strings.TrimPrefix(r.rule, "reserved"))
			names := make([]jen.Code, len(r.names))
			for i, n := range r.names {
				names[i] = lit(n)
			}
			g.Values(jen.Dict{
				id("property"): lit(r.property),
				id("rule"):     lit(r.rule),
				id("message"):  lit("is a " + thing + " the kit owns and sets itself"),
				id("names"):    jen.Index().String().Values(names...),
			})
		}
	})

	f.Line()
	f.Comment(comment(fmt.Sprintf("checkReserved applies reservedRules and the cross-field rules (checkRules, rules.gen.go) to a clear job (one without %s); a sealed job has none of those properties.", m.discriminator)))
	f.Func().Id("checkReserved").Params(id("v").Any()).Index().Id("FieldError").Block(
		jen.List(id("job"), id("ok")).Op(":=").Id("v").Assert(jen.Map(jen.String()).Any()),
		jen.If(jen.Op("!").Id("ok")).Block(ret(jen.Nil())),
		jen.If(jen.List(id("_"), id("sealed")).Op(":=").Id("job").Index(lit(m.discriminator)), id("sealed")).Block(ret(jen.Nil())),
		jen.Var().Id("errs").Index().Id("FieldError"),
		jen.For(jen.List(id("_"), id("r")).Op(":=").Range().Id("reservedRules")).Block(
			jen.List(id("obj"), id("ok")).Op(":=").Id("job").Index(id("r").Dot("property")).Assert(jen.Map(jen.String()).Any()),
			jen.If(jen.Op("!").Id("ok")).Block(jen.Continue()),
			jen.For(id("name").Op(":=").Range().Id("obj")).Block(
				jen.If(id("r").Dot("match").Call(id("name"))).Block(
					id("errs").Op("=").Append(id("errs"), id("fieldError").Call(id("v"), jen.Index().String().Values(id("r").Dot("property"), id("name")), id("r").Dot("rule"), id("r").Dot("message"))),
				),
			),
		),
		ret(jen.Append(id("errs"), id("checkRules").Call(id("job")).Op("..."))),
	)

	f.Line()
	f.Comment(comment(`forbiddenRule is a {"not": {"required": names}} of the schema: each of names present is reported at its own pointer.`))
	f.Type().Id("forbiddenRule").Struct(
		id("names").Index().String(),
		id("message").String(),
	)
	f.Line()
	f.Comment(comment("forbidden holds the forbiddenRules by the JSON pointer of the schema that has the not."))
	f.Var().Id("forbidden").Op("=").Map(jen.String()).Id("forbiddenRule").Values(jen.DictFunc(func(d jen.Dict) {
		for _, r := range m.forbidden {
			names := make([]jen.Code, len(r.names))
			for i, n := range r.names {
				names[i] = lit(n)
			}
			d[lit(r.location)] = jen.Values(jen.Dict{
				id("names"):   jen.Index().String().Values(names...),
				id("message"): lit(r.message),
			})
		}
	}))
}

func (m *jobModel) helperDecls(f *jen.File) {
	f.Line()
	f.Comment(comment("fieldError makes a FieldError at the instance location loc of root."))
	f.Func().Id("fieldError").Params(id("root").Any(), id("loc").Index().String(), jen.List(id("rule"), id("msg")).String()).Id("FieldError").Block(
		ret(id("FieldError").Values(jen.Dict{
			id("Pointer"): id("pointer").Call(id("loc")),
			id("Path"):    id("dotted").Call(id("root"), id("loc")),
			id("Rule"):    id("rule"),
			id("Message"): id("msg"),
		})),
	)
	f.Line()
	f.Comment(comment("child returns loc and then name, without writing into loc's array."))
	f.Func().Id("child").Params(id("loc").Index().String(), id("name").String()).Index().String().Block(
		ret(jen.Append(q("slices", "Clip").Call(id("loc")), id("name"))),
	)
	f.Line()
	f.Comment(comment("pointerEscaper escapes a reference token of a JSON pointer (RFC 6901)."))
	f.Var().Id("pointerEscaper").Op("=").Qual("strings", "NewReplacer").Call(lit("~"), lit("~0"), lit("/"), lit("~1"))
	f.Line()
	f.Comment(comment("pointer writes loc as an RFC 6901 JSON pointer."))
	f.Func().Id("pointer").Params(id("loc").Index().String()).String().Block(
		jen.Var().Id("sb").Qual("strings", "Builder"),
		jen.For(jen.List(id("_"), id("tok")).Op(":=").Range().Id("loc")).Block(
			id("sb").Dot("WriteByte").Call(jen.LitRune('/')),
			id("sb").Dot("WriteString").Call(id("pointerEscaper").Dot("Replace").Call(id("tok"))),
		),
		ret(id("sb").Dot("String").Call()),
	)
	f.Line()
	f.Comment(comment("plainName matches the property names a dotted path writes bare."))
	f.Var().Id("plainName").Op("=").Qual("regexp", "MustCompile").Call(lit(`^[A-Za-z_$][A-Za-z0-9_$-]*$`))
	f.Line()
	f.Comment(comment(`dotted writes loc as a dotted path: context.user.createdAt, to[0], headers["a b"]. It looks at root to tell an array index from a property name.`))
	f.Func().Id("dotted").Params(id("root").Any(), id("loc").Index().String()).String().Block(
		jen.Var().Id("sb").Qual("strings", "Builder"),
		id("v").Op(":=").Id("root"),
		jen.For(jen.List(id("_"), id("tok")).Op(":=").Range().Id("loc")).Block(
			jen.If(jen.List(id("_"), id("isArr")).Op(":=").Id("v").Assert(jen.Index().Any()), id("isArr")).Block(
				id("sb").Dot("WriteString").Call(lit("[").Op("+").Id("tok").Op("+").Lit("]")),
			).Else().If(id("plainName").Dot("MatchString").Call(id("tok"))).Block(
				jen.If(id("sb").Dot("Len").Call().Op(">").Lit(0)).Block(id("sb").Dot("WriteByte").Call(jen.LitRune('.'))),
				id("sb").Dot("WriteString").Call(id("tok")),
			).Else().Block(
				id("sb").Dot("WriteString").Call(lit("[").Op("+").Qual("strconv", "Quote").Call(id("tok")).Op("+").Lit("]")),
			),
			id("v").Op("=").Id("valueAt").Call(id("v"), jen.Index().String().Values(id("tok"))),
		),
		ret(id("sb").Dot("String").Call()),
	)
	f.Line()
	f.Comment(comment("valueAt returns the value at loc in v, or nil."))
	f.Func().Id("valueAt").Params(id("v").Any(), id("loc").Index().String()).Any().Block(
		jen.For(jen.List(id("_"), id("tok")).Op(":=").Range().Id("loc")).Block(
			jen.Switch(id("c").Op(":=").Id("v").Assert(jen.Type())).Block(
				jen.Case(jen.Map(jen.String()).Any()).Block(id("v").Op("=").Id("c").Index(id("tok"))),
				jen.Case(jen.Index().Any()).Block(
					jen.List(id("i"), errID()).Op(":=").Qual("strconv", "Atoi").Call(id("tok")),
					jen.If(errID().Op("!=").Nil().Op("||").Id("i").Op("<").Lit(0).Op("||").Id("i").Op(">=").Len(id("c"))).Block(ret(jen.Nil())),
					id("v").Op("=").Id("c").Index(id("i")),
				),
				jen.Default().Block(ret(jen.Nil())),
			),
		),
		ret(id("v")),
	)
}

func (m *jobModel) propertyNamesDecls(f *jen.File) {
	schemaT := func() *jen.Statement { return jen.Op("*").Qual(jsonschemaPkg, "Schema") }
	f.Line()
	f.Comment(comment("propertyNames checks the property names of an object against a schema. It stands in for the library's propertyNames keyword, whose errors keep a slice of the instance location that the validation of later siblings overwrites, so they point at the wrong value."))
	f.Type().Id("propertyNames").Struct(id("sch").Add(schemaT()))
	f.Line()
	f.Comment(comment("Validate reports each property name of v that the schema refuses."))
	f.Func().Params(id("p").Id("propertyNames")).Id("Validate").Params(id("ctx").Op("*").Qual(jsonschemaPkg, "ValidatorContext"), id("v").Any()).Block(
		jen.List(id("obj"), id("ok")).Op(":=").Id("v").Assert(jen.Map(jen.String()).Any()),
		jen.If(jen.Op("!").Id("ok")).Block(jen.Return()),
		jen.For(id("name").Op(":=").Range().Id("obj")).Block(
			jen.If(id("p").Dot("sch").Dot("Validate").Call(id("name")).Op("!=").Nil()).Block(
				id("ctx").Dot("AddError").Call(jen.Op("&").Qual(kindPkg, "PropertyNames").Values(jen.Dict{id("Property"): id("name")})),
			),
		),
	)
	f.Line()
	f.Comment(comment("movePropertyNames replaces the propertyNames keyword of every schema reachable from s by the extension propertyNames."))
	f.Func().Id("movePropertyNames").Params(id("s").Add(schemaT()), id("seen").Map(schemaT()).Bool()).Block(
		jen.If(id("s").Op("==").Nil().Op("||").Id("seen").Index(id("s"))).Block(jen.Return()),
		id("seen").Index(id("s")).Op("=").True(),
		id("subs").Op(":=").Index().Add(schemaT()).Values(
			id("s").Dot("PropertyNames"), id("s").Dot("Ref"), id("s").Dot("RecursiveRef"), id("s").Dot("Not"),
			id("s").Dot("If"), id("s").Dot("Then"), id("s").Dot("Else"), id("s").Dot("UnevaluatedProperties"),
			id("s").Dot("Contains"), id("s").Dot("Items2020"), id("s").Dot("UnevaluatedItems"), id("s").Dot("ContentSchema"),
		),
		jen.If(id("s").Dot("PropertyNames").Op("!=").Nil()).Block(
			id("s").Dot("Extensions").Op("=").Append(id("s").Dot("Extensions"), id("propertyNames").Values(id("s").Dot("PropertyNames"))),
			id("s").Dot("PropertyNames").Op("=").Nil(),
		),
		jen.If(id("s").Dot("DynamicRef").Op("!=").Nil()).Block(id("subs").Op("=").Append(id("subs"), id("s").Dot("DynamicRef").Dot("Ref"))),
		id("subs").Op("=").Append(id("subs"), id("s").Dot("AllOf").Op("...")),
		id("subs").Op("=").Append(id("subs"), id("s").Dot("AnyOf").Op("...")),
		id("subs").Op("=").Append(id("subs"), id("s").Dot("OneOf").Op("...")),
		id("subs").Op("=").Append(id("subs"), id("s").Dot("PrefixItems").Op("...")),
		jen.For(jen.List(id("_"), id("sub")).Op(":=").Range().Id("s").Dot("Properties")).Block(id("subs").Op("=").Append(id("subs"), id("sub"))),
		jen.For(jen.List(id("_"), id("sub")).Op(":=").Range().Id("s").Dot("PatternProperties")).Block(id("subs").Op("=").Append(id("subs"), id("sub"))),
		jen.For(jen.List(id("_"), id("sub")).Op(":=").Range().Id("s").Dot("DependentSchemas")).Block(id("subs").Op("=").Append(id("subs"), id("sub"))),
		jen.For(jen.List(id("_"), id("dep")).Op(":=").Range().Id("s").Dot("Dependencies")).Block(
			jen.If(jen.List(id("sub"), id("ok")).Op(":=").Id("dep").Assert(schemaT()), id("ok")).Block(id("subs").Op("=").Append(id("subs"), id("sub"))),
		),
		jen.For(jen.List(id("_"), id("x")).Op(":=").Range().Index().Any().Values(id("s").Dot("AdditionalProperties"), id("s").Dot("AdditionalItems"), id("s").Dot("Items"))).Block(
			jen.Switch(id("x").Op(":=").Id("x").Assert(jen.Type())).Block(
				jen.Case(schemaT()).Block(id("subs").Op("=").Append(id("subs"), id("x"))),
				jen.Case(jen.Index().Add(schemaT())).Block(id("subs").Op("=").Append(id("subs"), id("x").Op("..."))),
			),
		),
		jen.For(jen.List(id("_"), id("sub")).Op(":=").Range().Id("subs")).Block(id("movePropertyNames").Call(id("sub"), id("seen"))),
	)
}
