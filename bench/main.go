// Command bench runs the same workloads on the kit's Redis driver
// (drivers/redis) and on github.com/hibiken/asynq against the same Redis
// server in one run, and prints each figure and the ratio (BENCHMARKS.md,
// "Redis driver vs asynq").
//
//	cd bench && go run . -redis 127.0.0.1:6379 -db 15 -rounds 3
//
// The workloads: enqueue throughput (one at a time from 1 and from 8
// goroutines, and batched), end-to-end throughput of content jobs through
// a null transport at concurrency 10 and 50 (the kit's one handler,
// mailqueue.Worker.Handle, runs on both), and enqueue-to-start latency on
// an idle queue. It works in its own Redis database (-db) under a prefix
// of its own, and deletes every key it made; it never flushes. With
// -rounds n each workload runs n times, the driver and asynq in turn, and
// the medians are printed (steadier on a busy machine). After the table,
// the CPU each workload took and the server's time in scripts (INFO
// commandstats), and the server's time in each hot script of the driver
// alone.
//
// With -store postgres it runs the kit's PostgreSQL driver side by side
// with River instead (postgres.go; BENCHMARKS.md, "PostgreSQL driver vs
// River"):
//
//	cd bench && go run . -store postgres -rounds 3
//
// This is a module of its own, so that the kit never depends on its peers.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hibiken/asynq"
	goredis "github.com/redis/go-redis/v9"

	redisdriver "github.com/alexify/mailer/drivers/redis"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/mail"
	"github.com/alexify/mailer/mailqueue"
)

var (
	addr       = flag.String("redis", "127.0.0.1:6379", "the Redis server's address")
	db         = flag.Int("db", 15, "the Redis database the bench works in (its own keys only, deleted at the end)")
	jobs       = flag.Int("jobs", 20000, "the jobs of the end-to-end and enqueue workloads")
	samples    = flag.Int("latency-samples", 1000, "latency samples of the Redis driver; with -store postgres, of each side each round")
	asynqSamps = flag.Int("asynq-latency-samples", 30, "latency samples of asynq (each waits its idle poll, up to 1.5 s)")
	only       = flag.String("only", "", "run only the workloads whose name holds this")
	cpuprofile = flag.String("cpuprofile", "", "write a CPU profile of the bench process to this file")
	rounds     = flag.Int("rounds", 1, "run each workload this many times, the driver and asynq in turn, and print the medians: steadier on a busy machine")
)

