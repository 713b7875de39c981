package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/mailqueue"
)

// Job is what the Redis queue tells of a job.
type Job struct {
	// ID is the job's id; Hash its hash (docs/wire.md).
	ID, Hash string
	// V is the job's version ("v" of its JSON), kept when its data is
	// dropped.
	V string
	// State is where the job is.
	State mailqueue.JobState
	// Priority and TenantID are those it was enqueued with.
	Priority jobv1.Priority
	TenantID string
	// Attempts is the attempts spent; MaxAttempts the attempts in all.
	Attempts, MaxAttempts int
	// Redeliveries counts the runs that ended unsettled.
	Redeliveries int
	// RunAt is when a queued job is due; LeaseUntil when a running job's
	// lease ends (server time); FinishedAt when a finished job finished.
	RunAt, EnqueuedAt, FinishedAt, LeaseUntil time.Time
	// Code and Reason are those of the last retry, release or failure.
	Code   codes.Code
	Reason string
	// Data is the job's JSON; nil once it was dropped (RetainData).
	Data []byte
}

// Stats counts the jobs by state.
type Stats struct {
	// Queued counts the queued jobs; Due those of them due now (by the
	// server's clock), paused or not.
	Queued, Due int64
	// Running counts the leased jobs.
	Running int64
	// Accepted, Failed and DeliveryUnknown count the finished jobs still
	// kept.
	Accepted, Failed, DeliveryUnknown int64
	// Paused is true while the whole queue is paused.
	Paused bool
}

// ErrNotFound is returned for a job the queue does not hold.
var ErrNotFound = errors.New("redis: no such job")

// ErrNotFailed is returned by RetryFailed for a job that is not failed.
var ErrNotFailed = errors.New("redis: the job is not failed")

// ErrNoData is returned by RetryFailed for a failed job whose message was
// dropped (RetainData "none").
var ErrNoData = errors.New("redis: the job kept no message to run again")

// serverNow returns the server's clock (plus the tests' shift).
func (s *Source) serverNow(ctx context.Context) (time.Time, error) {
	var t time.Time
	var err error
	if cc, ok := s.c.(*goredis.ClusterClient); ok {
		var c *goredis.Client
		if c, err = cc.MasterForKey(ctx, s.keys[keyMeta]); err == nil {
			t, err = c.Time(ctx).Result()
		}
	} else {
		t, err = s.c.Time(ctx).Result()
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("redis: time: %w", err)
	}
	return t.Add(time.Duration(s.shift.Load()) * time.Millisecond), nil
}

// Stats counts the jobs by state, in one pipeline (not one snapshot: a job
// that moves meanwhile may count twice or not at all). The finished jobs
// are counted by the queue's retention, whatever the source was opened
// with (scripts/finished.lua).
func (s *Source) Stats(ctx context.Context) (Stats, error) {
	now, err := s.serverNow(ctx)
	if err != nil {
		return Stats{}, err
	}
	ms := now.UnixMilli()
	pipe := s.c.Pipeline()
	queued := scriptQueued.EvalSha(ctx, pipe, s.keys, s.args("count")...)
	running := pipe.ZCard(ctx, s.keys[keyLeased])
	finished := scriptFinished.EvalSha(ctx, pipe, s.keys, s.args("count")...)
	pause := pipe.HGet(ctx, s.keys[keyPause], "q")
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, goredis.Nil) {
		if !goredis.HasErrorPrefix(err, "NOSCRIPT") {
			return Stats{}, fmt.Errorf("redis: stats: %w", err)
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
	if err != nil || len(q) != 2 {
		return Stats{}, fmt.Errorf("redis: stats: queued: %d values, %v", len(q), err)
	}
	f, err := finished.Int64Slice()
	if err != nil || len(f) != 3 {
		return Stats{}, fmt.Errorf("redis: stats: finished: %d values, %v", len(f), err)
	}
	if err := running.Err(); err != nil {
		return Stats{}, fmt.Errorf("redis: stats: %w", err)
	}
	pu, _ := pause.Int64()
	return Stats{
		Queued: q[0], Due: q[1], Running: running.Val(),
		Accepted: f[0], Failed: f[1], DeliveryUnknown: f[2], Paused: pu > ms,
	}, nil
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
	return "", fmt.Errorf("redis: unknown state %q", state)
}

// Jobs returns up to limit jobs of a state from offset: queued jobs by due
// time, running ones by lease end, finished ones by finish time (the
// oldest first). A finished job whose retention (the queue's) ran out is
// left out (scripts/finished.lua).
func (s *Source) Jobs(ctx context.Context, state mailqueue.JobState, offset, limit int) ([]Job, error) {
	if state == mailqueue.JobQueued {
		if limit <= 0 {
			return nil, nil
		}
		ids, err := scriptQueued.Run(ctx, s.c, s.keys, s.args("list", max(offset, 0), limit)...).StringSlice()
		if err != nil {
			return nil, fmt.Errorf("redis: jobs: %w", err)
		}
		return s.getMany(ctx, ids, state)
	}
	key, err := s.index(state)
	if err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, nil
	}
	offset = max(offset, 0)
	var ids []string
	if state == mailqueue.JobRunning {
		ids, err = s.c.ZRange(ctx, key, int64(offset), int64(offset+limit-1)).Result()
	} else {
		ids, err = scriptFinished.Run(ctx, s.c, s.keys, s.args("list", string(state), offset, limit)...).StringSlice()
	}
	if err != nil {
		return nil, fmt.Errorf("redis: jobs: %w", err)
	}
	return s.getMany(ctx, ids, state)
}

