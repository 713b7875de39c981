package mailqueue_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/alexify/mailer/drivers/memory"
	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/internal/codetest"
	mmemory "github.com/alexify/mailer/mail/memory"
	"github.com/alexify/mailer/mailqueue"
	"github.com/alexify/mailer/render"
)

// plRecords is a slog.Handler that keeps every record, every level.
type plRecords struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *plRecords) Enabled(context.Context, slog.Level) bool { return true }
func (h *plRecords) Handle(_ context.Context, r slog.Record) error {
	codetest.Observe(r)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r.Clone())
	return nil
}
func (h *plRecords) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *plRecords) WithGroup(string) slog.Handler      { return h }

// text returns each record as "LEVEL message k=v ...", with its level.
func (h *plRecords) text() map[string]slog.Level {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]slog.Level{}
	for _, r := range h.records {
		var sb strings.Builder
		sb.WriteString(r.Message)
		r.Attrs(func(a slog.Attr) bool {
			fmt.Fprintf(&sb, " %s=%v", a.Key, a.Value)
			return true
		})
		out[sb.String()] = r.Level
	}
	return out
}

const plSecret = "tok_9f8e7d6c5b4a-secret"

// plTemplates are templates of the render tests: broken executes a helper
// that fails quoting its argument (a value of the context) on line 3.
func plTemplates() fstest.MapFS {
	return fstest.MapFS{
		"broken/en/subject.txt":   {Data: []byte("Hello")},
		"broken/en/body.html":     {Data: []byte("<p>Hello</p>\n<p>\n{{check .token}}\n</p>\n")},
		"unparsable/en/body.txt":  {Data: []byte("Hello {{.name\n")},
		"nosubject/en/body.txt":   {Data: []byte("Hello {{.name}}")},
		"hello/en/subject.txt":    {Data: []byte("Hello {{.name}}")},
		"hello/en/body.txt":       {Data: []byte("Hello {{.name}}")},
		"slow/en/subject.txt":     {Data: []byte("Slow")},
		"slow/en/body.txt":        {Data: []byte("{{wait}}")},
		"hello/de/unrelated.html": {Data: []byte("not a body")},
	}
}

// plRenderSetup is a queue with a fake clock, a memory transport and a log
// that keeps every record.
type plRenderSetup struct {
	q    *mailqueue.Queue
	mq   *memory.Queue
	tr   *mmemory.Transport
	logs *plRecords
}

func plRender(t *testing.T) *plRenderSetup {
	t.Helper()
	logs := &plRecords{}
	logger := slog.New(logs)
	q, mq, _ := newQueueWith(t, mailqueue.Config{Logger: logger}, memory.Options{Logger: logger})
	return &plRenderSetup{q: q, mq: mq, tr: mmemory.New(), logs: logs}
}

func plTemplateJob(name string) *jobv1.Job {
	return &jobv1.Job{
		Kind: jobv1.KindTemplate, Template: name, Locale: "en",
		Context: map[string]any{"name": "Ada", "token": plSecret},
		From:    "Shop <shop@example.com>", To: []string{"ada@example.com"},
		IdempotencyKey: "render:" + name,
	}
}

