// Package postgres is the PostgreSQL driver of the mail queue: a
// mailqueue.Source on PostgreSQL through github.com/jackc/pgx/v5, run by the
// polling driver, and the outbox of the spec: a job enqueued in the
// caller's transaction (Queue.EnqueueTx) commits with the rows it tells of,
// or not at all.
//
// Its tables live in a schema of their own (Options.Schema, "mailer" by
// default), made by the embedded, numbered migrations (migrations/*.sql)
// that Migrate (or mailq migrate --postgres URL) applies under an advisory
// lock; a worker never migrates, and OpenSource refuses a schema not at
// this driver's version (ErrNotMigrated). Several queues (Options.Queue)
// share a schema, and several workers a queue.
//
// A reserve takes the due jobs by priority then due time with FOR UPDATE
// SKIP LOCKED, in one statement on the database's clock (now()), never a
// worker's, and gives each lease a fresh token. Extend is one UPDATE, and
// the settles of concurrent runs go together (one pgx.Batch, one
// transaction: a set-based UPDATE and a reserve of the leases their slots
// ask for), each row fenced by its own token alone (docs/architecture.md,
// "Fenced by the token"): a running job whose lease ran out keeps its token and is
// due again (its due_at is the end of its lease) until a reserve takes it,
// counting a redelivery. Tenant fairness, pauses of the queue and of a
// tenant, and retention by time (the dedupe window, RetainFailed,
// RetainData) behave as on the memory and Redis drivers, and
// conformance.TestSource holds the driver to them on a real server.
//
// Idle workers do not poll: an enqueue sends pg_notify in its own
// transaction (so the wake-up comes at commit, and never for a rollback),
// the source LISTENs on a dedicated connection while a worker runs
// (polling.Notifier) and arms a timer for the next scheduled job; the poll
// (Options.PollInterval, 1 s) is a safety net.
//
// PostgreSQL holds a lock on its notification queue from a notifying
// commit's start until its WAL is flushed, so that transactions that
// notify commit one at a time. An enqueue of jobs due now therefore
// notifies at most once every NotifyWindow (2 ms) per queue and process
// (a scheduled job always does, its NOTIFY carrying when it is due), and
// a worker woken by a notification reserves once more NotifyWindow later:
// a job whose NOTIFY was left out is taken within the window of the one
// sent. The trade (River's insert-notify limiter makes it too): a
// transaction held open longer than that after its enqueue, or one whose
// NOTIFY was left out after another rolled back, may wait for the poll. One worker at a time prunes
// the jobs whose retention ended, in small batches, under an advisory
// lock.
//
// Sizing: a worker uses one connection of the pool for LISTEN (taken out
// of the pool while it runs), one at a time for pruning, and one per
// runner slot while it reserves or settles; give the pool at least the
// worker's Concurrency plus two (pgxpool's default is the larger of 4 and
// the CPUs). Every enqueue, reserve and settle is one statement and one
// commit (SettleAndReserve, the settle of a run with the lease of its
// slot's next job, is two statements in one round trip and one commit), so
// the commit's WAL flush bounds the rate: synchronous_commit and the disk
// decide more than the driver does.
package postgres

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/alexify/mailer/drivers/polling"
	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/mailqueue"
)

// The driver's defaults.
const (
	// DefaultSchema is the schema of the tables.
	DefaultSchema = "mailer"
	// DefaultQueue is the name of the queue in the schema.
	DefaultQueue = "mail"
	// DefaultPruneInterval is how often a worker prunes the jobs whose
	// retention ended (a minute).
	DefaultPruneInterval = time.Minute
	// DefaultPruneBatch is the most rows one pruning statement deletes.
	DefaultPruneBatch = 500
)

// The states of the jobs table (migrations/0001_queue.sql).
const (
	stQueued          = 0
	stRunning         = 1
	stAccepted        = 2
	stFailed          = 3
	stDeliveryUnknown = 4
	stPurged          = 5
)

