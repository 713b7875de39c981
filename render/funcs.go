package render

import (
	"strings"
	texttemplate "text/template"
)

// builtinFuncs are the helpers every template has; see the package
// documentation. None reads the clock or draws random numbers.
var builtinFuncs = map[string]any{
	"upper":   strings.ToUpper,
	"lower":   strings.ToLower,
	"trim":    strings.TrimSpace,
	"default": defaultFunc,
}

// defaultFunc returns v when it is true in the template's sense, else d.
func defaultFunc(d, v any) any {
	if truth, ok := texttemplate.IsTrue(v); ok && truth {
		return v
	}
	return d
}
