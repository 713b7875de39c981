package redis

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/mailqueue"
)

var (
	_ mailqueue.Operator = (*Queue)(nil)
	_ mailqueue.Operator = (*Source)(nil)
)

// Stats counts the jobs by state and reads the pauses, in one pipeline
// (not one snapshot: a job that moves meanwhile may count twice or not at
// all), on the server's clock; see mailqueue.Inspector. The finished jobs
// are counted by the queue's retention, whatever the source was opened
// with (scripts/finished.lua).
func (s *Source) Stats(ctx context.Context) (mailqueue.Stats, error) {
	pipe := s.c.Pipeline()
	queued := scriptQueued.EvalSha(ctx, pipe, s.keys, s.args("count")...)
	running := pipe.ZCard(ctx, s.keys[keyLeased])
	finished := scriptFinished.EvalSha(ctx, pipe, s.keys, s.args("count")...)
	pauses := pipe.HGetAll(ctx, s.keys[keyPause])
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, goredis.Nil) {
		if !goredis.HasErrorPrefix(err, "NOSCRIPT") {
			return mailqueue.Stats{}, fmt.Errorf("redis: stats: %w", err)
		}
		// The server lost the scripts (a restart, a failover): Run loads
		// them again.
		if goredis.HasErrorPrefix(queued.Err(), "NOSCRIPT") {
			queued = scriptQueued.Run(ctx, s.c, s.keys, s.args("count")...)
		}
		if goredis.HasErrorPrefix(finished.Err(), "NOSCRIPT") {
			finished = scriptFinished.Run(ctx, s.c, s.keys, s.args("count")...)
		}
	}
	q, err := queued.Int64Slice()
	if err != nil {
		return mailqueue.Stats{}, fmt.Errorf("redis: stats: queued: %w", err)
	}
	f, err := finished.Int64Slice()
	if err != nil {
		return mailqueue.Stats{}, fmt.Errorf("redis: stats: finished: %w", err)
	}
	if len(q) != 4 || len(f) != 3 {
		return mailqueue.Stats{}, fmt.Errorf("redis: stats: %d and %d values, want 4 and 3", len(q), len(f))
	}
	if err := running.Err(); err != nil {
		return mailqueue.Stats{}, fmt.Errorf("redis: stats: %w", err)
	}
	if err := pauses.Err(); err != nil {
		return mailqueue.Stats{}, fmt.Errorf("redis: stats: %w", err)
	}
	ms := q[3]
	st := mailqueue.Stats{
		Queued: q[0], Due: q[1], Running: running.Val(),
		Accepted: f[0], Failed: f[1], DeliveryUnknown: f[2], Now: time.UnixMilli(ms),
	}
	if q[2] >= 0 && q[2] <= ms {
		st.OldestQueuedAge = time.Duration(ms-q[2]) * time.Millisecond
	}
	for field, v := range pauses.Val() {
		until, err := strconv.ParseInt(v, 10, 64)
		if err != nil || until <= ms {
			continue
		}
		if field == "q" {
			st.Paused, st.PausedUntil = true, time.UnixMilli(until)
		} else if t, ok := strings.CutPrefix(field, "t:"); ok {
			st.PausedTenants = append(st.PausedTenants, mailqueue.TenantPause{TenantID: t, Until: time.UnixMilli(until)})
		}
	}
	sort.Slice(st.PausedTenants, func(i, j int) bool { return st.PausedTenants[i].TenantID < st.PausedTenants[j].TenantID })
	return st, nil
}

// index returns the key of the zset that lists the jobs of a state other
// than queued (queued.lua lists those).
func (s *Source) index(state mailqueue.JobState) (string, error) {
	switch state {
	case mailqueue.JobRunning:
		return s.keys[keyLeased], nil
	case mailqueue.JobAccepted:
		return s.keys[keyDoneAccepted], nil
	case mailqueue.JobFailed:
		return s.keys[keyDoneFailed], nil
	case mailqueue.JobDeliveryUnknown:
		return s.keys[keyDoneDeliveryUnknown], nil
	}
	return "", fmt.Errorf("redis: jobs: unknown state %q", state)
}

