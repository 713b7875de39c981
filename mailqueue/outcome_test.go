package mailqueue_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	netmail "net/mail"
	"regexp"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/alexify/mailer/audit"
	"github.com/alexify/mailer/clock"
	"github.com/alexify/mailer/drivers/memory"
	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/internal/codetest"
	"github.com/alexify/mailer/mail"
	mtransport "github.com/alexify/mailer/mail/memory"
	"github.com/alexify/mailer/mailqueue"
	"github.com/alexify/mailer/render"
)

// logRecorder is a slog.Handler that keeps every record, at every level.
type logRecorder struct {
	mu      sync.Mutex
	records []loggedRecord
	// forbidden is the text of the messages logged about (messageText):
	// no record above debug may carry it.
	forbidden []string
}

type loggedRecord struct {
	Level slog.Level
	Msg   string
	Attrs map[string]string
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logRecorder) WithGroup(string) slog.Handler            { return l }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	codetest.Observe(r)
	rec := loggedRecord{Level: r.Level, Msg: r.Message, Attrs: map[string]string{}}
	r.Attrs(func(a slog.Attr) bool {
		rec.Attrs[a.Key] = a.Value.String()
		return true
	})
	l.mu.Lock()
	l.records = append(l.records, rec)
	l.mu.Unlock()
	return nil
}

func (l *logRecorder) find(msg string) []loggedRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []loggedRecord
	for _, r := range l.records {
		if r.Msg == msg {
			out = append(out, r)
		}
	}
	return out
}

var addressPattern = regexp.MustCompile(`[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}`)

// forbid adds the text of a job to what no record above debug may carry.
func (l *logRecorder) forbid(j *jobv1.Job) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.forbidden = append(l.forbidden, messageText(j)...)
}

