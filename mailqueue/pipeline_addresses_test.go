package mailqueue_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/mail/smtptest"
	"github.com/alexify/mailer/mailqueue"
)

// plRefusal enqueues a job edited by edit and returns the code, path and
// rule of its refusal; it fails the test when the job was stored.
func plRefusal(t *testing.T, edit func(*jobv1.Job)) (codes.Code, string, string) {
	t.Helper()
	q, mq, _ := newQueue(t, mailqueue.Config{})
	j := contentJob()
	edit(j)
	_, err := q.Enqueue(context.Background(), j)
	var e *mailqueue.Error
	if !errors.As(err, &e) {
		t.Fatalf("Enqueue: %v, want a *mailqueue.Error", err)
	}
	if n := countJobs(t, mq); n != 0 {
		t.Errorf("a refused job was stored: %d jobs", n)
	}
	rule := ""
	if len(e.Fields) > 0 {
		rule = e.Fields[0].Rule
	}
	return e.Code, e.Path, rule
}

// TestPipelineSmugglingAddressesRefusedAtEnqueue: a quoted local part that
// would end the SMTP path and add ESMTP parameters is refused at enqueue,
// in every address field, with its path.
func TestPipelineSmugglingAddressesRefusedAtEnqueue(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{
		`"a> SIZE=1"@example.com`,
		`"x@y> NOTIFY=SUCCESS,FAILURE ORCPT=rfc822;eve@example.com"@z.example`,
		`Eve <"a> SIZE=1"@example.com>`,
		`"john doe"@example.com`,
		`"a\"b"@example.com`,
	} {
		for _, tc := range []struct {
			path string
			edit func(*jobv1.Job)
		}{
			{"from", func(j *jobv1.Job) { j.From = addr }},
			{"to[1]", func(j *jobv1.Job) { j.To = []string{"ada@example.com", addr} }},
			{"cc[0]", func(j *jobv1.Job) { j.Cc = []string{addr} }},
			{"bcc[0]", func(j *jobv1.Job) { j.Bcc = []string{addr} }},
			{"replyTo[0]", func(j *jobv1.Job) { j.ReplyTo = []string{addr} }},
		} {
			code, path, rule := plRefusal(t, tc.edit)
			if diff := cmp.Diff([]string{string(codes.QueueInvalidJob), tc.path, "format"}, []string{string(code), path, rule}); diff != "" {
				t.Errorf("%s in %s (-want +got):\n%s", addr, tc.path, diff)
			}
		}
	}
	// What stays allowed.
	q, _, _ := newQueue(t, mailqueue.Config{})
	for i, addr := range []string{"ada.lovelace+tag@example.com", "Zoë Ångström <zoe@bücher.example>", "jörg@example.com", "ada@[192.0.2.1]", `"Ada, the Countess" <ada@example.com>`} {
		j := contentJob()
		j.IdempotencyKey = "allowed:" + string(rune('a'+i))
		j.To = []string{addr}
		if _, err := q.Enqueue(context.Background(), j); err != nil {
			t.Errorf("%s: %v", addr, err)
		}
	}
}

// TestPipelineReservedHeadersRefusedAtEnqueue: custom headers cannot set the
// headers the kit owns.
func TestPipelineReservedHeadersRefusedAtEnqueue(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"From", "To", "Cc", "Bcc", "Message-ID", "Date", "MIME-Version", "Content-Type",
		"content-type", "Content-Transfer-Encoding", "Subject", "Reply-To", "Sender", "DKIM-Signature"} {
		code, path, _ := plRefusal(t, func(j *jobv1.Job) {
			j.Headers = map[string]string{"X-Campaign": "spring", name: "x"}
		})
		if code != codes.QueueInvalidJob || path != "headers."+name {
			t.Errorf("header %s: code %s, path %q; want queue.invalid_job, headers.%s", name, code, path, name)
		}
	}
	q, _, _ := newQueue(t, mailqueue.Config{})
	j := contentJob()
	j.Headers = map[string]string{"X-Campaign": "spring", "List-Unsubscribe": "<https://example.com/u>"}
	if _, err := q.Enqueue(context.Background(), j); err != nil {
		t.Errorf("ordinary headers: %v", err)
	}
}

