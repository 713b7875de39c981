package mailqueue_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/alexify/mailer/drivers/memory"
	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/mail"
	"github.com/alexify/mailer/mail/idempotency"
	"github.com/alexify/mailer/mail/smtp"
	"github.com/alexify/mailer/mail/smtptest"
	"github.com/alexify/mailer/mailqueue"
)

// outageTransport is what the outage test sends through: a transport, and
// a switch that takes its server down and brings it back.
type outageTransport struct {
	mail.Transport
	setDown func(down bool)
}

// memoryOutage is a memory transport that, while down, answers every send
// with mail.ErrUnavailable, as a transport does whose server cannot be
// reached. With check, it is a mail.Checker too.
func memoryOutage(check bool) func(t *testing.T, h *harness) outageTransport {
	return func(t *testing.T, h *harness) outageTransport {
		var down atomic.Bool
		h.tr.OnSend(func(ctx context.Context, msg *mail.Message) (mail.Receipt, error) {
			if down.Load() {
				r := mail.Receipt{Category: mail.Retryable, Reason: "connecting: connection refused"}
				return r, &mail.Error{Receipt: r, Err: fmt.Errorf("dial tcp 127.0.0.1:25: %w", mail.ErrUnavailable)}
			}
			return mail.Receipt{Category: mail.Accepted, Code: 250}, nil
		})
		var tr mail.Transport = h.tr
		if check {
			tr = checkingTransport{Transport: h.tr, down: &down}
		}
		return outageTransport{Transport: tr, setDown: down.Store}
	}
}

// checkingTransport is a transport with a Check that fails while down.
type checkingTransport struct {
	mail.Transport
	down *atomic.Bool
}

func (c checkingTransport) Check(context.Context) error {
	if c.down.Load() {
		return fmt.Errorf("dial tcp 127.0.0.1:25: %w", mail.ErrUnavailable)
	}
	return nil
}

// smtpOutage is the kit's SMTP transport sending to a real SMTP server on
// loopback (mail/smtptest) through a proxy that, while down, listens on no
// port: every connection is refused.
func smtpOutage(t *testing.T, h *harness) outageTransport {
	srv := smtptest.Start(t, smtptest.Script{})
	p := startProxy(t, srv.Addr())
	tr, err := smtp.New(smtp.Config{Host: "127.0.0.1", Port: p.port, TLS: smtp.TLSNone, HELO: "test.localhost", Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return outageTransport{Transport: refusedIsUnavailable{tr}, setDown: func(down bool) {
		if down {
			p.down()
		} else {
			p.up(t)
		}
	}}
}

// storeOutage is an IdempotencyTransport over the memory transport whose
// store, while down, answers every call as a full Redis does (OOM).
func storeOutage(t *testing.T, h *harness) outageTransport {
	store := &oomStore{Store: idempotency.NewMemoryStore(h.fc)}
	tr, err := idempotency.New(h.tr, store, idempotency.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return outageTransport{Transport: tr, setDown: store.down.Store}
}

// oomStore is an idempotency store that fails every call while down.
type oomStore struct {
	idempotency.Store
	down atomic.Bool
}

var errOOM = errors.New("OOM command not allowed when used memory > 'maxmemory'")

func (s *oomStore) Reserve(ctx context.Context, key, token string, ttl time.Duration) (*idempotency.Entry, error) {
	if s.down.Load() {
		return nil, errOOM
	}
	return s.Store.Reserve(ctx, key, token, ttl)
}

func (s *oomStore) Complete(ctx context.Context, key, token string, r mail.Receipt, ttl time.Duration) (bool, error) {
	if s.down.Load() {
		return false, errOOM
	}
	return s.Store.Complete(ctx, key, token, r, ttl)
}

func (s *oomStore) Release(ctx context.Context, key, token string) (bool, error) {
	if s.down.Load() {
		return false, errOOM
	}
	return s.Store.Release(ctx, key, token)
}

// refusedIsUnavailable marks a refused connection as an outage
// (mail.ErrUnavailable) for an SMTP transport that does not yet say so
// itself, and forwards Check when the transport has one.
type refusedIsUnavailable struct{ mail.Transport }

func (r refusedIsUnavailable) Send(ctx context.Context, msg *mail.Message) (mail.Receipt, error) {
	rc, err := r.Transport.Send(ctx, msg)
	var me *mail.Error
	if err != nil && !errors.Is(err, mail.ErrUnavailable) && errors.Is(err, syscall.ECONNREFUSED) && errors.As(err, &me) {
		return rc, &mail.Error{Receipt: me.Receipt, Err: errors.Join(mail.ErrUnavailable, err)}
	}
	return rc, err
}

func (r refusedIsUnavailable) Check(ctx context.Context) error {
	if c, ok := r.Transport.(mail.Checker); ok {
		err := c.Check(ctx)
		if err != nil && !errors.Is(err, mail.ErrUnavailable) && errors.Is(err, syscall.ECONNREFUSED) {
			err = errors.Join(mail.ErrUnavailable, err)
		}
		return err
	}
	return fmt.Errorf("no Check: %w", errors.ErrUnsupported)
}

// proxy forwards TCP connections on a port of its own to a target; down
// closes its listener and its connections, so the port refuses, and up
// listens on the same port again.
type proxy struct {
	target string
	port   int
	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	p := &proxy{target: target, conns: map[net.Conn]struct{}{}}
	p.listen(t, "127.0.0.1:0")
	p.port = p.ln.Addr().(*net.TCPAddr).Port
	t.Cleanup(func() {
		p.down()
		p.wg.Wait()
	})
	return p
}

func (p *proxy) up(t *testing.T) {
	t.Helper()
	p.listen(t, fmt.Sprintf("127.0.0.1:%d", p.port))
}

func (p *proxy) listen(t *testing.T, addr string) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("proxy: %v", err)
	}
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.forward(c)
		}
	}()
}