// messageText is what a job holds that no record above debug may carry
// (docs/architecture.md, "No message text above debug"): its subject, the
// display names of its mailboxes, the strings of its context, the lines
// of its bodies, its header values and its attachments' refs. Strings
// shorter than 3 characters are left out: they would match by chance.
func messageText(j *jobv1.Job) []string {
	var out []string
	add := func(s string) {
		if s = strings.TrimSpace(s); len(s) >= 3 {
			out = append(out, s)
		}
	}
	add(j.Subject)
	for _, list := range [][]string{{j.From}, j.To, j.Cc, j.Bcc, j.ReplyTo} {
		for _, a := range list {
			if m, err := netmail.ParseAddress(a); err == nil {
				add(m.Name)
			}
		}
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			add(v)
		case map[string]any:
			for _, e := range v {
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(map[string]any(j.Context))
	if j.Content != nil {
		for _, line := range strings.Split(j.Content.Text+"\n"+j.Content.HTML, "\n") {
			add(line)
		}
	}
	for _, v := range j.Headers {
		add(v)
	}
	for _, a := range j.Attachments {
		add(a.Ref)
	}
	return out
}

// checkNoMessageTextAboveDebug fails the test if a record above debug
// carries an address, or a subject, a display name, a context value, a
// line of a body, a header value or an attachment's ref of a job the
// recorder was told of (forbid) (docs/architecture.md).
func (l *logRecorder) checkNoMessageTextAboveDebug(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.records {
		if r.Level <= slog.LevelDebug {
			continue
		}
		text := r.Msg + fmt.Sprint(r.Attrs)
		if addressPattern.MatchString(text) {
			t.Errorf("a %s record carries an address: %s %v", r.Level, r.Msg, r.Attrs)
		}
		for _, f := range l.forbidden {
			if strings.Contains(text, f) {
				t.Errorf("a %s record carries the message's text %q: %s %v", r.Level, f, r.Msg, r.Attrs)
			}
		}
	}
}

// checkLevels fails the test if a record whose message is a code of
// schema/codes.yaml is not at that code's level.
func (l *logRecorder) checkLevels(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.records {
		if info, ok := codes.Lookup(codes.Code(r.Msg)); ok && info.Level != r.Level {
			t.Errorf("%s logged at %v, codes.yaml says %v", r.Msg, r.Level, info.Level)
		}
	}
}

// harness is a queue over a memory queue with a fake clock, a memory
// transport, a memory audit sink and a recording logger.
type harness struct {
	t    *testing.T
	q    *mailqueue.Queue
	mq   *memory.Queue
	fc   *clock.Fake
	tr   *mtransport.Transport
	sink *audit.Memory
	logs *logRecorder
	w    *mailqueue.Worker
}

func newHarness(t *testing.T, wcfg mailqueue.WorkerConfig) *harness {
	t.Helper()
	var opts memory.Options
	h := &harness{t: t, fc: clock.NewFake(t0), tr: mtransport.New(), sink: audit.NewMemory(), logs: &logRecorder{}}
	// The jobs the tests enqueue without h.enqueue.
	h.logs.forbid(contentJob())
	h.logs.forbid(templateJob())
	logger := slog.New(h.logs)
	opts.Clock, opts.Logger = h.fc, logger
	if opts.RetainData == "" {
		opts.RetainData = mailqueue.RetainAllData
	}
	h.mq = mustMemory(t, opts)
	q, err := mailqueue.New(mailqueue.Config{Driver: h.mq, Clock: h.fc, Logger: logger, Audit: codetest.Sink(h.sink)})
	if err != nil {
		t.Fatal(err)
	}
	h.q = q
	if wcfg.Transport == nil {
		wcfg.Transport = h.tr
	}
	w, err := q.NewWorker(wcfg)
	if err != nil {
		t.Fatal(err)
	}
	h.w = w
	t.Cleanup(func() {
		_ = w.Close(context.Background())
		h.logs.checkNoMessageTextAboveDebug(t)
		h.logs.checkLevels(t)
	})
	return h
}

func (h *harness) start() *harness {
	h.t.Helper()
	if err := h.w.Start(); err != nil {
		h.t.Fatal(err)
	}
	return h
}

func (h *harness) enqueue(j *jobv1.Job) string {
	h.t.Helper()
	h.logs.forbid(j)
	r, err := h.q.Enqueue(context.Background(), j)
	if err != nil {
		h.t.Fatal(err)
	}
	return r.ID
}

func (h *harness) drain() {
	h.t.Helper()
	drain(h.t, h.mq)
}

func (h *harness) job(id string) mailqueue.JobRow {
	h.t.Helper()
	j, err := h.mq.Get(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return j
}

// outcome is what a test asserts of a job after its runs.
type outcome struct {
	State    mailqueue.JobState
	Attempts int
	Code     codes.Code
}

func (h *harness) check(id string, want outcome) mailqueue.JobRow {
	h.t.Helper()
	j := h.job(id)
	if diff := cmp.Diff(want, outcome{j.State, j.Attempt, j.Code}); diff != "" {
		h.t.Errorf("job (-want +got):\n%s\nreason: %s", diff, j.Reason)
	}
	return j
}

func receiptOf(c mail.Category, code int) mail.Receipt {
	return mail.Receipt{Category: c, Code: code, Reason: "server says no to ada@example.com"}
}

func TestOutcomeOfAReceipt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		receipt mail.Receipt
		want    outcome
		// delay is the least and most the job waits when it is queued.
		minDelay, maxDelay time.Duration
	}{
		{"accepted", mail.Receipt{Category: mail.Accepted, Code: 250}, outcome{mailqueue.JobAccepted, 1, ""}, 0, 0},
		{"delivery unknown (a timeout after the request)", receiptOf(mail.DeliveryUnknown, 0), outcome{mailqueue.JobDeliveryUnknown, 1, codes.DeliveryUnknown}, 0, 0},
		{"retryable, attempts left", receiptOf(mail.Retryable, 451), outcome{mailqueue.JobQueued, 1, codes.QueueSendFailed}, 0, 30 * time.Second},
		{"retryable with a Retry-After", mail.Receipt{Category: mail.Retryable, Code: 421, RetryAfter: 2 * time.Minute}, outcome{mailqueue.JobQueued, 1, codes.QueueSendFailed}, 2 * time.Minute, 2*time.Minute + 12*time.Second},
		{"rate limited (scope job): given back, no attempt spent", mail.Receipt{Category: mail.RateLimited, Code: 429, RetryAfter: 20 * time.Second}, outcome{mailqueue.JobQueued, 0, codes.QueueRateLimited}, 20 * time.Second, 22 * time.Second},
		{"refused: validation", receiptOf(mail.Validation, 555), outcome{mailqueue.JobFailed, 1, codes.QueueMessageRefused}, 0, 0},
		{"refused: rejected", receiptOf(mail.Rejected, 550), outcome{mailqueue.JobFailed, 1, codes.QueueMessageRefused}, 0, 0},
		{"refused: unsupported", receiptOf(mail.Unsupported, 553), outcome{mailqueue.JobFailed, 1, codes.QueueMessageRefused}, 0, 0},
		{"operator: auth", receiptOf(mail.Auth, 535), outcome{mailqueue.JobQueued, 0, codes.QueueOperatorFailed}, 5 * time.Minute, 5 * time.Minute},
		{"operator: configuration", receiptOf(mail.Configuration, 0), outcome{mailqueue.JobQueued, 0, codes.QueueOperatorFailed}, 5 * time.Minute, 5 * time.Minute},
		{"a receipt of no known category", mail.Receipt{Category: "weird"}, outcome{mailqueue.JobFailed, 1, codes.QueueInvalidReceipt}, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, mailqueue.WorkerConfig{}).start()
			h.tr.Script(tc.receipt)
			id := h.enqueue(contentJob())
			h.drain()
			j := h.check(id, tc.want)
			if tc.want.State == mailqueue.JobQueued {
				d := j.RunAt.Sub(h.fc.Now())
				if d < tc.minDelay || d > tc.maxDelay {
					t.Errorf("due in %v, want within [%v, %v]", d, tc.minDelay, tc.maxDelay)
				}
			}
			if strings.Contains(j.Reason, "ada@example.com") {
				t.Errorf("the reason carries an address: %q", j.Reason)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	want := []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 16 * time.Minute, 32 * time.Minute, time.Hour, time.Hour}
	for i, w := range want {
		if got := mailqueue.BackoffCeiling(i + 1); got != w {
			t.Errorf("BackoffCeiling(%d) = %v, want %v", i+1, got, w)
		}
	}
	// Full jitter: uniform in [0, ceiling].
	below := 0
	for i := 0; i < 2000; i++ {
		d := mailqueue.Backoff(3)
		if d < 0 || d > 2*time.Minute {
			t.Fatalf("Backoff(3) = %v, outside [0, 2m]", d)
		}
		if d < time.Minute {
			below++
		}
	}
	if below < 800 || below > 1200 {
		t.Errorf("%d of 2000 backoffs below half the ceiling: not full jitter", below)
	}
}

func TestRetryThenLastAttempt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, mailqueue.WorkerConfig{}).start()
	h.tr.Script(receiptOf(mail.Retryable, 451), receiptOf(mail.Retryable, 451))
	j := contentJob()
	j.MaxAttempts = 2
	id := h.enqueue(j)
	h.drain()
	got := h.check(id, outcome{mailqueue.JobQueued, 1, codes.QueueSendFailed})
	h.fc.Set(got.RunAt)
	h.mq.Wake()
	h.drain()
	h.check(id, outcome{mailqueue.JobFailed, 2, codes.QueueAttemptsExhausted})
	if diff := cmp.Diff([]mailqueue.AuditState{"queued", "rendered", "submitted", "queued", "rendered", "submitted", "failed"}, h.sink.States(id)); diff != "" {
		t.Errorf("audit (-want +got):\n%s", diff)
	}
}