// Jobs lists a page of the jobs of p.State; see mailqueue.Inspector:
// queued jobs by due time, running ones by lease end, finished ones by
// finish time, the oldest first. A finished job whose retention (the
// queue's) ran out is left out (scripts/finished.lua). The cursor is the
// position of the page in the state's order.
func (s *Source) Jobs(ctx context.Context, p mailqueue.JobsParams) (mailqueue.JobPage, error) {
	offset := 0
	if p.Cursor != "" {
		n, err := strconv.Atoi(p.Cursor)
		if err != nil || n < 0 {
			return mailqueue.JobPage{}, fmt.Errorf("redis: jobs: cursor %q is not one of this store's", p.Cursor)
		}
		offset = n
	}
	if p.Limit <= 0 {
		p.Limit = mailqueue.DefaultJobsLimit
	}
	ids, err := s.jobIDs(ctx, p.State, offset, p.Limit+1)
	if err != nil {
		return mailqueue.JobPage{}, err
	}
	var page mailqueue.JobPage
	if len(ids) > p.Limit {
		ids = ids[:p.Limit]
		page.Next = strconv.Itoa(offset + p.Limit)
	}
	page.Rows, err = s.getMany(ctx, ids, p.State)
	return page, err
}

// jobIDs returns up to limit ids of the jobs of a state from offset, in
// the state's order.
func (s *Source) jobIDs(ctx context.Context, state mailqueue.JobState, offset, limit int) ([]string, error) {
	var ids []string
	var err error
	switch state {
	case mailqueue.JobQueued:
		ids, err = scriptQueued.Run(ctx, s.c, s.keys, s.args("list", offset, limit)...).StringSlice()
	case mailqueue.JobRunning:
		ids, err = s.c.ZRange(ctx, s.keys[keyLeased], int64(offset), int64(offset+limit-1)).Result()
	default:
		if _, err := s.index(state); err != nil {
			return nil, err
		}
		ids, err = scriptFinished.Run(ctx, s.c, s.keys, s.args("list", string(state), offset, limit)...).StringSlice()
	}
	if err != nil {
		return nil, fmt.Errorf("redis: jobs: %w", err)
	}
	return ids, nil
}

// Failed returns up to limit jobs failed for good (failed, then
// delivery_unknown), the oldest first; see mailqueue.Inspector.
func (s *Source) Failed(ctx context.Context, limit int) ([]mailqueue.JobRow, error) {
	var out []mailqueue.JobRow
	for _, st := range []mailqueue.JobState{mailqueue.JobFailed, mailqueue.JobDeliveryUnknown} {
		if limit-len(out) <= 0 {
			break
		}
		ids, err := s.jobIDs(ctx, st, 0, limit-len(out))
		if err != nil {
			return nil, err
		}
		rows, err := s.getMany(ctx, ids, st)
		if err != nil {
			return nil, err
		}
		out = append(out, rows...)
	}
	return out, nil
}

// Get returns the job of the id; see mailqueue.Inspector.
func (s *Source) Get(ctx context.Context, id string) (mailqueue.JobRow, error) {
	js, err := s.getMany(ctx, []string{id}, "")
	if err != nil {
		return mailqueue.JobRow{}, err
	}
	if len(js) == 0 {
		return mailqueue.JobRow{}, fmt.Errorf("redis: %w: %s", mailqueue.ErrNotFound, id)
	}
	return js[0], nil
}

// rowFields are the fields of a job's hash a JobRow reads: never its data.
var rowFields = []string{"hash", "v", "state", "pri", "tenant", "att", "max", "redel", "runat", "enq", "fin", "until", "code", "reason", "purged"}

// getMany reads the jobs of the ids, leaving out those gone and, when
// state is set, those no longer in it.
func (s *Source) getMany(ctx context.Context, ids []string, state mailqueue.JobState) ([]mailqueue.JobRow, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	pipe := s.c.Pipeline()
	fields := make([]*goredis.SliceCmd, len(ids))
	data := make([]*goredis.BoolCmd, len(ids))
	for i, id := range ids {
		fields[i] = pipe.HMGet(ctx, s.pfx+"job:"+id, rowFields...)
		data[i] = pipe.HExists(ctx, s.pfx+"job:"+id, "data")
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("redis: get: %w", err)
	}
	out := make([]mailqueue.JobRow, 0, len(ids))
	for i, c := range fields {
		m := map[string]string{}
		for k, v := range c.Val() {
			if str, ok := v.(string); ok {
				m[rowFields[k]] = str
			}
		}
		// A purged job keeps its hash only to tell duplicates: it is gone.
		if m["hash"] == "" || m["purged"] != "" || state != "" && mailqueue.JobState(m["state"]) != state {
			continue
		}
		out = append(out, rowOf(ids[i], m, data[i].Val()))
	}
	return out, nil
}

