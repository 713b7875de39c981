//go:build unix

package redis_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	redisdriver "github.com/alexify/mailer/drivers/redis"
	"github.com/alexify/mailer/drivers/redis/internal/faulttest"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/mail"
	"github.com/alexify/mailer/mail/idempotency"
	"github.com/alexify/mailer/mail/smtp"
	"github.com/alexify/mailer/mail/smtptest"
	"github.com/alexify/mailer/mailqueue"
)

// The fault tests of issue 10, point 11: real worker processes (this test
// binary run again, as TestKillWorkerMidSend does), a redis-server of each
// test's own, and an SMTP server on loopback (mail/smtptest) that records
// every message it reads, counted by Message-ID. Each prints its Measure
// line (faulttest.Measure) and cleans up every process and file.
//
// A worker child is configured by the environment below.
const (
	envFaultRole   = "MAILER_FAULT_ROLE"   // "worker" in a worker child
	envFaultRedis  = "MAILER_FAULT_REDIS"  // the queue's Redis, host:port
	envFaultIdem   = "MAILER_FAULT_IDEM"   // the idempotency store's Redis; empty: no IdempotencyTransport
	envFaultSMTP   = "MAILER_FAULT_SMTP"   // the SMTP server's port on 127.0.0.1
	envFaultPolicy = "MAILER_FAULT_POLICY" // the Redelivered policy
	envFaultLease  = "MAILER_FAULT_LEASE"  // the lease, a time.Duration
	envFaultConc   = "MAILER_FAULT_CONC"   // the worker's concurrency
	envFaultDelay  = "MAILER_FAULT_DELAY"  // a wait before each SMTP send (network latency), a time.Duration
	envFaultStopAt = "MAILER_FAULT_STOPAT" // after the n-th SMTP send returns, say so and wait a second (0: never)

	faultPrefix = "fault"
	// faultBackoff is the workers' backoff: short, so that a fault that
	// spends attempts shows in seconds (attempts_exhausted), not minutes.
	// A fault that spends none is not touched by it.
	faultBackoff = 200 * time.Millisecond
)

// faultWorkerSpec is what a worker child is told.
type faultWorkerSpec struct {
	idem   bool // IdempotencyTransport with the Redis store, on the queue's Redis unless idemAddr
	policy mailqueue.RedeliveredPolicy
	lease  time.Duration
	conc   int
	delay  time.Duration
	stopAt int
}

// faultRig is one fault test's world: its redis-server, the queue as the
// producer and the operator see it, the SMTP server, the jobs enqueued and
// the worker processes.
type faultRig struct {
	t     *testing.T
	top   string // the top-level test, run again in the children
	redis *faulttest.RedisServer
	c     *goredis.Client
	src   *redisdriver.Source
	mq    *mailqueue.Queue
	smtp  *smtptest.Server

	mu      sync.Mutex
	ids     map[string]string // job id -> Message-ID
	next    int
	workers []*exec.Cmd
	outs    []*bytes.Buffer
}

func newFaultRig(t *testing.T, redisArgs ...string) *faultRig {
	t.Helper()
	if testing.Short() {
		t.Skip("starts redis-server and worker processes; -short")
	}
	r := &faultRig{t: t, top: t.Name(), ids: map[string]string{}}
	r.top, _, _ = strings.Cut(r.top, "/")
	r.redis = faulttest.StartRedis(t, append([]string{"--maxmemory-policy", "noeviction"}, redisArgs...)...)
	r.c = r.redis.Client()
	ctx := context.Background()
	q, err := redisdriver.Open(ctx, redisdriver.Options{Client: r.c, Prefix: faultPrefix, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	r.src = q.Source()
	if r.mq, err = mailqueue.New(mailqueue.Config{Driver: q, Logger: quietLog()}); err != nil {
		t.Fatal(err)
	}
	r.smtp = smtptest.Start(t, smtptest.Script{})
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for i, o := range r.outs {
			b := o.Bytes()
			if len(b) > 4000 {
				b = b[len(b)-4000:]
			}
			t.Logf("worker %d (the end of its output):\n%s", i, b)
		}
	})
	t.Cleanup(r.stopWorkers)
	return r
}

