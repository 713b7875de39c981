package main

// The PostgreSQL side of the bench (-store postgres): the kit's PostgreSQL
// driver (drivers/postgres, through the polling driver) and River
// (github.com/riverqueue/river with riverpgxv5) on the same server in one
// run (BENCHMARKS.md, "PostgreSQL driver vs River").
//
//	cd bench && go run . -store postgres -rounds 3
//
// Each side works in a database of its own, made at the start and dropped
// at the end (mailerbench_<run>_mailer, with the kit's schema "mailer"
// made by postgres.MigrateSchema; mailerbench_<run>_river, with River's
// tables made by rivermigrate), so that pg_stat_database tells each side's
// server time apart. Each workload starts from empty tables (TRUNCATE) and
// a pool of its own, closed at its end, so that its backends' statistics
// are flushed before they are read.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/alexify/mailer/drivers/polling"
	"github.com/alexify/mailer/drivers/postgres"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/mailqueue"
)

var (
	store       = flag.String("store", "redis", "redis: the Redis driver vs asynq; postgres: the PostgreSQL driver vs River")
	pgURL       = flag.String("postgres", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "the PostgreSQL server (-store postgres); the bench makes a database for each side there and drops it at the end")
	pgConns     = flag.Int("pg-conns", 20, "the most connections of each side's pool (-store postgres)")
	pgRate      = flag.Int("latency-rate", 200, "jobs a second of the commit-to-start latency workload (-store postgres)")
	riverUnique = flag.Bool("river-unique", true, "River's jobs are unique by the job's id (UniqueOpts ByArgs on the id), as the kit's are by theirs (-store postgres)")
	verbose     = flag.Bool("statements", true, "print, for a round of each workload, each kind of statement sent: how many a job and the client's wait for its answer (-store postgres)")
	txJobs      = flag.Int("tx-jobs", 2000, "the jobs of the one-at-a-time enqueue workloads, each a commit (-store postgres)")
	pgPerStmt   = flag.Int("statement-jobs", 2000, "jobs of the kit's per-statement server time measure (-store postgres)")
)

// cleanups run before the bench exits, also on a fatal error, so that its
// databases are dropped.
var (
	cleanups  []func()
	cleanOnce sync.Once
)

func die(v ...any) {
	cleanOnce.Do(func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	})
	log.Fatal(v...)
}

// pgBench is the PostgreSQL bench: the admin pool (the server's own
// database) and the two databases.
type pgBench struct {
	admin     *pgxpool.Pool
	run       string
	kitDB     string
	riverDB   string
	riverMade bool
}

const kitSchema = "mailer"

