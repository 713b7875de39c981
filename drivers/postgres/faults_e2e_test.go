//go:build linux

package postgres_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	netmail "net/mail"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/alexify/mailer/drivers/postgres"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/internal/pgtest"
	"github.com/alexify/mailer/mail"
	"github.com/alexify/mailer/mail/idempotency"
	"github.com/alexify/mailer/mail/smtp"
	"github.com/alexify/mailer/mail/smtptest"
	"github.com/alexify/mailer/mailqueue"
)

// The end-to-end fault test of the outbox, with processes (this test
// binary run again): a producer committing jobs in transactions beside an
// order row each, one in five rolled back; two workers sending to an SMTP
// server on loopback (mail/smtptest) through IdempotencyTransport on the
// driver's store; worker A killed with SIGKILL while its sends are in
// flight; the PostgreSQL cluster (one of the test's own, initdb on a free
// port) killed and started again mid-run. The children are configured by
// the environment below.
const (
	envPGFaultRole   = "MAILER_PGFAULT_ROLE" // "worker" or "producer" in a child
	envPGFaultURL    = "MAILER_PGFAULT_URL"  // the cluster's URL
	envPGFaultSMTP   = "MAILER_PGFAULT_SMTP" // the SMTP server's port on 127.0.0.1
	envPGFaultJobs   = "MAILER_PGFAULT_JOBS" // the producer's jobs
	pgFaultSchema    = "fault"
	pgFaultLease     = 5 * time.Second
	pgFaultSendDelay = 30 * time.Millisecond
)

// TestFaultsEndToEnd: every committed job ends accepted or
// delivery_unknown, none is sent twice, none is lost, no rolled-back job is
// sent, and the workers and the producer resume by themselves after the
// restart of PostgreSQL.
func TestFaultsEndToEnd(t *testing.T) {
	switch os.Getenv(envPGFaultRole) {
	case "worker":
		pgFaultWorker(t)
		return
	case "producer":
		pgFaultProducer(t)
		return
	}
	if testing.Short() {
		t.Skip("starts a PostgreSQL cluster and worker processes; -short")
	}
	ctx := context.Background()
	cl := pgtest.StartCluster(t)
	pool := pgtest.PoolOf(t, cl.URL())
	if err := postgres.MigrateSchema(ctx, pool, pgFaultSchema); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "CREATE TABLE fault.orders (key text PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	ops, err := postgres.Open(ctx, postgres.Options{Pool: pool, Schema: pgFaultSchema})
	if err != nil {
		t.Fatal(err)
	}
	srv := smtptest.Start(t, smtptest.Script{})
	env := []string{envPGFaultURL + "=" + cl.URL(), envPGFaultSMTP + "=" + strconv.Itoa(srv.Port()), envPGFaultJobs + "=300"}
	a := startChild(t, "worker", env)
	b := startChild(t, "worker", env)
	a.waitLine(t, "READY")
	b.waitLine(t, "READY")
	producer := startChild(t, "producer", env)

	sent := func() int { return len(srv.Messages()) }
	waitFor(t, "30 messages sent", 60*time.Second, func() bool { return sent() >= 30 })
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	t.Logf("worker A killed after %d messages", sent())
	waitFor(t, "90 messages sent", 60*time.Second, func() bool { return sent() >= 90 })
	restarted := time.Now()
	if err := cl.Restart(); err != nil {
		t.Fatal(err)
	}
	t.Logf("PostgreSQL restarted in %v, after %d messages", time.Since(restarted), sent())
	before := sent()
	waitFor(t, "a message sent after the restart", 60*time.Second, func() bool { return sent() > before })
	t.Logf("sending again %v after the restart began", time.Since(restarted))

	if err := producer.wait(120 * time.Second); err != nil {
		t.Fatalf("the producer: %v\n%s", err, producer.out.String())
	}
	committed, rolledBack := producer.outcomes()
	waitFor(t, "every job finished", 120*time.Second, func() bool {
		st, err := ops.Stats(ctx)
		return err == nil && st.Queued == 0 && st.Running == 0 && st.Accepted+st.DeliveryUnknown+st.Failed >= int64(len(committed))
	})
	b.stop(t)

	sends := map[string]int{}
	for _, m := range srv.Messages() {
		msg, err := netmail.ReadMessage(bytes.NewReader(m.Data))
		if err != nil {
			t.Fatalf("an unreadable message: %v", err)
		}
		sends[msg.Header.Get("Message-Id")]++
	}
	var orders int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM fault.orders").Scan(&orders); err != nil {
		t.Fatal(err)
	}
	if orders != len(committed) {
		t.Errorf("%d orders committed, the producer told %d", orders, len(committed))
	}
	accepted, unknown := 0, 0
	for id, mid := range committed {
		row, err := ops.Get(ctx, id)
		if err != nil {
			t.Errorf("committed job %s: %v (lost)", id, err)
			continue
		}
		switch {
		case sends[mid] > 1:
			t.Errorf("committed job %s sent %d times", id, sends[mid])
		case row.State == mailqueue.JobAccepted:
			accepted++
			if sends[mid] != 1 {
				t.Errorf("accepted job %s sent %d times, want once", id, sends[mid])
			}
		case row.State == mailqueue.JobDeliveryUnknown:
			unknown++
		default:
			t.Errorf("committed job %s ended %s (%s: %s), want accepted or delivery_unknown", id, row.State, row.Code, row.Reason)
		}
	}
	for id, mid := range rolledBack {
		if sends[mid] != 0 {
			t.Errorf("rolled-back job %s sent %d times", id, sends[mid])
		}
		if _, err := ops.Get(ctx, id); err == nil {
			t.Errorf("rolled-back job %s is stored", id)
		}
	}
	t.Logf("%d jobs committed (%d accepted, %d delivery_unknown), %d rolled back, %d messages sent",
		len(committed), accepted, unknown, len(rolledBack), len(srv.Messages()))
	if len(committed) < 200 || len(rolledBack) < 40 {
		t.Errorf("%d committed and %d rolled back, want the producer's 240 and 60", len(committed), len(rolledBack))
	}
}

