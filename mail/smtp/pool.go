package smtp

import (
	"context"
	"sync"
	"time"

	gmsmtp "github.com/wneessen/go-mail/smtp"

	"github.com/alexify/mailer/mail"
)

// pooled is one connection, set up (EHLO, TLS, AUTH done), with what the
// pool knows of it.
type pooled struct {
	c         *gmsmtp.Client
	d         *trackedDialer
	idleSince time.Time
	sent      int // messages sent on it
}

// pool bounds the connections of a Transport and keeps the idle ones. A
// token of sem is held by each Send from before it takes a connection to
// after it gives it back, so the busy connections and the idle ones are never
// more than cap(sem) together: a Send takes an idle connection when there is
// one, and dials only when there is none.
type pool struct {
	sem chan struct{}

	mu     sync.Mutex
	idle   []*pooled // the most recently used last
	closed bool
	// sweeps tells whether a wall-clock timer closes the idle connections
	// past their timeout (not under a fake clock, where Send sweeps them).
	sweeps bool
	timer  *time.Timer
}

func newPool(size int, sweeps bool) *pool {
	return &pool{sem: make(chan struct{}, size), sweeps: sweeps}
}

// acquire waits for a token, as long as ctx allows.
func (p *pool) acquire(ctx context.Context) error {
	select {
	case p.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *pool) release() { <-p.sem }

// take returns the most recently used idle connection, or nil.
func (p *pool) take() *pooled {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.idle)
	if n == 0 {
		return nil
	}
	c := p.idle[n-1]
	p.idle = p.idle[:n-1]
	return c
}

// put keeps c as idle; false when the pool is closed.
func (p *pool) put(c *pooled, idleTimeout time.Duration, sweep func()) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.idle = append(p.idle, c)
	if p.sweeps && p.timer == nil {
		p.timer = time.AfterFunc(idleTimeout, sweep)
	}
	return true
}

// expired removes and returns the idle connections idle since before
// cutoff, and the time the next one expires (zero when none is left).
func (p *pool) expired(cutoff time.Time, idleTimeout time.Duration) (old []*pooled, next time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	kept := p.idle[:0]
	for _, c := range p.idle {
		if !c.idleSince.After(cutoff) {
			old = append(old, c)
			continue
		}
		kept = append(kept, c)
		if e := c.idleSince.Add(idleTimeout); next.IsZero() || e.Before(next) {
			next = e
		}
	}
	clear(p.idle[len(kept):])
	p.idle = kept
	return old, next
}

// rearm sets the sweep timer to fire after d, or forgets it when d is 0.
func (p *pool) rearm(d time.Duration, sweep func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	if d > 0 && !p.closed {
		p.timer = time.AfterFunc(d, sweep)
	}
}

// close marks the pool closed and returns its idle connections.
func (p *pool) close() []*pooled {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	idle := p.idle
	p.idle = nil
	return idle
}

// conn returns a connection ready for a transaction: an idle one that
// answers RSET, or a new one. When it cannot dial one it returns nil and the
// receipt and error of the failure.
func (t *Transport) conn(ctx context.Context) (*pooled, mail.Receipt, error) {
	t.sweep()
	for {
		c := t.pool.take()
		if c == nil {
			return t.dial(ctx)
		}
		if t.reset(ctx, c) {
			return c, mail.Receipt{}, nil
		}
		// The server closed it while it was idle, or it is in a state that
		// cannot be told: nothing was sent on it, so dial another.
		c.d.close()
	}
}

// reset says RSET on a pooled connection: it ends whatever transaction the
// last send left, and tells that the server still answers.
func (t *Transport) reset(ctx context.Context, c *pooled) bool {
	stop := context.AfterFunc(ctx, c.d.close)
	defer stop()
	if err := c.c.UpdateDeadline(t.cfg.Timeout); err != nil {
		return false
	}
	return c.c.Reset() == nil && ctx.Err() == nil
}

// put gives a connection back after a send: kept for the next one when the
// send left it in a known state (keep) and it has sent fewer than
// MaxMessages, closed with QUIT when it is sound but done, closed at once
// otherwise.
func (t *Transport) put(c *pooled, keep bool) {
	if !keep {
		c.d.close()
		return
	}
	c.sent++
	c.idleSince = t.clock.Now()
	if c.sent < t.cfg.MaxMessages && t.pool.put(c, t.cfg.IdleTimeout, t.sweep) {
		return
	}
	t.quit(c)
}

// quit says QUIT, briefly, and closes the connection; a failure changes
// nothing.
func (t *Transport) quit(c *pooled) {
	_ = c.c.UpdateDeadline(min(t.cfg.Timeout, 5*time.Second))
	_ = c.c.Quit()
	c.d.close()
}

// sweep closes the idle connections past IdleTimeout (without QUIT: it may
// run on a timer, and a server that kept the connection that long is told
// nothing it needs) and sets the timer for the next one.
func (t *Transport) sweep() {
	old, next := t.pool.expired(t.clock.Now().Add(-t.cfg.IdleTimeout), t.cfg.IdleTimeout)
	for _, c := range old {
		c.d.close()
	}
	if t.pool.sweeps {
		var d time.Duration
		if !next.IsZero() {
			d = max(time.Until(next), time.Millisecond)
		}
		t.pool.rearm(d, t.sweep)
	}
}

// closePool says QUIT on the idle connections and closes the pool.
func (t *Transport) closePool() {
	for _, c := range t.pool.close() {
		t.quit(c)
	}
}
