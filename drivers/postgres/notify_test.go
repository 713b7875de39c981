package postgres

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/alexify/mailer/internal/pgtest"
	"github.com/alexify/mailer/mailqueue"
)

// startTimes runs a worker on q whose handler acks at once and tells when
// each job started.
func startTimes(t *testing.T, q *Queue) <-chan time.Time {
	t.Helper()
	started := make(chan time.Time, 100)
	r, err := q.Work(mailqueue.HandlerFunc(func(ctx context.Context, l *mailqueue.Lease) mailqueue.Outcome {
		started <- time.Now()
		return mailqueue.Outcome{Action: mailqueue.Ack}
	}), mailqueue.WorkOptions{Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	return started
}

// openQueue opens a queue in a schema of its own.
func openQueue(t *testing.T, opts Options) *Queue {
	t.Helper()
	p := pgtest.Pool(t)
	opts.Pool = p
	if opts.Schema == "" {
		opts.Schema = newSchema(t, p)
	}
	q, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// TestWakeAtCommit: with a poll of a minute, a job committed in another
// process's transaction (here: another pool, so that no local wake-up
// helps) starts within milliseconds of the commit, woken by the NOTIFY the
// enqueue sent in its transaction; a job scheduled 300 ms later starts
// then, woken by the timer, not by the poll.
func TestWakeAtCommit(t *testing.T) {
	q := openQueue(t, Options{PollInterval: time.Minute})
	started := startTimes(t, q)
	other := pgtest.Pool(t)
	producer, err := OpenSource(ctx, Options{Pool: other, Schema: q.src.opts.Schema})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the worker's first reserve and its LISTEN
	var worst time.Duration
	for i := range 10 {
		tx, err := other.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := producer.EnqueueTx(ctx, tx, []mailqueue.NewJob{testJob("w"+string(rune('a'+i)), i)}); err != nil {
			t.Fatal(err)
		}
		committed := time.Now()
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case at := <-started:
			worst = max(worst, at.Sub(committed))
			t.Logf("job %d: commit to start %v", i, at.Sub(committed))
		case <-time.After(5 * time.Second):
			t.Fatalf("job %d not started 5 s after its commit", i)
		}
	}
	t.Logf("commit to start: at most %v", worst)
	if worst > 250*time.Millisecond {
		t.Errorf("commit to start took up to %v, want a few milliseconds (NOTIFY, not the poll)", worst)
	}
	j := testJob("later", 100)
	j.RunAt = time.Now().Add(300 * time.Millisecond)
	if _, err := producer.Enqueue(ctx, []mailqueue.NewJob{j}); err != nil {
		t.Fatal(err)
	}
	select {
	case at := <-started:
		if late := at.Sub(j.RunAt); late < -50*time.Millisecond || late > 300*time.Millisecond {
			t.Errorf("the scheduled job started %v after it was due, want about 0 (the timer)", late)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the scheduled job did not start")
	}
}

// TestListenReconnects: when the LISTEN connection is cut (its backend
// terminated, as a restart does), the source logs queue.listen_failed,
// listens again, and a job committed after is started at once.
func TestListenReconnects(t *testing.T) {
	q := openQueue(t, Options{PollInterval: time.Minute})
	started := startTimes(t, q)
	time.Sleep(200 * time.Millisecond)
	var n int
	if err := q.src.pool.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE query = $1`,
		"LISTEN "+quoteSchema(q.src.channel())).Scan(&n); err != nil || n != 1 {
		t.Fatalf("terminating the LISTEN connection: %d, %v", n, err)
	}
	time.Sleep(500 * time.Millisecond) // listened again after 100 ms
	other := pgtest.Pool(t)
	producer, err := OpenSource(ctx, Options{Pool: other, Schema: q.src.opts.Schema})
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	if _, err := producer.Enqueue(ctx, []mailqueue.NewJob{testJob("after-cut", 1)}); err != nil {
		t.Fatal(err)
	}
	select {
	case at := <-started:
		if d := at.Sub(before); d > 500*time.Millisecond {
			t.Errorf("the job started %v after its enqueue, want at once", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the job was not started after the LISTEN connection came back")
	}
}

// TestPrune: pruning deletes the finished jobs whose retention ended, in
// batches, under a lock one process holds at a time; the others are kept.
// A worker prunes by itself every PruneInterval, and a failure is logged
// as queue.prune_failed.
func TestPrune(t *testing.T) {
	p := pgtest.Pool(t)
	s := newSource(t, p, Options{PruneBatch: 3, DedupeWindow: time.Minute})
	var jobs []mailqueue.NewJob
	for i := range 10 {
		jobs = append(jobs, testJob("p"+string(rune('a'+i)), i))
	}
	if _, err := s.Enqueue(ctx, jobs); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	ls, err := s.Reserve(ctx, mailqueue.ReserveParams{Limit: 7, LeaseDuration: time.Minute})
	if err != nil || len(ls) != 7 {
		t.Fatalf("Reserve = %d, %v", len(ls), err)
	}
	for _, l := range ls {
		if ok, err := s.Ack(ctx, mailqueue.AckParams{ID: l.ID, Token: l.Token}); !ok || err != nil {
			t.Fatal(ok, err)
		}
	}
	if n, err := s.Prune(ctx); err != nil || n != 0 {
		t.Errorf("Prune within the dedupe window = %d, %v; want 0", n, err)
	}
	s.advance(time.Minute + time.Second)
	// Another process holding the lock: this one prunes nothing.
	conn, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", lockKey("prune", s.QueueName())); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Prune(ctx); err != nil || n != 0 {
		t.Errorf("Prune while another holds the lock = %d, %v; want 0", n, err)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", lockKey("prune", s.QueueName())); err != nil {
		t.Fatal(err)
	}
	conn.Release()
	if n, err := s.Prune(ctx); err != nil || n != 7 {
		t.Errorf("Prune after the dedupe window = %d, %v; want the 7 accepted", n, err)
	}
	var left int
	if err := p.QueryRow(ctx, "SELECT count(*) FROM "+quoteSchema(s.opts.Schema)+".jobs").Scan(&left); err != nil || left != 3 {
		t.Errorf("%d rows left, %v; want the 3 queued", left, err)
	}

	// A worker prunes by itself; a schema gone is a failure it logs.
	w := openQueue(t, Options{PruneInterval: 20 * time.Millisecond})
	var once sync.Once
	stop := w.src.Notify(make(chan struct{}, 1))
	defer once.Do(stop)
	if _, err := p.Exec(ctx, "ALTER TABLE "+quoteSchema(w.src.opts.Schema)+".jobs RENAME TO gone"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	once.Do(stop)
}

// TestNotifyWindow: a burst of jobs due now, each committed in its own
// transaction from eight goroutines of another process (another pool),
// sends at most one NOTIFY every NotifyWindow; the worker, woken by the
// ones sent and reserving once more a window after each, starts every job
// within milliseconds of its commit, not at the poll (a minute here).
func TestNotifyWindow(t *testing.T) {
	q := openQueue(t, Options{PollInterval: time.Minute})
	started := startTimes(t, q)
	other := pgtest.Pool(t)
	producer, err := OpenSource(ctx, Options{Pool: other, Schema: q.src.opts.Schema})
	if err != nil {
		t.Fatal(err)
	}
	// Counts the NOTIFYs the burst sends.
	lc, err := other.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Release()
	if _, err := lc.Exec(ctx, "LISTEN "+quoteSchema(producer.channel())); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the worker's first reserve and its LISTEN
	const goroutines, each = 8, 10
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	begin := time.Now()
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				j := testJob(fmt.Sprintf("burst-%d-%d", g, i), g*each+i)
				j.RunAt = time.Time{}
				tx, err := other.Begin(ctx)
				if err != nil {
					errs <- err
					return
				}
				if _, err := producer.EnqueueTx(ctx, tx, []mailqueue.NewJob{j}); err != nil {
					errs <- err
					return
				}
				if err := tx.Commit(ctx); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	committed := time.Now()
	for i := range goroutines * each {
		select {
		case <-started:
		case <-time.After(5 * time.Second):
			t.Fatalf("%d of %d jobs started 5 s after the last commit", i, goroutines*each)
		}
	}
	if d := time.Since(committed); d > 500*time.Millisecond {
		t.Errorf("the last job started %v after the last commit, want a few milliseconds (NOTIFY and the window's reserve, not the poll)", d)
	}
	notes := 0
	for {
		wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		_, err := lc.Conn().WaitForNotification(wctx)
		cancel()
		if err != nil {
			break
		}
		notes++
	}
	if most := int(committed.Sub(begin)/NotifyWindow) + 1; notes > most || notes == 0 {
		t.Errorf("%d NOTIFYs for %d jobs in %v, want 1 to %d (one a window at most)", notes, goroutines*each, committed.Sub(begin), most)
	}
	t.Logf("%d NOTIFYs for %d jobs in %v", notes, goroutines*each, committed.Sub(begin))
}