func quietLog() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError + 4}))
}

// startWorkers starts n worker processes of spec, sending to SMTP port
// smtpPort (and keeping idempotency keys on idemAddr when spec.idem, the
// queue's Redis when empty), and waits until each is running.
func (r *faultRig) startWorkers(n int, spec faultWorkerSpec, smtpPort int, idemAddr string) []*exec.Cmd {
	r.t.Helper()
	if spec.idem && idemAddr == "" {
		idemAddr = r.redis.Addr()
	}
	if !spec.idem {
		idemAddr = ""
	}
	var started []*exec.Cmd
	for i := 0; i < n; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^"+r.top+"$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), envFaultRole+"=worker", envFaultRedis+"="+r.redis.Addr(), envFaultIdem+"="+idemAddr,
			envFaultSMTP+"="+strconv.Itoa(smtpPort), envFaultPolicy+"="+string(spec.policy), envFaultLease+"="+spec.lease.String(),
			envFaultConc+"="+strconv.Itoa(spec.conc), envFaultDelay+"="+spec.delay.String(), envFaultStopAt+"="+strconv.Itoa(spec.stopAt))
		out := &bytes.Buffer{}
		cmd.Stdout, cmd.Stderr = out, out
		faulttest.DieWithParent(cmd)
		if err := cmd.Start(); err != nil {
			r.t.Fatal(err)
		}
		r.mu.Lock()
		r.workers = append(r.workers, cmd)
		r.outs = append(r.outs, out)
		r.mu.Unlock()
		started = append(started, cmd)
	}
	for range started {
		if err := r.c.BLPop(context.Background(), 30*time.Second, faultPrefix+":fault:ready").Err(); err != nil {
			r.t.Fatalf("the workers did not start: %v", err)
		}
	}
	return started
}

// stopWorkers continues a stopped worker, asks each to stop (SIGTERM), and
// kills those still running after 15 seconds.
func (r *faultRig) stopWorkers() {
	r.mu.Lock()
	ws := r.workers
	r.workers = nil
	r.mu.Unlock()
	for _, w := range ws {
		_ = w.Process.Signal(syscall.SIGCONT)
		_ = w.Process.Signal(syscall.SIGTERM)
	}
	for _, w := range ws {
		done := make(chan struct{})
		go func() { _ = w.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			r.t.Errorf("worker %d did not stop within 15s of SIGTERM; killed", w.Process.Pid)
			_ = w.Process.Kill()
			<-done
		}
	}
}

// job returns the i-th job of the run: its own key and Message-ID.
func faultJob(i int) *jobv1.Job {
	return &jobv1.Job{
		Kind: jobv1.KindContent, Subject: fmt.Sprintf("Order %d", i),
		Content: &jobv1.Content{Text: fmt.Sprintf("Your order %d has shipped.", i)},
		From:    "Shop <shop@example.com>", To: []string{"ada@example.com"},
		MessageID: fmt.Sprintf("<fault-%d@mailer.test>", i), IdempotencyKey: fmt.Sprintf("fault-%d", i),
	}
}

// enqueue enqueues n more jobs.
func (r *faultRig) enqueue(n int) {
	r.t.Helper()
	r.mu.Lock()
	first := r.next
	r.next += n
	r.mu.Unlock()
	jobs := make([]*jobv1.Job, 0, n)
	for i := first; i < first+n; i++ {
		jobs = append(jobs, faultJob(i))
	}
	res, err := r.mq.EnqueueMany(context.Background(), jobs)
	if err != nil {
		r.t.Fatalf("enqueue: %v", err)
	}
	r.mu.Lock()
	for i, x := range res {
		r.ids[x.ID] = jobs[i].MessageID
	}
	r.mu.Unlock()
}

