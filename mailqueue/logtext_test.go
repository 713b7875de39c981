package mailqueue_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	gosmtp "github.com/emersion/go-smtp"

	"github.com/alexify/mailer/attachments"
	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/mail"
	"github.com/alexify/mailer/mail/smtp"
	"github.com/alexify/mailer/mail/smtptest"
	"github.com/alexify/mailer/mailqueue"
	"github.com/alexify/mailer/render"
)

// The text of the messages TestNoMessageTextAboveDebug sends: a subject, a
// display name and a context value that no record above debug may carry
// (the harness's check, messageText), and that the debug record
// queue.job.detail must carry.
const (
	ltSubject = "Your reset code 918273"
	ltName    = "Grace Hopper"
	ltValue   = "ctx-secret-5521"
	ltBody    = "Your code is 918273, Grace."
)

// ltEcho is a server's reply that quotes the message, as servers do
// (seen at info: "Subject 'Your reset code … 918273'").
const ltEcho = "message from Ada Lovelace to " + ltName + " <grace@example.com> refused: Subject '" + ltSubject + "', body '" + ltBody + "'"

func ltContentJob() *jobv1.Job {
	return &jobv1.Job{
		Kind: jobv1.KindContent, Subject: ltSubject, Content: &jobv1.Content{Text: ltBody},
		From: "Ada Lovelace <ada@example.com>", To: []string{ltName + " <grace@example.com>"},
		IdempotencyKey: "reset:918273",
	}
}

func ltTemplateJob() *jobv1.Job {
	return &jobv1.Job{
		Kind: jobv1.KindTemplate, Template: "reset", Subject: ltSubject,
		Context: map[string]any{"code": ltValue, "user": map[string]any{"name": ltName}},
		From:    "Ada Lovelace <ada@example.com>", To: []string{ltName + " <grace@example.com>"},
		IdempotencyKey: "reset:918273",
	}
}

func ltRefJob(ref string) *jobv1.Job {
	j := ltContentJob()
	j.Attachments = []jobv1.Attachment{{Ref: ref, Filename: "code.pdf", ContentType: "application/pdf"}}
	return j
}

