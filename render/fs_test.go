package render_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/alexify/mailer/examples/templates"
	"github.com/alexify/mailer/render"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func file(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }

func mustNew(t *testing.T, fsys fs.FS, opts render.Options) *render.FS {
	t.Helper()
	r, err := render.New(fsys, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return r
}

const secret = "s3cr3t-t0ken-9f8e"

func TestRenderExamples(t *testing.T) {
	t.Parallel()
	r := mustNew(t, templates.FS, render.Options{})
	tests := []struct {
		name string
		req  render.Request
		// want holds the subject and the locale exactly, and substrings of
		// the bodies.
		subject, locale string
		html, text      []string
	}{
		{
			name:    "reset-password en",
			req:     render.Request{Template: "reset-password", Locale: "en", Context: map[string]any{"name": "Ada", "url": "https://example.com/reset?t=a&b=1"}},
			subject: "Reset your password", locale: "en",
			html: []string{"<p>Hi Ada,</p>", `<a href="https://example.com/reset?t=a&amp;b=1">`, "Acme &middot; Example Street"},
			text: []string{"Hi Ada,", "https://example.com/reset?t=a&b=1", "--\nAcme · Example Street"},
		},
		{
			name:    "reset-password de-AT falls back to de",
			req:     render.Request{Template: "reset-password", Locale: "de-AT", Context: map[string]any{"name": "Jörg", "url": "https://example.com/r", "product": "Beispiel"}},
			subject: "Passwort zurücksetzen", locale: "de",
			html: []string{"<p>Hallo Jörg,</p>", "Beispiel &middot;"},
			text: []string{"Hallo Jörg,", "Beispiel ·"},
		},
		{
			name:    "html escapes the context",
			req:     render.Request{Template: "reset-password", Locale: "en", Context: map[string]any{"name": "<b>Eve</b>", "url": "javascript:alert(1)"}},
			subject: "Reset your password", locale: "en",
			html: []string{"Hi &lt;b&gt;Eve&lt;/b&gt;,", `href="#ZgotmplZ"`},
			text: []string{"Hi <b>Eve</b>,"},
		},
		{
			name:    "welcome with an inline image",
			req:     render.Request{Template: "welcome", Locale: "fr", Context: map[string]any{"name": "Ada", "logoCid": "logo@mail.example.com"}},
			subject: "Welcome to Acme, Ada", locale: "en",
			html: []string{`<img src="cid:logo@mail.example.com" alt="Acme"`, "<h1>Welcome, Ada!</h1>"},
			text: []string{"Welcome, Ada!", "Acme ·"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := r.Render(context.Background(), tt.req)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if diff := cmp.Diff([]string{tt.subject, tt.locale}, []string{res.Subject, res.Locale}); diff != "" {
				t.Errorf("subject, locale (-want +got):\n%s", diff)
			}
			for _, s := range tt.html {
				if !strings.Contains(res.HTML, s) {
					t.Errorf("HTML lacks %q:\n%s", s, res.HTML)
				}
			}
			for _, s := range tt.text {
				if !strings.Contains(res.Text, s) {
					t.Errorf("Text lacks %q:\n%s", s, res.Text)
				}
			}
		})
	}
}

func TestRenderParts(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"_partials/sig.html":      file(`<i>{{.from}}</i>`),
		"_partials/more.txt":      file(`{{define "sig"}}-- {{.from | upper}}{{end}}{{define "hi"}}Hi{{end}}`),
		"all/en/subject.txt":      file("  \n Hello {{.name}}  \n"),
		"all/en/body.html":        file(`<p>{{.name}}</p>{{template "sig" .}}`),
		"all/en/body.txt":         file(`{{template "hi"}} {{.name | lower}} {{template "sig" .}}`),
		"html/en/body.html":       file(`<p>{{default "you" .name}}</p>`),
		"text/en/body.txt":        file(`{{trim .name}}`),
		"nosubj/en/body.txt":      file(`x`),
		"onlysubj/en/subject.txt": file(`x`),
	}
	r := mustNew(t, fsys, render.Options{Funcs: map[string]any{"twice": func(s string) string { return s + s }}})
	data := map[string]any{"name": "Ada", "from": "Team"}
	tests := []struct {
		template string
		ctx      map[string]any
		want     render.Result
	}{
		{"all", data, render.Result{Subject: "Hello Ada", HTML: "<p>Ada</p><i>Team</i>", Text: "Hi ada -- TEAM", Locale: "en"}},
		{"html", map[string]any{"name": ""}, render.Result{HTML: "<p>you</p>", Locale: "en"}},
		{"html", map[string]any{"name": "Bo"}, render.Result{HTML: "<p>Bo</p>", Locale: "en"}},
		{"text", map[string]any{"name": "  Cy \n"}, render.Result{Text: "Cy", Locale: "en"}},
		{"nosubj", nil, render.Result{Text: "x", Locale: "en"}},
	}
	for _, tt := range tests {
		t.Run(tt.template, func(t *testing.T) {
			got, err := r.Render(context.Background(), render.Request{Template: tt.template, Context: tt.ctx})
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	// A locale with a subject and no body is no template.
	_, err := r.Render(context.Background(), render.Request{Template: "onlysubj"})
	var re *render.Error
	if !errors.As(err, &re) || !re.NotFound {
		t.Errorf("onlysubj: got %v, want NotFound", err)
	}
}

func TestLocaleFallback(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"t/pt-BR/body.txt":       file("pt-BR"),
		"t/pt/body.txt":          file("pt"),
		"t/zh/body.txt":          file("zh"),
		"t/en/body.txt":          file("en"),
		"t/fr/subject.txt":       file("no body here"),
		"t/de/body.txt":          file("de"),
		"u/en-gb/body.txt":       file("en-gb"),
		"onlyde/de/body.txt":     file("de"),
		"en-default/en/body.txt": file("en"),
	}
	tests := []struct {
		name, template, locale, def string
		want                        string
	}{
		{"exact", "t", "pt-BR", "", "pt-BR"},
		{"exact, other case", "t", "PT-br", "", "pt-BR"},
		{"underscore", "t", "pt_BR", "", "pt-BR"},
		{"base language", "t", "pt-PT", "", "pt"},
		{"subtags dropped one by one", "t", "zh-Hant-TW", "", "zh"},
		{"default", "t", "es", "", "en"},
		{"empty is the default", "t", "", "", "en"},
		{"a locale without body is skipped", "t", "fr", "", "en"},
		{"DefaultLocale option", "t", "es", "de", "de"},
		{"default locale case-insensitive", "u", "", "EN-GB", "en-gb"},
		{"default's base", "en-default", "es", "en-US", "en"},
		{"path-like locale", "t", "../u", "", "en"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustNew(t, fsys, render.Options{DefaultLocale: tt.def})
			got, err := r.Render(context.Background(), render.Request{Template: tt.template, Locale: tt.locale})
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if diff := cmp.Diff(render.Result{Text: tt.want, Locale: tt.want}, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestNotFound(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"onlyde/de/body.txt": file("de"),
		"_partials/x.txt":    file("x"),
	}
	r := mustNew(t, fsys, render.Options{})
	for _, req := range []render.Request{
		{Template: "missing", Locale: "en"},
		{Template: "onlyde", Locale: "fr"},
		{Template: "onlyde"},
		{Template: "_partials"},
		{Template: "../etc"},
		{Template: "a/b"},
		{Template: ""},
	} {
		_, err := r.Render(context.Background(), req)
		want := &render.Error{Template: req.Template, Locale: req.Locale, NotFound: true}
		if diff := cmp.Diff(want, err, cmpopts.IgnoreFields(render.Error{}, "Detail")); diff != "" {
			t.Errorf("%+v (-want +got):\n%s", req, diff)
		}
		if render.IsLoadError(err) || errors.Is(err, render.ErrTimeout) {
			t.Errorf("%+v: %v is a load error or a timeout", req, err)
		}
	}
}

func TestBroken(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"_partials/bad.html":       file("<p>\n{{.secret.nope}}</p>"),
		"parse/en/body.html":       file("<p>\n\n{{if .x}}" + secret + "</p>"),
		"exec/en/body.html":        file("<p>\n{{.name}}\n{{index .list 5}}</p>"),
		"helper/en/body.txt":       file("a\n{{fail .secret}}"),
		"missing/en/body.txt":      file("Hi\n{{.name}} {{.nope}}"),
		"nested/en/body.txt":       file("{{.user.email}}"),
		"subjparse/en/subject.txt": file("{{.x"),
		"subjparse/en/body.txt":    file("x"),
		"subjnl/en/subject.txt":    file("Hi {{.secret}}\nBcc: x@example.com"),
		"subjnl/en/body.txt":       file("x"),
		"subjcr/en/subject.txt":    file("Hi {{.crlf}}"),
		"subjcr/en/body.txt":       file("x"),
		"partial/en/body.html":     file(`{{template "bad" .}}`),
		"escape/en/body.html":      file(`<a href="{{.url}}`),
		"empty/en/body.html":       file("  {{.name}}\n"),
		"func/en/body.txt":         file("{{nosuchfunc .x}}"),
	}
	r := mustNew(t, fsys, render.Options{Funcs: map[string]any{
		"fail": func(s string) (string, error) { return "", fmt.Errorf("cannot use %s", s) },
	}})
	ctx := map[string]any{"name": "", "list": []any{secret}, "secret": secret, "x": true, "url": "https://x", "user": map[string]any{"name": secret}, "crlf": secret + "\r\nBcc: evil@example.com"}
	tests := []struct {
		template string
		want     render.Error // Template, Locale and Detail left out
		detail   string       // a substring of Detail
	}{
		{"parse", render.Error{Part: "html", Where: "parse/en/body.html:3"}, "unexpected EOF"},
		{"exec", render.Error{Part: "html", Where: "exec/en/body.html:3"}, "index out of range"},
		{"helper", render.Error{Part: "text", Where: "helper/en/body.txt:2"}, "cannot use " + secret},
		{"missing", render.Error{Part: "text", Where: "missing/en/body.txt:2"}, `map has no entry for key "nope"`},
		{"nested", render.Error{Part: "text", Where: "nested/en/body.txt:1"}, `map has no entry for key "email"`},
		{"subjparse", render.Error{Part: "subject", Where: "subjparse/en/subject.txt:1"}, "unclosed action"},
		{"subjnl", render.Error{Part: "subject", Where: "subjnl/en/subject.txt"}, "line break"},
		{"subjcr", render.Error{Part: "subject", Where: "subjcr/en/subject.txt"}, "line break"},
		{"partial", render.Error{Part: "html", Where: "_partials/bad.html:2"}, "nope"},
		{"escape", render.Error{Part: "html", Where: "escape/en/body.html"}, "html/template"},
		{"empty", render.Error{Part: "html", Where: "empty/en/body.html"}, "empty"},
		{"func", render.Error{Part: "text", Where: "func/en/body.txt:1"}, "not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.template, func(t *testing.T) {
			_, err := r.Render(context.Background(), render.Request{Template: tt.template, Locale: "en-US", Context: ctx})
			var got *render.Error
			if !errors.As(err, &got) {
				t.Fatalf("got %T %v, want *Error", err, err)
			}
			tt.want.Template, tt.want.Locale = tt.template, "en-US"
			if diff := cmp.Diff(&tt.want, got, cmpopts.IgnoreFields(render.Error{}, "Detail")); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if !strings.Contains(got.Detail, tt.detail) {
				t.Errorf("Detail %q lacks %q", got.Detail, tt.detail)
			}
			msg := err.Error()
			for _, leak := range []string{secret, got.Detail, "{{", "<p>", "nope", "email"} {
				if strings.Contains(msg, leak) {
					t.Errorf("Error() %q holds %q", msg, leak)
				}
			}
			if render.IsLoadError(err) || errors.Is(err, render.ErrTimeout) {
				t.Errorf("%v is a load error or a timeout", err)
			}
		})
	}
}

// failFS fails Open of the names fail reports an error for.
type failFS struct {
	fs.FS
	fail func(name string) error
}

func (f failFS) Open(name string) (fs.File, error) {
	if err := f.fail(name); err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return f.FS.Open(name)
}

func TestLoadError(t *testing.T) {
	t.Parallel()
	down := errors.New("store down")
	base := fstest.MapFS{
		"t/en/body.html":   file(`{{template "f"}}`),
		"t/en/subject.txt": file("s"),
		"_partials/f.html": file("f"),
		"gone/en/body.txt": file("x"),
	}
	tests := []struct {
		name     string
		fail     string // the path that fails
		err      error
		notFound bool
	}{
		{name: "template dir", fail: "t", err: down},
		{name: "locale dir", fail: "t/en", err: down},
		{name: "body", fail: "t/en/body.html", err: down},
		{name: "subject", fail: "t/en/subject.txt", err: down},
		{name: "partials dir", fail: "_partials", err: down},
		{name: "partial", fail: "_partials/f.html", err: down},
		{name: "permission", fail: "t/en/body.html", err: fs.ErrPermission},
		{name: "not exist is not found", fail: "t", err: fs.ErrNotExist, notFound: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := failFS{base, func(name string) error {
				if name == tt.fail {
					return tt.err
				}
				return nil
			}}
			r := mustNew(t, fsys, render.Options{})
			_, err := r.Render(context.Background(), render.Request{Template: "t", Locale: "en"})
			if tt.notFound {
				var re *render.Error
				if !errors.As(err, &re) || !re.NotFound {
					t.Fatalf("got %v, want NotFound", err)
				}
				return
			}
			var le *render.LoadError
			if !errors.As(err, &le) {
				t.Fatalf("got %T %v, want *LoadError", err, err)
			}
			if le.Template != "t" || !errors.Is(err, tt.err) {
				t.Errorf("got %+v, want template t wrapping %v", le, tt.err)
			}
		})
	}
}

func TestLoadErrorIsNotCached(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	failing := true
	fsys := failFS{fstest.MapFS{"t/en/body.txt": file("ok")}, func(string) error {
		mu.Lock()
		defer mu.Unlock()
		if failing {
			return errors.New("store down")
		}
		return nil
	}}
	r := mustNew(t, fsys, render.Options{})
	req := render.Request{Template: "t"}
	if _, err := r.Render(context.Background(), req); !render.IsLoadError(err) {
		t.Fatalf("got %v, want a load error", err)
	}
	mu.Lock()
	failing = false
	mu.Unlock()
	got, err := r.Render(context.Background(), req)
	if err != nil || got.Text != "ok" {
		t.Fatalf("got %+v, %v", got, err)
	}
}

func TestCache(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{"t/en/body.txt": file("one")}
	cached := mustNew(t, fsys, render.Options{})
	fresh := mustNew(t, fsys, render.Options{NoCache: true})
	for _, r := range []*render.FS{cached, fresh} {
		if got, err := r.Render(context.Background(), render.Request{Template: "t"}); err != nil || got.Text != "one" {
			t.Fatalf("got %+v, %v", got, err)
		}
	}
	fsys["t/en/body.txt"] = file("two")
	for r, want := range map[*render.FS]string{cached: "one", fresh: "two"} {
		// "es" falls back to "en", whose parsed set is shared.
		for _, locale := range []string{"", "es"} {
			if got, err := r.Render(context.Background(), render.Request{Template: "t", Locale: locale}); err != nil || got.Text != want {
				t.Errorf("%q: got %+v, %v; want %q", locale, got, err, want)
			}
		}
	}
}

func TestTimeout(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	fsys := fstest.MapFS{"loop/en/body.txt": file("{{range .big}}{{slow}}{{end}}")}
	r := mustNew(t, fsys, render.Options{
		Timeout: 10 * time.Millisecond,
		Funcs:   map[string]any{"slow": func() string { <-release; return "." }},
	})
	big := make([]any, 1_000_000)
	start := time.Now()
	_, err := r.Render(context.Background(), render.Request{Template: "loop", Context: map[string]any{"big": big}})
	if took := time.Since(start); took > 100*time.Millisecond {
		t.Errorf("took %v", took)
	}
	if !errors.Is(err, render.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want ErrTimeout and DeadlineExceeded", err)
	}
	var re *render.Error
	if errors.As(err, &re) || render.IsLoadError(err) {
		t.Errorf("%v is a template or load error", err)
	}
}

func TestContextDone(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	fsys := fstest.MapFS{"block/en/body.txt": file("{{block1}}"), "t/en/body.txt": file("x")}
	r := mustNew(t, fsys, render.Options{Funcs: map[string]any{"block1": func() string { <-release; return "" }}})

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Render(ctx, render.Request{Template: "t"}); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled before: got %v", err)
	}

	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	_, err := r.Render(ctx, render.Request{Template: "block"})
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, render.ErrTimeout) {
		t.Errorf("caller's deadline: got %v, want ctx.Err() and not ErrTimeout", err)
	}
}

