package mailqueue_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
	_ "time/tzdata" // the zones of the children, whatever the machine has

	"github.com/google/go-cmp/cmp"

	"github.com/alexify/mailer/attachments"
	"github.com/alexify/mailer/clock"
	"github.com/alexify/mailer/drivers/memory"
	"github.com/alexify/mailer/examples/templates"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/mail/smtptest"
	"github.com/alexify/mailer/mailqueue"
	"github.com/alexify/mailer/render"
)

// plChildEnv names the file a child process of
// TestPipelineSameBytesInTwoProcesses reads its job from; set, the test runs
// as that child.
const plChildEnv = "MAILER_PIPELINE_BYTES_CHILD"

// plChildJob is what the parent hands a child: the stored job and the
// lease it runs under.
type plChildJob struct {
	Lease   mailqueue.Lease
	Attach  string    // the folder FromPath reads
	Now     time.Time // the child's clock
	OutPath string
}

// plChildOut is what a child hands back.
type plChildOut struct {
	Data   []byte
	Zone   string
	Action string
	Code   string
}

// TestPipelineSameBytesInTwoProcesses builds one job in two worker
// processes, each with another TZ and another clock, and sends it through
// SMTP: the bytes that arrive are the same, byte for byte (Message-ID,
// Content-IDs, MIME boundaries, the Date from enqueuedAt, the rendering).
// The go-smtp server adds no trace header, so nothing is left out of the
// comparison.
func TestPipelineSameBytesInTwoProcesses(t *testing.T) {
	t.Parallel()
	if path := os.Getenv(plChildEnv); path != "" {
		plChild(t, path)
		return
	}
	if testing.Short() {
		t.Skip("starts two processes")
	}
	ctx := context.Background()
	dir := t.TempDir()
	attach := filepath.Join(dir, "attachments")
	if err := os.MkdirAll(attach, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(attach, "terms.pdf"), []byte("%PDF-1.4\n% terms \x00\xff\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	q, mq, _ := newQueue(t, mailqueue.Config{})
	r, err := q.Enqueue(ctx, &jobv1.Job{
		Kind: jobv1.KindTemplate, Template: "reset-password", Locale: "de",
		Context: map[string]any{"name": "Zoë", "url": "https://app.example.com/reset?token=abc"},
		From:    "Zoë Ångström <no-reply@bücher.example>", To: []string{"Jürgen Groß <juergen@example.com>"},
		Cc: []string{"grace@example.com"}, Headers: map[string]string{"X-Campaign": "reset"},
		IdempotencyKey: "reset-password:99",
		Attachments: []jobv1.Attachment{
			{Filename: "logo.png", ContentType: "image/png", Content: []byte("\x89PNG\r\n\x1a\nlogo"), Disposition: jobv1.DispositionInline},
			{Filename: "AGB März.pdf", ContentType: "application/pdf", Ref: "terms.pdf"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	stored, _ := mq.Get(context.Background(), r.ID)
	data, _ := mq.Data(context.Background(), r.ID)

	var outs []plChildOut
	for i, tz := range []string{"UTC", "Pacific/Chatham"} {
		in := plChildJob{
			Lease: mailqueue.Lease{
				ID: r.ID, Token: fmt.Sprintf("token-%d", i), Data: data, Attempt: i + 1, MaxAttempts: 5,
				Priority: stored.Priority, EnqueuedAt: stored.EnqueuedAt,
			},
			Attach:  attach,
			Now:     t0.Add(time.Duration(i+1) * 37 * time.Hour), // another clock in each
			OutPath: filepath.Join(dir, fmt.Sprintf("out-%d.json", i)),
		}
		in.Lease.Until = in.Now.Add(time.Minute)
		path := filepath.Join(dir, fmt.Sprintf("in-%d.json", i))
		b, _ := json.Marshal(in)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestPipelineSameBytesInTwoProcesses$", "-test.count=1")
		cmd.Env = append(os.Environ(), plChildEnv+"="+path, "TZ="+tz)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("child with TZ=%s: %v\n%s", tz, err, out)
		}
		var o plChildOut
		b, err := os.ReadFile(in.OutPath)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &o); err != nil {
			t.Fatal(err)
		}
		if o.Action != mailqueue.Ack.String() || len(o.Data) == 0 {
			t.Fatalf("child with TZ=%s: outcome %s %s, %d bytes", tz, o.Action, o.Code, len(o.Data))
		}
		outs = append(outs, o)
	}
	if outs[0].Zone == outs[1].Zone {
		t.Fatalf("both children ran in zone %s: TZ was not honoured", outs[0].Zone)
	}
	if !bytes.Equal(outs[0].Data, outs[1].Data) {
		t.Errorf("the two processes built different bytes (-TZ=UTC +TZ=Pacific/Chatham):\n%s", cmp.Diff(string(outs[0].Data), string(outs[1].Data)))
	}
	if !bytes.Contains(outs[0].Data, []byte("Date: Mon, 30 Nov 2026 12:00:00 +0000")) {
		t.Errorf("the Date is not the enqueue time in UTC:\n%s", outs[0].Data[:min(len(outs[0].Data), 600)])
	}
}

// plChild runs one attempt of the job in path, in this process, through a
// real SMTP server, and writes what arrived.
func plChild(t *testing.T, path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var in plChildJob
	if err := json.Unmarshal(b, &in); err != nil {
		t.Fatal(err)
	}
	fc := clock.NewFake(in.Now)
	quiet := slog.New(&plRecords{})
	q, err := mailqueue.New(mailqueue.Config{Driver: mustMemory(t, memory.Options{Clock: fc, Logger: quiet}), Clock: fc, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	srv := smtptest.Start(t, smtptest.Script{})
	renderer, err := render.New(templates.FS, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := q.NewWorker(mailqueue.WorkerConfig{Transport: smtpTransport(t, srv), Renderer: renderer, ResolveAttachment: attachments.FromPath(in.Attach)})
	if err != nil {
		t.Fatal(err)
	}
	out := w.Handle(context.Background(), &in.Lease)
	zone, _ := time.Now().Zone()
	o := plChildOut{Zone: zone, Action: out.Action.String(), Code: string(out.Code)}
	if msgs := srv.Messages(); len(msgs) == 1 {
		o.Data = msgs[0].Data
	}
	b, _ = json.Marshal(o)
	if err := os.WriteFile(in.OutPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
