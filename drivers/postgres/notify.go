package postgres

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/alexify/mailer/gen/codes"
)

// The waits of the LISTEN connection after it broke: 100 ms, doubling up
// to 5 s, so that a restarted server is listened to again within seconds.
const (
	listenRetryBase = 100 * time.Millisecond
	listenRetryMax  = 5 * time.Second
)

// notifier fans the NOTIFY wake-ups of the queue's channel and its timer
// out to the runners that listen (polling.Notifier), and prunes while at
// least one listens.
type notifier struct {
	src *Source

	mu      sync.Mutex
	subs    map[chan<- struct{}]struct{}
	stop    context.CancelFunc
	done    sync.WaitGroup
	timer   *time.Timer
	timerAt time.Time
	recheck *time.Timer // the reserve once more NotifyWindow after a notification; nil when none is armed
}

// Notify registers wake and, while at least one runner listens, LISTENs
// on the queue's channel on a connection of its own and prunes the jobs
// whose retention ended; see polling.Notifier.
func (s *Source) Notify(wake chan<- struct{}) (stop func()) {
	n := &s.n
	n.mu.Lock()
	if n.subs == nil {
		n.subs = map[chan<- struct{}]struct{}{}
	}
	n.subs[wake] = struct{}{}
	if n.stop == nil {
		ctx, cancel := context.WithCancel(context.Background())
		n.stop = cancel
		n.done.Add(2)
		go n.listen(ctx)
		go n.prune(ctx)
	}
	n.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			n.mu.Lock()
			delete(n.subs, wake)
			last := len(n.subs) == 0 && n.stop != nil
			if last {
				n.stop()
				n.stop = nil
				if n.timer != nil {
					n.timer.Stop()
					n.timer = nil
				}
				if n.recheck != nil {
					n.recheck.Stop()
					n.recheck = nil
				}
			}
			n.mu.Unlock()
			if last {
				n.done.Wait()
			}
		})
	}
}

// listen holds a connection LISTENing on the queue's channel until ctx is
// done, connecting again after a break (a restart of the server): each
// notification wakes the runners, at once or after the delay it carries
// (µs until the job is due); a new connection wakes them too, since a
// notification may have been missed meanwhile.
func (n *notifier) listen(ctx context.Context) {
	defer n.done.Done()
	wait := listenRetryBase
	for ctx.Err() == nil {
		err := n.listenOnce(ctx, func() { wait = listenRetryBase })
		if ctx.Err() != nil {
			return
		}
		n.src.log.Warn(string(codes.QueueListenFailed), "reason", "the LISTEN connection broke; the idle workers poll until it is back", "retry_in", wait, "err", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		wait = min(2*wait, listenRetryMax)
	}
}

// listenOnce listens on one connection until it breaks or ctx is done.
func (n *notifier) listenOnce(ctx context.Context, listening func()) error {
	pc, err := n.src.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// The connection leaves the pool: LISTEN belongs to it alone.
	conn := pc.Hijack()
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{n.src.channel()}.Sanitize()); err != nil {
		return err
	}
	listening()
	n.wakeAll()
	for {
		note, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		d, err := strconv.ParseInt(note.Payload, 10, 64)
		if err != nil || d <= 0 {
			n.wakeAll()
			n.wakeAgain()
			continue
		}
		n.wakeIn(time.Duration(d) * time.Microsecond)
	}
}

// prune prunes every PruneInterval until ctx is done.
func (n *notifier) prune(ctx context.Context) {
	defer n.done.Done()
	t := time.NewTicker(n.src.opts.PruneInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := n.src.Prune(ctx); err != nil && ctx.Err() == nil {
			n.src.log.Warn(string(codes.QueuePruneFailed), "reason", "pruning the jobs whose retention ended", "err", err)
		}
	}
}

// Prune deletes the finished jobs of the queue whose retention ended (on
// the database's clock), PruneBatch rows a statement, each statement its
// own transaction, so that pruning never holds many locks nor blocks a
// reserve (it skips the rows others hold). One process at a time prunes a
// queue: Prune returns 0 at once when another holds the queue's advisory
// lock. A worker calls it every PruneInterval; the jobs whose retention
// ended are forgotten by every operation before they are pruned.
func (s *Source) Prune(ctx context.Context) (int, error) {
	pc, err := s.pool.Acquire(ctx)
	if err != nil {
		return 0, fmt.Errorf("postgres: prune: %w", err)
	}
	defer pc.Release()
	key := lockKey("prune", s.QueueName())
	var got bool
	if err := pc.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", key).Scan(&got); err != nil {
		return 0, fmt.Errorf("postgres: prune: %w", err)
	}
	if !got {
		return 0, nil
	}
	defer func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, err := pc.Exec(uctx, "SELECT pg_advisory_unlock($1)", key); err != nil {
			// A lock that cannot be given back dies with its connection.
			_ = pc.Conn().Close(uctx)
		}
	}()
	total := 0
	for {
		ct, err := pc.Exec(ctx, s.q.prune, s.us(), s.opts.Queue, s.opts.PruneBatch)
		if err != nil {
			return total, fmt.Errorf("postgres: prune: %w", err)
		}
		total += int(ct.RowsAffected())
		if ct.RowsAffected() < int64(s.opts.PruneBatch) {
			return total, nil
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

// wakeAgain wakes the runners once more NotifyWindow from now (a
// wake-up armed for sooner is moved): the enqueues of the window after the
// notification's sent no NOTIFY of their own (Source.notifyNow).
func (n *notifier) wakeAgain() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.subs) == 0 {
		return
	}
	if n.recheck != nil {
		n.recheck.Stop()
	}
	var t *time.Timer
	t = time.AfterFunc(NotifyWindow, func() {
		n.mu.Lock()
		if n.recheck == t {
			n.recheck = nil
		}
		n.mu.Unlock()
		n.wakeAll()
	})
	n.recheck = t
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