func waitFor(t *testing.T, what string, d time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// child is a child process of the test, its output kept.
type child struct {
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan error
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func startChild(t *testing.T, role string, env []string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFaultsEndToEnd$", "-test.v", "-test.count=1")
	cmd.Env = append(append(os.Environ(), envPGFaultRole+"="+role), env...)
	c := &child{cmd: cmd, out: &lockedBuffer{}, done: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = c.out, c.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		err := <-c.done // the child killed: its exit status tells nothing
		c.done <- err
		if t.Failed() {
			s := c.out.String()
			if len(s) > 4000 {
				s = s[len(s)-4000:]
			}
			t.Logf("%s %d (the end of its output):\n%s", role, cmd.Process.Pid, s)
		}
	})
	return c
}

func (c *child) waitLine(t *testing.T, line string) {
	t.Helper()
	waitFor(t, "the child says "+line, 30*time.Second, func() bool { return strings.Contains(c.out.String(), line+"\n") })
}

func (c *child) wait(d time.Duration) error {
	select {
	case err := <-c.done:
		c.done <- err
		return err
	case <-time.After(d):
		return fmt.Errorf("still running after %v", d)
	}
}

// stop asks the child to stop (SIGTERM) and waits for it.
func (c *child) stop(t *testing.T) {
	t.Helper()
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	if err := c.wait(30 * time.Second); err != nil {
		t.Errorf("worker B: %v", err)
	}
}

// outcomes reads the producer's lines: COMMIT or ROLLBACK, the job's id
// and its Message-ID.
func (c *child) outcomes() (committed, rolledBack map[string]string) {
	committed, rolledBack = map[string]string{}, map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(c.out.String()))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 {
			continue
		}
		switch f[0] {
		case "COMMIT":
			committed[f[1]] = f[2]
		case "ROLLBACK":
			rolledBack[f[1]] = f[2]
		}
	}
	return committed, rolledBack
}