func main() {
	flag.Parse()
	log.SetFlags(0)
	switch *store {
	case "redis":
	case "postgres":
		pgMain()
		return
	default:
		log.Fatalf("bench: -store %q: redis or postgres", *store)
	}
	ctx := context.Background()
	c := goredis.NewClient(&goredis.Options{Addr: *addr, DB: *db, PoolSize: 128})
	defer c.Close()
	if err := c.Ping(ctx).Err(); err != nil {
		log.Fatalf("bench: Redis at %s: %v", *addr, err)
	}
	info := c.Info(ctx, "server").Val()
	version := "?"
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "redis_version:"); ok {
			version = v
		}
	}
	fmt.Printf("machine: %d CPUs (%s), GOMAXPROCS %d, %s; Redis %s at %s db %d\n\n",
		runtime.NumCPU(), cpuModel(), runtime.GOMAXPROCS(0), runtime.Version(), version, *addr, *db)

	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			log.Fatal(err)
		}
		_ = pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	b := &bench{c: c, run: randomHex()}
	defer b.cleanup()
	b.prepare()

	fmt.Printf("%-44s %14s %14s %8s\n", "workload", "mailer redis", "asynq", "ratio")
	for _, w := range []struct {
		name      string
		unit      string
		ours, thr func() float64
		lowerWins bool
	}{
		{"enqueue, one at a time, 1 goroutine", "jobs/s", func() float64 { return b.oursEnqueue(1, 1) }, func() float64 { return b.asynqEnqueue(1) }, false},
		{"enqueue, one at a time, 8 goroutines", "jobs/s", func() float64 { return b.oursEnqueue(8, 1) }, func() float64 { return b.asynqEnqueue(8) }, false},
		{"enqueue, batches of 100, 1 goroutine", "jobs/s", func() float64 { return b.oursEnqueue(1, 100) }, nil, false},
		{"end to end, concurrency 10", "jobs/s", func() float64 { return b.oursEndToEnd(10) }, func() float64 { return b.asynqEndToEnd(10) }, false},
		{"end to end, concurrency 50", "jobs/s", func() float64 { return b.oursEndToEnd(50) }, func() float64 { return b.asynqEndToEnd(50) }, false},
		{"latency enqueue-to-start, idle, p50", "ms", func() float64 { return b.oursLatency(0.50) }, func() float64 { return b.asynqLatency(0.50) }, true},
		{"latency enqueue-to-start, idle, p99", "ms", func() float64 { return b.oursLatency(0.99) }, func() float64 { return b.asynqLatency(0.99) }, true},
	} {
		if *only != "" && !strings.Contains(w.name, *only) {
			continue
		}
		var os, as []float64
		var oc, ac cpuUse
		n := max(*rounds, 1)
		if w.lowerWins {
			n = 1 // the latency samples are taken once, then read again
		}
		for range n {
			o, c := measure(b.c, w.ours)
			os, oc = append(os, o), oc.add(c)
			if w.thr != nil {
				a, c := measure(b.c, w.thr)
				as, ac = append(as, a), ac.add(c)
			}
		}
		o, a := median(os), median(as)
		oc, ac = oc.div(len(os)), ac.div(len(os))
		if w.thr == nil {
			fmt.Printf("%-44s %9.0f %-4s %14s %8s\n", w.name, o, w.unit, "n/a (no batch API)", "")
			defer fmt.Printf("  %-42s CPU s: mailer redis %s\n", w.name, oc)
			continue
		}
		defer fmt.Printf("  %-42s CPU s: mailer redis %s\n  %-42s        asynq %s\n", w.name, oc, "", ac)
		ratio := o / a
		if w.lowerWins {
			ratio = a / o
			fmt.Printf("%-44s %9.3f %-4s %9.3f %-4s %7.1fx\n", w.name, o, w.unit, a, w.unit, ratio)
			continue
		}
		fmt.Printf("%-44s %9.0f %-4s %9.0f %-4s %7.2fx\n", w.name, o, w.unit, a, w.unit, ratio)
	}
	fmt.Println("\nratio: how many times better the Redis driver is (throughput ours/asynq; latency asynq/ours)")
	if *rounds > 1 {
		fmt.Printf("each figure is the median of %d rounds, the driver and asynq in turn; the CPU figures are a round's mean\n", *rounds)
	}
	fmt.Println("CPU seconds each run took, of the bench process (Go: producer, worker, handler) and of the Redis server;")
	fmt.Println("scripts: the server's time in EVALSHA/EVAL (INFO commandstats), calls and µs a call:")
	if *only == "" || strings.Contains("scripts", *only) {
		b.scriptStats()
	}
}

// scriptStats measures the server's time in each hot script of the
// driver alone (INFO commandstats before and after): 5 000 enqueues of one
// job, reserves of one job, acks.
func (b *bench) scriptStats() {
	q := b.oursQueue(b.newRound(), 0)
	defer b.oursDrop(q)
	src := q.Source()
	ctx := context.Background()
	js := b.fresh(b.newRound())[:min(len(b.jobs), 5000)]
	step := func(name string, f func()) {
		s0 := scriptTime(b.c)
		f()
		d := scriptTime(b.c).sub(s0)
		fmt.Printf("  script %-12s %s\n", name, d)
	}
	step("enqueue", func() {
		for i := range js {
			if _, err := src.Enqueue(ctx, js[i:i+1]); err != nil {
				log.Fatal(err)
			}
		}
	})
	var leases []*mailqueue.Lease
	step("reserve", func() {
		for range js {
			ls, err := src.Reserve(ctx, mailqueue.ReserveParams{Limit: 1, LeaseDuration: time.Minute})
			if err != nil || len(ls) != 1 {
				log.Fatalf("reserve: %d, %v", len(ls), err)
			}
			leases = append(leases, ls...)
		}
	})
	step("ack", func() {
		for _, l := range leases {
			if ok, err := src.Ack(ctx, mailqueue.AckParams{ID: l.ID, Token: l.Token}); !ok || err != nil {
				log.Fatalf("ack: %v, %v", ok, err)
			}
		}
	})
}

type bench struct {
	c        *goredis.Client
	run      string
	jobs     []mailqueue.NewJob
	latCache map[string][]time.Duration
}