func (s *plRenderSetup) run(t *testing.T, job *jobv1.Job) mailqueue.JobRow {
	t.Helper()
	r, err := s.q.Enqueue(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	drain(t, s.mq)
	got, _ := s.mq.Get(context.Background(), r.ID)
	return got
}

// TestPipelineRenderFailures: a missing or broken template fails the job at
// once with render.failed, its reason naming the template, the locale and
// the place; the template's text and the context's values go to the log at
// debug only.
func TestPipelineRenderFailures(t *testing.T) {
	t.Parallel()
	s := plRender(t)
	renderer, err := render.New(plTemplates(), render.Options{Funcs: map[string]any{
		"check": func(v string) (string, error) { return "", fmt.Errorf("the value %q is not allowed", v) },
		"wait":  func() string { return "" },
	}})
	if err != nil {
		t.Fatal(err)
	}
	startWorker(t, s.q, mailqueue.WorkerConfig{Transport: s.tr, Renderer: renderer})

	for _, tc := range []struct {
		template string
		locale   string
		want     []string // in the reason
	}{
		{"missing", "de", []string{`"missing"`, `"de"`, "not found"}},
		{"broken", "en", []string{`"broken"`, `"en"`, "broken/en/body.html:3"}},
		{"unparsable", "en", []string{`"unparsable"`, `"en"`, "unparsable/en/body.txt:2"}},
	} {
		j := plTemplateJob(tc.template)
		j.Locale = tc.locale
		got := s.run(t, j)
		if got.State != mailqueue.JobFailed || got.Code != codes.RenderFailed || got.Attempt != 1 {
			t.Errorf("%s: state %s, code %s, attempts %d; want failed, render.failed, 1", tc.template, got.State, got.Code, got.Attempt)
		}
		for _, w := range tc.want {
			if !strings.Contains(got.Reason, w) {
				t.Errorf("%s: reason %q lacks %q", tc.template, got.Reason, w)
			}
		}
		if strings.Contains(got.Reason, plSecret) {
			t.Errorf("%s: the reason holds the context's value: %q", tc.template, got.Reason)
		}
	}
	if s.tr.Attempts() != 0 {
		t.Errorf("%d sends of jobs that did not render", s.tr.Attempts())
	}
	debugHasSecret := false
	for text, level := range s.logs.text() {
		if strings.Contains(text, plSecret) || strings.Contains(text, "{{check") {
			if level > slog.LevelDebug {
				t.Errorf("a %s record holds the context's value or the template's text: %s", level, text)
			}
			debugHasSecret = debugHasSecret || strings.HasPrefix(text, string(codes.QueueRenderFailed))
		}
	}
	if !debugHasSecret {
		t.Errorf("no debug record %s holds the engine's detail", codes.QueueRenderFailed)
	}
}

func TestPipelineNoRendererNoSubject(t *testing.T) {
	t.Parallel()
	s := plRender(t)
	renderer, err := render.New(plTemplates(), render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	startWorker(t, s.q, mailqueue.WorkerConfig{Transport: s.tr, Renderer: renderer})
	if got := s.run(t, plTemplateJob("nosubject")); got.State != mailqueue.JobFailed || got.Code != codes.RenderNoSubject || got.Attempt != 1 {
		t.Errorf("no subject: state %s, code %s, attempts %d", got.State, got.Code, got.Attempt)
	}
	// The job's subject stands in for the template's.
	j := plTemplateJob("nosubject")
	j.IdempotencyKey, j.Subject = "render:nosubject:2", "From the job"
	if got := s.run(t, j); got.State != mailqueue.JobAccepted {
		t.Errorf("a subject from the job: state %s, code %s", got.State, got.Code)
	}

	s2 := plRender(t)
	startWorker(t, s2.q, mailqueue.WorkerConfig{Transport: s2.tr})
	if got := s2.run(t, plTemplateJob("hello")); got.State != mailqueue.JobFailed || got.Code != codes.RenderNoRenderer || got.Attempt != 1 {
		t.Errorf("no renderer: state %s, code %s, attempts %d", got.State, got.Code, got.Attempt)
	}
	if s.tr.Attempts() != 1 || s2.tr.Attempts() != 0 {
		t.Errorf("sends: %d and %d, want 1 and 0", s.tr.Attempts(), s2.tr.Attempts())
	}
}

// plFlakyFS fails every read while down is set, as a template store in an
// outage.
type plFlakyFS struct {
	fs.FS
	down atomic.Bool
}

var errOutage = errors.New("connection reset by the template store")

func (f *plFlakyFS) Open(name string) (fs.File, error) {
	if f.down.Load() {
		return nil, &fs.PathError{Op: "open", Path: name, Err: errOutage}
	}
	return f.FS.Open(name)
}

// TestPipelineRenderOutageAndTimeoutRetry: a loader outage
// (render.LoadError) and a render over its timeout are retried after the
// backoff, and the job goes once they pass.
func TestPipelineRenderOutageAndTimeoutRetry(t *testing.T) {
	t.Parallel()
	t.Run("loader outage", func(t *testing.T) {
		logs := &plRecords{}
		q, mq, fc := newQueueWith(t, mailqueue.Config{Logger: slog.New(logs)}, memory.Options{Logger: slog.New(logs)})
		fsys := &plFlakyFS{FS: plTemplates()}
		fsys.down.Store(true)
		renderer, err := render.New(fsys, render.Options{})
		if err != nil {
			t.Fatal(err)
		}
		tr := mmemory.New()
		startWorker(t, q, mailqueue.WorkerConfig{Transport: tr, Renderer: renderer})
		r, err := q.Enqueue(context.Background(), plTemplateJob("hello"))
		if err != nil {
			t.Fatal(err)
		}
		drain(t, mq)
		got, _ := mq.Get(context.Background(), r.ID)
		if got.State != mailqueue.JobQueued || got.Code != codes.RenderLoadFailed || got.Attempt != 1 || !got.RunAt.After(fc.Now()) {
			t.Fatalf("during the outage: state %s, code %s, attempts %d, run at %v; want queued, render.load_failed, 1, later", got.State, got.Code, got.Attempt, got.RunAt)
		}
		fsys.down.Store(false)
		fc.Set(got.RunAt)
		mq.Wake()
		drain(t, mq)
		if got, _ = mq.Get(context.Background(), r.ID); got.State != mailqueue.JobAccepted || got.Attempt != 2 || tr.Attempts() != 1 {
			t.Errorf("after the outage: state %s, attempts %d, sends %d", got.State, got.Attempt, tr.Attempts())
		}
	})
	t.Run("timeout", func(t *testing.T) {
		quiet := slog.New(&plRecords{})
		q, mq, fc := newQueueWith(t, mailqueue.Config{Logger: quiet}, memory.Options{Logger: quiet})
		release := make(chan struct{})
		var slow atomic.Bool
		slow.Store(true)
		renderer, err := render.New(plTemplates(), render.Options{
			Timeout: 50 * time.Millisecond,
			Funcs: map[string]any{"wait": func() string {
				if slow.Load() {
					<-release
				}
				return "done"
			}},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { close(release) })
		tr := mmemory.New()
		startWorker(t, q, mailqueue.WorkerConfig{Transport: tr, Renderer: renderer})
		r, err := q.Enqueue(context.Background(), plTemplateJob("slow"))
		if err != nil {
			t.Fatal(err)
		}
		drain(t, mq)
		got, _ := mq.Get(context.Background(), r.ID)
		if got.State != mailqueue.JobQueued || got.Code != codes.RenderTimeout || got.Attempt != 1 || !got.RunAt.After(fc.Now()) {
			t.Fatalf("a render over its timeout: state %s, code %s, attempts %d; want queued, render.timeout, 1", got.State, got.Code, got.Attempt)
		}
		slow.Store(false)
		fc.Set(got.RunAt)
		mq.Wake()
		drain(t, mq)
		if got, _ = mq.Get(context.Background(), r.ID); got.State != mailqueue.JobAccepted || tr.Attempts() != 1 {
			t.Errorf("after the timeout: state %s, sends %d", got.State, tr.Attempts())
		}
	})
}

// plWhere is a file:line place in a reason.
var plWhere = regexp.MustCompile(`[\w-]+/[\w-]+/body\.(html|txt):\d+`)

func TestPipelineRenderReasonHasPlace(t *testing.T) {
	t.Parallel()
	s := plRender(t)
	renderer, _ := render.New(plTemplates(), render.Options{Funcs: map[string]any{
		"check": func(string) (string, error) { return "", errors.New("no") },
		"wait":  func() string { return "" },
	}})
	startWorker(t, s.q, mailqueue.WorkerConfig{Transport: s.tr, Renderer: renderer})
	got := s.run(t, plTemplateJob("broken"))
	if !plWhere.MatchString(got.Reason) {
		t.Errorf("reason %q names no file:line", got.Reason)
	}
}