func childPool(t *testing.T) *pgxpool.Pool {
	cfg, err := pgxpool.ParseConfig(os.Getenv(envPGFaultURL))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 16
	p, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func childLog() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// pgFaultProducer commits the jobs one transaction each, beside the
// job's order row; one in five is rolled back after its enqueue. A
// transaction that fails (the database restarting) is tried again, with
// the same key: an enqueue that did commit is then a duplicate, and the
// order row is there already.
func pgFaultProducer(t *testing.T) {
	ctx := context.Background()
	pool := childPool(t)
	defer pool.Close()
	log := childLog()
	pq, err := postgres.Open(ctx, postgres.Options{Pool: pool, Schema: pgFaultSchema, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	q, err := mailqueue.New(mailqueue.Config{Driver: pq, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(os.Getenv(envPGFaultJobs))
	for i := range n {
		key := fmt.Sprintf("order-%d", i)
		rollback := i%5 == 4
		job := &jobv1.Job{
			Kind: jobv1.KindContent, Subject: fmt.Sprintf("Order %d", i),
			Content: &jobv1.Content{Text: fmt.Sprintf("Your order %d is confirmed.", i)},
			From:    "Shop <shop@example.com>", To: []string{"ada@example.com"}, IdempotencyKey: key,
		}
		for try := 0; ; try++ {
			if try == 600 {
				t.Fatalf("order %d: no transaction went through in a minute", i)
			}
			res, err := produceOne(ctx, pool, q, key, job, rollback)
			if err != nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			what := "COMMIT"
			if rollback {
				what = "ROLLBACK"
			}
			fmt.Printf("%s %s %s\n", what, res.ID, res.MessageID)
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func produceOne(ctx context.Context, pool *pgxpool.Pool, q *mailqueue.Queue, key string, job *jobv1.Job, rollback bool) (mailqueue.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	tx, err := pool.Begin(ctx)
	if err != nil {
		return mailqueue.Result{}, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "INSERT INTO fault.orders (key) VALUES ($1) ON CONFLICT DO NOTHING", key); err != nil {
		return mailqueue.Result{}, err
	}
	res, err := q.EnqueueTx(ctx, tx, job)
	if err != nil {
		return res, err
	}
	if rollback {
		return res, tx.Rollback(ctx)
	}
	return res, tx.Commit(ctx)
}

// pgFaultWorker runs a worker until SIGTERM: IdempotencyTransport on the
// driver's store in front of SMTP, each send waiting pgFaultSendDelay
// first, so that sends are in flight when the test kills the process.
func pgFaultWorker(t *testing.T) {
	ctx := context.Background()
	pool := childPool(t)
	defer pool.Close()
	log := childLog()
	pq, err := postgres.Open(ctx, postgres.Options{Pool: pool, Schema: pgFaultSchema, LeaseDuration: pgFaultLease, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	q, err := mailqueue.New(mailqueue.Config{Driver: pq, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(os.Getenv(envPGFaultSMTP))
	st, err := smtp.New(smtp.Config{Host: "127.0.0.1", Port: port, TLS: smtp.TLSNone, HELO: "worker.mailer.test", Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	store, err := postgres.OpenIdempotencyStore(ctx, pool, pgFaultSchema)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := idempotency.New(delayed{st}, store, idempotency.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := q.NewWorker(mailqueue.WorkerConfig{Transport: tr, Concurrency: 4,
		Backoff: func(int) time.Duration { return 200 * time.Millisecond }})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	sig, stop := signal.NotifyContext(ctx, syscall.SIGTERM)
	defer stop()
	fmt.Println("READY")
	<-sig.Done()
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := w.Close(cctx); err != nil {
		t.Logf("close: %v", err)
	}
}

// delayed waits pgFaultSendDelay before each send.
type delayed struct{ inner mail.Transport }

func (d delayed) Send(ctx context.Context, m *mail.Message) (mail.Receipt, error) {
	select {
	case <-time.After(pgFaultSendDelay):
	case <-ctx.Done():
		return mail.Receipt{}, ctx.Err()
	}
	return d.inner.Send(ctx, m)
}
