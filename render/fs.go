package render

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	htmltemplate "html/template"
	"io/fs"
	"path"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	texttemplate "text/template"
	"text/template/parse"
	"time"
)

// The files of a template in a locale directory.
const (
	subjectFile  = "subject.txt"
	htmlFile     = "body.html"
	textFile     = "body.txt"
	partialsDir  = "_partials"
	missingError = "missingkey=error"
)

// Defaults of [Options].
const (
	// DefaultLocale is the locale used when Options.DefaultLocale is empty.
	DefaultLocale = "en"
	// DefaultTimeout is the time a render may take when Options.Timeout is
	// zero: the spec's renderTimeoutMilliseconds.
	DefaultTimeout = 30 * time.Second
)

// ErrTimeout is matched (errors.Is) by the error of a render that took longer
// than Options.Timeout. It wraps context.DeadlineExceeded; tell it apart from
// the caller's context ending (ctx.Err(), which is not ErrTimeout) with
// errors.Is(err, ErrTimeout). The queue retries it.
var ErrTimeout = fmt.Errorf("render: timed out (%w)", context.DeadlineExceeded)

// Options configures [New]. The zero value is ready to use.
type Options struct {
	// DefaultLocale is the locale tried last, and used when a request gives
	// none; empty means [DefaultLocale] ("en").
	DefaultLocale string
	// Timeout bounds a render, loading included; zero means
	// [DefaultTimeout] (30 seconds).
	Timeout time.Duration
	// Funcs are helpers added to every template after the built-in ones,
	// which they may replace. Either a text/template or an html/template
	// FuncMap fits. They must be deterministic: the same arguments give the
	// same result on every attempt of a job.
	Funcs map[string]any
	// NoCache parses the templates again on every render, so that edits show
	// at once (for development). By default a template is parsed on its first
	// use and kept, per template and locale asked for.
	NoCache bool
}

// FS is a [Renderer] over the templates of an [io/fs.FS], laid out as the
// package documentation tells. It is safe for concurrent use.
type FS struct {
	fsys          fs.FS
	defaultLocale string
	timeout       time.Duration
	funcs         map[string]any
	noCache       bool

	mu sync.RWMutex
	// cache maps a template and a locale asked for (in lower case) to its
	// set; sets maps a template and a locale directory to its set, so that
	// the locales that fall back to one directory share its set.
	cache map[cacheKey]*set
	sets  map[cacheKey]*set

	// afterRender, when set (by tests), is called when the goroutine of a
	// render ends.
	afterRender func()
}

var _ Renderer = (*FS)(nil)

type cacheKey struct{ template, locale string }

// set is a template parsed in one locale.
type set struct {
	locale  string // the directory's name
	dir     string // template/locale
	subject *texttemplate.Template
	html    *htmltemplate.Template
	text    *texttemplate.Template
	files   map[string]bool // the files parsed, for Where
}

// New returns a Renderer over the templates of fsys. It checks that the
// root of fsys is a folder (os.DirFS of a folder that is not there fails
// here, not at each job) and reads nothing else yet:
// each template is loaded on its first use.
func New(fsys fs.FS, opts Options) (*FS, error) {
	if fsys == nil {
		return nil, errors.New("render: nil fs.FS")
	}
	if opts.Timeout < 0 {
		return nil, fmt.Errorf("render: negative Timeout %v", opts.Timeout)
	}
	// A folder of templates that is not there (a wrong working directory
	// with os.DirFS) would fail every template job for good as "not
	// found": say so at once instead.
	// A store that is down for now is not refused: its loads are retried.
	if st, err := fs.Stat(fsys, "."); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("render: the templates' folder: %w", err)
	} else if err == nil && !st.IsDir() {
		return nil, errors.New("render: the templates' root is not a folder")
	}
	r := &FS{
		fsys:          fsys,
		defaultLocale: normalizeLocale(opts.DefaultLocale),
		timeout:       opts.Timeout,
		noCache:       opts.NoCache,
		cache:         make(map[cacheKey]*set),
		sets:          make(map[cacheKey]*set),
	}
	if r.defaultLocale == "" {
		r.defaultLocale = DefaultLocale
	}
	if !validName(r.defaultLocale) {
		return nil, fmt.Errorf("render: invalid DefaultLocale %q", opts.DefaultLocale)
	}
	if r.timeout == 0 {
		r.timeout = DefaultTimeout
	}
	r.funcs = make(map[string]any, len(builtinFuncs)+len(opts.Funcs))
	for k, v := range builtinFuncs {
		r.funcs[k] = v
	}
	for k, v := range opts.Funcs {
		r.funcs[k] = v
	}
	if err := checkFuncs(r.funcs); err != nil {
		return nil, err
	}
	return r, nil
}

