// Package redis is the Redis driver of the mail queue: a mailqueue.Source on
// Redis (or Valkey) through github.com/redis/go-redis/v9, run by the polling
// driver. It behaves as the memory queue does, so that the conformance
// suite holds both to one contract, and keeps the jobs as the spec's BullMQ
// driver does: a hash per job, sorted sets by due time, a lease token per
// run (spec: "Drivers", and the BullMQ driver's spec).
//
// Every state change is one Lua script (the embedded scripts/*.lua, each
// with a header stating its KEYS, ARGV and return values), run atomically
// by the server: enqueue with its duplicates told by id and hash, reserve
// by priority then time (with tenant fairness and pauses), and extend, ack,
// retry, fail and release fenced by a fresh token per lease, by the token
// alone: a run whose lease ran out still settles while no other run took
// the job (docs/architecture.md, "Fenced by the token"). Time is the
// server's (TIME), never a producer's or a worker's: a job with no RunAt is
// due at the server's now, and a lease tells the server's now (Lease.Now).
//
// All keys of a queue share one hash tag, {prefix:queue}, so a queue lives
// in one slot and the driver runs on Redis Cluster as on a standalone
// server or behind Sentinel (it takes a redis.UniversalClient). The keys:
//
//	{P:Q}:meta                    hash: the queue's settings: fairness, dedupe and retainf
//	                              (the retention windows, ms), retaindata
//	{P:Q}:job:<id>                hash: hash, v, data, pri, tenant, max, att, redel, enq, runat, mem,
//	                              state, token, until, code, reason, fin
//	{P:Q}:scheduled               zset: jobs not yet due, by due time
//	{P:Q}:ready:<p>               zset: due jobs of priority p (0 high, 1 normal, 2 low)
//	{P:Q}:ready:<p>:t:<tenant>    zset: due jobs of a tenant in a lane shared among tenants
//	{P:Q}:ring:<p>                list: the tenants of a shared lane, in turn
//	{P:Q}:held:<p>:<tenant>       zset: due jobs of a paused tenant
//	{P:Q}:leased                  zset: leased job ids by lease end
//	{P:Q}:pause                   hash: the end of the queue's pause ("q") and of each tenant's ("t:<tenant>")
//	{P:Q}:done:<state>            zset: finished job ids by finish time (accepted, failed, delivery_unknown)
//	{P:Q}:wake                    shard channel: the delay until a job is due, for idle workers
//	P:idem:<key>                  string: an IdempotencyStore entry ("R"+token, or "C"+JSON)
//
// A queued job is in exactly one of scheduled, a ready lane (a tenant's,
// with fairness) or a held zset, scored by when it is due; Stats and Jobs
// count and list the queued jobs from those (scripts/queued.lua), so no
// other index costs a write per job.
//
// The settles of concurrent runs go together (batch.go): one settle
// script (scripts/settle.lua) runs a batch's settles, each fenced by its
// own token, and then leases the next job of each run's slot
// (SettleAndReserve, the polling driver's optional SettleReserver), so
// that a busy worker spends one round trip and one script per batch of
// jobs, not a settle and a reserve per job.
//
// Idle workers do not poll for work: each script that makes a job due
// publishes on the queue's shard channel (SPUBLISH, Redis 7 or later), and
// the source arms a timer for the next scheduled job or lease end, so a job
// starts a few milliseconds at most after its enqueue returns. The poll
// interval is only a safety net.
//
// Redis must not evict keys: Open refuses a server whose maxmemory-policy is
// not noeviction (Options.EvictionPolicyWarnOnly turns that into a
// warning logged as queue.store_unsafe, for a managed Redis that hides
// CONFIG). While a worker runs, the policy is read again every minute
// (EvictionCheckInterval), and a change away from noeviction is logged as
// queue.store_unsafe; the IdempotencyStore reads it too.
//
// go-redis's own log lines go to Options.Logger at debug, not to stderr
// (Options.KeepClientLogger leaves them be).
package redis

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/alexify/mailer/clock"
	"github.com/alexify/mailer/drivers/polling"
	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/mailqueue"
)

// The indexes of Source.keys, the KEYS of every script (scripts/common.lua).
const (
	keyMeta = iota
	keyScheduled
	keyLeased
	keyPause
	keyDoneAccepted
	keyDoneFailed
	keyDoneDeliveryUnknown
)

// The defaults of the spec's Defaults table, and the driver's own.
const (
	DefaultPrefix = "mailer"
	DefaultQueue  = "mail"
	// DefaultPollInterval is how long an idle worker waits before it
	// reserves again when nothing woke it: a safety net only, as the
	// server wakes idle workers (5 seconds).
	DefaultPollInterval = 5 * time.Second
	// enqueueChunk is the most jobs one enqueue script stores; a larger
	// batch is several scripts in one pipeline.
	enqueueChunk = 64
)

