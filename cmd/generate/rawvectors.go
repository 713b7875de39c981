package main

// The vectors of the rules of issue 4 of the schema (folding, control
// characters in ids, the reserved headers, the cross-field rules, the IDN
// mailboxes) and the raw-bytes vectors: job texts whose bytes matter (two
// names alike, bytes that are not UTF-8, a lone surrogate, numbers no double
// holds, nesting, size), stored in base64 so that they survive the JSON of
// the vectors file.

import (
	"encoding/base64"
	"strings"
)

// rawVector is a job given as bytes, as a gateway for another language or
// `mailq validate FILE` reads it. Its bytes are the concatenation of Parts,
// each the standard base64 of a text repeated Repeat times (once when 0),
// so that a big job takes few bytes in the file.
type rawVector struct {
	Name  string    `json:"name"`
	Parts []rawPart `json:"parts"`
	// Valid is the producer's verdict; Code, Errors its refusal: every
	// error as JSON pointer and rule (json for the text, maxJobBytes for
	// the size).
	Valid  bool          `json:"valid"`
	Code   string        `json:"code,omitempty"`
	Errors []fieldVector `json:"errors,omitempty"`
	// Worker is what a worker without keys or codec does with the bytes
	// stored.
	Worker outcomeVector `json:"worker"`
}

type rawPart struct {
	Base64 string `json:"base64"`
	Repeat int    `json:"repeat,omitempty"`
}

// rawMaxJobBytes is mailqueue.DefaultMaxJobBytes. The oversize vector
// passes twice that, the most a worker reads (a producer refuses what is
// over MaxJobBytes, a worker what is over twice that, unread).
const rawMaxJobBytes = 256 << 10

func part(s string) rawPart { return rawPart{Base64: base64.StdEncoding.EncodeToString([]byte(s))} }

func parts(s ...string) []rawPart {
	out := make([]rawPart, len(s))
	for i, x := range s {
		out[i] = part(x)
	}
	return out
}

// ruleValidJobs are valid jobs at the edges of the rules the schema says.
func ruleValidJobs() []jobVector {
	run := strings.Repeat("a", 920)
	many := func(n int, domain string) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = "r" + itoa(i) + "@" + domain
		}
		return out
	}
	return []jobVector{
		{"a subject and a header value at the longest run that folds", edited(contentJob(), func(m map[string]any) {
			m["subject"] = "x " + run
			m["headers"] = map[string]any{"X-" + strings.Repeat("N", 74): run + " " + strings.Repeat("b", 998-920-1)}
		})},
		{"IDN mailboxes", edited(contentJob(), func(m map[string]any) {
			m["from"] = "Bücher <info@bücher.example>"
			m["to"] = []any{"user@bücher.example", "Jörg <jörg@例え.テスト>"}
		})},
		{"mailboxes net/mail reads", edited(contentJob(), func(m map[string]any) {
			m["to"] = []any{`"ada"@example.com`, "a@[192.0.2.1]", "<a@b.example>", "Ada (home) <a@b.example>", "  a@b.example ", "Ada. Lovelace <a@b.example>", "é@é.example", "a@b"}
		})},
		{"a Message-ID and Content-ID of an IDN, in A-labels", edited(contentJob(), func(m map[string]any) {
			m["messageId"] = "<a.b@xn--bcher-kva.example>"
			m["attachments"] = []any{map[string]any{"ref": "logo.png", "contentId": "logo@xn--bcher-kva.example", "disposition": "inline"}}
		})},
		{"expiresAt a fraction of a second after scheduledAt, in other zones", edited(contentJob(), func(m map[string]any) {
			m["scheduledAt"] = "2026-11-30T12:00:00.1234567891Z"
			m["expiresAt"] = "2026-11-30T13:00:00.12345678911+01:00"
		})},
		{"1000 recipients in all", edited(contentJob(), func(m map[string]any) {
			m["to"], m["cc"], m["bcc"] = many(500, "a.y"), many(300, "b.y"), many(200, "c.y")
		})},
	}
}

func itoa(i int) string {
	const d = "0123456789"
	if i < 10 {
		return d[i : i+1]
	}
	return itoa(i/10) + d[i%10:i%10+1]
}