func pgMain() {
	ctx := context.Background()
	admin, err := pgxpool.New(ctx, *pgURL)
	if err != nil {
		log.Fatalf("bench: PostgreSQL at %s: %v", *pgURL, err)
	}
	defer admin.Close()
	var version string
	if err := admin.QueryRow(ctx, "SHOW server_version").Scan(&version); err != nil {
		log.Fatalf("bench: PostgreSQL at %s: %v", *pgURL, err)
	}
	var syncCommit, sharedBuffers string
	_ = admin.QueryRow(ctx, "SHOW synchronous_commit").Scan(&syncCommit)
	_ = admin.QueryRow(ctx, "SHOW shared_buffers").Scan(&sharedBuffers)
	fmt.Printf("machine: %d CPUs (%s), GOMAXPROCS %d, %s, %s memory, load %s; PostgreSQL %s (synchronous_commit %s, shared_buffers %s); River %s\n\n",
		runtime.NumCPU(), cpuModel(), runtime.GOMAXPROCS(0), runtime.Version(), memTotal(), loadAvg(), version, syncCommit, sharedBuffers, riverVersion)

	b := &pgBench{admin: admin, run: randomHex()}
	b.kitDB, b.riverDB = "mailerbench_"+b.run+"_mailer", "mailerbench_"+b.run+"_river"
	cleanups = append(cleanups, b.dropDatabases, admin.Close)
	defer b.dropDatabases()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM, syscall.SIGPIPE)
	go func() { die("bench: ", <-sig) }()
	b.makeDatabases()

	fmt.Printf("%-48s %14s %14s %8s  %s\n", "workload", "mailer pg", "river", "ratio", "target")
	type workload struct {
		name, unit, target string
		goal               float64 // the ratio the target asks, 0 for none
		lowerWins          bool
		ours, theirs       func() sample
	}
	lat := map[string][]sample{} // the latency rounds, read by p50 and p99
	latency := func(side string, f func() sample) func() sample {
		return func() sample {
			s := f()
			lat[side] = append(lat[side], s)
			return s
		}
	}
	ws := []workload{
		{"enqueue in its own tx, 1 goroutine", "jobs/s", ">= 0.9x", 0.9, false,
			func() sample { return b.kitEnqueueTx(1, false) }, func() sample { return b.riverEnqueueTx(1) }},
		{"enqueue in its own tx, 8 goroutines", "jobs/s", ">= 0.9x", 0.9, false,
			func() sample { return b.kitEnqueueTx(8, false) }, func() sample { return b.riverEnqueueTx(8) }},
		{"  the same, the driver alone (prepared jobs)", "jobs/s", "", 0, false,
			func() sample { return b.kitEnqueueTx(8, true) }, nil},
		{"enqueue, batches of 100, 1 goroutine", "jobs/s", ">= 1x", 1, false,
			func() sample { return b.kitEnqueueBatch(100, false) }, func() sample { return b.riverInsertMany(100) }},
		{"  the same, the driver alone (prepared jobs)", "jobs/s", "", 0, false,
			func() sample { return b.kitEnqueueBatch(100, true) }, nil},
		{"end to end, concurrency 10", "jobs/s", ">= 1.5x", 1.5, false,
			func() sample { return b.kitEndToEnd(10) }, func() sample { return b.riverEndToEnd(10) }},
		{"end to end, concurrency 50", "jobs/s", ">= 1.5x", 1.5, false,
			func() sample { return b.kitEndToEnd(50) }, func() sample { return b.riverEndToEnd(50) }},
		{fmt.Sprintf("latency commit-to-start at %d/s, p50", *pgRate), "ms", "<= River", 1, true,
			latency("ours", b.kitLatency), latency("river", b.riverLatency)},
	}
	type result struct {
		name     string
		o, r     []sample
		withPeer bool
	}
	var results []result
	for _, w := range ws {
		if *only != "" && !strings.Contains(w.name, *only) {
			continue
		}
		var os, rs []sample
		for range max(*rounds, 1) {
			os = append(os, w.ours())
			if w.theirs != nil {
				rs = append(rs, w.theirs())
			}
		}
		results = append(results, result{w.name, os, rs, w.theirs != nil})
		printRow := func(name string, o, r float64, lowerWins bool, target string, goal float64) {
			if r == 0 {
				fmt.Printf("%-48s %9.0f %-4s %14s\n", name, o, w.unit, "")
				return
			}
			ratio := o / r
			if lowerWins {
				ratio = r / o
			}
			verdict := "held"
			if goal == 0 {
				verdict = ""
			} else if ratio < goal {
				verdict = "MISSED"
			}
			if lowerWins {
				fmt.Printf("%-48s %9.2f %-4s %9.2f %-4s %7.2fx  %s %s\n", name, o, w.unit, r, w.unit, ratio, target, verdict)
				return
			}
			fmt.Printf("%-48s %9.0f %-4s %9.0f %-4s %7.2fx  %s %s\n", name, o, w.unit, r, w.unit, ratio, target, verdict)
		}
		if w.lowerWins {
			printRow(w.name, medianOf(os, func(s sample) float64 { return s.p50 }), medianOf(rs, func(s sample) float64 { return s.p50 }), true, w.target, w.goal)
			printRow(strings.Replace(w.name, "p50", "p99", 1), medianOf(os, func(s sample) float64 { return s.p99 }), medianOf(rs, func(s sample) float64 { return s.p99 }), true, "", 0)
			continue
		}
		printRow(w.name, medianOf(os, func(s sample) float64 { return s.v }), medianOf(rs, func(s sample) float64 { return s.v }), false, w.target, w.goal)
	}
	fmt.Println("\nratio: how many times better the kit's driver is (throughput ours/River; latency River/ours)")
	if *rounds > 1 {
		fmt.Printf("each figure is the median of %d rounds, the driver and River in turn\n", *rounds)
	}
	fmt.Println("\nwhere the time goes, a round's median: the bench process's CPU s; the server's backends' CPU s (/proc);")
	fmt.Println("server time a job (pg_stat_database.active_time of the side's database: statements and commits, µs);")
	fmt.Println("round trips a job (statements, batches and prepares the pool sent, by a pgx tracer); transactions a job")
	for _, r := range results {
		fmt.Printf("  %s\n", r.name)
		fmt.Printf("    %-10s %s\n", "mailer pg", summarize(r.o))
		if *verbose {
			fmt.Print(r.o[len(r.o)/2].use.statements)
		}
		if r.withPeer {
			fmt.Printf("    %-10s %s\n", "river", summarize(r.r))
			if *verbose {
				fmt.Print(r.r[len(r.r)/2].use.statements)
			}
		}
	}
	if *only == "" || strings.Contains("statements", *only) {
		b.kitStatements()
	}
}

var riverVersion = "v0.51.2"

// sample is one round of a workload: its figure (or percentiles) and
// what it cost.
type sample struct {
	v, p50, p99 float64
	jobs        int
	use         pgUse
}

// pgUse is what a workload cost: CPU of the bench process and of the
// side's backends, the server's active time, round trips, transactions.
type pgUse struct {
	proc, server  float64 // CPU s
	activeMS      float64
	trips, xacts  int64
	queries, bats int64
	statements    string // by kind, of the round
}