func TestConcurrent(t *testing.T) {
	t.Parallel()
	r := mustNew(t, templates.FS, render.Options{})
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			locale := []string{"en", "de", "de-CH", "fr"}[i%4]
			name := fmt.Sprintf("user%d", i)
			req := render.Request{Template: "reset-password", Locale: locale, Context: map[string]any{"name": name, "url": "https://example.com/" + name}}
			if i%3 == 0 {
				req = render.Request{Template: "welcome", Locale: locale, Context: map[string]any{"name": name, "logoCid": "logo"}}
			}
			res, err := r.Render(context.Background(), req)
			if err != nil {
				t.Errorf("Render: %v", err)
				return
			}
			if !strings.Contains(res.HTML, name) || !strings.Contains(res.Text, name) {
				t.Errorf("%d: the bodies lack %q", i, name)
			}
		}()
	}
	wg.Wait()
}

func TestNewOptions(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		fsys fs.FS
		opts render.Options
	}{
		"nil fs":           {nil, render.Options{}},
		"negative timeout": {fstest.MapFS{}, render.Options{Timeout: -1}},
		"bad locale":       {fstest.MapFS{}, render.Options{DefaultLocale: "../x"}},
		"bad func":         {fstest.MapFS{}, render.Options{Funcs: map[string]any{"x": 42}}},
		"bad func name":    {fstest.MapFS{}, render.Options{Funcs: map[string]any{"a-b": strings.ToUpper}}},
	} {
		if _, err := render.New(tc.fsys, tc.opts); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
}

func TestNewRefusesAMissingFolder(t *testing.T) {
	t.Parallel()
	if _, err := render.New(os.DirFS(filepath.Join(t.TempDir(), "no-such-folder")), render.Options{}); err == nil {
		t.Error("New took a folder that is not there")
	}
}