// ruleInvalidJobs are jobs each rule refuses.
func ruleInvalidJobs() []invalidVector {
	fail := outcomeVector{Action: "fail", Code: "queue.invalid_job"}
	iv := func(name string, job any, errs ...fieldVector) invalidVector {
		return invalidVector{Name: name, Job: job, Errors: errs, Code: "queue.invalid_job", Worker: fail}
	}
	var out []invalidVector
	for _, c := range []struct{ name, char string }{
		{"NUL", "\x00"}, {"VT", "\v"}, {"ESC", "\x1b"}, {"DEL", "\x7f"}, {"C1 NEL", "\u0085"}, {"a space", " "}, {"NBSP", "\u00a0"},
		{"U+2028", "\u2028"}, {"a fullwidth at sign", "\uff20"}, {"U+202E", "\u202e"}, {"a U-label", "ü"},
	} {
		out = append(out,
			iv("a Message-ID with "+c.name, edited(contentJob(), func(m map[string]any) { m["messageId"] = "<a" + c.char + "b@example.com>" }), fieldVector{"/messageId", "pattern"}),
			iv("a Content-ID with "+c.name, edited(contentJob(), func(m map[string]any) {
				m["attachments"] = []any{map[string]any{"ref": "logo.png", "contentId": "logo@exa" + c.char + "mple.com"}}
			}), fieldVector{"/attachments/0/contentId", "pattern"}),
		)
	}
	bad := []any{`"a b"@example.com`, `"Ada @ home" <a@b.example>`, "a\u200b@b.example", "a@b\u00a0c.example", "a..b@c.example", "a@b.example.", "a\u0085b@c.example", "Ada <a@b.example>, b@c.example"}
	mailboxErrs := make([]fieldVector, len(bad))
	for i := range bad {
		mailboxErrs[i] = fieldVector{"/to/" + itoa(i), "format"}
	}
	out = append(out, iv("mailboxes net/mail refuses, or an SMTP path cannot carry", edited(contentJob(), func(m map[string]any) { m["to"] = bad }), mailboxErrs...))
	long := strings.Repeat("a", 921)
	recipients := func(n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = "r" + itoa(i) + "@x.y"
		}
		return out
	}
	out = append(out,
		iv("a Message-ID whose left part is not ASCII", edited(contentJob(), func(m map[string]any) { m["messageId"] = "<é@example.com>" }), fieldVector{"/messageId", "pattern"}),
		iv("a 998-character subject without a space", edited(contentJob(), func(m map[string]any) { m["subject"] = strings.Repeat("s", 998) }), fieldVector{"/subject", "pattern"}),
		iv("a subject with a run of 921", edited(contentJob(), func(m map[string]any) { m["subject"] = "Hi " + long }), fieldVector{"/subject", "pattern"}),
		iv("a header value with a run of 921", edited(contentJob(), func(m map[string]any) { m["headers"] = map[string]any{"X-A": long + " b"} }), fieldVector{"/headers/X-A", "pattern"}),
		iv("a header name of 77", edited(contentJob(), func(m map[string]any) { m["headers"] = map[string]any{"X-" + strings.Repeat("N", 75): "v"} }), fieldVector{"/headers/X-" + strings.Repeat("N", 75), "propertyNames"}),
		iv("headers only a server writes", edited(contentJob(), func(m map[string]any) {
			m["headers"] = map[string]any{"ARC-Seal": "i=1", "Delivered-To": "a@example.com", "Disposition-Notification-To": "a@example.com", "Errors-To": "a@example.com", "X-Original-To": "a@example.com", "arc-message-signature": "x"}
		}),
			fieldVector{"/headers/ARC-Seal", "reservedHeader"}, fieldVector{"/headers/Delivered-To", "reservedHeader"},
			fieldVector{"/headers/Disposition-Notification-To", "reservedHeader"}, fieldVector{"/headers/Errors-To", "reservedHeader"},
			fieldVector{"/headers/X-Original-To", "reservedHeader"}, fieldVector{"/headers/arc-message-signature", "reservedHeader"}),
		iv("expiresAt before scheduledAt", edited(contentJob(), func(m map[string]any) {
			m["scheduledAt"], m["expiresAt"] = "2026-11-30T12:00:00Z", "2026-11-30T11:59:59.999Z"
		}), fieldVector{"/expiresAt", "after"}),
		iv("expiresAt the same instant as scheduledAt, in another zone", edited(contentJob(), func(m map[string]any) {
			m["scheduledAt"], m["expiresAt"] = "2026-11-30T12:00:00Z", "2026-11-30T14:00:00.000+02:00"
		}), fieldVector{"/expiresAt", "after"}),
		iv("expiresAt a billionth of a second before scheduledAt", edited(contentJob(), func(m map[string]any) {
			m["scheduledAt"], m["expiresAt"] = "2026-11-30T12:00:00.0000000001Z", "2026-11-30T12:00:00Z"
		}), fieldVector{"/expiresAt", "after"}),
		iv("1001 recipients in all", edited(contentJob(), func(m map[string]any) {
			m["to"], m["cc"], m["bcc"] = recipients(1), recipients(500), recipients(500)
		}), fieldVector{"/to", "maxItemsInAll"}),
		iv("a date-time with a space for T", edited(contentJob(), func(m map[string]any) { m["scheduledAt"] = "2026-11-30 12:00:00Z" }), fieldVector{"/scheduledAt", "format"}),
		iv("a date-time with an offset without colon", edited(contentJob(), func(m map[string]any) { m["scheduledAt"] = "2026-11-30T12:00:00+0200" }), fieldVector{"/scheduledAt", "format"}),
		iv("a date-time with a lower-case t, which Go's time.Parse does not read", edited(contentJob(), func(m map[string]any) { m["scheduledAt"] = "2026-11-30t12:00:00Z" }), fieldVector{"/scheduledAt", "pattern"}),
		iv("a leap second, which Go's time.Parse does not read", edited(contentJob(), func(m map[string]any) { m["expiresAt"] = "2026-12-31T23:59:60Z" }), fieldVector{"/expiresAt", "pattern"}),
		iv("a date-time of 65 characters", edited(contentJob(), func(m map[string]any) { m["scheduledAt"] = "2026-11-30T12:00:00." + strings.Repeat("0", 44) + "Z" }), fieldVector{"/scheduledAt", "maxLength"}),
	)
	return out
}