func summarize(ss []sample) string {
	if len(ss) == 0 {
		return ""
	}
	per := func(f func(sample) float64) float64 {
		return medianOf(ss, func(s sample) float64 { return f(s) / float64(max(s.jobs, 1)) })
	}
	return fmt.Sprintf("CPU process %.2f s, server %.2f s; server %.1f µs/job; %.2f round trips/job (%.2f statements, %.3f batches); %.3f transactions/job",
		medianOf(ss, func(s sample) float64 { return s.use.proc }), medianOf(ss, func(s sample) float64 { return s.use.server }),
		per(func(s sample) float64 { return s.use.activeMS * 1000 }), per(func(s sample) float64 { return float64(s.use.trips) }),
		per(func(s sample) float64 { return float64(s.use.queries) }), per(func(s sample) float64 { return float64(s.use.bats) }),
		per(func(s sample) float64 { return float64(s.use.xacts) }))
}

func medianOf(ss []sample, f func(sample) float64) float64 {
	xs := make([]float64, len(ss))
	for i, s := range ss {
		xs[i] = f(s)
	}
	return median(xs)
}

func memTotal() string {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return "?"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "MemTotal:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return fmt.Sprintf("%.0f GiB", kb/(1<<20))
		}
	}
	return "?"
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// ---- the databases ----

func (b *pgBench) makeDatabases() {
	ctx := context.Background()
	for _, db := range []string{b.kitDB, b.riverDB} {
		if _, err := b.admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{db}.Sanitize()); err != nil {
			die("bench: ", err)
		}
	}
	b.riverMade = true
	kit := b.pool(b.kitDB, nil)
	if err := postgres.MigrateSchema(ctx, kit, kitSchema); err != nil {
		die("bench: the kit's migrations: ", err)
	}
	kit.Close()
	rp := b.pool(b.riverDB, nil)
	m, err := rivermigrate.New(riverpgxv5.New(rp), nil)
	if err != nil {
		die("bench: River's migrations: ", err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		die("bench: River's migrations: ", err)
	}
	rp.Close()
}

func (b *pgBench) dropDatabases() {
	if !b.riverMade {
		return
	}
	b.riverMade = false
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, db := range []string{b.kitDB, b.riverDB} {
		if _, err := b.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{db}.Sanitize()+" WITH (FORCE)"); err != nil {
			log.Printf("bench: dropping database %s: %v", db, err)
		}
	}
}

// pool opens a pool on db, counting its round trips in rt when set.
func (b *pgBench) pool(db string, rt *tripCounter) *pgxpool.Pool {
	cfg, err := pgxpool.ParseConfig(*pgURL)
	if err != nil {
		die("bench: ", err)
	}
	cfg.ConnConfig.Database = db
	cfg.MaxConns = int32(max(*pgConns, 4)) //nolint:gosec // a flag of a few dozen
	if rt != nil {
		cfg.ConnConfig.Tracer = rt
	}
	p, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		die("bench: ", err)
	}
	return p
}

// truncate empties the side's job tables, so that each workload starts
// from the same place.
func (b *pgBench) truncate(db string) {
	p := b.pool(db, nil)
	defer p.Close()
	q := "TRUNCATE river_job"
	if db == b.kitDB {
		q = "TRUNCATE " + kitSchema + ".jobs, " + kitSchema + ".turns, " + kitSchema + ".pauses"
	}
	if _, err := p.Exec(context.Background(), q); err != nil {
		die("bench: ", err)
	}
}

// tripCounter counts what a pool sends: each statement, batch, copy and
// prepare is one round trip. It keeps, by kind of statement, how many went
// and the time the client waited for their answers.
type tripCounter struct {
	queries, batches, copies, prepares atomic.Int64

	mu    sync.Mutex
	kinds map[string]*kindUse
}

type kindUse struct {
	n    int64
	wait time.Duration
}

type traceStart struct{}

type traceBatch struct{ kinds []string }

type traceBatchKey struct{}

func (c *tripCounter) note(kind string, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.kinds == nil {
		c.kinds = map[string]*kindUse{}
	}
	k := c.kinds[kind]
	if k == nil {
		k = &kindUse{}
		c.kinds[kind] = k
	}
	k.n++
	k.wait += d
}

func (c *tripCounter) reset() {
	c.queries.Store(0)
	c.batches.Store(0)
	c.copies.Store(0)
	c.prepares.Store(0)
	c.mu.Lock()
	c.kinds = nil
	c.mu.Unlock()
}

// statementKind names a statement by its first words, after the clock
// CTE every statement of the kit's driver begins with.
func statementKind(sql string) string {
	if i := strings.Index(sql, "AS now)"); i >= 0 && strings.HasPrefix(sql, "WITH clk") {
		sql = strings.TrimLeft(sql[i+len("AS now)"):], ", \n\t")
	}
	sql = strings.Join(strings.Fields(sql), " ")
	if len(sql) > 56 {
		sql = sql[:56]
	}
	return sql
}

type queryStart struct {
	at   time.Time
	kind string
}

