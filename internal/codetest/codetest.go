// Package codetest records which codes of schema/codes.yaml the tests of the
// kit saw, and at which level, so that a test generated from that table
// (emitted_gen_test.go) can fail when a code the table promises is given by
// no test at the level it gives.
//
// A test package feeds it in two ways: its log-recording handlers call
// Observe for each record (or wrap their handler with Wrap), and its
// TestMain calls InstallDefault so that the code under test that logs to
// slog.Default() is heard too. An audit sink wrapped with Sink records the
// codes of the audit events.
//
// The records stay in the test process unless the environment variable
// MAILER_CODES_RECORD names a directory: then each (code, level, kind) seen
// is appended, once per process, to a file of that directory named after
// the process. `make test` sets it; `make codes` then runs the generated
// test over the directory (MAILER_CODES_CHECK).
package codetest

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/mailqueue"
)

// RecordEnv names the directory the records are appended to; unset, they
// are kept in the process only.
const RecordEnv = "MAILER_CODES_RECORD"

// CheckEnv names the directory the generated test reads the records from;
// unset, that test skips (it must run after every other test package).
const CheckEnv = "MAILER_CODES_CHECK"

// Kind says how a code was seen.
type Kind string

// The kinds of a record.
const (
	// KindMessage: the message of a log record.
	KindMessage Kind = "message"
	// KindAttr: the "code" attribute of a log record (the worker writes the
	// code of a failure, a retry or a release there).
	KindAttr Kind = "attr"
	// KindAudit: the code of an audit event; its level is the zero level,
	// an audit event has none.
	KindAudit Kind = "audit"
)

// Seen is one code seen at one level, one way.
type Seen struct {
	Code  codes.Code
	Level slog.Level
	Kind  Kind
}

var (
	mu   sync.Mutex
	seen = map[Seen]bool{}
)

// Observe records the codes a log record carries: its message, and its
// "code" attribute, when they are codes of schema/codes.yaml.
func Observe(r slog.Record) {
	if _, ok := codes.Lookup(codes.Code(r.Message)); ok {
		add(Seen{codes.Code(r.Message), r.Level, KindMessage})
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "code" {
			if c := codes.Code(a.Value.String()); c != "" {
				if _, ok := codes.Lookup(c); ok {
					add(Seen{c, r.Level, KindAttr})
				}
			}
		}
		return true
	})
}

// add records s, and appends it to the file of this process when
// MAILER_CODES_RECORD is set and s is new. A failure to write panics: a
// record lost would make the generated test fail for a reason it cannot
// tell.
func add(s Seen) {
	mu.Lock()
	defer mu.Unlock()
	if seen[s] {
		return
	}
	seen[s] = true
	dir := os.Getenv(RecordEnv)
	if dir == "" {
		return
	}
	name := filepath.Join(dir, fmt.Sprintf("%d.tsv", os.Getpid()))
	f, err := os.OpenFile(name, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		panic(fmt.Sprintf("codetest: %v", err))
	}
	_, err = fmt.Fprintf(f, "%s\t%s\t%s\n", s.Code, s.Level, s.Kind)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		panic(fmt.Sprintf("codetest: %v", err))
	}
}

// Recorded returns what this process has seen.
func Recorded() map[Seen]bool {
	mu.Lock()
	defer mu.Unlock()
	out := make(map[Seen]bool, len(seen))
	for s := range seen {
		out[s] = true
	}
	return out
}

// Wrap returns a handler that records each record's codes (Observe), then
// passes it to next; nil next drops the records.
func Wrap(next slog.Handler) slog.Handler {
	if next == nil {
		next = slog.DiscardHandler
	}
	return &handler{next: next}
}

type handler struct{ next slog.Handler }

// Enabled is true at every level: a debug record's code counts too.
func (h *handler) Enabled(context.Context, slog.Level) bool { return true }

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	Observe(r)
	if !h.next.Enabled(ctx, r.Level) {
		return nil
	}
	return h.next.Handle(ctx, r)
}

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	return &handler{next: h.next.WithAttrs(as)}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{next: h.next.WithGroup(name)}
}

// InstallDefault makes slog.Default() record the codes of what it hears,
// then write the records at info and above to stderr as text, as a test
// binary's default logger would. A TestMain calls it before m.Run.
func InstallDefault() {
	slog.SetDefault(slog.New(Wrap(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))))
}

// Sink wraps an audit sink so that the code of each event it is told is
// recorded (KindAudit). The wrapper is an AuditHistory when next is one.
func Sink(next mailqueue.AuditSink) mailqueue.AuditSink {
	if h, ok := next.(mailqueue.AuditHistory); ok {
		return historySink{sink{next}, h}
	}
	return sink{next}
}

type sink struct{ next mailqueue.AuditSink }

func (s sink) Record(ctx context.Context, e mailqueue.AuditEvent) error {
	if e.Code != "" {
		add(Seen{e.Code, 0, KindAudit})
	}
	return s.next.Record(ctx, e)
}

type historySink struct {
	sink
	h mailqueue.AuditHistory
}

func (s historySink) Has(ctx context.Context, jobID string, attempt int, state mailqueue.AuditState) (bool, error) {
	return s.h.Has(ctx, jobID, attempt, state)
}
