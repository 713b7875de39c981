// Package audit holds audit sinks of the mail queue (mailqueue.AuditSink): a
// sink in memory, which can tell what it heard (Has), and a sink that writes
// each event to a *slog.Logger. The queue tells a sink every state of every
// job, from queued to accepted, failed or delivery_unknown; an event holds
// no address (spec: "The audit and the log").
package audit

import (
	"context"
	"log/slog"
	"sync"

	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/mailqueue"
)

// Memory is an audit sink that keeps every event in memory. It implements
// mailqueue.AuditHistory, so a worker with the Redelivered policy
// delivery_unknown can tell a run that died before it submitted. It is safe
// for concurrent use.
type Memory struct {
	mu     sync.Mutex
	events []mailqueue.AuditEvent
	fail   error // set by SetFailing
}

// NewMemory returns an empty memory sink.
func NewMemory() *Memory { return &Memory{} }

// Record keeps e.
func (m *Memory) Record(_ context.Context, e mailqueue.AuditEvent) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	m.events = append(m.events, e)
	return nil
}

// SetFailing makes every Record fail with err from now on; nil makes it
// record again.
func (m *Memory) SetFailing(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fail = err
}

// Has reports whether the sink heard state for the attempt of the job.
func (m *Memory) Has(_ context.Context, jobID string, attempt int, state mailqueue.AuditState) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.events {
		if e.JobID == jobID && e.Attempt == attempt && e.State == state {
			return true, nil
		}
	}
	return false, nil
}

// Events returns the events heard, in order; with jobID not empty, those of
// that job only.
func (m *Memory) Events(jobID string) []mailqueue.AuditEvent {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []mailqueue.AuditEvent
	for _, e := range m.events {
		if jobID == "" || e.JobID == jobID {
			out = append(out, e)
		}
	}
	return out
}

// States returns the states heard for the job, in order.
func (m *Memory) States(jobID string) []mailqueue.AuditState {
	events := m.Events(jobID)
	out := make([]mailqueue.AuditState, 0, len(events))
	for _, e := range events {
		out = append(out, e.State)
	}
	return out
}

// Slog is an audit sink that writes each event to a logger at info level,
// as a record whose message is the code audit.event and whose attributes
// are the event's (never an address: an event holds none).
type Slog struct {
	log *slog.Logger
}

// NewSlog returns a sink writing to log; slog.Default() when nil.
func NewSlog(log *slog.Logger) *Slog {
	if log == nil {
		log = slog.Default()
	}
	return &Slog{log: log}
}

// Record writes e.
func (s *Slog) Record(ctx context.Context, e mailqueue.AuditEvent) error {
	attrs := []slog.Attr{
		slog.String("job_id", e.JobID), slog.String("state", string(e.State)),
		slog.Time("at", e.At), slog.Int("attempt", e.Attempt),
	}
	if e.Code != "" {
		attrs = append(attrs, slog.String("code", string(e.Code)), slog.String("reason", e.Reason))
	}
	if e.TenantID != "" {
		attrs = append(attrs, slog.String("tenant_id", e.TenantID))
	}
	if e.CorrelationID != "" {
		attrs = append(attrs, slog.String("correlation_id", e.CorrelationID))
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, string(codes.AuditEvent), attrs...)
	return nil
}

var (
	_ mailqueue.AuditSink    = (*Memory)(nil)
	_ mailqueue.AuditHistory = (*Memory)(nil)
	_ mailqueue.AuditSink    = (*Slog)(nil)
)
