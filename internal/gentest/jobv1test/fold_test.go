package jobv1test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/mail"
)

// maxRun is the longest run of characters without a space that the schema
// takes in a subject or a header value (schema/job.v1.json): a header's
// name (at most 76 characters), ": " and the run fit RFC 5322's 998.
const maxRun = 920

// TestLongestAcceptedFieldsFold builds, with go-mail (mail.Message.Bytes,
// as the worker does), messages whose subject and header fields are the
// longest the schema accepts, and checks that every line of the message is
// at most 998 octets (RFC 5322 section 2.1.1), the CRLF not counted.
func TestLongestAcceptedFieldsFold(t *testing.T) {
	run := strings.Repeat("a", maxRun)
	name76 := "X-" + strings.Repeat("N", 74)
	cases := []struct {
		name    string
		subject string
		headers map[string]string
	}{
		{"one run", run, map[string]string{name76: run}},
		{"a word, then the run", "x " + run, map[string]string{name76: "x " + run}},
		{"runs to the length limit", run + " " + strings.Repeat("b", 998-maxRun-1), map[string]string{"X-A": strings.Repeat("c", 77) + " " + run}},
		{"a tab in the run", "\t" + strings.Repeat("d", maxRun-1), map[string]string{"X-Tab": strings.Repeat("e", maxRun-1) + "\t"}},
		{"spaces around", " " + run + " ", map[string]string{name76: "  " + run + "  " + strings.Repeat(" ", 998-maxRun-4)}},
		{"short words", strings.Repeat("a b ", 250)[:998], map[string]string{"X-B": strings.Repeat("ab ", 333)[:998]}},
		{"not ASCII", "é" + strings.Repeat("ü", maxRun-1), map[string]string{name76: strings.Repeat("€", maxRun)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			headers := map[string]any{}
			for k, v := range tc.headers {
				headers[k] = v
			}
			job := map[string]any{
				"v": 1, "kind": "content", "subject": tc.subject, "content": map[string]any{"text": "Hi"},
				"from": "shop@example.com", "to": []any{"ada@example.com"}, "headers": headers,
				"messageId": "<" + strings.Repeat("m", 200) + "@" + strings.Repeat("d", 46) + ">",
			}
			data, err := json.Marshal(job)
			if err != nil {
				t.Fatal(err)
			}
			if err := jobv1.Validate(data); err != nil {
				t.Fatalf("the schema refuses a value it should take: %v", err)
			}
			msg := &mail.Message{
				MessageID: job["messageId"].(string), Date: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC),
				From: "shop@example.com", To: []string{"ada@example.com"}, Subject: tc.subject, Text: "Hi", Headers: tc.headers,
			}
			b, err := msg.Bytes()
			if err != nil {
				t.Fatal(err)
			}
			for i, line := range bytes.Split(b, []byte("\r\n")) {
				if len(line) > 998 {
					t.Errorf("line %d is %d octets, more than 998: %.40q...", i+1, len(line), line)
				}
			}
		})
	}
}

// TestUnfoldableFieldsRefused: one character more in the run and the
// schema refuses the subject or the header value, at its pointer.
func TestUnfoldableFieldsRefused(t *testing.T) {
	long := strings.Repeat("a", maxRun+1)
	for _, tc := range []struct {
		name, ptr string
		edit      func(m map[string]any)
	}{
		{"subject", "/subject", func(m map[string]any) { m["subject"] = "Hi " + long }},
		{"a 998-character subject without a space", "/subject", func(m map[string]any) { m["subject"] = strings.Repeat("s", 998) }},
		{"header value", "/headers/X-A", func(m map[string]any) { m["headers"] = map[string]any{"X-A": long + " b"} }},
		{"header name of 77", "/headers/X-" + strings.Repeat("N", 75), func(m map[string]any) { m["headers"] = map[string]any{"X-" + strings.Repeat("N", 75): "v"} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := jobv1.Validate([]byte(edit(t, validContent, tc.edit)))
			var ve *jobv1.ValidationError
			if !errors.As(err, &ve) || len(ve.Errors) != 1 || ve.Errors[0].Pointer != tc.ptr {
				t.Fatalf("Validate = %v, want one error at %s", err, tc.ptr)
			}
		})
	}
}

// TestLongestAcceptedFilenamesFit builds messages whose attachments carry
// the longest file names the schema accepts (255 printable ASCII
// characters, or 40 characters of which some are not ASCII, the widest
// being four-byte characters, which the worker writes as encoded words),
// with the longest content type, inline and not, and checks that every line
// is at most 998 octets; one character more is refused.
func TestLongestAcceptedFilenamesFit(t *testing.T) {
	ct := "application/" + strings.Repeat("x", 255-len("application/"))
	for _, name := range []string{
		strings.Repeat("a", 255), strings.Repeat(`"`, 255), strings.Repeat("=?", 127) + "=", strings.Repeat(";", 255),
		strings.Repeat("😀", 40), strings.Repeat("€", 40), "a" + strings.Repeat("ü", 39), strings.Repeat("\u00a0", 40),
	} {
		for _, inline := range []bool{false, true} {
			disposition := "attachment"
			if inline {
				disposition = "inline"
			}
			job := edit(t, validContent, func(m map[string]any) {
				m["attachments"] = []any{map[string]any{"filename": name, "contentType": ct, "content": "aGk=", "disposition": disposition}}
			})
			if err := jobv1.Validate([]byte(job)); err != nil {
				t.Fatalf("the schema refuses the file name %.12q...: %v", name, err)
			}
			msg := &mail.Message{
				MessageID: "<m@example.com>", Date: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC),
				From: "shop@example.com", To: []string{"ada@example.com"}, Subject: "Hi", Text: "Hi", HTML: "<p>Hi</p>",
				Attachments: []mail.Attachment{{Filename: name, ContentType: ct, Data: []byte("hi"), Inline: inline,
					ContentID: strings.Repeat("c", 200) + "@" + strings.Repeat("d", 49)}},
			}
			b, err := msg.Bytes()
			if err != nil {
				t.Fatal(err)
			}
			for i, line := range bytes.Split(b, []byte("\r\n")) {
				if len(line) > 998 {
					t.Errorf("file name %.12q... (inline %t): line %d is %d octets, more than 998", name, inline, i+1, len(line))
				}
			}
		}
	}
	for _, name := range []string{strings.Repeat("a", 256), strings.Repeat("é", 41), strings.Repeat("a", 200) + "é"} {
		job := edit(t, validContent, func(m map[string]any) {
			m["attachments"] = []any{map[string]any{"filename": name, "content": "aGk="}}
		})
		if err := jobv1.Validate([]byte(job)); err == nil {
			t.Errorf("the schema takes the file name %.12q... of %d characters", name, len([]rune(name)))
		}
	}
}