// checkFuncs reports a helper the template packages refuse (they panic).
func checkFuncs(funcs map[string]any) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("render: Options.Funcs: %v", p)
		}
	}()
	texttemplate.New("").Funcs(funcs)
	return nil
}

type outcome struct {
	res Result
	err error
}

// Render renders req: the subject, then the HTML body, then the text body.
// It returns an *Error when the template is not found in any locale of the
// fallback or fails to parse or execute, a *LoadError when the file system
// fails otherwise than with fs.ErrNotExist, an error matching [ErrTimeout]
// when the render takes longer than Options.Timeout, and ctx.Err() when ctx
// ends first. In the last two cases the template may go on executing in its
// goroutine until its next write of output.
func (r *FS) Render(ctx context.Context, req Request) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	var stop atomic.Bool
	done := make(chan outcome, 1)
	go func() {
		if r.afterRender != nil {
			defer r.afterRender()
		}
		var o outcome
		defer func() {
			if p := recover(); p != nil {
				o = outcome{err: &Error{Template: req.Template, Locale: req.Locale, Detail: fmt.Sprintf("panic: %v", p)}}
			}
			done <- o
		}()
		o.res, o.err = r.render(req, &stop)
	}()
	timer := time.NewTimer(r.timeout)
	defer timer.Stop()
	select {
	case o := <-done:
		return o.res, o.err
	case <-ctx.Done():
		stop.Store(true)
		return Result{}, ctx.Err()
	case <-timer.C:
		stop.Store(true)
		return Result{}, &timeoutError{template: req.Template, locale: req.Locale, after: r.timeout}
	}
}

type timeoutError struct {
	template, locale string
	after            time.Duration
}

func (e *timeoutError) Error() string {
	s := "render: template " + quote(e.template)
	if e.locale != "" {
		s += " locale " + quote(e.locale)
	}
	return s + ": timed out after " + e.after.String()
}

func (e *timeoutError) Unwrap() error { return ErrTimeout }

// errStopped is the write error that ends a template whose render was given up.
var errStopped = errors.New("render: stopped")

// stopWriter fails its writes once stop is set, ending the template.
type stopWriter struct {
	buf  bytes.Buffer
	stop *atomic.Bool
}

func (w *stopWriter) Write(p []byte) (int, error) {
	if w.stop.Load() {
		return 0, errStopped
	}
	return w.buf.Write(p)
}

func (r *FS) render(req Request, stop *atomic.Bool) (Result, error) {
	s, err := r.load(req)
	if err != nil {
		return Result{}, err
	}
	data := req.Context
	if data == nil {
		data = map[string]any{}
	}
	res := Result{Locale: s.locale}
	fail := func(part, file string, err error) error {
		return s.newError(req, part, file, err)
	}
	if s.subject != nil {
		w := &stopWriter{stop: stop}
		if err := s.subject.Execute(w, data); err != nil {
			return Result{}, fail("subject", s.dir+"/"+subjectFile, err)
		}
		res.Subject = strings.TrimSpace(w.buf.String())
		if strings.ContainsAny(res.Subject, "\r\n") {
			return Result{}, &Error{
				Template: req.Template, Locale: req.Locale, Part: "subject",
				Where:  s.dir + "/" + subjectFile,
				Detail: "the subject holds a line break: " + fmt.Sprintf("%q", res.Subject),
			}
		}
	}
	if s.html != nil {
		w := &stopWriter{stop: stop}
		if err := s.html.Execute(w, data); err != nil {
			return Result{}, fail("html", s.dir+"/"+htmlFile, err)
		}
		res.HTML = w.buf.String()
	}
	if s.text != nil {
		w := &stopWriter{stop: stop}
		if err := s.text.Execute(w, data); err != nil {
			return Result{}, fail("text", s.dir+"/"+textFile, err)
		}
		res.Text = w.buf.String()
	}
	if strings.TrimSpace(res.HTML) == "" && strings.TrimSpace(res.Text) == "" {
		part, file := "text", textFile
		if s.html != nil {
			part, file = "html", htmlFile
		}
		return Result{}, &Error{
			Template: req.Template, Locale: req.Locale, Part: part,
			Where: s.dir + "/" + file, Detail: "the bodies rendered empty",
		}
	}
	return res, nil
}