// rawVectors are the job texts whose bytes matter.
func rawVectors() []rawVector {
	bad := outcomeVector{Action: "fail", Code: "queue.invalid_job"}
	refused := func(name string, p []rawPart, errs ...fieldVector) rawVector {
		return rawVector{Name: name, Parts: p, Code: "queue.invalid_job", Errors: errs, Worker: bad}
	}
	head := `{"v":1,"kind":"content","from":"shop@example.com","to":["ada@example.com"],"content":{"text":"Hi"},`
	return append([]rawVector{
		{Name: "a valid job, as bytes", Parts: parts(head + `"subject":"Hi \u00e9 \ud83d\ude00"}`), Valid: true, Worker: outcomeVector{Action: "fail", Code: "queue.hash_mismatch"}},
		refused("a name twice: to", parts(head+`"subject":"Hi","to":["eve@example.net"]}`), fieldVector{"/to", "json"}),
		refused("a name twice, in context", parts(head+`"subject":"Hi","context":{"a":1,"a":2}}`), fieldVector{"/context/a", "json"}),
		refused("a name twice, once escaped", parts(head+`"subject":"Hi","\u0073ubject":"Ho"}`), fieldVector{"/subject", "json"}),
		refused("bytes that are not UTF-8 in the subject", parts(head+"\"subject\":\"Hi \xff\xfe\"}"), fieldVector{"/subject", "json"}),
		refused("an overlong UTF-8 encoding", parts(head+"\"subject\":\"Hi \xc0\xaf\"}"), fieldVector{"/subject", "json"}),
		refused("a UTF-8 encoded surrogate", parts(head+"\"subject\":\"Hi \xed\xa0\x80\"}"), fieldVector{"/subject", "json"}),
		refused("a lone high surrogate", parts(head+`"subject":"Hi \ud800"}`), fieldVector{"/subject", "json"}),
		refused("a lone low surrogate in a name", parts(head+`"subject":"Hi","context":{"\udc00":1}}`), fieldVector{"/context", "json"}),
		refused("an integer beyond 2^53-1", parts(head+`"subject":"Hi","context":{"n":9007199254740993}}`), fieldVector{"/context/n", "json"}),
		refused("2^53 itself", parts(head+`"subject":"Hi","context":{"n":9007199254740992}}`), fieldVector{"/context/n", "json"}),
		refused("a negative integer beyond -(2^53-1)", parts(head+`"subject":"Hi","context":{"n":[-9007199254740993]}}`), fieldVector{"/context/n/0", "json"}),
		refused("a number beyond a double", parts(head+`"subject":"Hi","context":{"n":1e400}}`), fieldVector{"/context/n", "json"}),
		{Name: "2^53-1 and a fraction are numbers", Parts: parts(head + `"subject":"Hi","context":{"n":9007199254740991,"f":0.1,"e":-2.5e-7,"m":-9007199254740991}}`), Valid: true, Worker: outcomeVector{Action: "fail", Code: "queue.hash_mismatch"}},
		refused("nesting 10000 deep in context", []rawPart{part(head + `"subject":"Hi","context":{"a":`), {Base64: base64.StdEncoding.EncodeToString([]byte("[")), Repeat: 10000}, {Base64: base64.StdEncoding.EncodeToString([]byte("]")), Repeat: 10000}, part("}}")}, fieldVector{"", "json"}),
		{Name: "over MaxJobBytes", Parts: []rawPart{part(head + `"subject":"Hi","context":{"pad":"`), {Base64: base64.StdEncoding.EncodeToString([]byte("xxxxxxxx")), Repeat: 2 * rawMaxJobBytes / 8}, part(`"}}`)},
			Code: "queue.invalid_job", Errors: []fieldVector{{"", "maxJobBytes"}}, Worker: bad},
		refused("expiresAt before scheduledAt", parts(head+`"subject":"Hi","scheduledAt":"2026-11-30T12:00:00Z","expiresAt":"2026-11-30T11:00:00Z"}`), fieldVector{"/expiresAt", "after"}),
		refused("maxAttempts 0", parts(head+`"subject":"Hi","maxAttempts":0}`), fieldVector{"/maxAttempts", "minimum"}),
		refused("data after the object", parts(head+`"subject":"Hi"} {}`), fieldVector{"", "json"}),
		refused("not an object", parts(`[1]`), fieldVector{"", "type"}),
	}, append(numberRawVectors(head), depthRawVectors(head)...)...)
}

