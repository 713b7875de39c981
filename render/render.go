// Package render renders the template of a mail job: a subject, an HTML body
// and a text body per template and locale.
//
// The queue tells two kinds of failure apart: a template missing or broken
// fails the job at once (an *Error, code render.failed), as no retry would
// mend it, while an outage of the place templates are loaded from is retried
// (a *LoadError, the spec's TemplateLoadError) (spec: "What the queue does
// with an attempt").
//
// # Templates in a file system
//
// [New] makes a [Renderer] over an [io/fs.FS] laid out as
//
//	<template>/<locale>/subject.txt   text/template, one line (optional)
//	<template>/<locale>/body.html     html/template (optional)
//	<template>/<locale>/body.txt      text/template (optional)
//	_partials/*.html                  shared by every body.html (optional)
//	_partials/*.txt                   shared by every subject.txt and body.txt (optional)
//
// such as reset-password/de/body.html. A locale directory counts only when it
// holds body.html, body.txt or both. A partial _partials/footer.html is called
// as {{template "footer" .}} from an HTML body, _partials/footer.txt likewise
// from a text body or a subject; a partial file may also {{define}} more
// templates. Template names are single path elements that do not begin with
// "_" or ".".
//
// Each part is rendered with the job's context as its dot, a map, under the
// option missingkey=error: a value the template uses and the context lacks
// is a render failure, not an empty string. Use {{index . "name"}} (or
// {{default "there" (index . "name")}}) for a value that may be missing.
//
// The locale asked for is looked up as is ("pt-BR"), then by dropping subtags
// from the end ("pt"), then the default locale the same way; tags are compared
// case-insensitively and "_" is read as "-". [Result.Locale] is the name of
// the directory used.
//
// The subject is trimmed of surrounding white space; a subject that still
// holds a line break is an *Error of part "subject". Bodies that both render
// to white space alone are an *Error too.
//
// Besides the built-in functions of text/template (and, index, len, printf,
// ...), templates have these helpers, all deterministic: rendering must be
// the same on every attempt of a job, so that an attempt again sends the
// message the first one sent, under the same key (spec: "Once per key"), so
// none reads the clock or draws random numbers.
//
//	upper s       s in upper case
//	lower s       s in lower case
//	trim s        s without leading and trailing white space
//	default d v   v when v is true in the template's sense (not nil, zero,
//	              "" or empty), else d; as a pipe: {{.x | default "d"}}
//
// [Options.Funcs] adds helpers (and may replace these); keep them
// deterministic as well.
//
// A render runs for at most [Options.Timeout]; one that takes longer returns
// an error matching [ErrTimeout] (which the queue retries), told apart from
// the caller's context ending, which returns ctx.Err(). A template cannot be
// interrupted mid-execution: it goes on in its own goroutine and stops at its
// next write of output, or when it ends if it writes no more.
package render

import (
	"context"
	"errors"
)

// Renderer renders a template job.
type Renderer interface {
	// Render renders req. It returns an *Error when the template is missing or
	// fails to execute, a *LoadError when the templates could not be loaded
	// for now, and the context's error when ctx ends first.
	Render(ctx context.Context, req Request) (Result, error)
}

// Request is what a template job asks to render.
type Request struct {
	// Template is the template's name, such as "reset-password".
	Template string
	// Locale is the BCP 47 tag asked for, such as "de"; empty means the
	// renderer's default locale.
	Locale string
	// Context holds the values the template is rendered with, as JSON
	// decodes them (map[string]any, []any, string, float64, bool, nil).
	Context map[string]any
}

// Result is a rendered template.
type Result struct {
	// Subject is the subject the template gave; empty when it gives none.
	Subject string
	// HTML and Text are the bodies; either may be empty, not both.
	HTML, Text string
	// Locale is the locale the template was found in (after fallback).
	Locale string
}

// Error is a template that is missing or broken: the job fails at once.
//
// Its Error method names the template, the locale and the place only; the
// template engine's text, which may quote the template or a value of the
// context, is in Detail, which the queue logs at debug level alone.
type Error struct {
	// Template and Locale are those of the request.
	Template, Locale string
	// Part is the part that failed: "subject", "html" or "text"; empty when
	// the template was not found at all.
	Part string
	// Where is the place the engine named, such as
	// "reset-password/en/body.html:12", when it named one; else the file
	// that failed, when known.
	Where string
	// NotFound is true when no file of the template exists in the locale or
	// the default locale.
	NotFound bool
	// Detail is the engine's own message. It may hold template text or
	// context values: log it at debug level only.
	Detail string
}

// Error returns a message without template text or context values.
func (e *Error) Error() string {
	s := "render: template " + quote(e.Template)
	if e.Locale != "" {
		s += " locale " + quote(e.Locale)
	}
	if e.NotFound {
		return s + ": not found"
	}
	if e.Part != "" {
		s += " part " + e.Part
	}
	if e.Where != "" {
		s += " at " + e.Where
	}
	return s + ": failed to render"
}

// LoadError is an outage of the place templates are loaded from (the spec's
// TemplateLoadError): the job is retried.
type LoadError struct {
	// Template is the template that was being loaded.
	Template string
	// Err is the cause.
	Err error
}

// Error returns the template and the cause.
func (e *LoadError) Error() string {
	return "render: loading template " + quote(e.Template) + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *LoadError) Unwrap() error { return e.Err }

// IsLoadError reports whether err is or wraps a *LoadError.
func IsLoadError(err error) bool {
	var le *LoadError
	return errors.As(err, &le)
}

func quote(s string) string { return "\"" + s + "\"" }