func (p *proxy) forward(c net.Conn) {
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	p.mu.Lock()
	p.conns[c], p.conns[s] = struct{}{}, struct{}{}
	p.mu.Unlock()
	p.wg.Add(2)
	pipe := func(dst, src net.Conn) {
		defer p.wg.Done()
		_, _ = io.Copy(dst, src)
		_ = dst.Close()
		_ = src.Close()
		p.mu.Lock()
		delete(p.conns, dst)
		delete(p.conns, src)
		p.mu.Unlock()
	}
	go pipe(c, s)
	go pipe(s, c)
}

func (p *proxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		_ = c.Close()
	}
}

// TestOutageSpendsNoAttempt is issue 10's test of point 1: the transport's
// server is down for 10 minutes of the fake clock under a steady stream of
// jobs (one every 5 seconds, from a minute before the outage to 40 seconds
// after it). No job fails, none spends an attempt (each is accepted on
// its first, Attempt 1 in the audit), the breaker opens and closes once,
// and every job that waited is sent within a few seconds of the server's
// return: the longest wait between two probes (10 s) and a second or two.
func TestOutageSpendsNoAttempt(t *testing.T) {
	const (
		downAt   = time.Minute
		upAt     = downAt + 10*time.Minute
		lastJob  = upAt + 40*time.Second
		every    = 5 * time.Second
		deadline = upAt + 2*time.Minute
	)
	tests := []struct {
		name      string
		transport func(t *testing.T, h *harness) outageTransport
	}{
		{"memory transport, probed with a job", memoryOutage(false)},
		{"memory transport, probed with Check", memoryOutage(true)},
		{"SMTP server on loopback", smtpOutage},
		{"IdempotencyTransport whose store is full", storeOutage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, mailqueue.WorkerConfig{}, memory.Options{})
			ot := tt.transport(t, h)
			// The harness made its worker on the memory transport; make one
			// on the transport of the case.
			ct := &outageCounter{inner: ot.Transport, clockNow: h.fc.Now, start: t0, sent: map[string]time.Duration{}}
			w, err := h.q.NewWorker(mailqueue.WorkerConfig{Transport: ct, Concurrency: 3})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = w.Close(context.Background()) })
			h.w = w
			h.start()

			enqueued := map[string]time.Duration{}
			var ids []string
			at := time.Duration(0)
			for ; at <= deadline; at += time.Second {
				if at == downAt {
					ot.setDown(true)
					ct.down.Store(true)
				}
				if at == upAt {
					ot.setDown(false)
					ct.down.Store(false)
				}
				if at <= lastJob && at%every == 0 {
					j := contentJob()
					j.IdempotencyKey = fmt.Sprintf("outage:%d", at/time.Second)
					id := h.enqueue(j)
					enqueued[id] = at
					ids = append(ids, id)
				}
				waitQuiet(h, w)
				if at > lastJob && statsOf(h).Accepted == int64(len(ids)) {
					break
				}
				h.fc.Advance(time.Second)
			}
			_ = w.Close(context.Background())

			st := statsOf(h)
			if st.Accepted != int64(len(ids)) || st.Failed != 0 || st.DeliveryUnknown != 0 {
				t.Fatalf("%d jobs: %d accepted, %d failed, %d of unknown delivery; want every one accepted (%+v)", len(ids), st.Accepted, st.Failed, st.DeliveryUnknown, st)
			}
			var spent, waited int
			var worst time.Duration
			sent := ct.sentAt()
			for _, id := range ids {
				j := h.job(id)
				if j.Attempt != 1 {
					spent++
					t.Errorf("job %s spent %d attempts, want 1 (%s)", id, j.Attempt, j.Code)
				}
				for _, e := range h.sink.Events(id) {
					if e.State == mailqueue.AuditAccepted && e.Attempt != 1 {
						t.Errorf("job %s accepted on attempt %d, want 1", id, e.Attempt)
					}
					if e.State == mailqueue.AuditQueued && e.Code != "" {
						t.Errorf("job %s retried (%s): an attempt spent", id, e.Code)
					}
				}
				s, ok := sent[id]
				if !ok {
					t.Errorf("job %s was never sent", id)
					continue
				}
				from := max(enqueued[id], upAt)
				if enqueued[id] >= downAt && enqueued[id] < upAt {
					waited++
				}
				if enqueued[id] < downAt {
					from = enqueued[id]
				}
				worst = max(worst, s-from)
			}
			if limit := mailqueue.DefaultMaxProbeInterval + 3*time.Second; worst > limit {
				t.Errorf("a job was sent %v after the server's return (or its enqueue), more than %v", worst, limit)
			}
			opened, closed := h.logs.find(string(codes.QueueTransportBreakerOpen)), h.logs.find(string(codes.QueueTransportBreakerClosed))
			if len(opened) != 1 || len(closed) != 1 {
				t.Errorf("the breaker opened %d times and closed %d times, want once each", len(opened), len(closed))
			}
			t.Logf("%d jobs (%d enqueued during the outage), %d accepted, %d failed, %d attempts spent beyond the first; "+
				"%d sends tried during the 10-minute outage; recovery: the last job waiting was sent %v after the server's return; breaker open→closed %d→%d",
				len(ids), waited, st.Accepted, st.Failed, spent, ct.downSends.Load(), worst, len(opened), len(closed))
		})
	}
}