// Options configure a Redis queue. A zero field takes the default.
type Options struct {
	// Client is the connection: a *redis.Client, a failover client
	// (Sentinel) or a *redis.ClusterClient. Required; the driver does not
	// close it.
	Client goredis.UniversalClient
	// Prefix and Queue name the queue: its keys share the hash tag
	// {Prefix:Queue} ("mailer", "mail"), and its name is Prefix + ":" +
	// Queue (mailqueue.QueueNamer), which the mac and the codec's
	// associated data of its jobs bind. Neither may hold "{" or "}", and
	// both are valid UTF-8.
	Prefix, Queue string
	// Fairness is FairnessNone (the default) or FairnessTenant. It is a
	// property of the queue in Redis: Open refuses a queue created with the
	// other one (drain it first to change it).
	Fairness mailqueue.Fairness
	// DedupeWindow is how long a completed job is kept, the window in which
	// an enqueue under its key is a duplicate (a day).
	//
	// DedupeWindow, RetainFailed and RetainData are properties of the queue
	// in Redis, stored in its meta key by the first Open that sets them: a
	// zero field takes the queue's (the default when it holds none), so
	// that a producer that leaves them zero never undoes a worker's; a set
	// field that differs from the queue's is refused (ErrRetentionMismatch).
	// Every script reads them from the meta key, so that all the processes
	// on a queue keep and count its finished jobs alike.
	DedupeWindow time.Duration
	// RetainFailed is how long a failed job is kept (a week).
	RetainFailed time.Duration
	// RetainData says which finished jobs keep their message ("failed").
	RetainData mailqueue.RetainData
	// LeaseDuration, PollInterval and CloseTimeout are the polling
	// driver's (1 minute; 5 seconds, a safety net; 30 seconds).
	LeaseDuration, PollInterval, CloseTimeout time.Duration
	// EvictionPolicyWarnOnly logs a maxmemory-policy other than noeviction,
	// or one that cannot be read (CONFIG hidden), as a warning instead of
	// refusing to open: for a managed Redis you know to be set right.
	EvictionPolicyWarnOnly bool
	// KeepClientLogger leaves go-redis's own logger (one per process) as
	// it is. By default the driver routes go-redis's log lines to Logger,
	// at debug, instead of stderr; set it when the application gave
	// go-redis a logger of its own (redis.SetLogger).
	KeepClientLogger bool
	// UseStored opens the queue as it is in Redis, for an operator's tool
	// such as mailq: Fairness, DedupeWindow, RetainFailed and RetainData
	// are the queue's, whatever these Options say (the defaults for those
	// it does not hold), and Open writes nothing to Redis, so that looking
	// at a queue that does not exist does not make it.
	UseStored bool
	// Logger hears what the driver does; slog.Default() when nil.
	Logger *slog.Logger
}

// ErrEvictionPolicy is returned by Open when the server may evict keys
// (maxmemory-policy is not noeviction) or its policy cannot be read: a job
// evicted is a job lost, a lease evicted a job sent twice.
var ErrEvictionPolicy = errors.New("redis: maxmemory-policy must be noeviction")

// ErrFairnessMismatch is returned by Open when the queue in Redis was made
// with another Fairness than Options.Fairness.
var ErrFairnessMismatch = errors.New("redis: the queue was made with another fairness")

// ErrRetentionMismatch is returned by Open when Options set a
// DedupeWindow, RetainFailed or RetainData other than the one the queue in
// Redis holds. To change one, delete its field from the queue's meta key
// (HDEL {P:Q}:meta dedupe, retainf or retaindata) and open the queue with
// the new value: the processes already on the queue take it at once, as
// every script reads it; the jobs finished before keep the expiry they
// were given.
var ErrRetentionMismatch = errors.New("redis: the queue was made with another retention")

// Queue is the Redis queue: the polling driver over a Source, a
// mailqueue.Driver, and a mailqueue.Operator (Stats, Jobs, Get, Failed,
// RetryFailed, Purge, Pause, Resume), as its Source is.
type Queue struct {
	*polling.Driver
	src *Source
}

// Open checks the server (see Options.EvictionPolicyWarnOnly) and returns
// the queue. It makes no connection that outlives the call until a worker
// starts (the wake-up subscription).
func Open(ctx context.Context, opts Options) (*Queue, error) {
	src, err := OpenSource(ctx, opts)
	if err != nil {
		return nil, err
	}
	d, err := polling.New(src, polling.Options{
		PollInterval: src.opts.PollInterval, LeaseDuration: src.opts.LeaseDuration, CloseTimeout: src.opts.CloseTimeout,
		Logger: src.log,
	})
	if err != nil {
		return nil, err
	}
	return &Queue{Driver: d, src: src}, nil
}

// Source returns the queue's Source.
func (q *Queue) Source() *Source { return q.src }

// EnqueueTx refuses every transaction with an error wrapping
// mailqueue.ErrTransactionUnsupported, and stores nothing: Redis cannot
// store a job in the caller's database transaction (the outbox needs a
// store that shares the caller's database, as drivers/postgres does). Use
// Enqueue after the commit instead.
func (q *Queue) EnqueueTx(context.Context, any, []mailqueue.NewJob) ([]mailqueue.EnqueueResult, error) {
	return nil, fmt.Errorf("redis: %w", mailqueue.ErrTransactionUnsupported)
}

