package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/alexify/mailer/mailqueue"
)

var (
	_ mailqueue.Operator = (*Queue)(nil)
	_ mailqueue.Operator = (*Source)(nil)
)

// Stats counts the jobs by state; see mailqueue.Inspector.
func (q *Queue) Stats(ctx context.Context) (mailqueue.Stats, error) { return q.src.Stats(ctx) }

// Jobs lists a page of the jobs of a state; see mailqueue.Inspector.
func (q *Queue) Jobs(ctx context.Context, p mailqueue.JobsParams) (mailqueue.JobPage, error) {
	return q.src.Jobs(ctx, p)
}

// Get returns the job of the id; see mailqueue.Inspector.
func (q *Queue) Get(ctx context.Context, id string) (mailqueue.JobRow, error) {
	return q.src.Get(ctx, id)
}

// Failed lists the jobs failed for good; see mailqueue.Inspector.
func (q *Queue) Failed(ctx context.Context, limit int) ([]mailqueue.JobRow, error) {
	return q.src.Failed(ctx, limit)
}

// Data returns the stored JSON of the job of the id, for tests and tools
// that look at what the queue holds (the operations never give it). It
// returns an error wrapping mailqueue.ErrNotFound, or mailqueue.ErrNoData
// when the job dropped its message.
func (q *Queue) Data(ctx context.Context, id string) ([]byte, error) { return q.src.Data(ctx, id) }

// RetryFailed queues a failed job again by hand and wakes the idle
// runners; see mailqueue.Operator. It returns ErrFull when the queue holds
// MaxJobs jobs.
func (q *Queue) RetryFailed(ctx context.Context, id string) error {
	if err := q.src.RetryFailed(ctx, id); err != nil {
		return err
	}
	q.Wake()
	return nil
}

// Resend clears a failed job's idempotency entry and queues it again,
// waking the idle runners; see mailqueue.Operator. The recipient may get
// the message twice.
func (q *Queue) Resend(ctx context.Context, p mailqueue.ResendParams) error {
	return mailqueue.ResendByRetry(ctx, q, q.RetryFailed, p)
}

// Resend clears a failed job's idempotency entry and queues it again; see
// mailqueue.Operator.
func (s *Source) Resend(ctx context.Context, p mailqueue.ResendParams) error {
	return mailqueue.ResendByRetry(ctx, s, s.RetryFailed, p)
}

// Purge drops finished jobs; see mailqueue.Operator.
func (q *Queue) Purge(ctx context.Context, p mailqueue.PurgeParams) (int, error) {
	return q.src.Purge(ctx, p)
}

// row is the operator's view of the record at now.
func (r *record) row() mailqueue.JobRow {
	j := mailqueue.JobRow{
		ID: r.ID, Hash: r.Hash, Version: r.Version, State: r.State, Priority: r.Priority, TenantID: r.TenantID,
		Attempt: r.Attempts, MaxAttempts: r.MaxAttempts, Redeliveries: r.Redeliveries,
		EnqueuedAt: r.EnqueuedAt, RunAt: r.RunAt, FinishedAt: r.FinishedAt,
		Code: r.Code, Reason: r.Reason, DataKept: r.Data != nil,
	}
	if r.State == mailqueue.JobRunning {
		j.LeaseUntil = r.until
	}
	return j
}

// version returns the job's "v" when it is a whole number, else 0, as the
// Redis driver reads it.
func version(data []byte) int {
	var j struct {
		V json.RawMessage `json:"v"`
	}
	if json.Unmarshal(data, &j) != nil {
		return 0
	}
	n, err := strconv.Atoi(string(j.V))
	if err != nil {
		return 0
	}
	return n
}