// outageCounter counts the sends tried while the server is down and
// records when each job was accepted, on the fake clock.
type outageCounter struct {
	inner     mail.Transport
	clockNow  func() time.Time
	start     time.Time
	down      atomic.Bool
	downSends atomic.Int64
	mu        sync.Mutex
	sent      map[string]time.Duration
}

func (c *outageCounter) Send(ctx context.Context, msg *mail.Message) (mail.Receipt, error) {
	if c.down.Load() {
		c.downSends.Add(1)
	}
	r, err := c.inner.Send(ctx, msg)
	if err == nil {
		c.mu.Lock()
		c.sent[msg.IdempotencyKey] = c.clockNow().Sub(c.start)
		c.mu.Unlock()
	}
	return r, err
}

// Check forwards the inner transport's Check, or says there is none.
func (c *outageCounter) Check(ctx context.Context) error {
	if ch, ok := c.inner.(mail.Checker); ok {
		return ch.Check(ctx)
	}
	return fmt.Errorf("no Check: %w", errors.ErrUnsupported)
}

func (c *outageCounter) sentAt() map[string]time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]time.Duration, len(c.sent))
	for k, v := range c.sent {
		out[k] = v
	}
	return out
}

// statsOf returns the memory queue's counts.
func statsOf(h *harness) mailqueue.Stats {
	st, err := h.mq.Stats(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	return st
}

// waitQuiet waits, in real time and a little at most, until no job of the
// memory queue runs and none is due that the worker could take (its
// breaker is open and waits for the clock): then the test moves the fake
// clock. A runner that
// waits for its next poll only moves with the clock, so past a short wait
// the test moves it all the same.
func waitQuiet(h *harness, w *mailqueue.Worker) {
	deadline := time.Now().Add(500 * time.Millisecond)
	for time.Now().Before(deadline) {
		st := statsOf(h)
		if st.Running == 0 && (st.Due == 0 || mailqueue.BreakerWaiting(w)) {
			return
		}
		time.Sleep(time.Millisecond)
	}
}