func randomHex() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "?"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "model name"); ok {
			return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
		}
	}
	return "?"
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// capture is a Driver that keeps what the queue would store: the bench
// prepares its jobs once through the kit's own Enqueue (checks, ids, hash).
type capture struct{ jobs []mailqueue.NewJob }

func (c *capture) Enqueue(_ context.Context, js []mailqueue.NewJob) ([]mailqueue.EnqueueResult, error) {
	c.jobs = append(c.jobs, js...)
	res := make([]mailqueue.EnqueueResult, len(js))
	for i, j := range js {
		res[i].ID = j.ID
	}
	return res, nil
}

func (c *capture) Work(mailqueue.Handler, mailqueue.WorkOptions) (mailqueue.Runner, error) {
	return nil, fmt.Errorf("capture: no worker")
}

// prepare makes the content jobs, as a producer enqueues them.
func (b *bench) prepare() { b.jobs = prepareJobs("bench-"+b.run, *jobs) }

// contentJob is the i-th content job of the bench, under an idempotency
// key made of prefix and i.
func contentJob(prefix string, i int) *jobv1.Job {
	return &jobv1.Job{
		Kind: jobv1.KindContent, Subject: fmt.Sprintf("Your order %d has shipped", i),
		Content: &jobv1.Content{
			HTML: fmt.Sprintf("<p>Hello Ada,</p><p>your order <b>%d</b> has shipped. It arrives on Tuesday.</p>", i),
			Text: fmt.Sprintf("Hello Ada,\n\nyour order %d has shipped. It arrives on Tuesday.\n", i),
		},
		From: "Shop <shop@example.com>", To: []string{"Ada <ada@example.com>"},
		IdempotencyKey: fmt.Sprintf("%s:order-shipped:%d", prefix, i),
	}
}

// prepareJobs returns n content jobs as the kit's own Enqueue stores them
// (checks, ids, hash), through a Driver that only keeps them.
func prepareJobs(prefix string, n int) []mailqueue.NewJob {
	cp := &capture{}
	q, err := mailqueue.New(mailqueue.Config{Driver: cp, Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if _, err := q.Enqueue(context.Background(), contentJob(prefix, i)); err != nil {
			log.Fatal(err)
		}
	}
	return cp.jobs
}

// fresh returns the jobs with ids of a new round, so that a round never
// meets the duplicates of the one before.
func (b *bench) fresh(round string) []mailqueue.NewJob {
	out := make([]mailqueue.NewJob, len(b.jobs))
	now := time.Now()
	for i, j := range b.jobs {
		j.ID = round + "-" + j.ID
		j.RunAt, j.EnqueuedAt = now, now
		out[i] = j
	}
	return out
}

var round atomic.Int64

func (b *bench) newRound() string { return fmt.Sprintf("r%d", round.Add(1)) }

// ---- the Redis driver ----

func (b *bench) oursQueue(queue string, pollEvery time.Duration) *redisdriver.Queue {
	q, err := redisdriver.Open(context.Background(), redisdriver.Options{
		Client: b.c, Prefix: "mailerbench-" + b.run, Queue: queue, Logger: quiet, PollInterval: pollEvery,
	})
	if err != nil {
		log.Fatal(err)
	}
	return q
}

func (b *bench) oursDrop(q *redisdriver.Queue) {
	if _, err := q.Source().Obliterate(context.Background()); err != nil {
		log.Fatal(err)
	}
}

func (b *bench) oursEnqueue(goroutines, batch int) float64 {
	q := b.oursQueue(b.newRound(), 0)
	defer b.oursDrop(q)
	js := b.fresh(b.newRound())
	if goroutines == 1 && batch == 1 {
		js = js[:min(len(js), 5000)]
	}
	src := q.Source()
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(int64(batch))) - batch
				if i >= len(js) {
					return
				}
				if _, err := src.Enqueue(context.Background(), js[i:min(i+batch, len(js))]); err != nil {
					log.Fatal(err)
				}
			}
		}()
	}
	wg.Wait()
	return float64(len(js)) / time.Since(start).Seconds()
}

// nullTransport accepts every message and tells when it has seen n.
type nullTransport struct {
	n    atomic.Int64
	want int64
	done chan struct{}
}

func (t *nullTransport) Send(context.Context, *mail.Message) (mail.Receipt, error) {
	if t.n.Add(1) == t.want {
		close(t.done)
	}
	return mail.Receipt{Category: mail.Accepted, Code: 250}, nil
}

