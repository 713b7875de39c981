package jobv1test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/alexify/mailer/gen/jobv1"
)

const (
	validTemplate = `{"v":1,"kind":"template","template":"reset-password","context":{"user":{"name":"Ada","createdAt":"2024-01-02T03:04:05Z"}},"locale":"pt-BR",
		"from":"Shop <shop@example.com>","to":["ada@example.com","Bob <bob@example.org>"],"cc":["c@example.com"],"replyTo":["help@example.com"],
		"headers":{"X-Campaign":"spring","List-Unsubscribe":"<https://example.com/u>"},
		"messageId":"<abc.123@example.com>","idempotencyKey":"reset-password:42","scheduledAt":"2024-01-02T03:04:05Z","expiresAt":"2024-01-03T03:04:05+02:00",
		"tenantId":"acme","correlationId":"c-1","maxAttempts":5,"priority":"high",
		"hash":"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","kid":"k1","mac":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
		"enqueuedAt":"2024-01-01T00:00:00Z","trace":{"traceparent":"00-0123456789abcdef0123456789abcdef-0123456789abcdef-01","tracestate":"a=b"}}`
	validContent = `{"v":1,"kind":"content","subject":"Your invoice","content":{"html":"<p>Hi</p>","text":"Hi"},
		"from":"shop@example.com","to":["ada@example.com"],
		"attachments":[{"filename":"invoice.pdf","contentType":"application/pdf","content":"aGVsbG8=","disposition":"attachment"},
			{"ref":"invoices/42.pdf","contentId":"logo@example.com","disposition":"inline"}]}`
	validSealed = `{"v":1,"hash":"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","enqueuedAt":"2024-01-01T00:00:00Z",
		"correlationId":"c-1","kid":"k1","mac":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","trace":{"traceparent":"00-0123456789abcdef0123456789abcdef-0123456789abcdef-01"},"enc":"c2VhbGVk"}`
)

// edit decodes a valid job, lets f change it, and encodes it again.
func edit(t testing.TB, job string, f func(m map[string]any)) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(job), &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestValidateValid(t *testing.T) {
	for name, job := range map[string]string{"template": validTemplate, "content": validContent, "sealed": validSealed} {
		t.Run(name, func(t *testing.T) {
			if err := jobv1.Validate([]byte(job)); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			var v any
			if err := json.Unmarshal([]byte(job), &v); err != nil {
				t.Fatal(err)
			}
			if err := jobv1.ValidateValue(v); err != nil {
				t.Fatalf("ValidateValue (float64 numbers): %v", err)
			}
		})
	}
}

type want struct{ Pointer, Path, Rule string }

