package mailqueue

import (
	"context"
	"errors"
	"io/fs"

	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/mail"
)

// What reaches a log above debug, and the reason a store keeps (the one
// `mailq failed` shows, the audit event's), is the kit's own words: codes,
// categories, counts, the step that failed. A text the kit did not write
// may quote the message — a server echoes the subject, a display name or a
// line of the body in its reply; an error of CheckJob, of ResolveAttachment
// (with the attachment's ref), of a renderer or of a transport says what
// its author chose — so it goes to one debug record alone
// (queue.job.detail), under the same job_id and code as the record of the
// run's outcome (docs/architecture.md, "No message text above debug").

// detail is what a run's failure holds beside its reason: the codes of the
// server's reply that caused it, and the text that may quote the message.
type detail struct {
	// reply is true when a server's reply (a receipt with a code) caused
	// the failure: its category, code and enhanced code are logged with the
	// outcome, above debug.
	reply    bool
	category mail.Category
	code     int
	enhanced string
	// text is the reply's text, or the error's, addresses redacted.
	text string
	// ref is the ref of the attachment that failed.
	ref string
}

// receiptDetail is the detail of a send's receipt: its codes when the
// server replied, and its Text.
func receiptDetail(rc mail.Receipt) *detail {
	if rc.Code == 0 && rc.Text == "" && rc.EnhancedCode == "" {
		return nil
	}
	return &detail{
		reply: rc.Code != 0, category: rc.Category, code: rc.Code, enhanced: rc.EnhancedCode,
		text: mail.Redact(rc.Text),
	}
}

// errorDetail is the detail of an error the kit did not write.
func errorDetail(err error) *detail {
	if err == nil {
		return nil
	}
	return &detail{text: mail.Redact(err.Error())}
}

// errorKind describes an error of a hook in the kit's own words, for a
// reason: what errors.Is can tell of it, or "" when nothing.
func errorKind(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return " (not found)"
	case errors.Is(err, fs.ErrPermission):
		return " (permission denied)"
	case errors.Is(err, context.DeadlineExceeded):
		return " (timed out)"
	}
	if c := CodeOf(err); c != "" {
		return " (" + string(c) + ")"
	}
	return ""
}

// outcomeArgs returns the attributes of the record of a run's outcome
// (args, then the category, smtp_code and enhanced_code of the reply that
// caused it, if one did) and writes the run's detail, when it has a text
// or a ref, to the debug record queue.job.detail, under the same job_id,
// attempt and code.
func (w *Worker) outcomeArgs(r *run, code codes.Code, args ...any) []any {
	d := r.detail
	if d == nil {
		return args
	}
	var codesOf []any
	if d.reply {
		codesOf = []any{"category", string(d.category), "smtp_code", d.code, "enhanced_code", d.enhanced}
	}
	if d.text != "" || d.ref != "" {
		dbg := append([]any{"job_id", r.lease.ID, "attempt", r.lease.Attempt, "code", string(code)}, codesOf...)
		if d.ref != "" {
			dbg = append(dbg, "ref", d.ref)
		}
		if d.text != "" {
			dbg = append(dbg, "text", d.text)
		}
		w.log.Debug(string(codes.QueueJobDetail), dbg...)
	}
	return append(args, codesOf...)
}