func (b *bench) oursEndToEnd(concurrency int) float64 {
	q := b.oursQueue(b.newRound(), 0)
	defer b.oursDrop(q)
	js := b.fresh(b.newRound())
	for i := 0; i < len(js); i += 500 {
		if _, err := q.Source().Enqueue(context.Background(), js[i:min(i+500, len(js))]); err != nil {
			log.Fatal(err)
		}
	}
	tr := &nullTransport{want: int64(len(js)), done: make(chan struct{})}
	mq, err := mailqueue.New(mailqueue.Config{Driver: q, Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	w, err := mq.NewWorker(mailqueue.WorkerConfig{Transport: tr, Concurrency: concurrency})
	if err != nil {
		log.Fatal(err)
	}
	start := time.Now()
	if err := w.Start(); err != nil {
		log.Fatal(err)
	}
	<-tr.done
	el := time.Since(start)
	_ = w.Close(context.Background())
	if st, _ := q.Stats(context.Background()); st.Accepted != int64(len(js)) {
		log.Fatalf("the Redis driver: %d accepted of %d", st.Accepted, len(js))
	}
	return float64(len(js)) / el.Seconds()
}

func (b *bench) oursLatency(p float64) float64 {
	if d, ok := b.latCache["ours"]; ok {
		return pct(d, p)
	}
	name := b.newRound()
	q := b.oursQueue(name, time.Hour) // never polls: only the server wakes it
	defer b.oursDrop(q)
	producer := b.oursQueue(name, 0)
	started := make(chan time.Time, 1)
	r, err := q.Work(mailqueue.HandlerFunc(func(ctx context.Context, l *mailqueue.Lease) mailqueue.Outcome {
		started <- time.Now()
		return mailqueue.Outcome{Action: mailqueue.Ack}
	}), mailqueue.WorkOptions{Concurrency: 1})
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close(context.Background())
	time.Sleep(200 * time.Millisecond)
	js := b.fresh(b.newRound())
	var ds []time.Duration
	for i := 0; i < *samples; i++ {
		j := js[i%len(js)]
		j.ID = fmt.Sprintf("lat-%d", i)
		if _, err := producer.Enqueue(context.Background(), []mailqueue.NewJob{j}); err != nil {
			log.Fatal(err)
		}
		t0 := time.Now()
		at := <-started
		ds = append(ds, max(at.Sub(t0), 0))
		time.Sleep(2 * time.Millisecond) // the worker settles and goes idle
	}
	b.cacheLat("ours", ds)
	return pct(ds, p)
}

func (b *bench) cacheLat(k string, ds []time.Duration) {
	if b.latCache == nil {
		b.latCache = map[string][]time.Duration{}
	}
	b.latCache[k] = ds
}

func pct(ds []time.Duration, p float64) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(p*float64(len(s))+0.5) - 1
	i = max(0, min(i, len(s)-1))
	return float64(s[i].Microseconds()) / 1000
}

// ---- asynq ----

const taskType = "mail:job"

func (b *bench) asynqQueue() string { return "mailerbench-" + b.run + "-" + b.newRound() }

// asynqOpts are the options of a job on asynq, as close to the driver's as
// asynq has: its id (an enqueue again under it is refused while asynq keeps
// the task), 4 retries (5 attempts), and kept a day once done (the dedupe
// window).
func asynqOpts(queue string, j mailqueue.NewJob) []asynq.Option {
	return []asynq.Option{asynq.Queue(queue), asynq.TaskID(j.ID), asynq.MaxRetry(j.MaxAttempts - 1), asynq.Retention(24 * time.Hour)}
}

func (b *bench) asynqDrop(queue string) {
	ctx := context.Background()
	var cursor uint64
	for {
		keys, next, err := b.c.Scan(ctx, cursor, "asynq:{"+queue+"}:*", 1000).Result()
		if err != nil {
			log.Fatal(err)
		}
		if len(keys) > 0 {
			b.c.Del(ctx, keys...)
		}
		if next == 0 {
			break
		}
		cursor = next
	}
	b.c.SRem(ctx, "asynq:queues", queue)
}

func (b *bench) asynqEnqueue(goroutines int) float64 {
	queue := b.asynqQueue()
	defer b.asynqDrop(queue)
	cl := asynq.NewClientFromRedisClient(b.c)
	js := b.fresh(b.newRound())
	if goroutines == 1 {
		js = js[:min(len(js), 5000)]
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(js) {
					return
				}
				if _, err := cl.Enqueue(asynq.NewTask(taskType, js[i].Data), asynqOpts(queue, js[i])...); err != nil {
					log.Fatal(err)
				}
			}
		}()
	}
	wg.Wait()
	return float64(len(js)) / time.Since(start).Seconds()
}