func TestValidateInvalid(t *testing.T) {
	const badAddress = "not an address <<ada@@example>>"
	tests := []struct {
		name   string
		job    string
		want   []want
		secret string // must appear in no Message
	}{
		{"missing to", edit(t, validContent, func(m map[string]any) { delete(m, "to") }),
			[]want{{"/to", "to", "required"}}, ""},
		{"bad mailbox in to[1]", edit(t, validContent, func(m map[string]any) { m["to"] = []any{"ada@example.com", badAddress} }),
			[]want{{"/to/1", "to[1]", "format"}}, badAddress},
		{"CR LF in subject", edit(t, validContent, func(m map[string]any) { m["subject"] = "Hello\r\nBcc: eve@example.com" }),
			[]want{{"/subject", "subject", "pattern"}}, "eve@example.com"},
		{"unknown top-level field", edit(t, validContent, func(m map[string]any) { m["extra"] = "secret-token-1" }),
			[]want{{"/extra", "extra", "additionalProperties"}}, "secret-token-1"},
		{"template job without template", edit(t, validTemplate, func(m map[string]any) { delete(m, "template") }),
			[]want{{"/template", "template", "required"}}, ""},
		{"content job without subject and content", edit(t, validContent, func(m map[string]any) { delete(m, "subject"); delete(m, "content") }),
			[]want{{"/content", "content", "required"}, {"/subject", "subject", "required"}}, ""},
		{"kind sms", edit(t, validContent, func(m map[string]any) { m["kind"] = "sms-secret" }),
			[]want{{"/kind", "kind", "enum"}}, "sms-secret"},
		{"v 2", edit(t, validContent, func(m map[string]any) { m["v"] = 2 }),
			[]want{{"/v", "v", "const"}}, ""},
		{"reserved header Message-ID", edit(t, validTemplate, func(m map[string]any) {
			m["headers"] = map[string]any{"Message-ID": "<x@y>", "X-Ok": "fine"}
		}), []want{{"/headers/Message-ID", "headers.Message-ID", "reservedHeader"}}, "<x@y>"},
		{"reserved header prefix content-type", edit(t, validTemplate, func(m map[string]any) {
			m["headers"] = map[string]any{"content-type": "text/plain", "CONTENT-Transfer-Encoding": "7bit"}
		}), []want{
			{"/headers/CONTENT-Transfer-Encoding", "headers.CONTENT-Transfer-Encoding", "reservedHeader"},
			{"/headers/content-type", "headers.content-type", "reservedHeader"},
		}, "text/plain"},
		{"header name with a colon", edit(t, validTemplate, func(m map[string]any) { m["headers"] = map[string]any{"X-A:b": "v"} }),
			[]want{{"/headers/X-A:b", `headers["X-A:b"]`, "propertyNames"}}, ""},
		{"header value with LF", edit(t, validTemplate, func(m map[string]any) { m["headers"] = map[string]any{"X-A": "v\nBcc: eve@example.com"} }),
			[]want{{"/headers/X-A", "headers.X-A", "pattern"}}, "eve@example.com"},
		{"attachment with ref and content", edit(t, validContent, func(m map[string]any) {
			m["attachments"] = []any{map[string]any{"ref": "invoices/42.pdf", "content": "aGVsbG8=", "filename": "a.pdf"}}
		}), []want{{"/attachments/0/content", "attachments[0].content", "not"}}, "invoices/42.pdf"},
		{"attachment with neither ref nor content", edit(t, validContent, func(m map[string]any) {
			m["attachments"] = []any{map[string]any{"filename": "a.pdf"}}
		}), []want{{"/attachments/0/content", "attachments[0].content", "required"}}, ""},
		{"attachment content not base64", edit(t, validContent, func(m map[string]any) {
			m["attachments"] = []any{map[string]any{"filename": "a.pdf", "content": "aGVsbG8"}}
		}), []want{{"/attachments/0/content", "attachments[0].content", "contentEncoding"}}, "aGVsbG8"},
		{"sealed job with to", edit(t, validSealed, func(m map[string]any) { m["to"] = []any{"ada@example.com"} }),
			[]want{{"/to", "to", "additionalProperties"}}, "ada@example.com"},
		{"sealed job without hash", edit(t, validSealed, func(m map[string]any) { delete(m, "hash") }),
			[]want{{"/hash", "hash", "required"}}, ""},
		{"bad date-time", edit(t, validContent, func(m map[string]any) { m["scheduledAt"] = "tomorrow-ish" }),
			[]want{{"/scheduledAt", "scheduledAt", "format"}}, "tomorrow-ish"},
		{"to of the wrong type", edit(t, validContent, func(m map[string]any) { m["to"] = "ada@example.com" }),
			[]want{{"/to", "to", "type"}}, "ada@example.com"},
		{"not an object", `["x"]`, []want{{"", "", "type"}}, ""},
		{"not JSON", `{"v":1,`, []want{{"", "", "json"}}, ""},
		{"two values", validContent + ` {}`, []want{{"", "", "json"}}, ""},
		{"many at once", `{"v":1,"kind":"content","from":"x","to":[],"extra":1}`, []want{
			{"/content", "content", "required"},
			{"/extra", "extra", "additionalProperties"},
			{"/from", "from", "format"}, // the library stops at a failed format: no minLength
			{"/subject", "subject", "required"},
			{"/to", "to", "minItems"},
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := jobv1.Validate([]byte(tt.job))
			var verr *jobv1.ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("Validate = %v, want a *ValidationError", err)
			}
			var got []want
			for _, fe := range verr.Errors {
				got = append(got, want{fe.Pointer, fe.Path, fe.Rule})
				if fe.Message == "" {
					t.Errorf("%s: empty message", fe.Pointer)
				}
				if tt.secret != "" && strings.Contains(fe.Message, tt.secret) {
					t.Errorf("%s: the message %q quotes the bad value", fe.Pointer, fe.Message)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s\n%v", diff, verr)
			}
			if tt.secret != "" && strings.Contains(err.Error(), tt.secret) {
				t.Errorf("Error() %q quotes the bad value", err.Error())
			}
		})
	}
}