// Failed returns up to limit jobs failed for good (failed, then
// delivery_unknown), the oldest first.
func (s *Source) Failed(ctx context.Context, limit int) ([]Job, error) {
	a, err := s.Jobs(ctx, mailqueue.JobFailed, 0, limit)
	if err != nil {
		return nil, err
	}
	b, err := s.Jobs(ctx, mailqueue.JobDeliveryUnknown, 0, limit-len(a))
	if err != nil {
		return nil, err
	}
	return append(a, b...), nil
}

// Get returns the job of the id; false when the queue does not hold it.
func (s *Source) Get(ctx context.Context, id string) (Job, bool, error) {
	js, err := s.getMany(ctx, []string{id}, "")
	if err != nil || len(js) == 0 {
		return Job{}, false, err
	}
	return js[0], true, nil
}

func (s *Source) getMany(ctx context.Context, ids []string, state mailqueue.JobState) ([]Job, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	pipe := s.c.Pipeline()
	cmds := make([]*goredis.MapStringStringCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.HGetAll(ctx, s.pfx+"job:"+id)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("redis: get: %w", err)
	}
	out := make([]Job, 0, len(ids))
	for i, c := range cmds {
		m := c.Val()
		if len(m) == 0 || m["hash"] == "" || state != "" && mailqueue.JobState(m["state"]) != state {
			continue
		}
		out = append(out, jobOf(ids[i], m))
	}
	return out, nil
}

func jobOf(id string, m map[string]string) Job {
	num := func(k string) int64 { n, _ := strconv.ParseInt(m[k], 10, 64); return n }
	at := func(k string) time.Time {
		if m[k] == "" {
			return time.Time{}
		}
		return time.UnixMilli(num(k))
	}
	j := Job{
		ID: id, Hash: m["hash"], V: m["v"], State: mailqueue.JobState(m["state"]), Priority: priorityOf(num("pri")),
		TenantID: m["tenant"], Attempts: int(num("att")), MaxAttempts: int(num("max")), Redeliveries: int(num("redel")),
		RunAt: at("runat"), EnqueuedAt: at("enq"), FinishedAt: at("fin"), LeaseUntil: at("until"),
		Code: codes.Code(m["code"]), Reason: m["reason"],
	}
	if d, ok := m["data"]; ok {
		j.Data = []byte(d)
	}
	return j
}

// RetryFailed queues a failed job (failed or delivery_unknown) again by
// hand, due now, its attempts and redeliveries reset. It returns an error
// wrapping ErrNotFound, ErrNotFailed or ErrNoData when it cannot.
func (s *Source) RetryFailed(ctx context.Context, id string) error {
	n, err := scriptRetryFailed.Run(ctx, s.c, s.keys, s.args(id)...).Int64()
	if err != nil {
		return fmt.Errorf("redis: retry failed: %w", err)
	}
	switch n {
	case 0:
		return fmt.Errorf("%w: %s", ErrNotFound, id)
	case -1:
		return fmt.Errorf("%w: %s", ErrNotFailed, id)
	case -2:
		return fmt.Errorf("%w: %s", ErrNoData, id)
	}
	return nil
}

// PurgeParams say which finished jobs Purge forgets.
type PurgeParams struct {
	// State is StateAccepted, StateFailed or StateDeliveryUnknown.
	State mailqueue.JobState
	// OlderThan is how long ago a job must have finished; 0 forgets every
	// finished job of the state.
	OlderThan time.Duration
}

// Purge forgets the finished jobs of p.State that finished at least
// p.OlderThan ago, and returns how many. Retention by time does the same
// on its own; Purge is for an operator. An enqueue under the key of a
// purged job stores it again: purging accepted jobs ends their dedupe
// window early. Queued and running jobs are never purged.
func (s *Source) Purge(ctx context.Context, p PurgeParams) (int, error) {
	switch p.State {
	case mailqueue.JobAccepted, mailqueue.JobFailed, mailqueue.JobDeliveryUnknown:
	default:
		return 0, fmt.Errorf("redis: purge: %q is not a finished state", p.State)
	}
	total := 0
	for {
		n, err := scriptPurge.Run(ctx, s.c, s.keys, s.args(string(p.State), p.OlderThan.Milliseconds())...).Int()
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
	var node goredis.UniversalClient = s.c
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