// Options configure a PostgreSQL queue. A zero field takes the default.
type Options struct {
	// Pool is the connection pool. Required; the driver does not close it.
	// A worker holds one of its connections for LISTEN while it runs, and
	// each runner slot one at a time.
	Pool *pgxpool.Pool
	// Schema is the schema of the tables ("mailer"), made by Migrate.
	Schema string
	// Queue names the queue in the schema ("mail"): several queues share
	// the tables, each its own jobs, pauses and settings.
	Queue string
	// Fairness is FairnessNone (the default) or FairnessTenant.
	//
	// Fairness, DedupeWindow, RetainFailed and RetainData are properties
	// of the queue, stored in the queues table by the first OpenSource: a
	// zero field takes the queue's (the default when it holds none), and a
	// set field that differs from the queue's is refused
	// (ErrSettingsMismatch), so that every process on a queue keeps and
	// counts its jobs alike.
	Fairness mailqueue.Fairness
	// DedupeWindow is how long an accepted job is kept: an enqueue under
	// its key is a duplicate meanwhile (a day).
	DedupeWindow time.Duration
	// RetainFailed is how long a failed job is kept (a week).
	RetainFailed time.Duration
	// RetainData says which finished jobs keep their message ("failed").
	RetainData mailqueue.RetainData
	// LeaseDuration, PollInterval and CloseTimeout are the polling
	// driver's (1 minute; 1 second, a safety net as NOTIFY wakes the idle
	// workers; 30 seconds).
	LeaseDuration, PollInterval, CloseTimeout time.Duration
	// PruneInterval is how often a worker prunes the jobs whose retention
	// ended (a minute); PruneBatch the most rows a pruning statement
	// deletes (500), so that pruning never holds many locks at once.
	PruneInterval time.Duration
	PruneBatch    int
	// UseStored opens the queue with the settings it holds (Fairness and
	// the retention), whatever these Options say, and writes nothing: for
	// an operator's tool such as mailq.
	UseStored bool
	// Logger hears what the driver does; slog.Default() when nil.
	Logger *slog.Logger
}

// ErrSettingsMismatch is returned by OpenSource when Options set a
// Fairness, DedupeWindow, RetainFailed or RetainData other than the one
// the queue holds. To change one, update the queue's row of the queues
// table: every process reads the settings when it opens the queue.
var ErrSettingsMismatch = errors.New("postgres: the queue was made with other settings")