func (c *tripCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.queries.Add(1)
	return context.WithValue(ctx, traceStart{}, queryStart{time.Now(), statementKind(d.SQL)})
}

func (c *tripCounter) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	if s, ok := ctx.Value(traceStart{}).(queryStart); ok {
		c.note(s.kind, time.Since(s.at))
	}
}

func (c *tripCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.batches.Add(1)
	return context.WithValue(context.WithValue(ctx, traceStart{}, queryStart{at: time.Now()}), traceBatchKey{}, &traceBatch{})
}

func (c *tripCounter) TraceBatchQuery(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	if b, ok := ctx.Value(traceBatchKey{}).(*traceBatch); ok {
		b.kinds = append(b.kinds, statementKind(d.SQL))
	}
}

func (c *tripCounter) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchEndData) {
	s, ok1 := ctx.Value(traceStart{}).(queryStart)
	b, ok2 := ctx.Value(traceBatchKey{}).(*traceBatch)
	if ok1 && ok2 {
		c.note("batch["+strings.Join(b.kinds, " + ")+"]", time.Since(s.at))
	}
}

func (c *tripCounter) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceCopyFromStartData) context.Context {
	c.copies.Add(1)
	return ctx
}
func (c *tripCounter) TraceCopyFromEnd(context.Context, *pgx.Conn, pgx.TraceCopyFromEndData) {}
func (c *tripCounter) TracePrepareStart(ctx context.Context, _ *pgx.Conn, _ pgx.TracePrepareStartData) context.Context {
	c.prepares.Add(1)
	return ctx
}
func (c *tripCounter) TracePrepareEnd(context.Context, *pgx.Conn, pgx.TracePrepareEndData) {}

// statements returns the kinds of statement sent, the most sent first:
// how many a job, and the client's mean wait for an answer.
func (c *tripCounter) statements(jobs int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	type kv struct {
		k string
		u kindUse
	}
	var all []kv
	for k, u := range c.kinds {
		all = append(all, kv{k, *u})
	}
	slices.SortFunc(all, func(a, b kv) int { return int(b.u.n - a.u.n) })
	var sb strings.Builder
	for _, e := range all {
		fmt.Fprintf(&sb, "      %6.3f a job, %6.2f ms each: %s\n", float64(e.u.n)/float64(max(jobs, 1)),
			float64(e.u.wait.Microseconds())/1000/float64(e.u.n), e.k)
	}
	return sb.String()
}

// dbStats is what pg_stat_database tells of a database.
type dbStats struct {
	activeMS float64
	xacts    int64
}

func (b *pgBench) dbStats(db string) dbStats {
	ctx := context.Background()
	// A backend flushes its statistics when it exits: wait for the
	// workload's to be gone.
	for range 200 {
		var n int
		if err := b.admin.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE datname = $1", db).Scan(&n); err != nil {
			die("bench: ", err)
		}
		if n == 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	var s dbStats
	err := pgx.BeginFunc(ctx, b.admin, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_stat_clear_snapshot()"); err != nil {
			return err
		}
		return tx.QueryRow(ctx, "SELECT coalesce(active_time, 0), xact_commit + xact_rollback FROM pg_stat_database WHERE datname = $1", db).Scan(&s.activeMS, &s.xacts)
	})
	if err != nil {
		die("bench: ", err)
	}
	return s
}

