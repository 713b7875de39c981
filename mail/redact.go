package mail

import (
	"regexp"
	"strings"
)

// AddressPlaceholder replaces each address Redact removes.
const AddressPlaceholder = "<address>"

// addressToken is a run of characters with an '@' inside, delimited by
// white space, angle brackets, quotes, parentheses, square brackets, commas
// or semicolons: what a server echoes of an address ("<ada@example.com>:",
// "ada@example.com...", "to=ada@example.com").
// A quoted local part ("john doe"@example.com) and an at sign written %40 (a
// URL's) count too.
var addressToken = regexp.MustCompile(`<?(?:"[^"\r\n]*"|[^\s<>"'(),;\[\]])*(?:@|%40)[^\s<>"'(),;\[\]]*>?`)

// Redact returns s with every address replaced by AddressPlaceholder and its
// line breaks replaced by spaces, for a Receipt's Reason or a log: servers
// echo the addresses they refuse, and no address may reach a log above debug
// (docs/architecture.md). Anything with an '@' inside counts as an
// address. A trailing '.', ',' or ':' after the address is kept.
func Redact(s string) string {
	s = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
	if !strings.Contains(s, "@") && !strings.Contains(s, "%40") {
		return s
	}
	return addressToken.ReplaceAllStringFunc(s, func(tok string) string {
		trail := ""
		for len(tok) > 0 && strings.ContainsRune(".:", rune(tok[len(tok)-1])) {
			trail = tok[len(tok)-1:] + trail
			tok = tok[:len(tok)-1]
		}
		return AddressPlaceholder + trail
	})
}