func TestExpiry(t *testing.T) {
	t.Parallel()
	t.Run("past expiresAt", func(t *testing.T) {
		h := newHarness(t, mailqueue.WorkerConfig{})
		j := contentJob()
		exp := t0.Add(time.Minute)
		j.ExpiresAt = &exp
		id := h.enqueue(j)
		h.fc.Advance(2 * time.Minute)
		h.start().drain()
		h.check(id, outcome{mailqueue.JobFailed, 1, codes.QueueExpired})
		if h.tr.Attempts() != 0 {
			t.Error("an expired job was sent")
		}
	})
	t.Run("its retry would come after expiresAt", func(t *testing.T) {
		h := newHarness(t, mailqueue.WorkerConfig{Backoff: func(int) time.Duration { return time.Hour }}).start()
		h.tr.Script(receiptOf(mail.Retryable, 451))
		j := contentJob()
		exp := t0.Add(15 * time.Minute)
		j.ExpiresAt = &exp
		id := h.enqueue(j)
		h.drain()
		h.check(id, outcome{mailqueue.JobFailed, 1, codes.QueueExpired})
	})
}

// stubRenderer returns err, or renders a fixed result.
type stubRenderer struct {
	err    error
	result render.Result
	block  bool
}

func (s stubRenderer) Render(ctx context.Context, req render.Request) (render.Result, error) {
	if s.block {
		<-ctx.Done()
		return render.Result{}, ctx.Err()
	}
	return s.result, s.err
}