// backendCPU is the CPU s the server's backends on db have taken so far
// (/proc/PID/stat, user and system).
func (b *pgBench) backendCPU(db string) float64 {
	rows, err := b.admin.Query(context.Background(), "SELECT pid FROM pg_stat_activity WHERE datname = $1", db)
	if err != nil {
		die("bench: ", err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		die("bench: ", err)
	}
	var total float64
	for _, pid := range pids {
		total += procStatCPU(int(pid))
	}
	return total
}

func procStatCPU(pid int) float64 {
	bs, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(bs)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // USER_HZ
}

// side is one workload's run on one database: its pool, counted, and
// what it cost once ended.
type side struct {
	b     *pgBench
	db    string
	pool  *pgxpool.Pool
	rt    *tripCounter
	st0   dbStats
	proc0 float64
	cpu   float64
	jobs  int // of the workload, for the statements a job
}

func (b *pgBench) begin(db string) *side {
	b.truncate(db)
	s := &side{b: b, db: db, rt: &tripCounter{}}
	s.st0 = b.dbStats(db)
	s.pool = b.pool(db, s.rt)
	s.proc0 = procCPU()
	return s
}

// measured ends the measure: the backends' CPU is read while they live.
func (s *side) measured() { s.cpu = s.b.backendCPU(s.db) }

// end closes the pool and returns what the workload cost.
func (s *side) end(jobs int) pgUse {
	s.jobs = jobs
	if s.cpu == 0 {
		s.measured()
	}
	proc := procCPU() - s.proc0
	trips := s.rt.queries.Load() + s.rt.batches.Load() + s.rt.copies.Load() + s.rt.prepares.Load()
	u := pgUse{proc: proc, server: s.cpu, trips: trips, queries: s.rt.queries.Load(), bats: s.rt.batches.Load(), statements: s.rt.statements(s.jobs)}
	s.pool.Close()
	st := s.b.dbStats(s.db)
	u.activeMS, u.xacts = st.activeMS-s.st0.activeMS, st.xacts-s.st0.xacts
	return u
}

var pgRound atomic.Int64

func (b *pgBench) newRound() string {
	return fmt.Sprintf("bench-%s-p%d", b.run, pgRound.Add(1))
}

// parallel runs f(i) for i in [0, n) from g goroutines, in steps of
// batch, and returns the time it took.
func parallel(g, n, batch int, f func(i, j int)) time.Duration {
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range g {
		wg.Go(func() {
			for {
				i := int(next.Add(int64(batch))) - batch
				if i >= n {
					return
				}
				f(i, min(i+batch, n))
			}
		})
	}
	wg.Wait()
	return time.Since(start)
}

// ---- the kit's driver ----

func (b *pgBench) kitQueue(s *side, pollEvery time.Duration) (*postgres.Queue, *mailqueue.Queue) {
	q, err := postgres.Open(context.Background(), postgres.Options{
		Pool: s.pool, Schema: kitSchema, Queue: "mail", Logger: quiet, PollInterval: pollEvery,
	})
	if err != nil {
		die("bench: ", err)
	}
	mq, err := mailqueue.New(mailqueue.Config{Driver: q, Logger: quiet})
	if err != nil {
		die("bench: ", err)
	}
	return q, mq
}

// kitEnqueueTx enqueues jobs one at a time, each in a transaction of its
// own (begin, EnqueueTx, commit), through the queue (checks, ids, hash,
// then the driver) or, with prepared, the driver alone.
func (b *pgBench) kitEnqueueTx(goroutines int, prepared bool) sample {
	n := *txJobs
	round := b.newRound()
	var js []*jobv1.Job
	var ps []mailqueue.NewJob
	if prepared {
		ps = prepareJobs(round, n)
	} else {
		js = make([]*jobv1.Job, n)
		for i := range js {
			js[i] = contentJob(round, i)
		}
	}
	s := b.begin(b.kitDB)
	q, mq := b.kitQueue(s, 0)
	ctx := context.Background()
	el := parallel(goroutines, n, 1, func(i, _ int) {
		tx, err := s.pool.Begin(ctx)
		if err != nil {
			die("bench: ", err)
		}
		if prepared {
			_, err = q.Source().EnqueueTx(ctx, tx, ps[i:i+1])
		} else {
			_, err = mq.EnqueueTx(ctx, tx, js[i])
		}
		if err != nil {
			die("bench: the kit's EnqueueTx: ", err)
		}
		if err := tx.Commit(ctx); err != nil {
			die("bench: ", err)
		}
	})
	return sample{v: float64(n) / el.Seconds(), jobs: n, use: s.end(n)}
}

// kitEnqueueBatch enqueues batches of size jobs, each a call of its own
// (EnqueueMany through the queue, or Source.Enqueue with prepared).
func (b *pgBench) kitEnqueueBatch(size int, prepared bool) sample {
	n := *jobs
	round := b.newRound()
	var js []*jobv1.Job
	var ps []mailqueue.NewJob
	if prepared {
		ps = prepareJobs(round, n)
	} else {
		js = make([]*jobv1.Job, n)
		for i := range js {
			js[i] = contentJob(round, i)
		}
	}
	s := b.begin(b.kitDB)
	q, mq := b.kitQueue(s, 0)
	ctx := context.Background()
	el := parallel(1, n, size, func(i, j int) {
		var err error
		if prepared {
			_, err = q.Source().Enqueue(ctx, ps[i:j])
		} else {
			_, err = mq.EnqueueMany(ctx, js[i:j])
		}
		if err != nil {
			die("bench: the kit's enqueue: ", err)
		}
	})
	return sample{v: float64(n) / el.Seconds(), jobs: n, use: s.end(n)}
}

func (b *pgBench) kitEndToEnd(concurrency int) sample {
	ps := prepareJobs(b.newRound(), *jobs)
	s := b.begin(b.kitDB)
	q, mq := b.kitQueue(s, 0)
	ctx := context.Background()
	for i := 0; i < len(ps); i += 500 {
		if _, err := q.Source().Enqueue(ctx, ps[i:min(i+500, len(ps))]); err != nil {
			die("bench: ", err)
		}
	}
	// The enqueue is not the workload: its cost is left out.
	s.st0 = b.dbStatsLive(s)
	tr := &nullTransport{want: int64(len(ps)), done: make(chan struct{})}
	w, err := mq.NewWorker(mailqueue.WorkerConfig{Transport: tr, Concurrency: concurrency})
	if err != nil {
		die("bench: ", err)
	}
	start := time.Now()
	if err := w.Start(); err != nil {
		die("bench: ", err)
	}
	<-tr.done
	el := time.Since(start)
	s.measured()
	_ = w.Close(ctx)
	if st, err := q.Stats(ctx); err != nil || st.Accepted != int64(len(ps)) {
		die(fmt.Sprintf("bench: the kit's driver: %d accepted of %d (%v)", st.Accepted, len(ps), err))
	}
	return sample{v: float64(len(ps)) / el.Seconds(), jobs: len(ps), use: s.end(len(ps))}
}

// dbStatsLive reads the statistics of a side whose pool is open: its
// connections are closed first (so that they flush), and the counters
// started again.
func (b *pgBench) dbStatsLive(s *side) dbStats {
	s.pool.Reset()
	st := b.dbStats(s.db)
	s.rt.reset()
	s.proc0 = procCPU()
	return st
}

// kitLatency commits a job a time at -latency-rate jobs a second, each in
// its own transaction (begin, EnqueueTx, commit), to a worker of
// concurrency 10 woken by NOTIFY, and measures the time from the commit
// returning to the handler's start.
func (b *pgBench) kitLatency() sample {
	n := *samples
	round := b.newRound()
	ps := prepareJobs(round, n) // the ids the queue makes of the same keys
	js := make([]*jobv1.Job, n)
	ids := make(map[string]int, n)
	for i := range js {
		js[i] = contentJob(round, i)
		ids[ps[i].ID] = i
	}
	s := b.begin(b.kitDB)
	q, mq := b.kitQueue(s, 0)
	lt := newLatencies(n)
	h := handlerOnly(&nullTransport{want: -1})
	r, err := q.Work(mailqueue.HandlerFunc(func(ctx context.Context, l *mailqueue.Lease) mailqueue.Outcome {
		lt.started(ids[l.ID])
		return h.Handle(ctx, l)
	}), mailqueue.WorkOptions{Concurrency: 10})
	if err != nil {
		die("bench: ", err)
	}
	time.Sleep(300 * time.Millisecond) // LISTEN is in place
	ctx := context.Background()
	lt.produce(func(i int) {
		tx, err := s.pool.Begin(ctx)
		if err != nil {
			die("bench: ", err)
		}
		if _, err := mq.EnqueueTx(ctx, tx, js[i]); err != nil {
			die("bench: the kit's EnqueueTx: ", err)
		}
		if err := tx.Commit(ctx); err != nil {
			die("bench: ", err)
		}
	})
	s.measured()
	_ = r.Close(ctx)
	p50, p99 := lt.percentiles()
	return sample{p50: p50, p99: p99, jobs: n, use: s.end(n)}
}

// latencies are the commit and start times of a latency workload's jobs.
type latencies struct {
	commit, start []atomic.Int64 // UnixNano
	left          atomic.Int64
	done          chan struct{}
}

func newLatencies(n int) *latencies {
	l := &latencies{commit: make([]atomic.Int64, n), start: make([]atomic.Int64, n), done: make(chan struct{})}
	l.left.Store(int64(n))
	return l
}

// started notes the start of job i's first run.
func (l *latencies) started(i int) {
	if l.start[i].CompareAndSwap(0, time.Now().UnixNano()) && l.left.Add(-1) == 0 {
		close(l.done)
	}
}

// produce calls commit(i) for every job at -latency-rate a second (never
// two at once: a job late starts the next at once) and notes when each
// returned, then waits for every job to start.
func (l *latencies) produce(commit func(i int)) {
	every := time.Second / time.Duration(max(*pgRate, 1))
	t0 := time.Now()
	for i := range l.commit {
		if d := time.Until(t0.Add(time.Duration(i) * every)); d > 0 {
			time.Sleep(d)
		}
		commit(i)
		l.commit[i].Store(time.Now().UnixNano())
	}
	select {
	case <-l.done:
	case <-time.After(30 * time.Second):
		die(fmt.Sprintf("bench: %d jobs of the latency workload never started", l.left.Load()))
	}
}

// percentiles returns the p50 and p99 of commit-to-start, in ms (a start
// before the commit returned counts as 0).
func (l *latencies) percentiles() (float64, float64) {
	ds := make([]time.Duration, len(l.commit))
	for i := range l.commit {
		ds[i] = max(time.Duration(l.start[i].Load()-l.commit[i].Load()), 0)
	}
	return pctF(ds, 0.50), pctF(ds, 0.99)
}

// pctF is pct with µs resolution kept.
func pctF(ds []time.Duration, p float64) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(p*float64(len(s))+0.5) - 1
	i = max(0, min(i, len(s)-1))
	return float64(s[i].Nanoseconds()) / 1e6
}

