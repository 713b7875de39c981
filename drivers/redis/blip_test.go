package redis

import (
	"context"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/alexify/mailer/drivers/redis/internal/redistest"
	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/mail"
	"github.com/alexify/mailer/mail/idempotency"
	"github.com/alexify/mailer/mailqueue"
)

// cutProxy forwards TCP connections to a Redis server, and can be cut: its
// connections dropped and new ones closed at once, as a server that
// restarts is to its clients.
type cutProxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup

	mu    sync.Mutex
	down  bool
	conns []net.Conn
}

func startProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() {
		_ = ln.Close()
		p.cut()
		p.wg.Wait()
	})
	return p
}

func (p *cutProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.down {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(c, s)
		go p.pipe(s, c)
	}
}

func (p *cutProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	_, _ = io.Copy(dst, src)
	_ = dst.Close()
	_ = src.Close()
}

// cut drops every connection and refuses new ones until restore.
func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

func (p *cutProxy) restore() {
	p.mu.Lock()
	p.down = false
	p.mu.Unlock()
}

// TestSettleThroughABlip: the connection to Redis drops while a run
// sends and comes back a moment later; the run's settle is tried again
// until the server answers, and the job is accepted on its first attempt,
// never redelivered (issue 10, point 4).
func TestSettleThroughABlip(t *testing.T) {
	redistest.Standalone(t) // skips, or fails, without the server
	p := startProxy(t, redistest.Addr())
	c := goredis.NewClient(&goredis.Options{Addr: p.ln.Addr().String(), MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	rec := &logRecorder{}
	src := newSource(t, c, Options{Logger: slog.New(rec)})
	q, err := Open(context.Background(), Options{Client: c, Prefix: src.opts.Prefix, Logger: slog.New(rec)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Enqueue(ctx, []mailqueue.NewJob{testJob("j1")}); err != nil {
		t.Fatal(err)
	}
	started, release := make(chan struct{}), make(chan struct{})
	r, err := q.Work(mailqueue.HandlerFunc(func(context.Context, *mailqueue.Lease) mailqueue.Outcome {
		close(started)
		<-release
		return mailqueue.Outcome{Action: mailqueue.Ack}
	}), mailqueue.WorkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	p.cut()
	close(release)
	retried := func() bool { return rec.count(string(codes.QueueSettleFailed), slog.LevelDebug, "") > 0 }
	waitUntil(t, "the settle failed and is tried again", retried)
	p.restore()
	waitUntil(t, "the job is accepted", func() bool {
		j, err := src.Get(ctx, "j1")
		return err == nil && j.State == mailqueue.JobAccepted
	})
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	j, _ := src.Get(ctx, "j1")
	if j.Attempt != 1 || j.Redeliveries != 0 {
		t.Errorf("after the blip: attempt %d, %d redeliveries; want 1, 0", j.Attempt, j.Redeliveries)
	}
	if n := rec.count(string(codes.QueueSettleFailed), slog.LevelError, ""); n != 0 {
		t.Errorf("queue.settle_failed logged %d times at error: the settle was given up", n)
	}
}

// countingStore counts the Completes of an IdempotencyStore, and those
// that failed.
type countingStore struct {
	*IdempotencyStore
	completes, failed atomic.Int32
}

func (s *countingStore) Complete(ctx context.Context, key, token string, r mail.Receipt, ttl time.Duration) (bool, error) {
	s.completes.Add(1)
	ok, err := s.IdempotencyStore.Complete(ctx, key, token, r, ttl)
	if err != nil {
		s.failed.Add(1)
	}
	return ok, err
}

// cuttingTransport accepts each message, cutting the proxy as it does: the
// connection to Redis drops between the send and its receipt's Complete.
type cuttingTransport struct {
	p     *cutProxy
	sends atomic.Int32
}

func (c *cuttingTransport) Send(context.Context, *mail.Message) (mail.Receipt, error) {
	c.sends.Add(1)
	c.p.cut()
	return mail.Receipt{Category: mail.Accepted, Code: 250}, nil
}

// TestCompleteThroughABlip: the connection to Redis drops between a send
// and the Complete of its receipt; Complete is tried again until the
// server answers, so the key holds the accepted receipt and a send again
// answers it, where it was left reserved (a delivery_unknown to come).
func TestCompleteThroughABlip(t *testing.T) {
	redistest.Standalone(t)
	p := startProxy(t, redistest.Addr())
	c := goredis.NewClient(&goredis.Options{Addr: p.ln.Addr().String(), MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	store := &countingStore{IdempotencyStore: NewIdempotencyStore(c, redistest.Prefix(t))}
	t.Cleanup(func() { _ = store.Forget(context.Background(), "job-1") })
	inner := &cuttingTransport{p: p}
	tr, err := idempotency.New(inner, store, idempotency.Options{})
	if err != nil {
		t.Fatal(err)
	}
	restored := make(chan struct{})
	go func() {
		defer close(restored)
		for store.failed.Load() < 1 {
			time.Sleep(time.Millisecond)
		}
		p.restore()
	}()
	msg := &mail.Message{From: "a@example.com", To: []string{"b@example.com"}, Subject: "Hi", Text: "Hi", IdempotencyKey: "job-1"}
	r, err := tr.Send(ctx, msg)
	<-restored
	if err != nil || r.Category != mail.Accepted {
		t.Fatalf("Send = %+v, %v; want accepted", r, err)
	}
	if n := store.completes.Load(); n < 2 || store.failed.Load() < 1 {
		t.Errorf("%d tries of Complete; want it tried again after the cut", n)
	}
	inner.p = &cutProxy{} // the send again must not reach the transport; if it does, it cuts nothing
	if r, err := tr.Send(ctx, msg); err != nil || r.Category != mail.Accepted || inner.sends.Load() != 1 {
		t.Errorf("the send again: %+v, %v, %d sends; want the stored receipt, 1 send", r, err, inner.sends.Load())
	}
}
