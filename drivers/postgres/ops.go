package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/mailqueue"
)

var (
	_ mailqueue.Operator = (*Queue)(nil)
	_ mailqueue.Operator = (*Source)(nil)
)

// Stats counts the jobs by state; see Source.Stats.
func (q *Queue) Stats(ctx context.Context) (mailqueue.Stats, error) { return q.src.Stats(ctx) }

// Jobs lists a page of the jobs of a state; see Source.Jobs.
func (q *Queue) Jobs(ctx context.Context, p mailqueue.JobsParams) (mailqueue.JobPage, error) {
	return q.src.Jobs(ctx, p)
}

// Get returns the job of the id; see Source.Get.
func (q *Queue) Get(ctx context.Context, id string) (mailqueue.JobRow, error) {
	return q.src.Get(ctx, id)
}

// Failed lists the jobs failed for good; see Source.Failed.
func (q *Queue) Failed(ctx context.Context, limit int) ([]mailqueue.JobRow, error) {
	return q.src.Failed(ctx, limit)
}

// RetryFailed queues a failed job again; see Source.RetryFailed.
func (q *Queue) RetryFailed(ctx context.Context, id string) error { return q.src.RetryFailed(ctx, id) }

// Resend clears a failed job's idempotency entry and queues it again; see
// Source.Resend.
func (q *Queue) Resend(ctx context.Context, p mailqueue.ResendParams) error {
	return mailqueue.ResendByRetry(ctx, q, q.RetryFailed, p)
}

// Purge forgets finished jobs; see Source.Purge.
func (q *Queue) Purge(ctx context.Context, p mailqueue.PurgeParams) (int, error) {
	return q.src.Purge(ctx, p)
}