// kitStatements measures the server time of each hot statement of the
// driver alone, one job a call: enqueue (its own transaction), reserve,
// ack, and settle-and-reserve (the batch a busy worker sends).
func (b *pgBench) kitStatements() {
	n := *pgPerStmt
	ps := prepareJobs(b.newRound(), 2*n)
	ctx := context.Background()
	fmt.Printf("\nthe kit's statements alone, one job a call (%d calls each): server time (active_time) and round trips a call\n", n)
	var leases []*mailqueue.Lease
	step := func(name string, truncate bool, f func(src *postgres.Source)) {
		if truncate {
			b.truncate(b.kitDB)
		}
		s := &side{b: b, db: b.kitDB, rt: &tripCounter{}}
		s.st0 = b.dbStats(b.kitDB)
		s.pool = b.pool(b.kitDB, s.rt)
		q, _ := b.kitQueue(s, 0)
		// The pool's connections and prepared statements are made first.
		if _, err := q.Stats(ctx); err != nil {
			die("bench: ", err)
		}
		s.st0 = b.dbStatsLive(s)
		s.proc0 = procCPU()
		f(q.Source())
		u := s.end(n)
		fmt.Printf("  %-20s %7.1f µs a call, %.2f round trips a call, %.2f transactions a call\n", name,
			u.activeMS*1000/float64(n), float64(u.trips)/float64(n), float64(u.xacts)/float64(n))
	}
	step("enqueue", true, func(src *postgres.Source) {
		for i := range n {
			if _, err := src.Enqueue(ctx, ps[i:i+1]); err != nil {
				die("bench: ", err)
			}
		}
	})
	step("reserve", false, func(src *postgres.Source) {
		for range n {
			ls, err := src.Reserve(ctx, mailqueue.ReserveParams{Limit: 1, LeaseDuration: time.Minute})
			if err != nil || len(ls) != 1 {
				die(fmt.Sprintf("bench: reserve: %d, %v", len(ls), err))
			}
			leases = append(leases, ls...)
		}
	})
	step("ack", false, func(src *postgres.Source) {
		for _, l := range leases {
			if ok, err := src.Ack(ctx, mailqueue.AckParams{ID: l.ID, Token: l.Token}); !ok || err != nil {
				die(fmt.Sprintf("bench: ack: %v, %v", ok, err))
			}
		}
	})
	step("settle and reserve", false, func(src *postgres.Source) {
		if _, err := src.Enqueue(ctx, ps[n:]); err != nil {
			die("bench: ", err)
		}
		ls, err := src.Reserve(ctx, mailqueue.ReserveParams{Limit: 1, LeaseDuration: time.Minute})
		if err != nil || len(ls) != 1 {
			die(fmt.Sprintf("bench: reserve: %d, %v", len(ls), err))
		}
		l := ls[0]
		for range n - 1 {
			ok, next, err := src.SettleAndReserve(ctx, polling.SettleParams{ID: l.ID, Token: l.Token, Outcome: mailqueue.Outcome{Action: mailqueue.Ack}},
				mailqueue.ReserveParams{Limit: 1, LeaseDuration: time.Minute})
			if !ok || err != nil || len(next) != 1 {
				die(fmt.Sprintf("bench: settle and reserve: %v, %d, %v", ok, len(next), err))
			}
			l = next[0]
		}
	})
}