func (b *bench) asynqEndToEnd(concurrency int) float64 {
	queue := b.asynqQueue()
	defer b.asynqDrop(queue)
	cl := asynq.NewClientFromRedisClient(b.c)
	js := b.fresh(b.newRound())
	var next atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(js) {
					return
				}
				if _, err := cl.Enqueue(asynq.NewTask(taskType, js[i].Data), asynqOpts(queue, js[i])...); err != nil {
					log.Fatal(err)
				}
			}
		}()
	}
	wg.Wait()
	tr := &nullTransport{want: int64(len(js)), done: make(chan struct{})}
	w := handlerOnly(tr)
	srvClient := goredis.NewClient(&goredis.Options{Addr: *addr, DB: *db, PoolSize: 128})
	defer srvClient.Close()
	srv := asynq.NewServerFromRedisClient(srvClient, asynq.Config{
		Concurrency: concurrency, Queues: map[string]int{queue: 1}, Logger: asynqQuiet{}, LogLevel: asynq.FatalLevel,
	})
	start := time.Now()
	if err := srv.Start(asynqHandler(w)); err != nil {
		log.Fatal(err)
	}
	<-tr.done
	el := time.Since(start)
	srv.Shutdown()
	return float64(len(js)) / el.Seconds()
}

// handlerOnly returns the kit's worker, used for its Handle alone: the one
// handler every driver runs.
func handlerOnly(tr mail.Transport) *mailqueue.Worker {
	q, err := mailqueue.New(mailqueue.Config{Driver: &capture{}, Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	w, err := q.NewWorker(mailqueue.WorkerConfig{Transport: tr})
	if err != nil {
		log.Fatal(err)
	}
	return w
}

// asynqHandler runs the kit's handler on an asynq task: the task is the
// job's stored JSON, its id the job's id.
func asynqHandler(w *mailqueue.Worker) asynq.Handler {
	return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		id, _ := asynq.GetTaskID(ctx)
		retried, _ := asynq.GetRetryCount(ctx)
		maxRetry, _ := asynq.GetMaxRetry(ctx)
		out := w.Handle(ctx, &mailqueue.Lease{
			ID: id, Token: "asynq", Data: t.Payload(), Attempt: retried + 1, MaxAttempts: maxRetry + 1,
			Priority: jobv1.PriorityNormal, EnqueuedAt: time.Now(), Until: time.Now().Add(time.Minute),
		})
		if out.Action != mailqueue.Ack {
			return fmt.Errorf("%s: %s", out.Code, out.Reason)
		}
		return nil
	})
}

func (b *bench) asynqLatency(p float64) float64 {
	if d, ok := b.latCache["asynq"]; ok {
		return pct(d, p)
	}
	queue := b.asynqQueue()
	defer b.asynqDrop(queue)
	cl := asynq.NewClientFromRedisClient(b.c)
	srvClient := goredis.NewClient(&goredis.Options{Addr: *addr, DB: *db})
	defer srvClient.Close()
	started := make(chan time.Time, 1)
	srv := asynq.NewServerFromRedisClient(srvClient, asynq.Config{
		Concurrency: 1, Queues: map[string]int{queue: 1}, Logger: asynqQuiet{}, LogLevel: asynq.FatalLevel,
	})
	if err := srv.Start(asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		started <- time.Now()
		return nil
	})); err != nil {
		log.Fatal(err)
	}
	defer srv.Shutdown()
	time.Sleep(200 * time.Millisecond)
	js := b.fresh(b.newRound())
	var ds []time.Duration
	for i := 0; i < *asynqSamps; i++ {
		j := js[i%len(js)]
		j.ID = fmt.Sprintf("lat-%d", i)
		if _, err := cl.Enqueue(asynq.NewTask(taskType, j.Data), asynqOpts(queue, j)...); err != nil {
			log.Fatal(err)
		}
		t0 := time.Now()
		at := <-started
		ds = append(ds, max(at.Sub(t0), 0))
		time.Sleep(2 * time.Millisecond)
	}
	b.cacheLat("asynq", ds)
	return pct(ds, p)
}

// asynqQuiet drops asynq's log.
type asynqQuiet struct{}