// rowOf reads a JobRow from the fields of a job's hash.
func rowOf(id string, m map[string]string, dataKept bool) mailqueue.JobRow {
	num := func(k string) int64 { n, _ := strconv.ParseInt(m[k], 10, 64); return n }
	at := func(k string) time.Time {
		if m[k] == "" {
			return time.Time{}
		}
		return time.UnixMilli(num(k))
	}
	j := mailqueue.JobRow{
		ID: id, Hash: m["hash"], Version: int(num("v")), State: mailqueue.JobState(m["state"]), Priority: priorityOf(num("pri")),
		TenantID: m["tenant"], Attempt: int(num("att")), MaxAttempts: int(num("max")), Redeliveries: int(num("redel")),
		RunAt: at("runat"), EnqueuedAt: at("enq"), FinishedAt: at("fin"),
		Code: codes.Code(m["code"]), Reason: m["reason"], DataKept: dataKept,
	}
	if j.State == mailqueue.JobRunning {
		j.LeaseUntil = at("until")
	}
	return j
}

// RetryFailed queues a failed job (failed or delivery_unknown) again by
// hand, due now, its attempts and redeliveries reset; see
// mailqueue.Operator.
func (s *Source) RetryFailed(ctx context.Context, id string) error {
	n, err := scriptRetryFailed.Run(ctx, s.c, s.keys, s.args(id)...).Int64()
	if err != nil {
		return fmt.Errorf("redis: retry failed: %w", err)
	}
	switch n {
	case 0:
		return fmt.Errorf("redis: %w: %s", mailqueue.ErrNotFound, id)
	case -1:
		return fmt.Errorf("redis: %w: %s", mailqueue.ErrNotFailed, id)
	case -2:
		return fmt.Errorf("redis: %w: %s", mailqueue.ErrNoData, id)
	}
	return nil
}

// Resend clears a failed job's idempotency entry and queues it again,
// waking the idle runners; see Source.Resend.
func (q *Queue) Resend(ctx context.Context, p mailqueue.ResendParams) error {
	return mailqueue.ResendByRetry(ctx, q, q.RetryFailed, p)
}

// Resend clears a failed job's idempotency entry (p.Forget: the Forget of
// the workers' IdempotencyStore) and queues it again; see
// mailqueue.Operator. The recipient may get the message twice.
func (s *Source) Resend(ctx context.Context, p mailqueue.ResendParams) error {
	return mailqueue.ResendByRetry(ctx, s, s.RetryFailed, p)
}

// Purge drops the finished jobs of p.State that finished at least
// p.OlderThan ago, keeping their {v, hash} until their keys expire at the
// end of their retention (unless p.ForgetKeys), and returns how many; see
// mailqueue.Operator and scripts/purge.lua. Retention by time forgets them
// on its own; Purge is for an operator.
func (s *Source) Purge(ctx context.Context, p mailqueue.PurgeParams) (int, error) {
	switch p.State {
	case mailqueue.JobAccepted, mailqueue.JobFailed, mailqueue.JobDeliveryUnknown:
	default:
		return 0, fmt.Errorf("redis: purge: %q is not a finished state", p.State)
	}
	if p.OlderThan < 0 {
		return 0, fmt.Errorf("redis: purge: OlderThan %v is negative", p.OlderThan)
	}
	total := 0
	for {
		forget := "0"
		if p.ForgetKeys {
			forget = "1"
		}
		n, err := scriptPurge.Run(ctx, s.c, s.keys, s.args(string(p.State), p.OlderThan.Milliseconds(), forget)...).Int()
		if err != nil {
			return total, fmt.Errorf("redis: purge: %w", err)
		}
		total += n
		if n < 1000 {
			return total, nil
		}
	}
}

// Obliterate deletes every key of the queue, its jobs in every state, its
// pauses and its retention, and returns how many keys it deleted. It is
// for tests and for retiring a queue; workers still running on the queue
// lose their leases.
func (s *Source) Obliterate(ctx context.Context) (int, error) {
	node := s.c
	if cc, ok := s.c.(*goredis.ClusterClient); ok {
		c, err := cc.MasterForKey(ctx, s.keys[keyMeta])
		if err != nil {
			return 0, fmt.Errorf("redis: obliterate: %w", err)
		}
		node = c
	}
	match := globEscape(s.pfx) + "*"
	n := 0
	var cursor uint64
	for {
		keys, next, err := node.Scan(ctx, cursor, match, 500).Result()
		if err != nil {
			return n, fmt.Errorf("redis: obliterate: %w", err)
		}
		if len(keys) > 0 {
			if err := node.Del(ctx, keys...).Err(); err != nil {
				return n, fmt.Errorf("redis: obliterate: %w", err)
			}
			n += len(keys)
		}
		if next == 0 {
			return n, nil
		}
		cursor = next
	}
}

// globEscape escapes the characters SCAN's MATCH reads as a pattern.
func globEscape(k string) string {
	var b strings.Builder
	for _, r := range k {
		switch r {
		case '*', '?', '[', ']', '\\', '{', '}':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