func templateJob() *jobv1.Job {
	return &jobv1.Job{
		Kind: jobv1.KindTemplate, Template: "welcome", Context: map[string]any{"name": "Ada", "secret": "s3cr3t-token"},
		From: "Shop <shop@example.com>", To: []string{"ada@example.com"}, IdempotencyKey: "welcome:1",
	}
}

func TestRenderOutcomes(t *testing.T) {
	t.Parallel()
	broken, err := render.New(fstest.MapFS{
		"welcome/en/subject.txt": {Data: []byte("Hi")},
		"welcome/en/body.txt":    {Data: []byte("line one\n{{.secret | nosuchfunc}}")},
	}, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	execFails, err := render.New(fstest.MapFS{
		"welcome/en/subject.txt": {Data: []byte("Hi")},
		"welcome/en/body.txt":    {Data: []byte("line one\n{{index .secret 99}}")},
	}, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	noSubject, err := render.New(fstest.MapFS{"welcome/en/body.txt": {Data: []byte("Hi {{.name}}")}}, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	missing, err := render.New(fstest.MapFS{"other/en/body.txt": {Data: []byte("x")}}, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		renderer render.Renderer
		want     outcome
	}{
		{"no renderer", nil, outcome{mailqueue.JobFailed, 1, codes.RenderNoRenderer}},
		{"a template missing", missing, outcome{mailqueue.JobFailed, 1, codes.RenderFailed}},
		{"a template that does not parse", broken, outcome{mailqueue.JobFailed, 1, codes.RenderFailed}},
		{"a template that fails to execute", execFails, outcome{mailqueue.JobFailed, 1, codes.RenderFailed}},
		{"no subject", noSubject, outcome{mailqueue.JobFailed, 1, codes.RenderNoSubject}},
		{"a loader outage", stubRenderer{err: &render.LoadError{Template: "welcome", Err: errors.New("template store down")}}, outcome{mailqueue.JobQueued, 1, codes.RenderLoadFailed}},
		{"a render timeout", stubRenderer{err: fmt.Errorf("render: %w", render.ErrTimeout)}, outcome{mailqueue.JobQueued, 1, codes.RenderTimeout}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, mailqueue.WorkerConfig{Renderer: tc.renderer}).start()
			id := h.enqueue(templateJob())
			h.drain()
			j := h.check(id, tc.want)
			if h.tr.Attempts() != 0 {
				t.Error("a job whose render failed was sent")
			}
			if strings.Contains(j.Reason, "s3cr3t") {
				t.Errorf("the reason carries a context value: %q", j.Reason)
			}
			if tc.want.Code == codes.RenderFailed && !strings.Contains(j.Reason, `"welcome"`) {
				t.Errorf("the reason does not name the template: %q", j.Reason)
			}
			for _, r := range h.logs.records {
				if r.Level > slog.LevelDebug && strings.Contains(r.Msg+fmt.Sprint(r.Attrs), "s3cr3t") {
					t.Errorf("a %s record carries a context value: %s %v", r.Level, r.Msg, r.Attrs)
				}
			}
		})
	}
}

func TestAttachmentOutcomes(t *testing.T) {
	t.Parallel()
	refJob := func() *jobv1.Job {
		j := contentJob()
		j.Attachments = []jobv1.Attachment{{Ref: "invoices/1.pdf", Filename: "invoice.pdf", ContentType: "application/pdf"}}
		return j
	}
	tests := []struct {
		name    string
		resolve func(context.Context, string, mailqueue.ResolveInfo) ([]byte, error)
		want    outcome
	}{
		{"no resolver", nil, outcome{mailqueue.JobFailed, 1, codes.QueueAttachmentUnresolved}},
		{"a resolver outage", func(context.Context, string, mailqueue.ResolveInfo) ([]byte, error) {
			return nil, errors.New("bucket unreachable")
		}, outcome{mailqueue.JobQueued, 1, codes.QueueAttachmentFailed}},
		{"a resolver that gives nothing", func(context.Context, string, mailqueue.ResolveInfo) ([]byte, error) { return nil, nil }, outcome{mailqueue.JobQueued, 1, codes.QueueAttachmentFailed}},
		{"resolved", func(_ context.Context, ref string, info mailqueue.ResolveInfo) ([]byte, error) {
			if ref != "invoices/1.pdf" || info.Attachment.Filename != "invoice.pdf" || info.Job.IdempotencyKey != "invoice:1" {
				return nil, fmt.Errorf("unexpected %q %+v", ref, info.Attachment)
			}
			return []byte("%PDF-1.7"), nil
		}, outcome{mailqueue.JobAccepted, 1, ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, mailqueue.WorkerConfig{ResolveAttachment: tc.resolve}).start()
			id := h.enqueue(refJob())
			h.drain()
			h.check(id, tc.want)
		})
	}
}