// TestPipelineInternationalAddressesThroughSMTP sends jobs with IDN
// domains and a local part that is not ASCII through the queue to SMTP
// servers with and without SMTPUTF8.
func TestPipelineInternationalAddressesThroughSMTP(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	idnJob := func() *jobv1.Job {
		j := contentJob()
		j.IdempotencyKey = "idn"
		j.From = "Zoë Ångström <zoe@bücher.example>"
		j.To = []string{"Jürgen <juergen@straße.example>"}
		return j
	}
	localJob := func() *jobv1.Job {
		j := contentJob()
		j.IdempotencyKey = "local"
		j.To = []string{"Jörg <jörg@example.com>"}
		return j
	}

	t.Run("without SMTPUTF8", func(t *testing.T) {
		srv := smtptest.Start(t, smtptest.Script{})
		q, mq, _ := newQueue(t, mailqueue.Config{})
		startWorker(t, q, mailqueue.WorkerConfig{Transport: smtpTransport(t, srv)})
		idn, err := q.Enqueue(ctx, idnJob())
		if err != nil {
			t.Fatal(err)
		}
		local, err := q.Enqueue(ctx, localJob())
		if err != nil {
			t.Fatal(err)
		}
		drain(t, mq)
		if got, _ := mq.Get(context.Background(), idn.ID); got.State != mailqueue.JobAccepted {
			t.Fatalf("IDN job: %s %s %s", got.State, got.Code, got.Reason)
		}
		// The local part that is not ASCII fails for good at once, no retry.
		got, _ := mq.Get(context.Background(), local.ID)
		if got.State != mailqueue.JobFailed || got.Code != codes.QueueMessageRefused || got.Attempt != 1 {
			t.Errorf("local part not ASCII: state %s, code %s, attempts %d; want failed, queue.message_refused, 1", got.State, got.Code, got.Attempt)
		}
		msgs := srv.Messages()
		if len(msgs) != 1 {
			t.Fatalf("%d messages arrived, want the IDN one alone", len(msgs))
		}
		m := msgs[0]
		if m.UTF8 || m.From != "zoe@xn--bcher-kva.example" || !cmp.Equal(m.To, []string{"juergen@xn--strae-oqa.example"}) {
			t.Errorf("envelope: SMTPUTF8 %t, from %q, to %q", m.UTF8, m.From, m.To)
		}
		head, _, _ := bytes.Cut(m.Data, []byte("\r\n\r\n"))
		if bytes.ContainsFunc(head, func(r rune) bool { return r >= 0x80 }) {
			t.Errorf("8-bit header to a server without SMTPUTF8:\n%s", head)
		}
		if !strings.Contains(string(head), "<zoe@xn--bcher-kva.example>") || !strings.Contains(string(head), "=?utf-8?") {
			t.Errorf("From not as punycode with an encoded display name:\n%s", head)
		}
	})
	t.Run("with SMTPUTF8", func(t *testing.T) {
		srv := smtptest.Start(t, smtptest.Script{SMTPUTF8: true})
		q, mq, _ := newQueue(t, mailqueue.Config{})
		startWorker(t, q, mailqueue.WorkerConfig{Transport: smtpTransport(t, srv)})
		for _, j := range []*jobv1.Job{idnJob(), localJob()} {
			if _, err := q.Enqueue(ctx, j); err != nil {
				t.Fatal(err)
			}
		}
		drain(t, mq)
		if st := stats(t, mq); st.Accepted != 2 {
			t.Fatalf("stats %+v, want 2 accepted", st)
		}
		var tos []string
		for _, m := range srv.Messages() {
			if !m.UTF8 {
				t.Error("MAIL FROM without SMTPUTF8 to a server that offers it")
			}
			tos = append(tos, m.To...)
		}
		if !cmp.Equal(tos, []string{"juergen@straße.example", "jörg@example.com"}) {
			t.Errorf("envelope recipients %q", tos)
		}
	})
}
