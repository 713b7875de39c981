package render_test

import (
	"context"
	"errors"
	"fmt"
	"testing/fstest"

	"github.com/alexify/mailer/render"
)

// Templates in a file system: here an fstest.MapFS, in a program a folder
// (os.DirFS("templates")) or an embed.FS. A locale missing from the
// templates falls back to the default one; the HTML body escapes the
// context, the text body does not.
func ExampleNew() {
	fsys := fstest.MapFS{
		"_partials/footer.txt":   {Data: []byte(`-- {{.product}}`)},
		"welcome/en/subject.txt": {Data: []byte(`Welcome to {{.product}}, {{.name}}`)},
		"welcome/en/body.html":   {Data: []byte(`<p>Welcome, {{.name}}!</p>`)},
		"welcome/en/body.txt":    {Data: []byte("Welcome, {{.name}}!\n{{template \"footer\" .}}")},
		"welcome/de/subject.txt": {Data: []byte(`Willkommen bei {{.product}}, {{.name}}`)},
		"welcome/de/body.txt":    {Data: []byte("Willkommen, {{.name}}!\n{{template \"footer\" .}}")},
	}
	r, err := render.New(fsys, render.Options{DefaultLocale: "en"})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	for _, locale := range []string{"de-AT", "fr"} {
		res, err := r.Render(ctx, render.Request{
			Template: "welcome",
			Locale:   locale,
			Context:  map[string]any{"name": "<Ada>", "product": "Acme"},
		})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s -> %s\n", locale, res.Locale)
		fmt.Println("subject:", res.Subject)
		fmt.Printf("html: %q\n", res.HTML)
		fmt.Printf("text: %q\n", res.Text)
	}
	// Output:
	// de-AT -> de
	// subject: Willkommen bei Acme, <Ada>
	// html: ""
	// text: "Willkommen, <Ada>!\n-- Acme"
	// fr -> en
	// subject: Welcome to Acme, <Ada>
	// html: "<p>Welcome, &lt;Ada&gt;!</p>"
	// text: "Welcome, <Ada>!\n-- Acme"
}

// A value the template uses and the context lacks is a render failure (an
// *Error, which fails the job at once), not an empty string. Its message
// names the template, the locale and the part, never the template's text or
// a value of the context.
func ExampleError() {
	r, err := render.New(fstest.MapFS{
		"reset-password/en/body.txt": {Data: []byte(`Hi {{.name}}, open {{.url}}.`)},
	}, render.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = r.Render(context.Background(), render.Request{
		Template: "reset-password",
		Context:  map[string]any{"name": "Ada"}, // no "url"
	})
	var re *render.Error
	if errors.As(err, &re) {
		fmt.Println(re.Part, re.Where)
	}
	fmt.Println(err)
	// Output:
	// text reset-password/en/body.txt:1
	// render: template "reset-password" part text at reset-password/en/body.txt:1: failed to render
}