type panickingTransport struct{}

func (panickingTransport) Send(context.Context, *mail.Message) (mail.Receipt, error) {
	var m map[string]int
	m["boom"]++ //nolint:staticcheck // SA5000 on purpose: a transport with a bug, whose panic the worker recovers
	return mail.Receipt{}, nil
}

// contradictoryTransport answers an accepted receipt with an error.
type contradictoryTransport struct{}

func (contradictoryTransport) Send(context.Context, *mail.Message) (mail.Receipt, error) {
	return mail.Receipt{Category: mail.Accepted, Code: 250}, errors.New("and yet it failed")
}

func TestAcceptedWithAnErrorIsAnInvalidReceipt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, mailqueue.WorkerConfig{Transport: contradictoryTransport{}}).start()
	id := h.enqueue(contentJob())
	h.drain()
	h.check(id, outcome{mailqueue.JobFailed, 1, codes.QueueInvalidReceipt})
}

func TestTransportPanicIsThrown(t *testing.T) {
	t.Parallel()
	h := newHarness(t, mailqueue.WorkerConfig{Transport: panickingTransport{}}).start()
	id := h.enqueue(contentJob())
	h.drain()
	h.check(id, outcome{mailqueue.JobFailed, 1, codes.QueueThrown})
	recs := h.logs.find(string(codes.QueueThrown))
	if len(recs) != 1 || !strings.Contains(recs[0].Attrs["stack"], "panickingTransport") || recs[0].Level != slog.LevelError {
		t.Errorf("queue.thrown is not logged at error with its stack: %+v", recs)
	}
}

func TestHooks(t *testing.T) {
	t.Parallel()
	t.Run("CheckJob refuses", func(t *testing.T) {
		h := newHarness(t, mailqueue.WorkerConfig{CheckJob: func(_ context.Context, j *jobv1.Job) error {
			if j.TenantID == "" {
				return errors.New("no tenant")
			}
			return nil
		}}).start()
		id := h.enqueue(contentJob())
		h.drain()
		h.check(id, outcome{mailqueue.JobFailed, 1, codes.QueueRefused})
	})
	for _, tc := range []struct {
		decision mailqueue.Decision
		want     outcome
	}{
		{mailqueue.DecideFail, outcome{mailqueue.JobFailed, 1, codes.QueueMessageRefused}},
		{mailqueue.DecideDeliveryUnknown, outcome{mailqueue.JobDeliveryUnknown, 1, codes.DeliveryUnknown}},
		{mailqueue.DecideRetry, outcome{mailqueue.JobQueued, 1, codes.QueueSendFailed}},
		{mailqueue.DecideByRules, outcome{mailqueue.JobQueued, 0, codes.QueueOperatorFailed}},
	} {
		t.Run("Classify "+string(tc.decision), func(t *testing.T) {
			var seen mail.Receipt
			h := newHarness(t, mailqueue.WorkerConfig{Classify: func(r mail.Receipt, j *jobv1.Job) mailqueue.Decision {
				seen = r
				return tc.decision
			}}).start()
			h.tr.Script(receiptOf(mail.Auth, 535))
			id := h.enqueue(contentJob())
			h.drain()
			h.check(id, tc.want)
			if seen.Code != 535 {
				t.Errorf("Classify saw %+v", seen)
			}
		})
	}
}