// ---- River ----

// riverMail is the kit's stored job on River: its id, and its JSON as the
// kit stores it (bytes, so that River's jsonb keeps them as they are).
type riverMail struct {
	ID   string `json:"id" river:"unique"`
	Data []byte `json:"data"`
}

func (riverMail) Kind() string { return "mail" }

// InsertOpts are the options of a job as close to the kit's as River
// has: 5 attempts, and (-river-unique) unique by the job's id while River
// keeps it (a completed job a day: CompletedJobRetentionPeriod).
func (riverMail) InsertOpts() river.InsertOpts {
	o := river.InsertOpts{MaxAttempts: mailqueue.DefaultMaxAttempts}
	if *riverUnique {
		o.UniqueOpts = river.UniqueOpts{ByArgs: true}
	}
	return o
}

// riverWorker runs the kit's handler on a River job.
type riverWorker struct {
	river.WorkerDefaults[riverMail]
	w     *mailqueue.Worker
	start func(id string)
}

func (rw *riverWorker) Work(ctx context.Context, j *river.Job[riverMail]) error {
	if rw.start != nil {
		rw.start(j.Args.ID)
	}
	out := rw.w.Handle(ctx, &mailqueue.Lease{
		ID: j.Args.ID, Token: "river", Data: j.Args.Data, Attempt: j.Attempt, MaxAttempts: j.MaxAttempts,
		Priority: jobv1.PriorityNormal, EnqueuedAt: j.CreatedAt, Until: time.Now().Add(time.Minute),
	})
	if out.Action != mailqueue.Ack {
		return fmt.Errorf("%s: %s", out.Code, out.Reason)
	}
	return nil
}