// numberRawVectors are numbers written with a fraction or an exponent:
// refused when their magnitude is above 2^53-1 and below 1e21, however
// written (strictjson.NumberFault), and an integer field written as an
// integral number (1.0) read as the integer.
func numberRawVectors(head string) []rawVector {
	bad := outcomeVector{Action: "fail", Code: "queue.invalid_job"}
	unsigned := outcomeVector{Action: "fail", Code: "queue.hash_mismatch"}
	var out []rawVector
	for _, n := range []string{"9.007199254740993e15", "1e16", "9007199254740992.0", "9.99e20", "90071992547409930e-1", "-1E16"} {
		out = append(out, rawVector{Name: "a number of magnitude above 2^53-1 and below 1e21: " + n,
			Parts: parts(head + `"subject":"Hi","context":{"n":` + n + `}}`), Code: "queue.invalid_job", Errors: []fieldVector{{"/context/n", "json"}}, Worker: bad})
	}
	for _, n := range []string{"1e21", "-1e21", "9007199254740991.0", "9.007199254740991e15"} {
		out = append(out, rawVector{Name: "a number written with a fraction or an exponent, in range: " + n,
			Parts: parts(head + `"subject":"Hi","context":{"n":` + n + `}}`), Valid: true, Worker: unsigned})
	}
	return append(out,
		rawVector{Name: "v written 1.0", Parts: parts(strings.Replace(head, `"v":1,`, `"v":1.0,`, 1) + `"subject":"Hi"}`), Valid: true, Worker: unsigned},
		rawVector{Name: "maxAttempts written 3.0", Parts: parts(head + `"subject":"Hi","maxAttempts":3.0}`), Valid: true, Worker: unsigned},
	)
}

// depthRawVectors are values at strictjson.MaxDepth (66: the job's object
// at 1, its context at 2, a scalar a level) and one level past it, nested
// in the context as arrays and as objects. The one past it is refused at
// its own pointer.
func depthRawVectors(head string) []rawVector {
	bad := outcomeVector{Action: "fail", Code: "queue.invalid_job"}
	unsigned := outcomeVector{Action: "fail", Code: "queue.hash_mismatch"}
	job := func(inner string) []rawPart { return parts(head + `"subject":"Hi","context":{"d":` + inner + `}}`) }
	arrays := func(n int, in string) string { return strings.Repeat("[", n) + in + strings.Repeat("]", n) }
	objects := func(n int) string { return strings.Repeat(`{"o":`, n-1) + "{}" + strings.Repeat("}", n-1) }
	return []rawVector{
		{Name: "context: 63 arrays holding a number, at level 66", Parts: job(arrays(63, "1")), Valid: true, Worker: unsigned},
		{Name: "context: 64 arrays holding a number, at level 67", Parts: job(arrays(64, "1")), Code: "queue.invalid_job",
			Errors: []fieldVector{{"/context/d" + strings.Repeat("/0", 64), "json"}}, Worker: bad},
		{Name: "context: 64 arrays, the innermost empty at level 66", Parts: job(arrays(64, "")), Valid: true, Worker: unsigned},
		{Name: "context: 65 arrays, the innermost empty at level 67", Parts: job(arrays(65, "")), Code: "queue.invalid_job",
			Errors: []fieldVector{{"/context/d" + strings.Repeat("/0", 64), "json"}}, Worker: bad},
		{Name: "context: 64 objects, the innermost empty at level 66", Parts: job(objects(64)), Valid: true, Worker: unsigned},
		{Name: "context: 65 objects, the innermost empty at level 67", Parts: job(objects(65)), Code: "queue.invalid_job",
			Errors: []fieldVector{{"/context/d" + strings.Repeat("/o", 64), "json"}}, Worker: bad},
	}
}
