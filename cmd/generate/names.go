package main

import (
	"fmt"
	"go/token"
	"strings"
	"unicode"
	"unicode/utf8"
)

// initialisms are the words Go writes in capitals (Go Code Review Comments,
// "Initialisms"), plus the few of this domain.
var initialisms = map[string]string{
	"api": "API", "dkim": "DKIM", "html": "HTML", "http": "HTTP", "https": "HTTPS",
	"id": "ID", "ip": "IP", "json": "JSON", "kid": "KID", "mac": "MAC", "mime": "MIME",
	"smtp": "SMTP", "tls": "TLS", "ttl": "TTL", "uri": "URI", "url": "URL", "uuid": "UUID",
}

// words splits camelCase, snake_case, dotted.names and SCREAMING_CASE into words.
func words(s string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, string(cur))
			cur = cur[:0]
		}
	}
	rs := []rune(s)
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush()
			continue
		}
		if unicode.IsUpper(r) && len(cur) > 0 {
			prev := rs[i-1]
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower) {
				flush()
			}
		}
		cur = append(cur, r)
	}
	flush()
	return out
}

// goName turns a JSON name or a code into an exported Go name:
// messageId -> MessageID, queue.job.started -> QueueJobStarted,
// MAILER_AUDIT_FAILED -> MailerAuditFailed.
func goName(s string) (string, error) {
	var sb strings.Builder
	for _, w := range words(s) {
		lw := strings.ToLower(w)
		if up, ok := initialisms[lw]; ok {
			sb.WriteString(up)
			continue
		}
		r, size := utf8.DecodeRuneInString(lw)
		sb.WriteRune(unicode.ToUpper(r))
		sb.WriteString(lw[size:])
	}
	name := sb.String()
	if name == "" || !token.IsIdentifier(name) || !token.IsExported(name) {
		return "", fmt.Errorf("%q makes no exported Go name (got %q)", s, name)
	}
	return name, nil
}

// plural is the English plural of a type name: Kind -> Kinds, Priority -> Priorities.
func plural(s string) string {
	switch {
	case strings.HasSuffix(s, "y") && len(s) > 1 && !strings.ContainsRune("aeiou", rune(s[len(s)-2])):
		return s[:len(s)-1] + "ies"
	case strings.HasSuffix(s, "s"), strings.HasSuffix(s, "x"), strings.HasSuffix(s, "z"),
		strings.HasSuffix(s, "ch"), strings.HasSuffix(s, "sh"):
		return s + "es"
	}
	return s + "s"
}

// receiver is the short receiver name of a type: Kind -> k.
func receiver(typeName string) string {
	r, _ := utf8.DecodeRuneInString(typeName)
	return string(unicode.ToLower(r))
}

// leadWords are the first words of a description that read on after "Name is".
var leadWords = map[string]bool{"a": true, "an": true, "the": true, "what": true, "when": true, "where": true, "how": true, "which": true, "who": true, "one": true}

// docFor makes a Go doc comment of a schema description: "The subject." on
// Subject gives "Subject is the subject.", "Not sent before..." on
// ScheduledAt gives "ScheduledAt: not sent before...".
func docFor(name, desc string) string {
	desc = strings.TrimSpace(desc)
	if desc == "" {
		return name + " has no description in the schema."
	}
	first, _, _ := strings.Cut(desc, " ")
	if leadWords[strings.ToLower(first)] {
		return name + " is " + lowerFirst(desc)
	}
	return name + ": " + lowerFirst(desc)
}

// lowerFirst lowers the first letter of s unless its first word is an
// initialism or a name (W3C, HMAC, ResolveAttachment).
func lowerFirst(s string) string {
	first, _, _ := strings.Cut(s, " ")
	upper := 0
	for _, r := range first {
		if unicode.IsUpper(r) || unicode.IsDigit(r) {
			upper++
		}
	}
	if upper != 1 {
		return s
	}
	r, size := utf8.DecodeRuneInString(s)
	return string(unicode.ToLower(r)) + s[size:]
}

// comment renders text as a // comment wrapped at about 76 columns, with a
// blank comment line between paragraphs (separated by "\n\n").
func comment(text string) string {
	var lines []string
	for i, para := range strings.Split(text, "\n\n") {
		if i > 0 {
			lines = append(lines, "//")
		}
		line := ""
		for _, w := range strings.Fields(para) {
			if line != "" && len(line)+1+len(w) > 76 {
				lines = append(lines, "// "+line)
				line = ""
			}
			if line != "" {
				line += " "
			}
			line += w
		}
		if line != "" {
			lines = append(lines, "// "+line)
		}
	}
	return strings.Join(lines, "\n")
}