// ltTransport is an SMTP transport to srv, with credentials when user is
// set.
func ltTransport(t *testing.T, srv *smtptest.Server, user string) *smtp.Transport {
	t.Helper()
	tr, err := smtp.New(smtp.Config{Host: srv.Host(), Port: srv.Port(), TLS: smtp.TLSNone, HELO: "test.localhost", Timeout: 5 * time.Second, Username: user, Password: "pw"})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// transportFunc is a transport of a function.
type transportFunc func(context.Context, *mail.Message) (mail.Receipt, error)

func (f transportFunc) Send(ctx context.Context, m *mail.Message) (mail.Receipt, error) {
	return f(ctx, m)
}

// TestNoMessageTextAboveDebug drives every path of the worker that logs a
// text it did not write — SMTP refusals for good and for now whose reply
// quotes the subject, a display name and the body, a rate limit, an
// operator's failure, an outage, a transport's own error, CheckJob's
// error, attachments by ref, renderer failures — and checks that:
//   - no record above debug carries the message's text (the harness's
//     check at cleanup: the subject, display names, context values, body
//     lines, refs of every job enqueued);
//   - neither does the reason the store keeps nor the audit event's;
//   - the record of the outcome carries the category, smtp_code and
//     enhanced_code of the reply that caused it, and the reason its codes;
//   - the text is not lost: the debug record queue.job.detail, under the
//     same job_id and code, carries it.
func TestNoMessageTextAboveDebug(t *testing.T) {
	t.Parallel()
	type reply struct {
		category mail.Category
		code     string
		enhanced string
	}
	tests := []struct {
		name string
		// setup returns the worker's config and the job to run.
		setup func(t *testing.T) (mailqueue.WorkerConfig, *jobv1.Job)
		want  outcome
		// record is the message of the outcome's record.
		record codes.Code
		// reply is what the outcome's record says of the reply; nil when no
		// reply caused it.
		reply *reply
		// text is what the debug record carries; ref its ref attribute.
		text, ref string
		// debug is the message of the debug record (queue.job.detail).
		debug codes.Code
	}{
		{
			name: "SMTP 550 at RCPT TO",
			setup: func(t *testing.T) (mailqueue.WorkerConfig, *jobv1.Job) {
				srv := smtptest.Start(t, smtptest.Script{Rcpt: map[string]*gosmtp.SMTPError{"grace@example.com": smtptest.Reply(550, "5.7.1", ltEcho)}})
				return mailqueue.WorkerConfig{Transport: ltTransport(t, srv, "")}, ltContentJob()
			},
			want:   outcome{mailqueue.JobFailed, 1, codes.QueueMessageRefused},
			record: codes.QueueJobFailed, reply: &reply{mail.Rejected, "550", "5.7.1"}, text: ltSubject,
		},
		{
			name: "SMTP 554 at the end of the data",
			setup: func(t *testing.T) (mailqueue.WorkerConfig, *jobv1.Job) {
				srv := smtptest.Start(t, smtptest.Script{Data: smtptest.Reply(554, "5.7.1", ltEcho)})
				return mailqueue.WorkerConfig{Transport: ltTransport(t, srv, "")}, ltContentJob()
			},
			want:   outcome{mailqueue.JobFailed, 1, codes.QueueMessageRefused},
			record: codes.QueueJobFailed, reply: &reply{mail.Rejected, "554", "5.7.1"}, text: ltBody,
		},
		{
			name: "SMTP 451 at MAIL FROM: retried",
			setup: func(t *testing.T) (mailqueue.WorkerConfig, *jobv1.Job) {
				srv := smtptest.Start(t, smtptest.Script{Mail: smtptest.Reply(451, "4.3.0", ltEcho)})
				return mailqueue.WorkerConfig{Transport: ltTransport(t, srv, "")}, ltContentJob()
			},
			want:   outcome{mailqueue.JobQueued, 1, codes.QueueSendFailed},
			record: codes.QueueJobRetrying, reply: &reply{mail.Retryable, "451", "4.3.0"}, text: ltName,
		},
		{
			name: "SMTP 451 on the last attempt",
			setup: func(t *testing.T) (mailqueue.WorkerConfig, *jobv1.Job) {
				srv := smtptest.Start(t, smtptest.Script{Mail: smtptest.Reply(451, "4.3.0", ltEcho)})
				j := ltContentJob()
				j.MaxAttempts = 1
				return mailqueue.WorkerConfig{Transport: ltTransport(t, srv, "")}, j
			},
			want:   outcome{mailqueue.JobFailed, 1, codes.QueueAttemptsExhausted},
			record: codes.QueueJobFailed, reply: &reply{mail.Retryable, "451", "4.3.0"}, text: ltSubject,
		},
		{
			name: "SMTP rate limit (450 4.7.1)",
			setup: func(t *testing.T) (mailqueue.WorkerConfig, *jobv1.Job) {
				srv := smtptest.Start(t, smtptest.Script{Mail: smtptest.Reply(450, "4.7.1", "too much mail: "+ltEcho)})
				return mailqueue.WorkerConfig{Transport: ltTransport(t, srv, ""), RateLimitScope: mailqueue.RateLimitQueue}, ltContentJob()
			},
			want:   outcome{mailqueue.JobQueued, 0, codes.QueueRateLimited},
			record: codes.QueueJobReleased, reply: &reply{mail.RateLimited, "450", "4.7.1"}, text: ltSubject,
		},
		{
			name: "SMTP 535 at AUTH: the operator's",
			setup: func(t *testing.T) (mailqueue.WorkerConfig, *jobv1.Job) {
				srv := smtptest.Start(t, smtptest.Script{Auth: smtptest.Reply(535, "5.7.8", "credentials refused for "+ltName)})
				return mailqueue.WorkerConfig{Transport: ltTransport(t, srv, "ada"), SkipTransportCheck: true}, ltContentJob()
			},
			want:   outcome{mailqueue.JobQueued, 0, codes.QueueOperatorFailed},
			record: codes.QueueJobReleased, reply: &reply{mail.Auth, "535", "5.7.8"}, text: ltName,
		},
		{
			name: "SMTP 421 greeting: an outage",
			setup: func(t *testing.T) (mailqueue.WorkerConfig, *jobv1.Job) {
				srv := smtptest.Start(t, smtptest.Script{Greeting: smtptest.Reply(421, "4.3.2", "closing, "+ltName)})
				return mailqueue.WorkerConfig{Transport: ltTransport(t, srv, "")}, ltContentJob()
			},
			want:   outcome{mailqueue.JobQueued, 0, codes.QueueTransportUnavailable},
			record: codes.QueueJobReleased, reply: &reply{mail.Retryable, "421", "4.3.2"}, text: ltName,
		},
		{
			name: "a transport's error that is no *mail.Error",
			setup: func(*testing.T) (mailqueue.WorkerConfig, *jobv1.Job) {
				tr := transportFunc(func(_ context.Context, m *mail.Message) (mail.Receipt, error) {
					return mail.Receipt{}, fmt.Errorf("provider refused %q for %s", m.Subject, m.To[0])
				})
				return mailqueue.WorkerConfig{Transport: tr}, ltContentJob()
			},
			want:   outcome{mailqueue.JobQueued, 1, codes.QueueSendFailed},
			record: codes.QueueJobRetrying, text: ltSubject,
		},
		{
			name: "a CheckJob error",
			setup: func(*testing.T) (mailqueue.WorkerConfig, *jobv1.Job) {
				check := func(_ context.Context, j *jobv1.Job) error {
					return fmt.Errorf("no mail to %s about %q (code %v)", j.To[0], j.Subject, j.Context["code"])
				}
				return mailqueue.WorkerConfig{CheckJob: check, Renderer: stubRenderer{}}, ltTemplateJob()
			},
			want:   outcome{mailqueue.JobFailed, 1, codes.QueueRefused},
			record: codes.QueueJobFailed, text: ltValue,
		},
		{
			name: "an attachment refused for good, by its ref",
			setup: func(t *testing.T) (mailqueue.WorkerConfig, *jobv1.Job) {
				return mailqueue.WorkerConfig{ResolveAttachment: attachments.FromPath(t.TempDir())}, ltRefJob("../grace-hopper-918273.pdf")
			},
			want:   outcome{mailqueue.JobFailed, 1, codes.QueueAttachmentFailed},
			record: codes.QueueJobFailed, text: "grace-hopper-918273.pdf", ref: "../grace-hopper-918273.pdf",
		},
		{
			name: "an attachment not found, by its ref",
			setup: func(t *testing.T) (mailqueue.WorkerConfig, *jobv1.Job) {
				return mailqueue.WorkerConfig{ResolveAttachment: attachments.FromPath(t.TempDir())}, ltRefJob("codes/grace-hopper-918273.pdf")
			},
			want:   outcome{mailqueue.JobQueued, 1, codes.QueueAttachmentFailed},
			record: codes.QueueJobRetrying, text: "grace-hopper-918273.pdf", ref: "codes/grace-hopper-918273.pdf",
		},
		{
			name: "an attachment's resolver that quotes the job",
			setup: func(*testing.T) (mailqueue.WorkerConfig, *jobv1.Job) {
				resolve := func(_ context.Context, ref string, info mailqueue.ResolveInfo) ([]byte, error) {
					return nil, fmt.Errorf("no %s for %q", ref, info.Job.Subject)
				}
				return mailqueue.WorkerConfig{ResolveAttachment: resolve}, ltRefJob("vault/reset-code")
			},
			want:   outcome{mailqueue.JobQueued, 1, codes.QueueAttachmentFailed},
			record: codes.QueueJobRetrying, text: ltSubject, ref: "vault/reset-code",
		},
		{
			name: "no ResolveAttachment, an attachment by ref",
			setup: func(*testing.T) (mailqueue.WorkerConfig, *jobv1.Job) {
				return mailqueue.WorkerConfig{}, ltRefJob("vault/reset-code")
			},
			want:   outcome{mailqueue.JobFailed, 1, codes.QueueAttachmentUnresolved},
			record: codes.QueueJobFailed, ref: "vault/reset-code",
		},
		{
			name: "a renderer's error that quotes the context",
			setup: func(*testing.T) (mailqueue.WorkerConfig, *jobv1.Job) {
				return mailqueue.WorkerConfig{Renderer: stubRenderer{err: fmt.Errorf("cannot render code %s for %s", ltValue, ltName)}}, ltTemplateJob()
			},
			want:   outcome{mailqueue.JobQueued, 1, codes.RenderLoadFailed},
			record: codes.QueueJobRetrying, text: ltValue,
		},
		{
			name: "a template loader's outage that quotes the context",
			setup: func(*testing.T) (mailqueue.WorkerConfig, *jobv1.Job) {
				err := &render.LoadError{Template: "reset", Err: errors.New("the store refused " + ltValue)}
				return mailqueue.WorkerConfig{Renderer: stubRenderer{err: err}}, ltTemplateJob()
			},
			want:   outcome{mailqueue.JobQueued, 1, codes.RenderLoadFailed},
			record: codes.QueueJobRetrying, text: ltValue,
		},
		{
			name: "a template that fails on a context value",
			setup: func(t *testing.T) (mailqueue.WorkerConfig, *jobv1.Job) {
				r, err := render.New(fstest.MapFS{
					"reset/en/subject.txt": {Data: []byte("Reset")},
					"reset/en/body.txt":    {Data: []byte("Your code: {{index .code 99}}")},
				}, render.Options{})
				if err != nil {
					t.Fatal(err)
				}
				return mailqueue.WorkerConfig{Renderer: r}, ltTemplateJob()
			},
			want:   outcome{mailqueue.JobFailed, 1, codes.RenderFailed},
			record: codes.QueueJobFailed, debug: codes.QueueRenderFailed,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, job := tc.setup(t)
			h := newHarness(t, cfg).start()
			id := h.enqueue(job)
			h.drain()
			row := h.check(id, tc.want)
			forbidden := messageText(job)
			for _, f := range forbidden {
				if strings.Contains(row.Reason, f) {
					t.Errorf("the stored reason carries %q: %q", f, row.Reason)
				}
				for _, e := range h.sink.Events(id) {
					if strings.Contains(e.Reason, f) {
						t.Errorf("the audit event %s carries %q: %q", e.State, f, e.Reason)
					}
				}
			}
			rec := ltRecord(t, h.logs, tc.record, id, tc.want.Code)
			if tc.reply != nil {
				got := reply{mail.Category(rec.Attrs["category"]), rec.Attrs["smtp_code"], rec.Attrs["enhanced_code"]}
				if got != *tc.reply {
					t.Errorf("%s says of the reply %+v, want %+v (%v)", tc.record, got, *tc.reply, rec.Attrs)
				}
				if !strings.Contains(row.Reason, tc.reply.code+" "+tc.reply.enhanced) || !strings.Contains(row.Reason, string(tc.reply.category)) {
					t.Errorf("the stored reason %q lacks the reply's category and codes", row.Reason)
				}
			} else if _, ok := rec.Attrs["smtp_code"]; ok {
				t.Errorf("%s has an smtp_code, and no reply caused it: %v", tc.record, rec.Attrs)
			}
			debug := tc.debug
			if debug == "" {
				debug = codes.QueueJobDetail
			}
			if tc.text == "" && tc.ref == "" && debug == codes.QueueJobDetail {
				return
			}
			d := ltRecord(t, h.logs, debug, id, "")
			if d.Level != slog.LevelDebug {
				t.Errorf("%s at %v", debug, d.Level)
			}
			if debug == codes.QueueJobDetail && d.Attrs["code"] != string(tc.want.Code) {
				t.Errorf("%s has code %q, want %q", debug, d.Attrs["code"], tc.want.Code)
			}
			if !strings.Contains(d.Attrs["text"], tc.text) || d.Attrs["ref"] != tc.ref {
				t.Errorf("%s carries %v; want the text %q and the ref %q", debug, d.Attrs, tc.text, tc.ref)
			}
			if tc.reply != nil && (d.Attrs["smtp_code"] != tc.reply.code || d.Attrs["enhanced_code"] != tc.reply.enhanced) {
				t.Errorf("%s lacks the reply's codes: %v", debug, d.Attrs)
			}
		})
	}
}

// ltRecord returns the first record of msg about the job id (with the
// code, when not empty), and fails the test when there is none.
func ltRecord(t *testing.T, l *logRecorder, msg codes.Code, id string, code codes.Code) loggedRecord {
	t.Helper()
	for _, r := range l.find(string(msg)) {
		if r.Attrs["job_id"] == id && (code == "" || r.Attrs["code"] == string(code)) {
			return r
		}
	}
	t.Fatalf("no %s record of job %s with code %q", msg, id, code)
	return loggedRecord{}
}