// RetryFailed queues a failed job again by hand and wakes the idle
// runners; see Source.RetryFailed.
func (q *Queue) RetryFailed(ctx context.Context, id string) error {
	if err := q.src.RetryFailed(ctx, id); err != nil {
		return err
	}
	q.Wake()
	return nil
}

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

// Purge forgets finished jobs; see Source.Purge.
func (q *Queue) Purge(ctx context.Context, p mailqueue.PurgeParams) (int, error) {
	return q.src.Purge(ctx, p)
}

// Source is a mailqueue.Source and a mailqueue.Pauser on Redis, and a
// polling.Notifier: it wakes the idle runners of the polling driver when a
// job becomes due. It is safe for concurrent use.
type Source struct {
	c    goredis.UniversalClient
	opts Options
	log  *slog.Logger
	tag  string   // "{P:Q}"
	pfx  string   // "{P:Q}:"
	keys []string // the KEYS of every script (scripts/common.lua); see the key* indexes

	shift atomic.Int64 // ms added to the server's clock, in tests only

	clk    clock.Clock // times the checks of the eviction policy; a fake one in tests
	policy policyWatch // the eviction policy as last read

	tokPrefix string
	tokN      atomic.Uint64
	// orphans are the token bases of the reserves (and settle-and-reserves)
	// whose answer was lost: the leases they may have made are given back
	// by the next reserve (reclaim.lua).
	orphansMu sync.Mutex
	orphans   []string

	n notifier
	b batcher
}

var (
	_ mailqueue.Source       = (*Source)(nil)
	_ mailqueue.Pauser       = (*Source)(nil)
	_ mailqueue.QueueNamer   = (*Source)(nil)
	_ polling.Notifier       = (*Source)(nil)
	_ polling.SettleReserver = (*Source)(nil)
)