// Stats counts the jobs by state in one statement (one snapshot), on the
// database's clock, and reads the pauses; see mailqueue.Inspector. The
// finished jobs whose retention ended are not counted, pruned or not.
func (s *Source) Stats(ctx context.Context) (mailqueue.Stats, error) {
	var st mailqueue.Stats
	var oldest pgtype.Timestamptz
	err := s.pool.QueryRow(ctx, s.q.stats, s.us(), s.opts.Queue).Scan(&st.Queued, &st.Due, &st.Running,
		&st.Accepted, &st.Failed, &st.DeliveryUnknown, &oldest, &st.Now)
	if err != nil {
		return mailqueue.Stats{}, fmt.Errorf("postgres: stats: %w", err)
	}
	if oldest.Valid {
		st.OldestQueuedAge = max(st.Now.Sub(oldest.Time), 0)
	}
	rows, err := s.pool.Query(ctx, s.q.pauses, s.us(), s.opts.Queue)
	if err != nil {
		return mailqueue.Stats{}, fmt.Errorf("postgres: stats: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var p mailqueue.TenantPause
		var tenant bool
		if err := rows.Scan(&tenant, &p.TenantID, &p.Until); err != nil {
			return mailqueue.Stats{}, fmt.Errorf("postgres: stats: %w", err)
		}
		if tenant {
			st.PausedTenants = append(st.PausedTenants, p)
		} else {
			st.Paused, st.PausedUntil = true, p.Until
		}
	}
	if err := rows.Err(); err != nil {
		return mailqueue.Stats{}, fmt.Errorf("postgres: stats: %w", err)
	}
	return st, nil
}

// stateNum returns the number of a state in the jobs table.
func stateNum(st mailqueue.JobState) (int16, bool) {
	switch st {
	case mailqueue.JobQueued:
		return stQueued, true
	case mailqueue.JobRunning:
		return stRunning, true
	case mailqueue.JobAccepted:
		return stAccepted, true
	case mailqueue.JobFailed:
		return stFailed, true
	case mailqueue.JobDeliveryUnknown:
		return stDeliveryUnknown, true
	}
	return 0, false
}

var stateNames = map[int16]mailqueue.JobState{
	stQueued: mailqueue.JobQueued, stRunning: mailqueue.JobRunning, stAccepted: mailqueue.JobAccepted,
	stFailed: mailqueue.JobFailed, stDeliveryUnknown: mailqueue.JobDeliveryUnknown,
}

// scanRow reads a JobRow of rowColumns.
func scanRow(row pgx.Row) (mailqueue.JobRow, error) {
	var j mailqueue.JobRow
	var v, att, maxAtt, redel int32
	var state, pri int16
	var fin, until pgtype.Timestamptz
	var code string
	if err := row.Scan(&j.ID, &j.Hash, &v, &state, &pri, &j.TenantID, &att, &maxAtt, &redel,
		&j.EnqueuedAt, &j.RunAt, &fin, &until, &code, &j.Reason, &j.DataKept); err != nil {
		return j, err
	}
	j.Version, j.Attempt, j.MaxAttempts, j.Redeliveries = int(v), int(att), int(maxAtt), int(redel)
	j.State, j.Priority, j.Code = stateNames[state], priorityOf(pri), codes.Code(code)
	if fin.Valid {
		j.FinishedAt = fin.Time
	}
	if until.Valid && state == stRunning {
		j.LeaseUntil = until.Time
	}
	return j, nil
}

// Jobs lists a page of the jobs of p.State, in the order mailqueue.JobPage
// tells; the cursor is the offset of the page. See mailqueue.Inspector.
func (s *Source) Jobs(ctx context.Context, p mailqueue.JobsParams) (mailqueue.JobPage, error) {
	state, ok := stateNum(p.State)
	if !ok {
		return mailqueue.JobPage{}, fmt.Errorf("postgres: jobs: unknown state %q", p.State)
	}
	offset := 0
	if p.Cursor != "" {
		n, err := strconv.Atoi(p.Cursor)
		if err != nil || n < 0 {
			return mailqueue.JobPage{}, fmt.Errorf("postgres: jobs: the cursor %q is not one of this store's", p.Cursor)
		}
		offset = n
	}
	limit := p.Limit
	if limit <= 0 {
		limit = mailqueue.DefaultJobsLimit
	}
	rows, err := s.queryRows(ctx, fmt.Sprintf(s.q.jobs, jobsOrder(state)), s.us(), s.opts.Queue, state, offset, limit+1)
	if err != nil {
		return mailqueue.JobPage{}, fmt.Errorf("postgres: jobs: %w", err)
	}
	page := mailqueue.JobPage{Rows: rows}
	if len(rows) > limit {
		page.Rows = rows[:limit]
		page.Next = strconv.Itoa(offset + limit)
	}
	return page, nil
}

// queryRows runs a query of rowColumns.
func (s *Source) queryRows(ctx context.Context, sql string, args ...any) ([]mailqueue.JobRow, error) {
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []mailqueue.JobRow
	for rows.Next() {
		j, err := scanRow(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

// Get returns the job of the id, or an error wrapping ErrNotFound for a
// job not held (never stored, purged, or its retention ended); see
// mailqueue.Inspector.
func (s *Source) Get(ctx context.Context, id string) (mailqueue.JobRow, error) {
	j, err := scanRow(s.pool.QueryRow(ctx, s.q.get, s.us(), s.opts.Queue, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return mailqueue.JobRow{}, fmt.Errorf("postgres: %w: %s", mailqueue.ErrNotFound, id)
	}
	if err != nil {
		return mailqueue.JobRow{}, fmt.Errorf("postgres: get %s: %w", id, err)
	}
	return j, nil
}

// Failed returns up to limit jobs failed for good: the failed ones, then
// those of unknown delivery, each the oldest first; see
// mailqueue.Inspector.
func (s *Source) Failed(ctx context.Context, limit int) ([]mailqueue.JobRow, error) {
	if limit <= 0 {
		limit = mailqueue.DefaultJobsLimit
	}
	var out []mailqueue.JobRow
	for _, st := range []int16{stFailed, stDeliveryUnknown} {
		if len(out) >= limit {
			break
		}
		rows, err := s.queryRows(ctx, fmt.Sprintf(s.q.jobs, jobsOrder(st)), s.us(), s.opts.Queue, st, 0, limit-len(out))
		if err != nil {
			return nil, fmt.Errorf("postgres: failed: %w", err)
		}
		out = append(out, rows...)
	}
	return out, nil
}

// RetryFailed queues a failed job (failed or delivery_unknown) again,
// due now, its attempts and redeliveries reset, and wakes the workers;
// see mailqueue.Operator.
func (s *Source) RetryFailed(ctx context.Context, id string) error {
	var state int16
	var kept bool
	var n int64
	if err := s.pool.QueryRow(ctx, s.q.retryFailed, s.us(), s.opts.Queue, id, s.channel()).Scan(&state, &kept, &n); err != nil {
		return fmt.Errorf("postgres: retry failed %s: %w", id, err)
	}
	switch {
	case n == 1:
		if s.n.local() {
			s.n.wakeAll()
		}
		return nil
	case state < 0:
		return fmt.Errorf("postgres: %w: %s", mailqueue.ErrNotFound, id)
	case state != stFailed && state != stDeliveryUnknown:
		return fmt.Errorf("postgres: %w: %s is %s", mailqueue.ErrNotFailed, id, stateNames[state])
	case !kept:
		return fmt.Errorf("postgres: %w: %s", mailqueue.ErrNoData, id)
	}
	return fmt.Errorf("postgres: retry failed %s: the job changed meanwhile; try again", id)
}

// Resend clears a failed job's idempotency entry (p.Forget) and queues it
// again; see mailqueue.Operator. The recipient may get the message twice.
func (s *Source) Resend(ctx context.Context, p mailqueue.ResendParams) error {
	return mailqueue.ResendByRetry(ctx, s, s.RetryFailed, p)
}

// Purge drops the finished jobs of p.State that finished at least
// p.OlderThan ago, in one statement, keeping their {v, hash} until their
// retention ends (unless p.ForgetKeys), and returns how many; see
// mailqueue.Operator. Retention by time forgets them on its own (the
// pruning of a running worker); Purge is for an operator.
func (s *Source) Purge(ctx context.Context, p mailqueue.PurgeParams) (int, error) {
	switch p.State {
	case mailqueue.JobAccepted, mailqueue.JobFailed, mailqueue.JobDeliveryUnknown:
	default:
		return 0, fmt.Errorf("postgres: purge: %q is not a finished state", p.State)
	}
	if p.OlderThan < 0 {
		return 0, fmt.Errorf("postgres: purge: OlderThan %v is negative", p.OlderThan)
	}
	state, _ := stateNum(p.State)
	var n int64
	if err := s.pool.QueryRow(ctx, s.q.purge, s.us(), s.opts.Queue, state, p.OlderThan.Microseconds(), p.ForgetKeys).Scan(&n); err != nil {
		return 0, fmt.Errorf("postgres: purge: %w", err)
	}
	return int(n), nil
}
