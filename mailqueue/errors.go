package mailqueue

import (
	"errors"
	"strconv"
	"strings"

	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/mail"
)

// Error is a refusal or a failure with a code from schema/codes.yaml.
// Match it with errors.As, or read its code with CodeOf.
type Error struct {
	// Code is the code of the refusal, such as codes.QueueInvalidJob.
	Code codes.Code
	// Path is the dotted path of the first bad value ("context.user.createdAt",
	// "to[1]"); empty for the whole job or when no value is to blame.
	Path string
	// Pointer is the same place as an RFC 6901 JSON pointer
	// ("/context/user/createdAt").
	Pointer string
	// Reason says what is wrong, without the bad value itself (it may be an
	// address or a token).
	Reason string
	// Fields lists the bad values when there are several, the first
	// MaxFieldErrors of them; Path and Pointer are those of the first.
	Fields []FieldError
	// More is how many bad values there were beyond those Fields lists: 0
	// unless Fields holds MaxFieldErrors.
	More int
	// Index is, for EnqueueMany, the index of the refused job in the call;
	// -1 otherwise.
	Index int
	// JobIDs are, for queue.key_reused, the ids of the jobs refused.
	JobIDs []string
	// Err is the underlying cause, when there is one.
	Err error
}

// FieldError is one bad value of a job.
type FieldError struct {
	// Path is the dotted path ("to[1]"), Pointer the JSON pointer ("/to/1").
	Path, Pointer string
	// Rule is what the value breaks: a JSON Schema keyword ("format",
	// "required") or a rule of the queue ("json", "maxJobBytes").
	Rule string
	// Reason says what is wrong, without the value.
	Reason string
}

// Error returns the code, the path and the reason.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(string(e.Code))
	if e.Index >= 0 {
		b.WriteString(" (job ")
		b.WriteString(strconv.Itoa(e.Index))
		b.WriteString(")")
	}
	if e.Path != "" {
		// A path is made of the job's own keys, which may hold anything:
		// never let it quote an address.
		b.WriteString(" at ")
		b.WriteString(mail.Redact(e.Path))
	}
	if e.Reason != "" {
		b.WriteString(": ")
		b.WriteString(e.Reason)
	}
	if n := len(e.Fields) + e.More; n > 1 {
		b.WriteString(" (and ")
		b.WriteString(strconv.Itoa(n - 1))
		b.WriteString(" more)")
	}
	return b.String()
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// CodeOf returns the code of the first *Error in err's chain, or "" when
// there is none.
func CodeOf(err error) codes.Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func newError(code codes.Code, reason string) *Error {
	return &Error{Code: code, Reason: reason, Index: -1}
}

// causeError is newError with the underlying cause.
func causeError(code codes.Code, reason string, err error) *Error {
	e := newError(code, reason)
	e.Err = err
	return e
}

// MaxFieldErrors is the most bad values an *Error lists in Fields; its More
// counts the rest.
const MaxFieldErrors = 100

// invalidJob is the queue.invalid_job refusal of the bad values fields,
// its Path, Pointer and Reason those of the first; it keeps the first
// MaxFieldErrors of them and counts the rest in More.
func invalidJob(fields []FieldError) *Error {
	e := &Error{Code: codes.QueueInvalidJob, Fields: fields, Index: -1}
	if len(fields) > MaxFieldErrors {
		e.Fields, e.More = fields[:MaxFieldErrors:MaxFieldErrors], len(fields)-MaxFieldErrors
	}
	if len(fields) > 0 {
		e.Path, e.Pointer, e.Reason = fields[0].Path, fields[0].Pointer, fields[0].Reason
	}
	return e
}

// ErrLeaseLost is the cause of a run's context when its lease could not be
// kept: the store did not answer the extensions, and another worker may take
// the job (the spec's QueueLeaseLostError).
var ErrLeaseLost = errors.New("mailqueue: lease lost")

// ErrClosing is the cause of a run's context when the worker is closing and
// its timeout ran out.
var ErrClosing = errors.New("mailqueue: worker closing")

// pathOf turns a JSON pointer into a dotted path: "/context/user/0" is
// "context.user[0]".
func pathOf(pointer string) string {
	if pointer == "" {
		return ""
	}
	var b strings.Builder
	for i, tok := range strings.Split(pointer[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		if _, err := strconv.Atoi(tok); err == nil && i > 0 {
			b.WriteString("[" + tok + "]")
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
	}
	return b.String()
}

func pointerEscape(tok string) string {
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
}