func (asynqQuiet) Debug(...any) {}
func (asynqQuiet) Info(...any)  {}
func (asynqQuiet) Warn(...any)  {}
func (asynqQuiet) Error(...any) {}
func (asynqQuiet) Fatal(...any) {}

// cleanup deletes what asynq keeps besides its queues: the servers and
// workers it registered (they expire on their own too).
func (b *bench) cleanup() {
	ctx := context.Background()
	for _, pat := range []string{"asynq:{mailerbench-" + b.run + "*", "{mailerbench-" + b.run + ":*"} {
		var cursor uint64
		for {
			keys, next, err := b.c.Scan(ctx, cursor, pat, 1000).Result()
			if err != nil {
				return
			}
			if len(keys) > 0 {
				b.c.Del(ctx, keys...)
			}
			if next == 0 {
				break
			}
			cursor = next
		}
	}
	b.c.Del(ctx, "asynq:servers", "asynq:workers")
	var cursor uint64
	for {
		keys, next, err := b.c.Scan(ctx, cursor, "asynq:*", 1000).Result()
		if err != nil {
			return
		}
		for _, k := range keys {
			if strings.HasPrefix(k, "asynq:servers:") || strings.HasPrefix(k, "asynq:workers:") || strings.Contains(k, "mailerbench-"+b.run) {
				b.c.Del(ctx, k)
			}
		}
		if next == 0 {
			break
		}
		cursor = next
	}
}

// cpuUse is the CPU a workload took, of this process and of the server,
// and the server's time in scripts.
type cpuUse struct {
	proc, server float64
	scripts      scriptUse
}

func (c cpuUse) String() string {
	return fmt.Sprintf("process %.2f, Redis %.2f; scripts %s", c.proc, c.server, c.scripts)
}

func (c cpuUse) add(d cpuUse) cpuUse {
	return cpuUse{c.proc + d.proc, c.server + d.server, scriptUse{c.scripts.calls + d.scripts.calls, c.scripts.usec + d.scripts.usec}}
}

func (c cpuUse) div(n int) cpuUse {
	if n <= 1 {
		return c
	}
	return cpuUse{c.proc / float64(n), c.server / float64(n), scriptUse{c.scripts.calls / int64(n), c.scripts.usec / int64(n)}}
}

// median returns the median of xs (the mean of the two middle ones for an
// even count); 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// measure runs f and returns its figure and the CPU it took.
func measure(c *goredis.Client, f func() float64) (float64, cpuUse) {
	p0, s0, t0 := procCPU(), serverCPU(c), scriptTime(c)
	v := f()
	return v, cpuUse{procCPU() - p0, serverCPU(c) - s0, scriptTime(c).sub(t0)}
}

// scriptUse is what INFO commandstats tells of EVALSHA and EVAL (the
// commands the scripts run inside are counted in them): calls, and µs.
type scriptUse struct{ calls, usec int64 }

func (u scriptUse) sub(v scriptUse) scriptUse { return scriptUse{u.calls - v.calls, u.usec - v.usec} }

func (u scriptUse) String() string {
	if u.calls == 0 {
		return "none"
	}
	return fmt.Sprintf("%d calls, %.1f s, %.2f µs a call", u.calls, float64(u.usec)/1e6, float64(u.usec)/float64(u.calls))
}

func scriptTime(c *goredis.Client) scriptUse {
	var u scriptUse
	for _, l := range strings.Split(c.Info(context.Background(), "commandstats").Val(), "\n") {
		l = strings.TrimSpace(l)
		rest, ok := strings.CutPrefix(l, "cmdstat_evalsha:")
		if !ok {
			rest, ok = strings.CutPrefix(l, "cmdstat_eval:")
		}
		if !ok {
			continue
		}
		for _, kv := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			n, _ := strconv.ParseInt(v, 10, 64)
			switch k {
			case "calls":
				u.calls += n
			case "usec":
				u.usec += n
			}
		}
	}
	return u
}

func procCPU() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

func serverCPU(c *goredis.Client) float64 {
	var total float64
	for _, l := range strings.Split(c.Info(context.Background(), "cpu").Val(), "\n") {
		l = strings.TrimSpace(l)
		for _, k := range []string{"used_cpu_sys:", "used_cpu_user:"} {
			if v, ok := strings.CutPrefix(l, k); ok {
				f, _ := strconv.ParseFloat(v, 64)
				total += f
			}
		}
	}
	return total
}