// redeliver makes the job's runs end unsettled n times: each run's lease
// runs out.
func (h *harness) redeliver(n int) {
	h.t.Helper()
	for i := 0; i < n; i++ {
		ls, err := h.mq.Source().Reserve(context.Background(), mailqueue.ReserveParams{Limit: 1, LeaseDuration: time.Minute})
		if err != nil || len(ls) != 1 {
			h.t.Fatalf("reserve: %v %d", err, len(ls))
		}
		h.fc.Advance(time.Minute)
	}
}

func TestRedeliveries(t *testing.T) {
	t.Parallel()
	t.Run("more than MaxRedeliveries fail before rendering", func(t *testing.T) {
		h := newHarness(t, mailqueue.WorkerConfig{Renderer: stubRenderer{err: errors.New("must not render")}})
		id := h.enqueue(templateJob())
		h.redeliver(4)
		h.start().drain()
		h.check(id, outcome{mailqueue.JobDeliveryUnknown, 1, codes.QueueRedeliveryExhausted})
	})
	t.Run("MaxRedeliveries runs again are sent (policy send)", func(t *testing.T) {
		h := newHarness(t, mailqueue.WorkerConfig{})
		id := h.enqueue(contentJob())
		h.redeliver(3)
		h.start().drain()
		h.check(id, outcome{mailqueue.JobAccepted, 1, ""})
		if len(h.logs.find(string(codes.QueueJobRedelivered))) != 1 {
			t.Error("queue.job.redelivered not logged")
		}
	})
	t.Run("policy delivery_unknown, the run before submitted", func(t *testing.T) {
		h := newHarness(t, mailqueue.WorkerConfig{Redelivered: mailqueue.RedeliveredDeliveryUnknown})
		id := h.enqueue(contentJob())
		_ = h.sink.Record(context.Background(), mailqueue.AuditEvent{JobID: id, Attempt: 1, State: mailqueue.AuditSubmitted})
		h.redeliver(1)
		h.start().drain()
		h.check(id, outcome{mailqueue.JobDeliveryUnknown, 1, codes.QueueRedelivered})
		if h.tr.Attempts() != 0 {
			t.Error("sent again after a run that may have sent it")
		}
	})
	t.Run("policy delivery_unknown, the run before never submitted", func(t *testing.T) {
		h := newHarness(t, mailqueue.WorkerConfig{Redelivered: mailqueue.RedeliveredDeliveryUnknown})
		id := h.enqueue(contentJob())
		h.redeliver(1)
		h.start().drain()
		h.check(id, outcome{mailqueue.JobAccepted, 1, ""})
	})
}