// whereRE finds "name:line" at the head of a text/template or html/template
// error: "template: a/en/body.html:3:7: executing ...",
// "html/template:a/en/body.html:3:7: ...".
var whereRE = regexp.MustCompile(`^(?:html/)?template: ?([^\s:"]+):(\d+)`)

// newError makes the *Error of a part that failed to parse or execute. Where
// is the engine's file:line when it names a file of the set (so that it holds
// no text of the template or the context), else the file of the part.
func (s *set) newError(req Request, part, file string, err error) *Error {
	e := &Error{Template: req.Template, Locale: req.Locale, Part: part, Where: file, Detail: err.Error()}
	if m := whereRE.FindStringSubmatch(e.Detail); m != nil && s.files[m[1]] {
		e.Where = m[1] + ":" + m[2]
	}
	return e
}

// load returns the parsed set of req, from the cache or the file system.
func (r *FS) load(req Request) (*set, error) {
	if !validName(req.Template) || strings.HasPrefix(req.Template, "_") {
		return nil, &Error{Template: req.Template, Locale: req.Locale, NotFound: true, Detail: "invalid template name"}
	}
	key := cacheKey{req.Template, strings.ToLower(normalizeLocale(req.Locale))}
	if !r.noCache {
		r.mu.RLock()
		s := r.cache[key]
		r.mu.RUnlock()
		if s != nil {
			return s, nil
		}
	}
	candidates := r.candidates(req.Locale)
	entries, err := fs.ReadDir(r.fsys, req.Template)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, r.notFound(req, candidates)
		}
		return nil, &LoadError{Template: req.Template, Err: err}
	}
	for _, c := range candidates {
		for _, e := range entries {
			if !e.IsDir() || !strings.EqualFold(e.Name(), c) {
				continue
			}
			dirKey := cacheKey{req.Template, e.Name()}
			if !r.noCache {
				r.mu.Lock()
				s := r.sets[dirKey]
				if s != nil {
					r.cache[key] = s
				}
				r.mu.Unlock()
				if s != nil {
					return s, nil
				}
			}
			s, err := r.parse(req, e.Name())
			if err != nil {
				return nil, err
			}
			if s == nil {
				continue // no body there
			}
			if !r.noCache {
				r.mu.Lock()
				if old := r.sets[dirKey]; old != nil {
					s = old
				} else {
					r.sets[dirKey] = s
				}
				r.cache[key] = s
				r.mu.Unlock()
			}
			return s, nil
		}
	}
	return nil, r.notFound(req, candidates)
}

func (r *FS) notFound(req Request, candidates []string) *Error {
	return &Error{
		Template: req.Template, Locale: req.Locale, NotFound: true,
		Detail: "no body in " + req.Template + "/{" + strings.Join(candidates, ",") + "}",
	}
}

// candidates returns the locales to try for locale, in order: locale, locale
// less its subtags from the end, then the default locale the same way.
func (r *FS) candidates(locale string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(tag string) {
		for tag != "" {
			if k := strings.ToLower(tag); !seen[k] && validName(tag) {
				seen[k] = true
				out = append(out, tag)
			}
			i := strings.LastIndexByte(tag, '-')
			if i < 0 {
				break
			}
			tag = tag[:i]
		}
	}
	add(normalizeLocale(locale))
	add(r.defaultLocale)
	return out
}

func normalizeLocale(tag string) string {
	return strings.Trim(strings.ReplaceAll(strings.TrimSpace(tag), "_", "-"), "-")
}

// validName reports whether name is a single path element fit for a
// directory of the file system.
func validName(name string) bool {
	return name != "" && fs.ValidPath(name) && !strings.Contains(name, "/") && !strings.HasPrefix(name, ".")
}