// withDefaults returns a copy of the options whose zero fields take their
// defaults; the queue's settings stay zero (they take the stored ones).
func (o Options) withDefaults() Options {
	o.Schema = cmp.Or(o.Schema, DefaultSchema)
	o.Queue = cmp.Or(o.Queue, DefaultQueue)
	o.LeaseDuration = cmp.Or(o.LeaseDuration, polling.DefaultLeaseDuration)
	o.PollInterval = cmp.Or(o.PollInterval, polling.DefaultPollInterval)
	o.PruneInterval = cmp.Or(o.PruneInterval, DefaultPruneInterval)
	o.PruneBatch = cmp.Or(o.PruneBatch, DefaultPruneBatch)
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// validate refuses the options OpenSource cannot honour.
func (o Options) validate() error {
	const pkg = "postgres"
	if o.Pool == nil {
		return &mailqueue.OptionError{Package: pkg, Option: "Options.Pool", Rule: "is required"}
	}
	if len(o.Schema) > 63 {
		return &mailqueue.OptionError{Package: pkg, Option: "Options.Schema", Value: o.Schema, Rule: "is longer than 63 bytes, PostgreSQL's longest identifier"}
	}
	for _, err := range []error{
		mailqueue.CheckOneOf(pkg, "Options.Fairness", o.Fairness, mailqueue.AllFairness...),
		mailqueue.CheckOneOf(pkg, "Options.RetainData", o.RetainData, mailqueue.AllRetainData...),
		mailqueue.CheckNotNegative(pkg, "Options.DedupeWindow", o.DedupeWindow),
		mailqueue.CheckNotNegative(pkg, "Options.RetainFailed", o.RetainFailed),
		mailqueue.CheckNotNegative(pkg, "Options.LeaseDuration", o.LeaseDuration),
		mailqueue.CheckNotNegative(pkg, "Options.PollInterval", o.PollInterval),
		mailqueue.CheckNotNegative(pkg, "Options.CloseTimeout", o.CloseTimeout),
		mailqueue.CheckNotNegative(pkg, "Options.PruneInterval", o.PruneInterval),
		mailqueue.CheckNotNegative(pkg, "Options.PruneBatch", o.PruneBatch),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

// Queue is the PostgreSQL queue: the polling driver over a Source, a
// mailqueue.Driver, a mailqueue.TxDriver (EnqueueTx) and a
// mailqueue.Operator, as its Source is.
type Queue struct {
	*polling.Driver
	src *Source
}

var (
	_ mailqueue.Driver   = (*Queue)(nil)
	_ mailqueue.TxDriver = (*Queue)(nil)
)

// Open checks the schema and the queue's settings and returns the queue
// (see OpenSource). It starts nothing until a worker runs.
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

// QueueName returns the queue's name, schema + "." + queue.
func (q *Queue) QueueName() string { return q.src.QueueName() }

// EnqueueTx stores jobs in the caller's transaction; see Source.EnqueueTx.
func (q *Queue) EnqueueTx(ctx context.Context, tx any, jobs []mailqueue.NewJob) ([]mailqueue.EnqueueResult, error) {
	return q.src.EnqueueTx(ctx, tx, jobs)
}

// Source is a mailqueue.Source, mailqueue.Pauser, mailqueue.Operator,
// polling.Notifier and polling.SettleReserver on PostgreSQL. It is safe for
// concurrent use.
type Source struct {
	pool *pgxpool.Pool
	opts Options
	log  *slog.Logger
	q    queries

	shift      atomic.Int64 // µs added to the database's clock, in tests only
	lastNotify atomic.Int64 // the local clock (ns) of the last enqueue's NOTIFY of jobs due now

	n notifier
	b batcher
}

var (
	_ mailqueue.Source       = (*Source)(nil)
	_ mailqueue.Pauser       = (*Source)(nil)
	_ polling.Notifier       = (*Source)(nil)
	_ polling.SettleReserver = (*Source)(nil)
)

// OpenSource checks that the schema is migrated (ErrNotMigrated), records
// the queue's settings on first use or checks them (ErrSettingsMismatch),
// and returns the Source alone; Open wraps it in the polling driver. It
// returns a *mailqueue.OptionError for an option out of range or unknown.
func OpenSource(ctx context.Context, opts Options) (*Source, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	if err := checkMigrated(ctx, opts.Pool, opts.Schema); err != nil {
		return nil, err
	}
	s := &Source{pool: opts.Pool, opts: opts, log: opts.Logger, q: newQueries(opts.Schema)}
	s.n.src = s
	s.b.src = s
	if err := s.settings(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// settings records the queue's settings the caller set where it holds none
// (unless UseStored), refuses others than the stored, and sets s.opts to
// the queue's.
func (s *Source) settings(ctx context.Context) error {
	o := s.opts
	if !o.UseStored {
		_, err := s.pool.Exec(ctx, s.q.insertQueue, o.Queue,
			string(cmp.Or(o.Fairness, mailqueue.FairnessNone)),
			cmp.Or(o.DedupeWindow, mailqueue.DefaultDedupeWindow).Microseconds(),
			cmp.Or(o.RetainFailed, mailqueue.DefaultRetainFailed).Microseconds(),
			string(cmp.Or(o.RetainData, mailqueue.RetainFailedData)))
		if err != nil {
			return fmt.Errorf("postgres: the queue's settings: %w", err)
		}
	}
	var fair, rd string
	var dedupe, retainf int64
	err := s.pool.QueryRow(ctx, s.q.selectQueue, o.Queue).Scan(&fair, &dedupe, &retainf, &rd)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		// UseStored on a queue never opened: the defaults, nothing written.
		fair, rd = string(mailqueue.FairnessNone), string(mailqueue.RetainFailedData)
		dedupe, retainf = mailqueue.DefaultDedupeWindow.Microseconds(), mailqueue.DefaultRetainFailed.Microseconds()
	case err != nil:
		return fmt.Errorf("postgres: the queue's settings: %w", err)
	}
	held := Options{
		Fairness: mailqueue.Fairness(fair), RetainData: mailqueue.RetainData(rd),
		DedupeWindow: time.Duration(dedupe) * time.Microsecond, RetainFailed: time.Duration(retainf) * time.Microsecond,
	}
	if !held.Fairness.Valid() || !held.RetainData.Valid() || dedupe <= 0 || retainf <= 0 {
		return fmt.Errorf("postgres: queue %s holds settings no driver writes: %+v", s.QueueName(), held)
	}
	if !o.UseStored {
		mismatch := func(name string, held, asked any) error {
			return fmt.Errorf("%w: %s holds %s %v, Options %v", ErrSettingsMismatch, s.QueueName(), name, held, asked)
		}
		switch {
		case o.Fairness != "" && o.Fairness != held.Fairness:
			return mismatch("Fairness", held.Fairness, o.Fairness)
		case o.DedupeWindow != 0 && o.DedupeWindow.Truncate(time.Microsecond) != held.DedupeWindow:
			return mismatch("DedupeWindow", held.DedupeWindow, o.DedupeWindow)
		case o.RetainFailed != 0 && o.RetainFailed.Truncate(time.Microsecond) != held.RetainFailed:
			return mismatch("RetainFailed", held.RetainFailed, o.RetainFailed)
		case o.RetainData != "" && o.RetainData != held.RetainData:
			return mismatch("RetainData", held.RetainData, o.RetainData)
		}
	}
	s.opts.Fairness, s.opts.RetainData = held.Fairness, held.RetainData
	s.opts.DedupeWindow, s.opts.RetainFailed = held.DedupeWindow, held.RetainFailed
	return nil
}

// QueueName returns the queue's name, schema + "." + queue: the name the
// mac and the codec bind (mailqueue.QueueNamer).
func (s *Source) QueueName() string { return s.opts.Schema + "." + s.opts.Queue }

// Options returns the source's options, with the queue's settings as
// stored.
func (s *Source) Options() Options { return s.opts }

// us is the shift of the tests, in µs, the first argument of every query.
func (s *Source) us() int64 { return s.shift.Load() }

// now is the source's view of the database's clock: the local clock, plus
// the shift of the tests.
func (s *Source) now() time.Time {
	return time.Now().Add(time.Duration(s.shift.Load()) * time.Microsecond)
}

func priorityNum(p jobv1.Priority) int16 {
	switch p {
	case jobv1.PriorityHigh:
		return 0
	case jobv1.PriorityLow:
		return 2
	}
	return 1
}

func priorityOf(n int16) jobv1.Priority {
	switch n {
	case 0:
		return jobv1.PriorityHigh
	case 2:
		return jobv1.PriorityLow
	}
	return jobv1.PriorityNormal
}

// version returns the job's "v" when it is a whole number, else 0.
func version(data []byte) int32 {
	var j struct {
		V json.RawMessage `json:"v"`
	}
	if json.Unmarshal(data, &j) != nil {
		return 0
	}
	n, err := strconv.ParseInt(string(j.V), 10, 32)
	if err != nil {
		return 0
	}
	return int32(n)
}

func tstz(t time.Time) pgtype.Timestamptz {
	if t.IsZero() {
		return pgtype.Timestamptz{}
	}
	return pgtype.Timestamptz{Time: t, Valid: true}
}

// querier is what an enqueue runs on: the pool, a pgx.Tx, or a *sql.Tx.
type querier interface {
	// insert runs the insert statement and, when wake is not empty, the
	// NOTIFY, one round trip where it can; it returns the ids stored.
	insert(ctx context.Context, ins string, args []any, wake string, wakeArgs []any) ([]string, error)
	// hashes returns the hashes of the ids stored (in the querier's
	// transaction).
	hashes(ctx context.Context, sql string, args []any) (map[string]string, error)
}

// enqueueArgs returns the arguments of the enqueue statement for the jobs
// (each id once), and those of its NOTIFY.
func (s *Source) enqueueArgs(jobs []mailqueue.NewJob) (ins, wake []any) {
	n := len(jobs)
	ids, hashes, datas, tenants := make([]string, n), make([]string, n), make([][]byte, n), make([]string, n)
	vs, maxes := make([]int32, n), make([]int32, n)
	pris := make([]int16, n)
	runAt, enq := make([]pgtype.Timestamptz, n), make([]pgtype.Timestamptz, n)
	var soonest time.Time
	now := false
	for i, j := range jobs {
		ids[i], hashes[i], datas[i], tenants[i] = j.ID, j.Hash, j.Data, j.TenantID
		vs[i], pris[i] = version(j.Data), priorityNum(j.Priority)
		maxes[i] = int32(cmp.Or(j.MaxAttempts, mailqueue.DefaultMaxAttempts)) //nolint:gosec // at most 100
		runAt[i], enq[i] = tstz(j.RunAt), tstz(j.EnqueuedAt)
		switch {
		case j.RunAt.IsZero():
			now = true
		case soonest.IsZero() || j.RunAt.Before(soonest):
			soonest = j.RunAt
		}
	}
	if now {
		soonest = time.Time{}
	}
	return []any{s.us(), s.opts.Queue, ids, hashes, vs, datas, pris, tenants, maxes, runAt, enq},
		[]any{s.us(), s.channel(), tstz(soonest)}
}

// NotifyWindow is the least time between two NOTIFYs of an enqueue of
// jobs due now, per queue and process; a worker woken by a notification
// reserves once more NotifyWindow later, so that a job whose NOTIFY was
// left out is taken then (see the package's doc).
const NotifyWindow = 2 * time.Millisecond

// notifyNow reports whether an enqueue of jobs due now sends its NOTIFY:
// none was sent in the last NotifyWindow.
func (s *Source) notifyNow() bool {
	now := time.Now().UnixNano()
	last := s.lastNotify.Load()
	if now-last < int64(NotifyWindow) {
		return false
	}
	return s.lastNotify.CompareAndSwap(last, now)
}

// Enqueue stores jobs, all in one statement (one transaction), and wakes
// the workers through NOTIFY at its commit; see mailqueue.Source. A
// duplicate is told by the stored hash; a conflict is another hash under
// the id. A finished job whose retention ended is replaced.
func (s *Source) Enqueue(ctx context.Context, jobs []mailqueue.NewJob) ([]mailqueue.EnqueueResult, error) {
	res, err := s.enqueueOn(ctx, pgxQuerier{s.pool}, jobs)
	if err == nil && s.n.local() {
		s.n.wakeAll()
	}
	return res, err
}

// enqueueOn runs the enqueue statement and its NOTIFY on q; when some ids
// were not stored, their hashes are read after, in the same transaction
// when q is one, telling a duplicate from a conflict. An id given twice in
// jobs is stored once: the later ones are told against the first.
func (s *Source) enqueueOn(ctx context.Context, q querier, jobs []mailqueue.NewJob) ([]mailqueue.EnqueueResult, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	first := make(map[string]int, len(jobs))
	uniq := make([]mailqueue.NewJob, 0, len(jobs))
	for i, j := range jobs {
		if _, ok := first[j.ID]; !ok {
			first[j.ID] = i
			uniq = append(uniq, j)
		}
	}
	ins, wake := s.enqueueArgs(uniq)
	wakeSQL := s.q.wake
	if !wake[2].(pgtype.Timestamptz).Valid && !s.notifyNow() {
		wakeSQL = ""
	}
	stored, err := q.insert(ctx, s.q.enqueue, ins, wakeSQL, wake)
	if err != nil {
		return nil, fmt.Errorf("postgres: enqueue: %w", err)
	}
	res := make([]mailqueue.EnqueueResult, len(jobs))
	done := make(map[string]bool, len(stored))
	for _, id := range stored {
		done[id] = true
	}
	var rest []string
	for _, j := range uniq {
		if !done[j.ID] {
			rest = append(rest, j.ID)
		}
	}
	var held map[string]string
	if len(rest) > 0 {
		// Duplicates and conflicts: a new statement, so that a job of the
		// id committed by another transaction while the insert waited for
		// it is seen (under READ COMMITTED).
		held, err = q.hashes(ctx, s.q.selectHashes, []any{s.opts.Queue, rest})
		if err != nil {
			return nil, fmt.Errorf("postgres: enqueue: %w", err)
		}
	}
	for i, j := range jobs {
		f := first[j.ID]
		r := mailqueue.EnqueueResult{ID: j.ID}
		switch {
		case f != i:
			r.Duplicate, r.Conflict = j.Hash == jobs[f].Hash, j.Hash != jobs[f].Hash
		case done[j.ID]:
		default:
			h, ok := held[j.ID]
			switch {
			case !ok:
				return nil, fmt.Errorf("postgres: enqueue: job %s was stored by a transaction this one cannot see; enqueue it again", j.ID)
			case h == j.Hash:
				r.Duplicate = true
			default:
				r.Conflict = true
			}
		}
		res[i] = r
	}
	return res, nil
}

// batchQuerier is what pgxQuerier runs on: a pool or a pgx.Tx.
type batchQuerier interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// pgxQuerier runs the enqueue on the pool (one implicit transaction) or
// in a pgx.Tx: the insert and its NOTIFY in one pgx.Batch, one round
// trip.
type pgxQuerier struct{ q batchQuerier }

func (p pgxQuerier) insert(ctx context.Context, ins string, args []any, wake string, wakeArgs []any) ([]string, error) {
	b := &pgx.Batch{}
	b.Queue(ins, args...)
	if wake != "" {
		b.Queue(wake, wakeArgs...)
	}
	br := p.q.SendBatch(ctx, b)
	ids, err := scanIDs(br.Query())
	if err == nil && wake != "" {
		_, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return ids, err
}

func (p pgxQuerier) hashes(ctx context.Context, sql string, args []any) (map[string]string, error) {
	rows, err := p.q.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	m := map[string]string{}
	for rows.Next() {
		var id, h string
		if err := rows.Scan(&id, &h); err != nil {
			return nil, err
		}
		m[id] = h
	}
	return m, rows.Err()
}

// scanIDs reads the ids of the enqueue statement's RETURNING.
func scanIDs(rows pgx.Rows, err error) ([]string, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// Reserve leases up to p.Limit due jobs in one statement; see
// mailqueue.Source. A lease's Until is on the local clock: the time before
// the call plus p.LeaseDuration, so that it never ends later than the
// lease the database holds. Its Now is the database's clock.
func (s *Source) Reserve(ctx context.Context, p mailqueue.ReserveParams) ([]*mailqueue.Lease, error) {
	p = s.reserveParams(p)
	before := s.now()
	// With a runner listening, the µs until the next job is due come in
	// the same round trip, for the wake-up timer.
	local := s.n.local()
	b := &pgx.Batch{}
	b.Queue(s.reserveSQL(), s.us(), s.opts.Queue, p.Limit, p.LeaseDuration.Microseconds())
	if local {
		b.Queue(s.q.nextDue, s.us(), s.opts.Queue)
	}
	br := s.pool.SendBatch(ctx, b)
	rows, err := br.Query()
	var leases []*mailqueue.Lease
	if err == nil {
		leases, err = s.scanLeases(rows, before.Add(p.LeaseDuration))
	}
	var next pgtype.Int8
	if err == nil && local {
		err = br.QueryRow().Scan(&next)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: reserve: %w", err)
	}
	if s.opts.Fairness == mailqueue.FairnessTenant {
		s.takeTurns(ctx, leases)
	}
	if next.Valid && len(leases) < p.Limit {
		s.n.wakeIn(time.Duration(next.Int64) * time.Microsecond)
	}
	return leases, nil
}

func (s *Source) reserveParams(p mailqueue.ReserveParams) mailqueue.ReserveParams {
	p.Limit = max(p.Limit, 1)
	if p.LeaseDuration <= 0 {
		p.LeaseDuration = s.opts.LeaseDuration
	}
	return p
}

func (s *Source) reserveSQL() string {
	if s.opts.Fairness == mailqueue.FairnessTenant {
		return s.q.reserveFair
	}
	return s.q.reserve
}

// leaseRow is a lease as the reserve returns it, with its order.
type leaseRow struct {
	l        *mailqueue.Lease
	pri      int16
	rn, turn int64
	due      time.Time
	seq      int64
}

// scanLeases reads the leases of a reserve, in the order of the reserve:
// by priority, then (with fairness) the tenants in turn, then due time.
func (s *Source) scanLeases(rows pgx.Rows, until time.Time) ([]*mailqueue.Lease, error) {
	defer rows.Close()
	var out []leaseRow
	for rows.Next() {
		var r leaseRow
		var l mailqueue.Lease
		var att, maxAtt, redel int32
		if err := rows.Scan(&l.ID, &l.Token, &l.Data, &att, &maxAtt, &redel, &r.pri, &l.TenantID, &l.EnqueuedAt, &l.Now,
			&r.due, &r.seq, &r.rn, &r.turn); err != nil {
			return nil, err
		}
		l.Attempt, l.MaxAttempts, l.Redeliveries = int(att)+1, int(maxAtt), int(redel)
		l.Priority, l.Until = priorityOf(r.pri), until
		r.l = &l
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b leaseRow) int {
		return cmp.Or(cmp.Compare(a.pri, b.pri), cmp.Compare(a.rn, b.rn), cmp.Compare(a.turn, b.turn), a.due.Compare(b.due), cmp.Compare(a.seq, b.seq))
	})
	leases := make([]*mailqueue.Lease, len(out))
	for i, r := range out {
		leases[i] = r.l
	}
	return leases, nil
}

// takeTurns moves the tenants whose jobs of a shared lane (normal, low)
// were leased to the end of their lane's turns, the last served last.
func (s *Source) takeTurns(ctx context.Context, leases []*mailqueue.Lease) {
	type lane struct {
		p int16
		t string
	}
	var order []lane
	for i := len(leases) - 1; i >= 0; i-- {
		l := lane{priorityNum(leases[i].Priority), leases[i].TenantID}
		if l.p != 0 && !slices.Contains(order, l) {
			order = append(order, l)
		}
	}
	if len(order) == 0 {
		return
	}
	slices.Reverse(order)
	pris, tenants := make([]int16, len(order)), make([]string, len(order))
	for i, l := range order {
		pris[i], tenants[i] = l.p, l.t
	}
	if _, err := s.pool.Exec(ctx, s.q.takeTurns, s.opts.Queue, pris, tenants); err != nil {
		// The turns are a preference: a tenant served again first is no
		// loss of a job.
		s.log.Warn(string(codes.QueueReserveFailed), "reason", "the tenants' turns were not moved", "err", err)
	}
}

// settleOp returns the settle of the outcome, asking limit leases of
// lease each after it.
func (s *Source) settleOp(ctx context.Context, id, token string, out mailqueue.Outcome, limit int, lease time.Duration) (*settleOp, error) {
	o := &settleOp{ctx: ctx, what: out.Action.String(), id: id, token: token, keepData: true, wake: -1, limit: limit, lease: lease, before: s.now()}
	switch out.Action {
	case mailqueue.Ack:
		o.state, o.spent, o.keep = stAccepted, 1, s.opts.DedupeWindow
		o.keepData = s.opts.RetainData == mailqueue.RetainAllData
		out.Code, out.Reason = "", ""
	case mailqueue.Retry:
		o.state, o.spent, o.delay, o.wake = stQueued, 1, max(out.Delay, 0), max(out.Delay, 0)
	case mailqueue.Release:
		o.state, o.delay, o.wake = stQueued, max(out.Delay, 0), max(out.Delay, 0)
	case mailqueue.Fail:
		o.state, o.spent, o.keep = stFailed, 1, s.opts.RetainFailed
		if out.State == codes.StateDeliveryUnknown {
			o.state = stDeliveryUnknown
		}
		o.keepData = s.opts.RetainData != mailqueue.RetainNoData
	default:
		return nil, fmt.Errorf("postgres: settle: no action %v", out.Action)
	}
	// A value PostgreSQL cannot store in text (a NUL, bytes not UTF-8)
	// would fail the settle at every try.
	o.code, o.reason = pgText(string(out.Code)), pgText(out.Reason)
	return o, nil
}

// pgText returns s as PostgreSQL's text stores it: valid UTF-8, no NUL.
func pgText(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
}

// settle runs a settle, batched with those of concurrent runs (batch.go):
// false is a token not current.
func (s *Source) settle(ctx context.Context, id, token string, out mailqueue.Outcome) (bool, error) {
	o, err := s.settleOp(ctx, id, token, out, 0, 0)
	if err != nil {
		return false, err
	}
	ok, _, err := s.b.run(o)
	return ok, err
}

// SettleAndReserve settles a run and leases up to r.Limit more jobs,
// batched with the settles of concurrent runs (batch.go): one round trip
// and one implicit transaction for the batch (when it fails, nothing of it
// applied), one settle statement for its settles, each fenced by its own
// token, and one reserve of the leases they ask for, shared out among them;
// see polling.SettleReserver.
func (s *Source) SettleAndReserve(ctx context.Context, p polling.SettleParams, r mailqueue.ReserveParams) (bool, []*mailqueue.Lease, error) {
	limit := max(r.Limit, 0)
	if r.LeaseDuration <= 0 {
		r.LeaseDuration = s.opts.LeaseDuration
	}
	o, err := s.settleOp(ctx, p.ID, p.Token, p.Outcome, limit, r.LeaseDuration)
	if err != nil {
		return false, nil, err
	}
	return s.b.run(o)
}

// Extend moves the end of a lease to now + p.Duration, by the database's
// clock; see mailqueue.Source.
func (s *Source) Extend(ctx context.Context, p mailqueue.ExtendParams) (bool, error) {
	d := p.Duration
	if d <= 0 {
		d = s.opts.LeaseDuration
	}
	ct, err := s.pool.Exec(ctx, s.q.extend, s.us(), s.opts.Queue, p.ID, p.Token, d.Microseconds())
	if err != nil {
		return false, fmt.Errorf("postgres: extend: %w", err)
	}
	return ct.RowsAffected() == 1, nil
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

// Pause pauses the queue, or a tenant's jobs, for p.For by the database's
// clock; a longer pause in place is kept. See mailqueue.Pauser.
func (s *Source) Pause(ctx context.Context, p mailqueue.Pause) error {
	if err := mailqueue.CheckNotNegative("postgres", "Pause.For", p.For); err != nil {
		return err
	}
	tenant := ""
	if p.Tenant {
		tenant = p.TenantID
	}
	if _, err := s.pool.Exec(ctx, s.q.pause, s.us(), s.opts.Queue, p.Tenant, tenant, p.For.Microseconds()); err != nil {
		return fmt.Errorf("postgres: pause: %w", err)
	}
	return nil
}

// Resume ends a pause of the queue, or of a tenant, before its time, and
// wakes the workers of every process (NOTIFY). See mailqueue.Pauser.
func (s *Source) Resume(ctx context.Context, p mailqueue.ResumeParams) error {
	tenant := ""
	if p.Tenant {
		tenant = p.TenantID
	}
	if _, err := s.pool.Exec(ctx, s.q.resume, s.opts.Queue, p.Tenant, tenant, s.channel()); err != nil {
		return fmt.Errorf("postgres: resume: %w", err)
	}
	return nil
}