func TestStopping(t *testing.T) {
	t.Parallel()
	t.Run("before the send: given back unspent", func(t *testing.T) {
		h := newHarness(t, mailqueue.WorkerConfig{Renderer: stubRenderer{block: true}}).start()
		id := h.enqueue(templateJob())
		waitFor(t, func() bool { return h.job(id).State == mailqueue.JobRunning })
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		if err := h.w.Close(ctx); err != nil {
			t.Fatal(err)
		}
		h.check(id, outcome{mailqueue.JobQueued, 0, codes.QueueStopped})
	})
	t.Run("during the send: delivery unknown", func(t *testing.T) {
		tr := &blockingTransport{started: make(chan struct{}, 1), release: make(chan struct{})}
		h := newHarness(t, mailqueue.WorkerConfig{Transport: tr}).start()
		id := h.enqueue(contentJob())
		<-tr.started
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		if err := h.w.Close(ctx); err != nil {
			t.Fatal(err)
		}
		h.check(id, outcome{mailqueue.JobDeliveryUnknown, 1, codes.QueueAborted})
	})
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestAudit(t *testing.T) {
	t.Parallel()
	t.Run("the states of a job", func(t *testing.T) {
		h := newHarness(t, mailqueue.WorkerConfig{}).start()
		id := h.enqueue(contentJob())
		h.drain()
		if diff := cmp.Diff([]mailqueue.AuditState{"queued", "rendered", "submitted", "accepted"}, h.sink.States(id)); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("a failing sink is a warning", func(t *testing.T) {
		var warned []codes.Code
		var mu sync.Mutex
		h := newHarness(t, mailqueue.WorkerConfig{})
		q, err := mailqueue.New(mailqueue.Config{Driver: h.mq, Clock: h.fc, Logger: slog.New(h.logs), Audit: h.sink, OnWarning: func(c codes.Code, err error) {
			mu.Lock()
			warned = append(warned, c)
			mu.Unlock()
		}})
		if err != nil {
			t.Fatal(err)
		}
		w, _ := q.NewWorker(mailqueue.WorkerConfig{Transport: h.tr})
		_ = w.Start()
		defer func() { _ = w.Close(context.Background()) }()
		h.sink.SetFailing(errors.New("audit store down"))
		r, err := q.Enqueue(context.Background(), contentJob())
		if err != nil {
			t.Fatal(err)
		}
		drain(t, h.mq)
		h.check(r.ID, outcome{mailqueue.JobAccepted, 1, ""})
		mu.Lock()
		defer mu.Unlock()
		if len(warned) == 0 || warned[0] != codes.MailerAuditFailed {
			t.Errorf("warnings %v, want MAILER_AUDIT_FAILED", warned)
		}
	})
	t.Run("a strict sink that fails retries before the send", func(t *testing.T) {
		h := newHarness(t, mailqueue.WorkerConfig{AuditStrict: true})
		id := h.enqueue(contentJob())
		h.sink.SetFailing(errors.New("audit store down"))
		h.start().drain()
		h.check(id, outcome{mailqueue.JobQueued, 1, codes.AuditFailed})
		if h.tr.Attempts() != 0 {
			t.Error("sent without the audit")
		}
	})
	t.Run("a strict sink that fails refuses the enqueue", func(t *testing.T) {
		h := newHarness(t, mailqueue.WorkerConfig{})
		q, _ := mailqueue.New(mailqueue.Config{Driver: h.mq, Clock: h.fc, Logger: slog.New(h.logs), Audit: h.sink, AuditStrict: true})
		h.sink.SetFailing(errors.New("audit store down"))
		_, err := q.Enqueue(context.Background(), contentJob())
		if mailqueue.CodeOf(err) != codes.AuditFailed || countJobs(t, h.mq) != 0 {
			t.Errorf("got %v with %d jobs stored; want audit.failed and none", err, countJobs(t, h.mq))
		}
	})
}

func TestRateLimitScopes(t *testing.T) {
	t.Parallel()
	rateLimited := mail.Receipt{Category: mail.RateLimited, Code: 429, RetryAfter: time.Minute}
	tenantJob := func(tenant, key string) *jobv1.Job {
		j := contentJob()
		j.TenantID, j.IdempotencyKey = tenant, key
		return j
	}
	t.Run("queue", func(t *testing.T) {
		h := newHarness(t, mailqueue.WorkerConfig{RateLimitScope: mailqueue.RateLimitQueue}).start()
		h.tr.Script(rateLimited)
		first := h.enqueue(tenantJob("a", "1"))
		h.drain()
		h.check(first, outcome{mailqueue.JobQueued, 0, codes.QueueRateLimited})
		other := h.enqueue(tenantJob("b", "2"))
		h.mq.Wake()
		h.drain()
		h.check(other, outcome{mailqueue.JobQueued, 0, ""})
		if err := h.q.Resume(context.Background()); err != nil {
			t.Fatal(err)
		}
		h.drain()
		h.check(other, outcome{mailqueue.JobAccepted, 1, ""})
	})
	t.Run("tenant", func(t *testing.T) {
		h := newHarness(t, mailqueue.WorkerConfig{RateLimitScope: mailqueue.RateLimitTenant}).start()
		h.tr.Script(rateLimited)
		first := h.enqueue(tenantJob("a", "1"))
		h.drain()
		h.check(first, outcome{mailqueue.JobQueued, 0, codes.QueueRateLimited})
		sameTenant := h.enqueue(tenantJob("a", "2"))
		otherTenant := h.enqueue(tenantJob("b", "3"))
		h.drain()
		h.check(otherTenant, outcome{mailqueue.JobAccepted, 1, ""})
		h.check(sameTenant, outcome{mailqueue.JobQueued, 0, ""})
		if err := h.q.ResumeTenant(context.Background(), "a"); err != nil {
			t.Fatal(err)
		}
		h.drain()
		h.check(sameTenant, outcome{mailqueue.JobAccepted, 1, ""})
		// The first job waits for its own Retry-After, then goes.
		h.fc.Advance(2 * time.Minute)
		h.mq.Wake()
		h.drain()
		h.check(first, outcome{mailqueue.JobAccepted, 1, ""})
	})
}