// parse loads template/locale. It returns nil, nil when the directory holds
// no body.
func (r *FS) parse(req Request, locale string) (*set, error) {
	dir := req.Template + "/" + locale
	entries, err := fs.ReadDir(r.fsys, dir)
	if err != nil {
		return nil, &LoadError{Template: req.Template, Err: err}
	}
	has := map[string]bool{}
	for _, e := range entries {
		if !e.IsDir() {
			has[e.Name()] = true
		}
	}
	if !has[htmlFile] && !has[textFile] {
		return nil, nil
	}
	htmlPartials, textPartials, err := r.partials(req)
	if err != nil {
		return nil, err
	}
	s := &set{locale: locale, dir: dir, files: map[string]bool{}}
	for _, p := range append(append([]partial(nil), htmlPartials...), textPartials...) {
		s.files[p.path] = true
	}
	read := func(name string) (string, error) {
		b, err := fs.ReadFile(r.fsys, dir+"/"+name)
		if err != nil {
			return "", &LoadError{Template: req.Template, Err: err}
		}
		s.files[dir+"/"+name] = true
		return string(b), nil
	}
	if has[subjectFile] {
		src, err := read(subjectFile)
		if err != nil {
			return nil, err
		}
		if s.subject, err = r.parseText(dir+"/"+subjectFile, src, textPartials); err != nil {
			return nil, s.newError(req, "subject", dir+"/"+subjectFile, err)
		}
	}
	if has[htmlFile] {
		src, err := read(htmlFile)
		if err != nil {
			return nil, err
		}
		if s.html, err = r.parseHTML(dir+"/"+htmlFile, src, htmlPartials); err != nil {
			return nil, s.newError(req, "html", dir+"/"+htmlFile, err)
		}
	}
	if has[textFile] {
		src, err := read(textFile)
		if err != nil {
			return nil, err
		}
		if s.text, err = r.parseText(dir+"/"+textFile, src, textPartials); err != nil {
			return nil, s.newError(req, "text", dir+"/"+textFile, err)
		}
	}
	return s, nil
}

type partial struct {
	path, name, src string // "_partials/footer.html", "footer", its text
}

// partials reads _partials/*.html and _partials/*.txt; none when the
// directory is absent.
func (r *FS) partials(req Request) (html, text []partial, err error) {
	entries, err := fs.ReadDir(r.fsys, partialsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, &LoadError{Template: req.Template, Err: err}
	}
	for _, e := range entries {
		ext := path.Ext(e.Name())
		if e.IsDir() || (ext != ".html" && ext != ".txt") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		p := partialsDir + "/" + e.Name()
		b, err := fs.ReadFile(r.fsys, p)
		if err != nil {
			return nil, nil, &LoadError{Template: req.Template, Err: err}
		}
		pt := partial{path: p, name: strings.TrimSuffix(e.Name(), ext), src: string(b)}
		if ext == ".html" {
			html = append(html, pt)
		} else {
			text = append(text, pt)
		}
	}
	return html, text, nil
}

// parseText parses src as the template name, with the partials. Templates are
// named by their path, so that the engine's errors name the file.
func (r *FS) parseText(name, src string, partials []partial) (*texttemplate.Template, error) {
	t := texttemplate.New(name).Option(missingError).Funcs(r.funcs)
	for _, p := range partials {
		pt, err := t.New(p.path).Parse(p.src)
		if err != nil {
			return nil, err
		}
		if t.Lookup(p.name) == nil && !parse.IsEmptyTree(pt.Root) {
			// A copy keeps the file's name for errors, and html/template
			// escapes it apart from the file's own tree.
			if _, err := t.AddParseTree(p.name, pt.Copy()); err != nil {
				return nil, err
			}
		}
	}
	return t.Parse(src)
}

// parseHTML is parseText for html/template.
func (r *FS) parseHTML(name, src string, partials []partial) (*htmltemplate.Template, error) {
	t := htmltemplate.New(name).Option(missingError).Funcs(r.funcs)
	for _, p := range partials {
		pt, err := t.New(p.path).Parse(p.src)
		if err != nil {
			return nil, err
		}
		if t.Lookup(p.name) == nil && !parse.IsEmptyTree(pt.Tree.Root) {
			// A copy keeps the file's name for errors, and html/template
			// escapes it apart from the file's own tree.
			if _, err := t.AddParseTree(p.name, pt.Tree.Copy()); err != nil {
				return nil, err
			}
		}
	}
	return t.Parse(src)
}