// waitAccepted waits until at least n jobs are accepted.
func (r *faultRig) waitAccepted(n int64, timeout time.Duration) {
	r.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		st, err := r.src.Stats(context.Background())
		if err == nil && st.Accepted >= n {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("fewer than %d jobs accepted within %s: %+v, %v", n, timeout, st, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// measure stops the workers, counts the run and logs its Measure line.
func (r *faultRig) measure(fault string, recovered, drained time.Duration) faulttest.Measure {
	r.t.Helper()
	r.stopWorkers()
	m, _, err := faulttest.Tally(context.Background(), r.src, fault, r.ids, faulttest.Sends(r.smtp.Messages()))
	if err != nil {
		r.t.Fatal(err)
	}
	m.Recover, m.Drain = recovered, drained
	r.t.Log(m.String())
	return m
}

// checkNoneTwiceNoneLost is what every fault test asks: no message sent
// twice, no job lost, every job finished.
func checkNoneTwiceNoneLost(t *testing.T, m faulttest.Measure) {
	t.Helper()
	if m.SentTwice != 0 {
		t.Errorf("%d jobs sent twice, want none", m.SentTwice)
	}
	if m.Lost != 0 {
		t.Errorf("%d jobs lost, want none", m.Lost)
	}
	if m.Unfinished != 0 {
		t.Errorf("%d jobs unfinished at the end, want none", m.Unfinished)
	}
}

// checkAllSentOnceUnspent asks that every job was accepted on its first
// attempt and sent once: the fault spent no attempt (issue 10, point 1).
func checkAllSentOnceUnspent(t *testing.T, m faulttest.Measure, waitsFor string) {
	t.Helper()
	checkNoneTwiceNoneLost(t, m)
	if m.Accepted != m.Jobs || m.SentOnce != m.Jobs {
		t.Errorf("%d of %d jobs accepted and %d sent once, want all (failed %v, delivery_unknown %v); %s",
			m.Accepted, m.Jobs, m.SentOnce, m.Failed, m.DeliveryUnknown, waitsFor)
	}
	if m.Spent != 0 {
		t.Errorf("%d accepted jobs took more than one attempt, want none: the fault spent attempts; %s", m.Spent, waitsFor)
	}
}

// TestFaultSMTPRestart stops the SMTP server for 5 seconds in the middle of
// a steady stream of jobs (a graceful stop: new connections are refused,
// the sessions in flight end), then starts it again on the same port. An
// outage spends no attempt: every job is accepted on its first attempt
// (JobRow.Attempt 1), sent once, none lost (issue 10, points 1 and 11).
func TestFaultSMTPRestart(t *testing.T) {
	if os.Getenv(envFaultRole) == "worker" {
		faultWorker(t)
		return
	}
	r := newFaultRig(t)
	gate := faulttest.NewGate(t, r.smtp.Addr())
	r.startWorkers(2, faultWorkerSpec{policy: mailqueue.RedeliveredDeliveryUnknown, lease: 5 * time.Second, conc: 4}, gate.Port(), "")

	// 5 jobs every 100 ms for 8 s; the server is down from 2 s to 7 s.
	const ticks, per, downAt, upAt = 80, 5, 20, 70
	var watch *faulttest.Watch
	start := time.Now()
	for tick := 0; tick < ticks; tick++ {
		switch tick {
		case downAt:
			gate.Stop()
		case upAt:
			if err := gate.Open(); err != nil {
				t.Fatal(err)
			}
			watch = faulttest.StartWatch(r.src)
		}
		r.enqueue(per)
		time.Sleep(time.Until(start.Add(time.Duration(tick+1) * 100 * time.Millisecond)))
	}
	recovered, drained, _ := watch.Wait(ticks*per, 30*time.Second)
	m := r.measure("smtp-restart (5s down, 2 workers x 4)", recovered, drained)
	checkAllSentOnceUnspent(t, m, "an outage must spend no attempt (mail.ErrUnavailable, the circuit breaker)")
}

// TestFaultRedisRestart kills the queue's redis-server (SIGKILL, with
// --appendonly yes --appendfsync always, so that nothing it acknowledged is
// lost) while sends are in flight, and starts it again on the same port 2
// seconds later. No job is lost, none sent twice, and a blip of 2 s makes
// no delivery_unknown: the settles that failed are retried (issue 10,
// points 4 and 11).
func TestFaultRedisRestart(t *testing.T) {
	if os.Getenv(envFaultRole) == "worker" {
		faultWorker(t)
		return
	}
	r := newFaultRig(t, "--appendonly", "yes", "--appendfsync", "always")
	// SMTP takes no idempotency key: a run again after a run whose settle
	// was lost is of unknown delivery, never a second send.
	r.startWorkers(2, faultWorkerSpec{policy: mailqueue.RedeliveredDeliveryUnknown, lease: 9 * time.Second, conc: 8, delay: 30 * time.Millisecond},
		r.smtp.Port(), "")
	const jobs = 600
	for i := 0; i < jobs/100; i++ {
		r.enqueue(100)
	}
	r.waitAccepted(100, 20*time.Second)
	r.redis.Kill()
	time.Sleep(2 * time.Second)
	if err := r.redis.Start(); err != nil {
		t.Fatal(err)
	}
	recovered, drained, _ := faulttest.StartWatch(r.src).Wait(jobs, 30*time.Second)
	m := r.measure("redis-restart (SIGKILL, AOF always, 2s down, 2 workers x 8)", recovered, drained)
	checkNoneTwiceNoneLost(t, m)
	if m.Unknown() != 0 {
		t.Errorf("%d jobs of unknown delivery (%v) from a blip of 2 s, want none (settles retried through a blip; the leases of reserves whose answer was lost given back)", m.Unknown(), m.DeliveryUnknown)
	}
	if m.FailedAll() != 0 {
		t.Errorf("%d jobs failed (%v), want none", m.FailedAll(), m.Failed)
	}
}

// TestFaultFullRedis fills the idempotency store's redis-server (maxmemory
// small, maxmemory-policy noeviction) until its writes answer OOM, runs
// jobs through IdempotencyTransport with the Redis store for 4 seconds,
// then frees memory (CONFIG SET maxmemory 0). The store's failure spends no
// attempt: every job is accepted on its first attempt and sent once when
// memory is freed (issue 10, points 1 and 11). The queue is on a
// redis-server of its own, not full: a full queue cannot be reserved from
// at all, and that spends nothing.
func TestFaultFullRedis(t *testing.T) {
	if os.Getenv(envFaultRole) == "worker" {
		faultWorker(t)
		return
	}
	r := newFaultRig(t)
	idem := faulttest.StartRedis(t, "--maxmemory-policy", "noeviction")
	ic := idem.Client()
	ctx := context.Background()
	fillRedis(t, ic)

	r.startWorkers(2, faultWorkerSpec{idem: true, policy: mailqueue.RedeliveredSend, lease: 5 * time.Second, conc: 4}, r.smtp.Port(), idem.Addr())
	const jobs = 200
	r.enqueue(jobs)
	time.Sleep(4 * time.Second)
	if err := ic.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	recovered, drained, _ := faulttest.StartWatch(r.src).Wait(jobs, 30*time.Second)
	m := r.measure("full-redis (idempotency store OOM 4s, 2 workers x 4)", recovered, drained)
	checkAllSentOnceUnspent(t, m, "an IdempotencyTransport store failure must spend no attempt")
}

// fillRedis sets maxmemory a little above what the server uses and writes
// until a write answers OOM, then checks that a SET NX (the store's
// reserve) answers OOM too.
func fillRedis(t *testing.T, c *goredis.Client) {
	t.Helper()
	ctx := context.Background()
	used, err := c.Info(ctx, "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	var usedBytes int64
	for _, line := range bytes.Split([]byte(used), []byte("\r\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("used_memory:")); ok {
			usedBytes, _ = strconv.ParseInt(string(v), 10, 64)
		}
	}
	if usedBytes == 0 {
		t.Fatalf("no used_memory in INFO memory")
	}
	if err := c.ConfigSet(ctx, "maxmemory", strconv.FormatInt(usedBytes+2<<20, 10)).Err(); err != nil {
		t.Fatal(err)
	}
	// Large values first, then small ones: a large write is refused while
	// its own bytes are counted, before the server is truly full.
	i := 0
	for _, size := range []int{16 << 10, 1 << 10, 64} {
		blob := bytes.Repeat([]byte("x"), size)
		for ; ; i++ {
			err := c.Set(ctx, fmt.Sprintf("fill:%d", i), blob, 0).Err()
			if err != nil && strings.Contains(err.Error(), "OOM") {
				break
			}
			if err != nil {
				t.Fatalf("fill: %v", err)
			}
			if i > 100000 {
				t.Fatalf("%d values written and no OOM: maxmemory is not in force", i)
			}
		}
	}
	if err := c.SetNX(ctx, "probe", "R", time.Minute).Err(); err == nil {
		t.Fatalf("SET NX succeeded on the full server")
	}
}

// TestFaultWorkerStopped stops a worker (SIGSTOP) right after one of its
// sends returned and before it settled, for three times its lease, then
// continues it (SIGCONT), with either protection against a blind second
// send: IdempotencyTransport with the Redis store and RedeliveredSend, or
// the delivery_unknown policy over bare SMTP (issue 10, points 5 and 11).
// Every job is sent once, none twice, none lost, each accepted or of
// unknown delivery.
//
// Alone, the stopped worker is the only run of its job: no other run took
// it meanwhile, so its late settle stands (fence by the token, not the
// clock) and no job is redelivered nor of unknown delivery. With a second
// worker running ("takeover"), that one takes the job once the lease runs
// out: the job may end of unknown delivery, but is never sent again.
func TestFaultWorkerStopped(t *testing.T) {
	if os.Getenv(envFaultRole) == "worker" {
		faultWorker(t)
		return
	}
	for _, tc := range []struct {
		name     string
		spec     faultWorkerSpec
		takeover bool
	}{
		{"idempotency", faultWorkerSpec{idem: true, policy: mailqueue.RedeliveredSend}, false},
		{"delivery_unknown", faultWorkerSpec{policy: mailqueue.RedeliveredDeliveryUnknown}, false},
		{"idempotency+takeover", faultWorkerSpec{idem: true, policy: mailqueue.RedeliveredSend}, true},
		{"delivery_unknown+takeover", faultWorkerSpec{policy: mailqueue.RedeliveredDeliveryUnknown}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newFaultRig(t)
			const lease, jobs = time.Second, 30
			spec := tc.spec
			spec.lease, spec.conc, spec.stopAt = lease, 1, 10
			w := r.startWorkers(1, spec, r.smtp.Port(), "")[0]
			workers := "1 worker x 1"
			if tc.takeover {
				other := spec
				other.stopAt = 0
				r.startWorkers(1, other, r.smtp.Port(), "")
				workers = "2 workers x 1"
			}
			r.enqueue(jobs)
			if err := r.c.BLPop(context.Background(), 20*time.Second, faultPrefix+":fault:paused").Err(); err != nil {
				t.Fatalf("the worker never reached its 10th send: %v", err)
			}
			if err := w.Process.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			time.Sleep(3 * lease)
			if err := w.Process.Signal(syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
			recovered, drained, _ := faulttest.StartWatch(r.src).Wait(jobs, 15*time.Second)
			m := r.measure(fmt.Sprintf("worker-sigstop/%s (stopped after a send for 3s, lease 1s, %s)", tc.name, workers), recovered, drained)
			checkNoneTwiceNoneLost(t, m)
			if m.SentOnce != m.Jobs {
				t.Errorf("%d of %d jobs sent once, want all", m.SentOnce, m.Jobs)
			}
			if m.Accepted+m.Unknown() != m.Jobs {
				t.Errorf("%d accepted and %d of unknown delivery of %d jobs (failed %v), want every job one or the other", m.Accepted, m.Unknown(), m.Jobs, m.Failed)
			}
			if !tc.takeover && (m.Unknown() != 0 || m.Redelivered != 0) {
				t.Errorf("%d jobs of unknown delivery (%v) and %d redelivered, want none: no other run took the job, so its late settle stands (fenced by the token alone, the extend included)",
					m.Unknown(), m.DeliveryUnknown, m.Redelivered)
			}
		})
	}
}

// faultWorker is a worker child: it runs a worker of the environment's
// config until SIGTERM.
func faultWorker(t *testing.T) {
	faulttest.ExitWithParent()
	env := func(k string) string { return os.Getenv(k) }
	dur := func(k string) time.Duration {
		d, err := time.ParseDuration(env(k))
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		return d
	}
	num := func(k string) int {
		n, err := strconv.Atoi(env(k))
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		return n
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	c := goredis.NewClient(&goredis.Options{Addr: env(envFaultRedis), PoolSize: 32})
	defer func() { _ = c.Close() }()
	ctx := context.Background()
	q, err := redisdriver.Open(ctx, redisdriver.Options{Client: c, Prefix: faultPrefix, LeaseDuration: dur(envFaultLease), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	mq, err := mailqueue.New(mailqueue.Config{Driver: q, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	st, err := smtp.New(smtp.Config{Host: "127.0.0.1", Port: num(envFaultSMTP), TLS: smtp.TLSNone, HELO: "worker.mailer.test", Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var tr mail.Transport = &faultTransport{inner: st, c: c, delay: dur(envFaultDelay), stopAt: int32(num(envFaultStopAt))}
	if a := env(envFaultIdem); a != "" {
		ic := goredis.NewClient(&goredis.Options{Addr: a, PoolSize: 32})
		defer func() { _ = ic.Close() }()
		if tr, err = idempotency.New(tr, redisdriver.NewIdempotencyStore(ic, faultPrefix), idempotency.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	w, err := mq.NewWorker(mailqueue.WorkerConfig{
		Transport: tr, Concurrency: num(envFaultConc), Redelivered: mailqueue.RedeliveredPolicy(env(envFaultPolicy)),
		Backoff: func(int) time.Duration { return faultBackoff },
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	sig, stop := signal.NotifyContext(ctx, syscall.SIGTERM)
	defer stop()
	c.RPush(ctx, faultPrefix+":fault:ready", strconv.Itoa(os.Getpid()))
	<-sig.Done()
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := w.Close(cctx); err != nil {
		t.Logf("close: %v", err)
	}
}

// faultTransport is the worker's SMTP transport with the test's hooks: a
// wait before each send (latency, so that sends are in flight when a fault
// strikes), and after the stopAt-th send returned, a word to the test
// ("paused", for its SIGSTOP) and a wait of a second before the receipt
// goes back: a send finished, not yet settled, and time enough for the
// test to stop the process there.
type faultTransport struct {
	inner  mail.Transport
	c      *goredis.Client
	delay  time.Duration
	stopAt int32
	n      atomic.Int32
}

func (f *faultTransport) Send(ctx context.Context, msg *mail.Message) (mail.Receipt, error) {
	if f.delay > 0 {
		time.Sleep(f.delay)
	}
	rc, err := f.inner.Send(ctx, msg)
	if f.stopAt > 0 && f.n.Add(1) == f.stopAt {
		f.c.RPush(context.Background(), faultPrefix+":fault:paused", msg.IdempotencyKey)
		time.Sleep(time.Second)
	}
	return rc, err
}