// riverClient is a River client on the side's pool, tuned as River's own
// benchmark (cmd/river/riverbench) tunes it: FetchCooldown 2 ms,
// FetchPollInterval 20 ms; concurrency 0 is a client that only inserts.
func riverClient(s *side, w *riverWorker, concurrency int) *river.Client[pgx.Tx] {
	workers := river.NewWorkers()
	river.AddWorker(workers, w)
	cfg := &river.Config{
		FetchCooldown: 2 * time.Millisecond, FetchPollInterval: 20 * time.Millisecond,
		Logger: quiet, Workers: workers,
	}
	if concurrency > 0 {
		cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: concurrency}}
	}
	c, err := river.NewClient(riverpgxv5.New(s.pool), cfg)
	if err != nil {
		die("bench: River: ", err)
	}
	return c
}

func riverArgs(ps []mailqueue.NewJob) []river.InsertManyParams {
	out := make([]river.InsertManyParams, len(ps))
	for i, p := range ps {
		out[i] = river.InsertManyParams{Args: riverMail{ID: p.ID, Data: p.Data}}
	}
	return out
}

// riverEnqueueTx inserts jobs one at a time, each in a transaction of its
// own (begin, InsertTx, commit).
func (b *pgBench) riverEnqueueTx(goroutines int) sample {
	n := *txJobs
	ps := prepareJobs(b.newRound(), n)
	s := b.begin(b.riverDB)
	c := riverClient(s, &riverWorker{}, 0)
	ctx := context.Background()
	el := parallel(goroutines, n, 1, func(i, _ int) {
		tx, err := s.pool.Begin(ctx)
		if err != nil {
			die("bench: ", err)
		}
		if _, err := c.InsertTx(ctx, tx, riverMail{ID: ps[i].ID, Data: ps[i].Data}, nil); err != nil {
			die("bench: River's InsertTx: ", err)
		}
		if err := tx.Commit(ctx); err != nil {
			die("bench: ", err)
		}
	})
	return sample{v: float64(n) / el.Seconds(), jobs: n, use: s.end(n)}
}

// riverInsertMany inserts batches of size jobs, each an InsertMany call.
func (b *pgBench) riverInsertMany(size int) sample {
	n := *jobs
	args := riverArgs(prepareJobs(b.newRound(), n))
	s := b.begin(b.riverDB)
	c := riverClient(s, &riverWorker{}, 0)
	ctx := context.Background()
	el := parallel(1, n, size, func(i, j int) {
		if _, err := c.InsertMany(ctx, args[i:j]); err != nil {
			die("bench: River's InsertMany: ", err)
		}
	})
	return sample{v: float64(n) / el.Seconds(), jobs: n, use: s.end(n)}
}

func (b *pgBench) riverEndToEnd(concurrency int) sample {
	args := riverArgs(prepareJobs(b.newRound(), *jobs))
	s := b.begin(b.riverDB)
	tr := &nullTransport{want: int64(len(args)), done: make(chan struct{})}
	c := riverClient(s, &riverWorker{w: handlerOnly(tr)}, concurrency)
	ctx := context.Background()
	for i := 0; i < len(args); i += 500 {
		if _, err := c.InsertMany(ctx, args[i:min(i+500, len(args))]); err != nil {
			die("bench: River's InsertMany: ", err)
		}
	}
	s.st0 = b.dbStatsLive(s)
	start := time.Now()
	if err := c.Start(ctx); err != nil {
		die("bench: River: ", err)
	}
	<-tr.done
	el := time.Since(start)
	s.measured()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := c.Stop(sctx); err != nil {
		die("bench: River's Stop: ", err)
	}
	var done int
	if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM river_job WHERE state = 'completed'").Scan(&done); err != nil || done != len(args) {
		die(fmt.Sprintf("bench: River: %d completed of %d (%v)", done, len(args), err))
	}
	return sample{v: float64(len(args)) / el.Seconds(), jobs: len(args), use: s.end(len(args))}
}

// riverLatency is kitLatency on River: InsertTx in a transaction of its
// own, a client of 10 workers woken by River's insert notification.
func (b *pgBench) riverLatency() sample {
	n := *samples
	ps := prepareJobs(b.newRound(), n)
	ids := make(map[string]int, n)
	for i, p := range ps {
		ids[p.ID] = i
	}
	s := b.begin(b.riverDB)
	lt := newLatencies(n)
	c := riverClient(s, &riverWorker{w: handlerOnly(&nullTransport{want: -1}), start: func(id string) { lt.started(ids[id]) }}, 10)
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		die("bench: River: ", err)
	}
	time.Sleep(300 * time.Millisecond) // LISTEN is in place
	lt.produce(func(i int) {
		tx, err := s.pool.Begin(ctx)
		if err != nil {
			die("bench: ", err)
		}
		if _, err := c.InsertTx(ctx, tx, riverMail{ID: ps[i].ID, Data: ps[i].Data}, nil); err != nil {
			die("bench: River's InsertTx: ", err)
		}
		if err := tx.Commit(ctx); err != nil {
			die("bench: ", err)
		}
	})
	s.measured()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := c.Stop(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		die("bench: River's Stop: ", err)
	}
	p50, p99 := lt.percentiles()
	return sample{p50: p50, p99: p99, jobs: n, use: s.end(n)}
}
