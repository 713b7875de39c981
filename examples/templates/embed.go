// Package templates holds the example mail templates of the demo
// (cmd/mailq demo) and of tests, in the layout that
// [github.com/alexify/mailer/render.New] reads:
//
//	reset-password/{en,de}/{subject.txt,body.html,body.txt}
//	welcome/en/{subject.txt,body.html,body.txt}
//	_partials/footer.{html,txt}
//
// reset-password uses the context values name and url; welcome uses name
// and logoCid (the Content-ID of an inline logo, <img src="cid:...">); both
// take an optional product (default "Acme").
package templates

import "embed"

// FS holds every example template, with _partials, at its root: pass it to
// render.New as it is.
//
//go:embed */*/*.html */*/*.txt _partials/*.html _partials/*.txt
var FS embed.FS