// OpenSource checks the server and returns the Source alone, for a driver
// of your own; Open wraps it in the polling driver. It returns a
// *mailqueue.OptionError for an option out of range or unknown (see
// Options), an error wrapping ErrEvictionPolicy, ErrFairnessMismatch or
// ErrRetentionMismatch, or the server's.
func OpenSource(ctx context.Context, opts Options) (*Source, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	// The retention the caller set, stored or checked against the queue's
	// (checkMeta), in whole milliseconds (at least one), as Redis keeps
	// them; the zero fields take the queue's.
	ms := func(d time.Duration) time.Duration {
		if d <= 0 {
			return 0
		}
		return max(d.Truncate(time.Millisecond), time.Millisecond)
	}
	asked := settings{dedupe: ms(opts.DedupeWindow), retainFailed: ms(opts.RetainFailed), retainData: opts.RetainData}
	tag := "{" + opts.Prefix + ":" + opts.Queue + "}"
	s := &Source{c: opts.Client, opts: opts, log: opts.Logger, tag: tag, pfx: tag + ":", clk: clock.Real()}
	if !opts.KeepClientLogger {
		routeClientLog(opts.Logger)
	}
	s.keys = []string{
		s.pfx + "meta", s.pfx + "scheduled", s.pfx + "leased", s.pfx + "pause",
		s.pfx + "done:accepted", s.pfx + "done:failed", s.pfx + "done:delivery_unknown",
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	s.tokPrefix = hex.EncodeToString(b[:])
	s.n.src = s
	s.b = batcher{src: s}
	if err := s.checkEviction(ctx); err != nil {
		return nil, err
	}
	if err := s.checkMeta(ctx, asked); err != nil {
		return nil, err
	}
	if err := loadScripts(ctx, s.c); err != nil {
		return nil, fmt.Errorf("redis: loading the scripts: %w", err)
	}
	return s, nil
}

// QueueName returns the queue's name, Prefix + ":" + Queue ("mailer:mail"
// by default); see mailqueue.QueueNamer.
func (s *Source) QueueName() string { return s.opts.Prefix + ":" + s.opts.Queue }

// withDefaults returns a copy of the options whose zero fields take their
// defaults. DedupeWindow, RetainFailed and RetainData stay zero: a zero
// field takes the queue's (checkMeta). CloseTimeout is left to polling.New,
// which takes the same zero value.
func (o Options) withDefaults() Options {
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if o.Queue == "" {
		o.Queue = DefaultQueue
	}
	if o.Fairness == "" {
		o.Fairness = mailqueue.FairnessNone
	}
	if o.LeaseDuration == 0 {
		o.LeaseDuration = polling.DefaultLeaseDuration
	}
	if o.PollInterval == 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// validate refuses the options OpenSource cannot honour, naming the option
// and its value.
func (o Options) validate() error {
	const pkg = "redis"
	if o.Client == nil {
		return &mailqueue.OptionError{Package: pkg, Option: "Options.Client", Rule: "is required"}
	}
	for name, v := range map[string]string{"Options.Prefix": o.Prefix, "Options.Queue": o.Queue} {
		if strings.ContainsAny(v, "{}") {
			return &mailqueue.OptionError{Package: pkg, Option: name, Value: v, Rule: "holds { or }: the driver makes the queue's hash tag of it"}
		}
		if err := mailqueue.CheckQueueName(pkg, name, v); err != nil {
			return err
		}
	}
	for _, err := range []error{
		mailqueue.CheckOneOf(pkg, "Options.Fairness", o.Fairness, mailqueue.AllFairness...),
		mailqueue.CheckOneOf(pkg, "Options.RetainData", o.RetainData, mailqueue.AllRetainData...),
		mailqueue.CheckNotNegative(pkg, "Options.DedupeWindow", o.DedupeWindow),
		mailqueue.CheckNotNegative(pkg, "Options.RetainFailed", o.RetainFailed),
		mailqueue.CheckNotNegative(pkg, "Options.LeaseDuration", o.LeaseDuration),
		mailqueue.CheckNotNegative(pkg, "Options.PollInterval", o.PollInterval),
		mailqueue.CheckNotNegative(pkg, "Options.CloseTimeout", o.CloseTimeout),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

// checkEviction refuses a server that may evict keys.
func (s *Source) checkEviction(ctx context.Context) error {
	// A server that does not answer is that, not an eviction policy.
	if err := s.c.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis: the server does not answer: %w", err)
	}
	check := func(ctx context.Context, c goredis.UniversalClient) error {
		m, err := c.ConfigGet(ctx, "maxmemory-policy").Result()
		if err != nil {
			return fmt.Errorf("%w: cannot read it: %w", ErrEvictionPolicy, err)
		}
		if p, ok := m["maxmemory-policy"]; !ok || p != "noeviction" {
			return fmt.Errorf("%w, not %q", ErrEvictionPolicy, p)
		}
		return nil
	}
	var err error
	if cc, ok := s.c.(*goredis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, c *goredis.Client) error { return check(ctx, c) })
	} else {
		err = check(ctx, s.c)
	}
	if err == nil {
		s.policy.state.Store(policySafe)
	}
	if err != nil && s.opts.EvictionPolicyWarnOnly {
		s.policy.state.Store(policyUnsafe)
		s.log.Warn(string(codes.QueueStoreUnsafe), "reason", err.Error())
		return nil
	}
	return err
}

// settings are the retention of a queue, as its meta key holds them; a
// zero field is one not held (or not set).
type settings struct {
	dedupe, retainFailed time.Duration
	retainData           mailqueue.RetainData
}

// The fields of the meta key.
var metaFields = []string{"fairness", "dedupe", "retainf", "retaindata"}

// checkMeta records the queue's fairness, and the retention the caller
// set, on first use, refuses another fairness or retention after, and
// sets s.opts to the queue's retention (the defaults for those it does
// not hold). With UseStored, it only reads, and takes the queue's
// fairness too.
func (s *Source) checkMeta(ctx context.Context, asked settings) error {
	vals, err := s.readMeta(ctx, asked)
	if err != nil {
		return err
	}
	if err := s.takeFairness(mailqueue.Fairness(metaString(vals, 0))); err != nil {
		return err
	}
	held, err := s.parseRetention(vals)
	if err != nil {
		return err
	}
	if !s.opts.UseStored {
		if err := s.retentionMismatch(held, asked); err != nil {
			return err
		}
	}
	s.opts.DedupeWindow = cmp.Or(held.dedupe, mailqueue.DefaultDedupeWindow)
	s.opts.RetainFailed = cmp.Or(held.retainFailed, mailqueue.DefaultRetainFailed)
	s.opts.RetainData = cmp.Or(held.retainData, mailqueue.RetainFailedData)
	return nil
}

// readMeta returns the fields of the meta key (metaFields). Unless
// UseStored, it first stores the fairness and the retention the caller set
// where the queue holds none, in one transaction with the read.
func (s *Source) readMeta(ctx context.Context, asked settings) ([]any, error) {
	var vals []any
	var err error
	if s.opts.UseStored {
		vals, err = s.c.HMGet(ctx, s.keys[keyMeta], metaFields...).Result()
	} else {
		var get *goredis.SliceCmd
		_, err = s.c.TxPipelined(ctx, func(p goredis.Pipeliner) error {
			p.HSetNX(ctx, s.keys[keyMeta], "fairness", string(s.opts.Fairness))
			if asked.dedupe > 0 {
				p.HSetNX(ctx, s.keys[keyMeta], "dedupe", asked.dedupe.Milliseconds())
			}
			if asked.retainFailed > 0 {
				p.HSetNX(ctx, s.keys[keyMeta], "retainf", asked.retainFailed.Milliseconds())
			}
			if asked.retainData != "" {
				p.HSetNX(ctx, s.keys[keyMeta], "retaindata", string(asked.retainData))
			}
			get = p.HMGet(ctx, s.keys[keyMeta], metaFields...)
			return nil
		})
		if err == nil {
			vals, err = get.Result()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	if len(vals) != len(metaFields) {
		return nil, fmt.Errorf("redis: %s: %d values of %d fields", s.keys[keyMeta], len(vals), len(metaFields))
	}
	return vals, nil
}

// metaString returns the i-th of the meta key's fields, "" when it holds
// none.
func metaString(vals []any, i int) string { v, _ := vals[i].(string); return v }

// takeFairness takes f, the queue's fairness, with UseStored (FairnessNone
// when it holds none), or refuses another than the caller's.
func (s *Source) takeFairness(f mailqueue.Fairness) error {
	if s.opts.UseStored {
		s.opts.Fairness = cmp.Or(f, mailqueue.FairnessNone)
		if !s.opts.Fairness.Valid() {
			return fmt.Errorf("redis: %s holds fairness %q", s.keys[keyMeta], f)
		}
		return nil
	}
	if f != s.opts.Fairness {
		return fmt.Errorf("%w: %s is %q, Options.Fairness %q", ErrFairnessMismatch, s.tag, f, s.opts.Fairness)
	}
	return nil
}

// parseRetention reads the retention of the meta key's fields, refusing a
// value no driver stores.
func (s *Source) parseRetention(vals []any) (settings, error) {
	var held settings
	for i, d := range []*time.Duration{&held.dedupe, &held.retainFailed} {
		if v := metaString(vals, 1+i); v != "" {
			ms, err := strconv.ParseInt(v, 10, 64)
			if err != nil || ms <= 0 {
				return held, fmt.Errorf("redis: %s holds %s %q", s.keys[keyMeta], metaFields[1+i], v)
			}
			*d = time.Duration(ms) * time.Millisecond
		}
	}
	if v := mailqueue.RetainData(metaString(vals, 3)); v != "" {
		if !v.Valid() {
			return held, fmt.Errorf("redis: %s holds retaindata %q", s.keys[keyMeta], v)
		}
		held.retainData = v
	}
	return held, nil
}

// retentionMismatch returns an error wrapping ErrRetentionMismatch when the
// caller set a retention other than the one the queue holds.
func (s *Source) retentionMismatch(held, asked settings) error {
	mismatch := func(name string, held, asked any) error {
		return fmt.Errorf("%w: %s holds %s %v, Options %v", ErrRetentionMismatch, s.tag, name, held, asked)
	}
	switch {
	case asked.dedupe > 0 && held.dedupe != asked.dedupe:
		return mismatch("DedupeWindow", held.dedupe, asked.dedupe)
	case asked.retainFailed > 0 && held.retainFailed != asked.retainFailed:
		return mismatch("RetainFailed", held.retainFailed, asked.retainFailed)
	case asked.retainData != "" && held.retainData != asked.retainData:
		return mismatch("RetainData", held.retainData, asked.retainData)
	}
	return nil
}

// StoredFairness returns the fairness the queue prefix:queue was made
// with, FairnessNone for a queue not made yet: for a tool that opens any
// queue (Options.UseStored does it for all the queue's settings).
func StoredFairness(ctx context.Context, c goredis.UniversalClient, prefix, queue string) (mailqueue.Fairness, error) {
	f, err := c.HGet(ctx, "{"+prefix+":"+queue+"}:meta", "fairness").Result()
	if errors.Is(err, goredis.Nil) || err == nil && f == "" {
		return mailqueue.FairnessNone, nil
	}
	if err != nil {
		return "", fmt.Errorf("redis: %w", err)
	}
	return mailqueue.Fairness(f), nil
}

// Tag returns the queue's hash tag, "{prefix:queue}": every key of the
// queue begins with it.
func (s *Source) Tag() string { return s.tag }

// args returns the ARGV every script begins with (scripts/common.lua),
// followed by more.
func (s *Source) args(more ...any) []any {
	fair := "0"
	if s.opts.Fairness == mailqueue.FairnessTenant {
		fair = "1"
	}
	a := make([]any, 0, 6+len(more))
	a = append(a, s.pfx, s.shift.Load(), fair, string(s.opts.RetainData),
		s.opts.DedupeWindow.Milliseconds(), s.opts.RetainFailed.Milliseconds())
	return append(a, more...)
}

// now is the source's view of the server's clock: the local clock, plus
// the shift of the tests.
func (s *Source) now() time.Time {
	return time.Now().Add(time.Duration(s.shift.Load()) * time.Millisecond)
}

func priorityNum(p jobv1.Priority) int {
	switch p {
	case jobv1.PriorityHigh:
		return 0
	case jobv1.PriorityLow:
		return 2
	}
	return 1
}

func priorityOf(n int64) jobv1.Priority {
	switch n {
	case 0:
		return jobv1.PriorityHigh
	case 2:
		return jobv1.PriorityLow
	}
	return jobv1.PriorityNormal
}

// version returns the job's "v" as JSON text, kept when its data is
// dropped; "" when the data has none.
func version(data []byte) string {
	var j struct {
		V json.RawMessage `json:"v"`
	}
	if json.Unmarshal(data, &j) != nil {
		return ""
	}
	return string(j.V)
}

// Enqueue stores jobs, each atomically, in chunks of one script each, the
// chunks in one pipeline; see mailqueue.Source. A duplicate is told by the
// stored hash; a conflict is another hash under the id.
func (s *Source) Enqueue(ctx context.Context, jobs []mailqueue.NewJob) ([]mailqueue.EnqueueResult, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	chunkArgs := func(js []mailqueue.NewJob) []any {
		a := s.args()
		for _, j := range js {
			attempts := j.MaxAttempts
			if attempts <= 0 {
				attempts = mailqueue.DefaultMaxAttempts
			}
			a = append(a, j.ID, j.Hash, version(j.Data), j.Data, priorityNum(j.Priority), j.TenantID, attempts,
				unixMilliOrZero(j.RunAt), unixMilliOrZero(j.EnqueuedAt))
		}
		return a
	}
	var vals [][]any
	var err error
	if len(jobs) <= enqueueChunk {
		var v any
		v, err = scriptEnqueue.Run(ctx, s.c, s.keys, chunkArgs(jobs)...).Result()
		if err == nil {
			vals = append(vals, v.([]any))
		}
	} else {
		vals, err = s.enqueuePipelined(ctx, jobs, chunkArgs)
	}
	if err != nil {
		return nil, fmt.Errorf("redis: enqueue: %w", err)
	}
	res := make([]mailqueue.EnqueueResult, 0, len(jobs))
	for _, v := range vals {
		for _, r := range v {
			n, _ := r.(int64)
			res = append(res, mailqueue.EnqueueResult{ID: jobs[len(res)].ID, Duplicate: n == 1, Conflict: n == 2})
		}
	}
	if len(res) != len(jobs) {
		return nil, fmt.Errorf("redis: enqueue: %d results for %d jobs", len(res), len(jobs))
	}
	if s.n.local() {
		s.n.wakeAll()
	}
	return res, nil
}

// unixMilliOrZero is t in ms since the epoch, or 0 for the zero time:
// enqueue.lua takes 0 as the server's now.
func unixMilliOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func (s *Source) enqueuePipelined(ctx context.Context, jobs []mailqueue.NewJob, chunkArgs func([]mailqueue.NewJob) []any) ([][]any, error) {
	for try := 0; ; try++ {
		pipe := s.c.Pipeline()
		var cmds []*goredis.Cmd
		for i := 0; i < len(jobs); i += enqueueChunk {
			end := min(i+enqueueChunk, len(jobs))
			cmds = append(cmds, scriptEnqueue.EvalSha(ctx, pipe, s.keys, chunkArgs(jobs[i:end])...))
		}
		_, err := pipe.Exec(ctx)
		if err != nil && try == 0 && goredis.HasErrorPrefix(err, "NOSCRIPT") {
			// A server that lost its scripts (a restart, a failover): load
			// them, and run the pipeline again; the chunks that ran are
			// duplicates the second time, so nothing is stored twice.
			if lerr := loadScripts(ctx, s.c); lerr != nil {
				return nil, lerr
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		out := make([][]any, len(cmds))
		for i, c := range cmds {
			v, err := c.Result()
			if err != nil {
				return nil, err
			}
			out[i] = v.([]any)
		}
		return out, nil
	}
}

// Reserve leases up to p.Limit due jobs; see mailqueue.Source and
// scripts/reserve.lua. A lease's Until is on the local clock: the time
// before the call plus p.LeaseDuration, so it never ends later than the
// lease the server holds. Its Now is the server's clock when it leased.
func (s *Source) Reserve(ctx context.Context, p mailqueue.ReserveParams) ([]*mailqueue.Lease, error) {
	if p.Limit < 1 {
		p.Limit = 1
	}
	if p.LeaseDuration <= 0 {
		p.LeaseDuration = s.opts.LeaseDuration
	}
	if err := s.reclaimOrphans(ctx); err != nil {
		return nil, err
	}
	before := s.now()
	base := s.tokPrefix + "-" + strconv.FormatUint(s.tokN.Add(1), 36)
	v, err := scriptReserve.Run(ctx, s.c, s.keys, s.args(p.Limit, p.LeaseDuration.Milliseconds(), base)...).Result()
	if err != nil {
		s.lostAnswer(base, err)
		return nil, fmt.Errorf("redis: reserve: %w", err)
	}
	arr, ok := v.([]any)
	if !ok || len(arr) < 3 || (len(arr)-3)%9 != 0 {
		return nil, fmt.Errorf("redis: reserve: an answer of %d values", len(arr))
	}
	next, _ := arr[0].(int64)
	more, _ := arr[1].(int64)
	leases := parseLeases(arr[3:], before.Add(p.LeaseDuration), serverTime(arr[2]))
	s.wakeAfter(next, more)
	return leases, nil
}

// maxOrphans bounds the token bases kept for reclaim.lua; past it the
// oldest are dropped (their leases then run out as redeliveries).
const maxOrphans = 256

// lostAnswer keeps the token base of a reserve whose call failed without
// an answer from the script: Redis may have run it (the connection broke
// after the call was sent), leasing jobs no run will ever see. An error
// the server answered (a script error) leased nothing.
func (s *Source) lostAnswer(base string, err error) {
	var re goredis.Error
	if errors.As(err, &re) {
		return
	}
	s.orphansMu.Lock()
	defer s.orphansMu.Unlock()
	s.orphans = append(s.orphans, base)
	if len(s.orphans) > maxOrphans {
		s.orphans = s.orphans[len(s.orphans)-maxOrphans:]
	}
}

// reclaimOrphans gives back the jobs the reserves of lostAnswer leased, at
// once and unspent (reclaim.lua), before the next reserve. The bases stay
// kept when the store does not answer.
func (s *Source) reclaimOrphans(ctx context.Context) error {
	s.orphansMu.Lock()
	bases := s.orphans
	s.orphans = nil
	s.orphansMu.Unlock()
	if len(bases) == 0 {
		return nil
	}
	args := s.args()
	for _, b := range bases {
		args = append(args, b)
	}
	n, err := scriptReclaim.Run(ctx, s.c, s.keys, args...).Int()
	if err != nil {
		s.orphansMu.Lock()
		s.orphans = append(bases, s.orphans...)
		s.orphansMu.Unlock()
		return fmt.Errorf("redis: reserve: giving back the leases of lost answers: %w", err)
	}
	if n > 0 {
		s.log.Info(string(codes.QueueJobReleased), "jobs", n, "reason", "leases made by reserves whose answer was lost were given back, no attempt spent")
	}
	return nil
}

// wakeAfter wakes the local runners as a reserve's answer says: at once
// when more may be due (more 1), else when the next job may be due (next
// ms from now; -1 for none).
func (s *Source) wakeAfter(next, more int64) {
	switch {
	case more == 1:
		s.n.wakeAll()
	case next >= 0:
		s.n.wakeIn(time.Duration(next) * time.Millisecond)
	}
}

// settleOp returns the op of a settle (settle.lua) for the outcome of a
// run, asking for limit leases of lease after it.
func (s *Source) settleOp(ctx context.Context, id, token string, out mailqueue.Outcome, limit int, lease time.Duration) (*op, error) {
	o := &op{ctx: ctx, limit: limit, lease: lease.Milliseconds(), before: s.now()}
	switch out.Action {
	case mailqueue.Ack:
		o.what = "ack"
		o.vals = [6]any{"a", id, token, "", "", ""}
	case mailqueue.Retry:
		o.what = "retry"
		o.vals = [6]any{"r", id, token, out.Delay.Milliseconds(), string(out.Code), out.Reason}
	case mailqueue.Fail:
		o.what = "fail"
		o.vals = [6]any{"f", id, token, string(out.State), string(out.Code), out.Reason}
	case mailqueue.Release:
		o.what = "release"
		o.vals = [6]any{"l", id, token, out.Delay.Milliseconds(), string(out.Code), out.Reason}
	default:
		return nil, fmt.Errorf("redis: settle: no action %v", out.Action)
	}
	return o, nil
}

// settle runs a settle, batched with those of concurrent runs (batch.go);
// false is a lost lease.
func (s *Source) settle(ctx context.Context, id, token string, out mailqueue.Outcome) (bool, error) {
	o, err := s.settleOp(ctx, id, token, out, 0, 0)
	if err != nil {
		return false, err
	}
	ok, _, err := s.b.run(o)
	return ok, err
}

// SettleAndReserve settles a run and leases up to r.Limit more jobs in the
// same script (scripts/settle.lua), batched with the settles of concurrent
// runs: one round trip and one script for both; see
// polling.SettleReserver. The leases' Until is on the local clock, as
// Reserve's.
func (s *Source) SettleAndReserve(ctx context.Context, p polling.SettleParams, r mailqueue.ReserveParams) (bool, []*mailqueue.Lease, error) {
	if r.Limit < 0 {
		r.Limit = 0
	}
	if r.LeaseDuration <= 0 {
		r.LeaseDuration = s.opts.LeaseDuration
	}
	o, err := s.settleOp(ctx, p.ID, p.Token, p.Outcome, r.Limit, r.LeaseDuration)
	if err != nil {
		return false, nil, err
	}
	return s.b.run(o)
}

// Extend moves the end of a lease to now + p.Duration, by the server's
// clock; see mailqueue.Source. A lease whose job or lease entry vanished is
// lost: false.
func (s *Source) Extend(ctx context.Context, p mailqueue.ExtendParams) (bool, error) {
	d := p.Duration
	if d <= 0 {
		d = s.opts.LeaseDuration
	}
	ok, _, err := s.b.run(&op{ctx: ctx, what: "extend", ext: []any{p.ID, p.Token, d.Milliseconds()}})
	return ok, err
}

// Ack settles a run as accepted; see mailqueue.Source.
func (s *Source) Ack(ctx context.Context, p mailqueue.AckParams) (bool, error) {
	return s.settle(ctx, p.ID, p.Token, mailqueue.Outcome{Action: mailqueue.Ack})
}

// Retry spends an attempt and makes the job due after p.Delay; see
// mailqueue.Source.
func (s *Source) Retry(ctx context.Context, p mailqueue.RetryParams) (bool, error) {
	return s.settle(ctx, p.ID, p.Token, mailqueue.Outcome{Action: mailqueue.Retry, Delay: p.Delay, Code: p.Code, Reason: p.Reason})
}

// Fail settles the job for good in p.State; see mailqueue.Source.
func (s *Source) Fail(ctx context.Context, p mailqueue.FailParams) (bool, error) {
	return s.settle(ctx, p.ID, p.Token, mailqueue.Outcome{Action: mailqueue.Fail, State: p.State, Code: p.Code, Reason: p.Reason})
}

// Release gives the job back unspent, due after p.Delay; see
// mailqueue.Source.
func (s *Source) Release(ctx context.Context, p mailqueue.ReleaseParams) (bool, error) {
	return s.settle(ctx, p.ID, p.Token, mailqueue.Outcome{Action: mailqueue.Release, Delay: p.Delay, Code: p.Code, Reason: p.Reason})
}

// Pause pauses the queue, or a tenant's jobs, for p.For by the server's
// clock; a longer pause in place is kept. See mailqueue.Pauser.
func (s *Source) Pause(ctx context.Context, p mailqueue.Pause) error {
	if err := mailqueue.CheckNotNegative("redis", "Pause.For", p.For); err != nil {
		return err
	}
	t := "0"
	if p.Tenant {
		t = "1"
	}
	if err := scriptPause.Run(ctx, s.c, s.keys, s.args(t, p.TenantID, p.For.Milliseconds())...).Err(); err != nil {
		return fmt.Errorf("redis: pause: %w", err)
	}
	return nil
}

// Resume ends a pause of the queue (tenant false) or of a tenant before its
// time, and wakes the idle workers. See mailqueue.Pauser.
func (s *Source) Resume(ctx context.Context, p mailqueue.ResumeParams) error {
	t := "0"
	if p.Tenant {
		t = "1"
	}
	if err := scriptResume.Run(ctx, s.c, s.keys, s.args(t, p.TenantID)...).Err(); err != nil {
		return fmt.Errorf("redis: resume: %w", err)
	}
	return nil
}

// notifier fans the wake-ups of the queue's shard channel and of its timer
// out to the runners that listen (polling.Notifier).
type notifier struct {
	src *Source

	mu      sync.Mutex
	subs    map[chan<- struct{}]struct{}
	stop    context.CancelFunc
	done    chan struct{}
	timer   *time.Timer
	timerAt time.Time
}

// Notify registers wake, and subscribes to the queue's wake-ups while at
// least one runner listens; see polling.Notifier.
func (s *Source) Notify(wake chan<- struct{}) (stop func()) {
	n := &s.n
	n.mu.Lock()
	if n.subs == nil {
		n.subs = map[chan<- struct{}]struct{}{}
	}
	n.subs[wake] = struct{}{}
	if n.stop == nil {
		ctx, cancel := context.WithCancel(context.Background())
		n.stop, n.done = cancel, make(chan struct{})
		go n.run(ctx, n.done)
	}
	n.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			n.mu.Lock()
			delete(n.subs, wake)
			var done chan struct{}
			if len(n.subs) == 0 && n.stop != nil {
				n.stop()
				done = n.done
				n.stop, n.done = nil, nil
				if n.timer != nil {
					n.timer.Stop()
					n.timer = nil
				}
			}
			n.mu.Unlock()
			if done != nil {
				<-done
			}
		})
	}
}

// listen reads the queue's shard channel until ctx is done.
func (n *notifier) listen(ctx context.Context, done chan struct{}) {
	defer close(done)
	ps := n.src.c.SSubscribe(ctx, n.src.pfx+"wake")
	// A close that fails leaves nothing to do: the subscription's
	// connection is gone either way.
	defer func() { _ = ps.Close() }()
	ch := ps.Channel()
	for {
		select {
		case <-ctx.Done():
			return
		case m, ok := <-ch:
			if !ok {
				return
			}
			ms, err := strconv.ParseInt(m.Payload, 10, 64)
			if err != nil || ms <= 0 {
				n.wakeAll()
				continue
			}
			n.wakeIn(time.Duration(ms) * time.Millisecond)
		}
	}
}

// local reports whether a runner listens in this process.
func (n *notifier) local() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.subs) > 0
}

// wakeAll wakes every listening runner, never blocking.
func (n *notifier) wakeAll() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for c := range n.subs {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

// wakeIn arms the timer to wake the runners after d, unless it is armed
// for sooner already.
func (n *notifier) wakeIn(d time.Duration) {
	if d <= 0 {
		n.wakeAll()
		return
	}
	at := time.Now().Add(d)
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.subs) == 0 {
		return
	}
	if n.timer != nil && !n.timerAt.After(at) && time.Until(n.timerAt) > 0 {
		return
	}
	if n.timer != nil {
		n.timer.Stop()
	}
	n.timerAt = at
	n.timer = time.AfterFunc(d, n.wakeAll)
}