func TestValidationErrorMessage(t *testing.T) {
	err := jobv1.Validate([]byte(`{"v":1,"kind":"content","from":"a@example.com","to":["b@example.com"],"extra":1,"more":2}`))
	want := "jobv1: invalid job: content: is required (required) (and 3 more)"
	if err == nil || err.Error() != want {
		t.Errorf("Error() = %v, want %q", err, want)
	}
	err = jobv1.Validate([]byte(`{"v":2,"kind":"content","subject":"s","content":{"text":"t"},"from":"a@example.com","to":["b@example.com"]}`))
	want = "jobv1: invalid job: v: must be 1 (const)"
	if err == nil || err.Error() != want {
		t.Errorf("Error() = %v, want %q", err, want)
	}
}

func TestMessages(t *testing.T) {
	err := jobv1.Validate([]byte(edit(t, validContent, func(m map[string]any) { m["to"] = []any{"x@example.com", "nope"} })))
	var verr *jobv1.ValidationError
	if !errors.As(err, &verr) {
		t.Fatal(err)
	}
	want := []jobv1.FieldError{{Pointer: "/to/1", Path: "to[1]", Rule: "format", Message: "is not a valid mailbox (RFC 5322)"}}
	if diff := cmp.Diff(want, verr.Errors); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestSchemaJSON(t *testing.T) {
	want, err := os.ReadFile("../../../schema/job.v1.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(jobv1.SchemaJSON(), want) {
		t.Error("SchemaJSON() differs from schema/job.v1.json")
	}
	b := jobv1.SchemaJSON()
	b[0] = 'x'
	if jobv1.SchemaJSON()[0] == 'x' {
		t.Error("SchemaJSON shares its bytes")
	}
}

func TestEnums(t *testing.T) {
	if diff := cmp.Diff([]jobv1.Kind{jobv1.KindTemplate, jobv1.KindContent}, jobv1.Kinds()); diff != "" {
		t.Error(diff)
	}
	if diff := cmp.Diff([]jobv1.Priority{jobv1.PriorityHigh, jobv1.PriorityNormal, jobv1.PriorityLow}, jobv1.Priorities()); diff != "" {
		t.Error(diff)
	}
	if diff := cmp.Diff([]jobv1.Disposition{jobv1.DispositionAttachment, jobv1.DispositionInline}, jobv1.Dispositions()); diff != "" {
		t.Error(diff)
	}
	if !jobv1.KindContent.Valid() || jobv1.Kind("sms").Valid() || jobv1.Priority("").Valid() || !jobv1.DispositionInline.Valid() {
		t.Error("Valid is wrong")
	}
}

func TestDecode(t *testing.T) {
	job, sealed, err := jobv1.Decode([]byte(validContent))
	if err != nil || sealed != nil || job == nil {
		t.Fatalf("Decode(content) = %v, %v, %v", job, sealed, err)
	}
	if job.Kind != jobv1.KindContent || job.Subject != "Your invoice" || job.Content.HTML != "<p>Hi</p>" ||
		string(job.Attachments[0].Content) != "hello" || job.Attachments[1].Disposition != jobv1.DispositionInline {
		t.Errorf("Decode(content) = %+v", job)
	}
	job, _, err = jobv1.Decode([]byte(validTemplate))
	if err != nil {
		t.Fatal(err)
	}
	if job.ScheduledAt == nil || job.ScheduledAt.Year() != 2024 || job.Trace.Traceparent == "" || job.TenantID != "acme" ||
		job.MaxAttempts != 5 || job.Priority != jobv1.PriorityHigh || job.Headers["X-Campaign"] != "spring" {
		t.Errorf("Decode(template) = %+v", job)
	}
	job, sealed, err = jobv1.Decode([]byte(validSealed))
	if err != nil || job != nil || sealed == nil || sealed.Enc != "c2VhbGVk" || sealed.KID != "k1" {
		t.Fatalf("Decode(sealed) = %v, %+v, %v", job, sealed, err)
	}
	for _, bad := range []string{`null`, `[]`, `{"v":1,"extra":1}`, `{"enc":"x","to":["a@b.c"]}`, validContent + `{}`} {
		if _, _, err := jobv1.Decode([]byte(bad)); err == nil {
			t.Errorf("Decode(%s) succeeded", bad)
		}
	}
}

// resolves reports whether ptr is a JSON pointer into v; a missing final
// property counts when allowMissing.
func resolves(v any, ptr string, allowMissing bool) bool {
	if ptr == "" {
		return true
	}
	if !strings.HasPrefix(ptr, "/") {
		return false
	}
	toks := strings.Split(ptr[1:], "/")
	for i, tok := range toks {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		last := i == len(toks)-1
		switch c := v.(type) {
		case map[string]any:
			next, ok := c[tok]
			if !ok {
				return last && allowMissing
			}
			v = next
		case []any:
			n, err := strconv.Atoi(tok)
			if err != nil || n < 0 || n >= len(c) {
				return false
			}
			v = c[n]
		default:
			return false
		}
	}
	return true
}

func FuzzValidate(f *testing.F) {
	for _, s := range []string{validTemplate, validContent, validSealed, `{}`, `{"v":1,"headers":{"a~/b":"x"}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := jobv1.Validate(data)
		if err == nil {
			return
		}
		var verr *jobv1.ValidationError
		if !errors.As(err, &verr) {
			t.Fatalf("Validate = %T %v, want a *ValidationError", err, err)
		}
		if len(verr.Errors) == 0 {
			t.Fatal("a ValidationError without errors")
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) != nil {
			for _, fe := range verr.Errors {
				if fe.Pointer != "" || fe.Rule != "json" {
					t.Fatalf("not JSON, yet %+v", fe)
				}
			}
			return
		}
		for _, fe := range verr.Errors {
			// A name twice is told at its first object, which a decoder
			// that keeps the last value of a name may have replaced: the
			// pointer is then in the text, not in encoding/json's tree.
			twice := fe.Rule == "json" && strings.Contains(fe.Message, "appears twice")
			if !twice && !resolves(v, fe.Pointer, fe.Rule == "required") {
				t.Errorf("%+v: the pointer is not in the input", fe)
			}
			if fe.Rule == "" || fe.Message == "" {
				t.Errorf("%+v: no rule or message", fe)
			}
		}
	})
}

func TestValidateValueNotJSON(t *testing.T) {
	err := jobv1.ValidateValue(map[string]any{"v": struct{}{}, "kind": "content"})
	var verr *jobv1.ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("ValidateValue = %v", err)
	}
	found := false
	for _, fe := range verr.Errors {
		if fe.Pointer == "/v" && fe.Rule == "type" {
			found = true
		}
	}
	if !found {
		t.Errorf("no type error at /v: %v", verr.Errors)
	}
}