// Stats counts the jobs by state, forgetting first those whose retention
// ended; see mailqueue.Inspector.
func (s *Source) Stats(ctx context.Context) (mailqueue.Stats, error) {
	if err := ctx.Err(); err != nil {
		return mailqueue.Stats{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	s.purge(now)
	st := mailqueue.Stats{Now: now}
	var oldest time.Time
	for _, r := range s.jobs {
		if r.purged {
			continue
		}
		switch r.State {
		case mailqueue.JobQueued:
			st.Queued++
			if !r.RunAt.After(now) {
				st.Due++
				if oldest.IsZero() || r.RunAt.Before(oldest) {
					oldest = r.RunAt
				}
			}
		case mailqueue.JobRunning:
			st.Running++
		case mailqueue.JobAccepted:
			st.Accepted++
		case mailqueue.JobFailed:
			st.Failed++
		case mailqueue.JobDeliveryUnknown:
			st.DeliveryUnknown++
		}
	}
	if !oldest.IsZero() {
		st.OldestQueuedAge = now.Sub(oldest)
	}
	if s.pausedUntil.After(now) {
		st.Paused, st.PausedUntil = true, s.pausedUntil
	}
	for t, until := range s.tenantPause {
		if until.After(now) {
			st.PausedTenants = append(st.PausedTenants, mailqueue.TenantPause{TenantID: t, Until: until})
		}
	}
	sort.Slice(st.PausedTenants, func(i, j int) bool { return st.PausedTenants[i].TenantID < st.PausedTenants[j].TenantID })
	return st, nil
}

// ordered returns the records of a state in the order of
// mailqueue.JobPage: queued by due time then the order they were queued,
// running by lease end then id, finished by finish time then id.
func (s *Source) ordered(state mailqueue.JobState) []*record {
	var rs []*record
	for _, r := range s.jobs {
		if r.State == state && !r.purged {
			rs = append(rs, r)
		}
	}
	sort.Slice(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		var ta, tb time.Time
		switch state {
		case mailqueue.JobQueued:
			if !a.RunAt.Equal(b.RunAt) {
				return a.RunAt.Before(b.RunAt)
			}
			return a.seq < b.seq
		case mailqueue.JobRunning:
			ta, tb = a.until, b.until
		default:
			ta, tb = a.FinishedAt, b.FinishedAt
		}
		if !ta.Equal(tb) {
			return ta.Before(tb)
		}
		return a.ID < b.ID
	})
	return rs
}

func validState(st mailqueue.JobState) bool {
	switch st {
	case mailqueue.JobQueued, mailqueue.JobRunning, mailqueue.JobAccepted, mailqueue.JobFailed, mailqueue.JobDeliveryUnknown:
		return true
	}
	return false
}

// Jobs lists a page of the jobs of p.State; see mailqueue.Inspector. The
// cursor is the position of the page in the state's order.
func (s *Source) Jobs(ctx context.Context, p mailqueue.JobsParams) (mailqueue.JobPage, error) {
	if err := ctx.Err(); err != nil {
		return mailqueue.JobPage{}, err
	}
	if !validState(p.State) {
		return mailqueue.JobPage{}, fmt.Errorf("memory: jobs: unknown state %q", p.State)
	}
	offset := 0
	if p.Cursor != "" {
		n, err := strconv.Atoi(p.Cursor)
		if err != nil || n < 0 {
			return mailqueue.JobPage{}, fmt.Errorf("memory: jobs: cursor %q is not one of this store's", p.Cursor)
		}
		offset = n
	}
	if p.Limit <= 0 {
		p.Limit = mailqueue.DefaultJobsLimit
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.purge(s.clock.Now())
	rs := s.ordered(p.State)
	var page mailqueue.JobPage
	for i := offset; i < len(rs) && len(page.Rows) < p.Limit; i++ {
		page.Rows = append(page.Rows, rs[i].row())
	}
	if end := offset + len(page.Rows); end < len(rs) {
		page.Next = strconv.Itoa(end)
	}
	return page, nil
}

// Get returns the job of the id; see mailqueue.Inspector.
func (s *Source) Get(ctx context.Context, id string) (mailqueue.JobRow, error) {
	if err := ctx.Err(); err != nil {
		return mailqueue.JobRow{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.purge(s.clock.Now())
	r, ok := s.jobs[id]
	if !ok || r.purged {
		return mailqueue.JobRow{}, fmt.Errorf("memory: %w: %s", mailqueue.ErrNotFound, id)
	}
	return r.row(), nil
}

// Data returns the stored JSON of the job of the id; see Queue.Data.
func (s *Source) Data(ctx context.Context, id string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.purge(s.clock.Now())
	r, ok := s.jobs[id]
	switch {
	case !ok || r.purged:
		return nil, fmt.Errorf("memory: %w: %s", mailqueue.ErrNotFound, id)
	case r.Data == nil:
		return nil, fmt.Errorf("memory: %w: %s", mailqueue.ErrNoData, id)
	}
	return append([]byte(nil), r.Data...), nil
}

// Failed returns up to limit jobs failed for good: the failed ones, then
// those of unknown delivery, each the oldest first; see
// mailqueue.Inspector.
func (s *Source) Failed(ctx context.Context, limit int) ([]mailqueue.JobRow, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.purge(s.clock.Now())
	var out []mailqueue.JobRow
	for _, st := range []mailqueue.JobState{mailqueue.JobFailed, mailqueue.JobDeliveryUnknown} {
		for _, r := range s.ordered(st) {
			if len(out) >= limit {
				return out, nil
			}
			out = append(out, r.row())
		}
	}
	return out, nil
}

// RetryFailed queues a failed job again, due now, with its attempts and
// redeliveries reset; see mailqueue.Operator. It returns ErrFull when the
// queue holds MaxJobs jobs.
func (s *Source) RetryFailed(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	s.purge(now)
	r, ok := s.jobs[id]
	switch {
	case !ok || r.purged:
		return fmt.Errorf("memory: %w: %s", mailqueue.ErrNotFound, id)
	case r.State != mailqueue.JobFailed && r.State != mailqueue.JobDeliveryUnknown:
		return fmt.Errorf("memory: %w: %s is %s", mailqueue.ErrNotFailed, id, r.State)
	case r.Data == nil:
		return fmt.Errorf("memory: %w: %s", mailqueue.ErrNoData, id)
	}
	if s.active >= s.opts.MaxJobs {
		return ErrFull
	}
	for i, f := range s.finished {
		if f == r {
			s.finished = append(s.finished[:i], s.finished[i+1:]...)
			break
		}
	}
	r.Attempts, r.Redeliveries, r.FinishedAt = 0, 0, time.Time{}
	r.State = mailqueue.JobQueued
	r.RunAt = now
	s.active++
	s.queue(r, now)
	s.notify()
	return nil
}

// Purge drops the finished jobs of p.State that finished at least
// p.OlderThan ago, keeping their {v, hash} for their retention unless
// p.ForgetKeys; see mailqueue.Operator.
func (s *Source) Purge(ctx context.Context, p mailqueue.PurgeParams) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	switch p.State {
	case mailqueue.JobAccepted, mailqueue.JobFailed, mailqueue.JobDeliveryUnknown:
	default:
		return 0, fmt.Errorf("memory: purge: %q is not a finished state", p.State)
	}
	if p.OlderThan < 0 {
		return 0, fmt.Errorf("memory: purge: OlderThan %v is negative", p.OlderThan)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	s.purge(now)
	cut := now.Add(-p.OlderThan)
	n := 0
	for id, r := range s.jobs {
		if r.State != p.State || r.purged || r.FinishedAt.After(cut) {
			continue
		}
		n++
		if p.ForgetKeys {
			delete(s.jobs, id)
			continue
		}
		// The job keeps what tells a duplicate, until its entry in the
		// expiry heap (its retention) forgets it.
		r.purged = true
		r.stored = stored{ID: r.ID, Hash: r.Hash, Version: r.Version, State: r.State, FinishedAt: r.FinishedAt}
	}
	if n > 0 {
		kept := s.finished[:0]
		for _, r := range s.finished {
			if s.jobs[r.ID] == r && !r.purged {
				kept = append(kept, r)
			}
		}
		s.finished = kept
	}
	return n, nil
}
