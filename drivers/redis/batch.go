package redis

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/alexify/mailer/mailqueue"
)

// settleChunk is the most settles one settle script runs; a larger batch
// is several scripts in one pipeline.
const settleChunk = 64

// batcher sends the settles and extends of concurrent runs together: one
// that comes while another batch is on the wire waits for it, then goes
// with every other that came meanwhile. A lone one goes at once, so
// batching adds no delay. The settles of a batch (with the leases their
// runs' slots ask for, SettleAndReserve) are one settle script
// (scripts/settle.lua) a chunk, so that the server reads its clock, its
// leases and its pauses once for them all; the extends go each as a
// script of its own, in the same pipeline. Each settle is still fenced by
// its own token.
type batcher struct {
	src     *Source
	mu      sync.Mutex
	pending []*op
	running int // the batches on the wire, at most maxInFlight
}

// maxInFlight is the most batches on the wire at once: a second batch goes
// while the server runs the first, so that it is not idle while the
// client reads an answer.
const maxInFlight = 2

// op is a settle or an extend waiting for its batch.
type op struct {
	ctx  context.Context
	what string // "ack", "retry", "fail", "release" or "extend", for errors

	// A settle: its six values of settle.lua, and the leases its slot asks
	// for after it, of lease ms each; before is the local clock before the
	// call, the start of the leases' Until.
	vals   [6]any
	limit  int
	lease  int64
	before time.Time

	// An extend: the ARGV of extend.lua after the common six.
	ext []any

	ok     bool
	leases []*mailqueue.Lease
	err    error
	done   chan struct{}
}

// run sends o in the next batch and waits for its answer.
func (b *batcher) run(o *op) (bool, []*mailqueue.Lease, error) {
	o.done = make(chan struct{})
	b.mu.Lock()
	b.pending = append(b.pending, o)
	start := b.running < maxInFlight
	if start {
		b.running++
	}
	b.mu.Unlock()
	if start {
		go b.flush()
	}
	select {
	case <-o.done:
		if o.err != nil {
			return false, nil, fmt.Errorf("redis: %s: %w", o.what, o.err)
		}
		return o.ok, o.leases, nil
	case <-o.ctx.Done():
		// The batch may still run it: a settle then counts, a lease made
		// for it runs out and is redelivered.
		return false, nil, fmt.Errorf("redis: %s: %w", o.what, context.Cause(o.ctx))
	}
}

// flush sends the pending ops until none is left.
func (b *batcher) flush() {
	for {
		b.mu.Lock()
		batch := b.pending
		b.pending = nil
		if len(batch) == 0 {
			b.running--
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		b.send(batch)
	}
}

// call is one script of a batch and the ops it answers.
type call struct {
	sc    *goredis.Script
	args  []any
	ops   []*op
	limit int
	lease int64
	base  string // the token base of a settle-and-reserve
	cmd   *goredis.Cmd
}

func (b *batcher) send(batch []*op) {
	s := b.src
	var calls []*call
	var settles *call
	for _, o := range batch {
		if err := o.ctx.Err(); err != nil {
			o.err = context.Cause(o.ctx)
			close(o.done)
			continue
		}
		if o.ext != nil {
			calls = append(calls, &call{sc: scriptExtend, args: s.args(o.ext...), ops: []*op{o}})
			continue
		}
		// The settles of one lease length share a script, in order.
		if settles == nil || len(settles.ops) == settleChunk || settles.lease != o.lease {
			settles = &call{sc: scriptSettle, lease: o.lease}
			calls = append(calls, settles)
		}
		settles.ops = append(settles.ops, o)
		settles.limit += o.limit
	}
	if len(calls) == 0 {
		return
	}
	for _, c := range calls {
		if c.sc != scriptSettle {
			continue
		}
		base := s.tokPrefix + "-" + strconv.FormatUint(s.tokN.Add(1), 36)
		c.base = base
		c.args = s.args(c.limit, c.lease, base)
		for _, o := range c.ops {
			c.args = append(c.args, o.vals[:]...)
		}
	}
	// The batch runs under the context of none of its ops: one that is
	// cancelled must not fail the others.
	ctx := context.WithoutCancel(calls[0].ops[0].ctx)
	if len(calls) == 1 {
		c := calls[0]
		c.cmd = c.sc.Run(ctx, s.c, s.keys, c.args...)
	} else {
		pipe := s.c.Pipeline()
		for _, c := range calls {
			c.cmd = c.sc.EvalSha(ctx, pipe, s.keys, c.args...)
		}
		_, _ = pipe.Exec(ctx)
		for _, c := range calls {
			if err := c.cmd.Err(); err != nil && goredis.HasErrorPrefix(err, "NOSCRIPT") {
				// The server lost the script (a restart, a failover): Run
				// loads it again. The script did not run, so it runs once.
				c.cmd = c.sc.Run(ctx, s.c, s.keys, c.args...)
			}
		}
	}
	for _, c := range calls {
		b.answer(c)
		for _, o := range c.ops {
			close(o.done)
		}
	}
}

// answer reads the answer of a call into its ops.
func (b *batcher) answer(c *call) {
	fail := func(err error) {
		for _, o := range c.ops {
			o.err = err
		}
	}
	if c.sc == scriptExtend {
		n, err := c.cmd.Int64()
		c.ops[0].ok, c.ops[0].err = n == 1, err
		return
	}
	v, err := c.cmd.Result()
	if err != nil {
		if c.sc == scriptSettle {
			b.src.lostAnswer(c.base, err)
		}
		fail(err)
		return
	}
	arr, ok := v.([]any)
	if !ok || len(arr) < 3+len(c.ops) || (len(arr)-3-len(c.ops))%9 != 0 {
		fail(fmt.Errorf("an answer of %d values for %d settles", len(arr), len(c.ops)))
		return
	}
	for i, o := range c.ops {
		n, _ := arr[3+i].(int64)
		o.ok = n == 1
	}
	now := serverTime(arr[2])
	rest := arr[3+len(c.ops):]
	for _, o := range c.ops {
		k := min(o.limit, len(rest)/9)
		if k > 0 {
			o.leases = parseLeases(rest[:k*9], o.before.Add(time.Duration(c.lease)*time.Millisecond), now)
			rest = rest[k*9:]
		}
	}
	if c.limit > 0 {
		next, _ := arr[0].(int64)
		more, _ := arr[1].(int64)
		b.src.wakeAfter(next, more)
	}
}

// serverTime reads the server's clock of a script's answer (ms), the
// leases' Lease.Now; the zero time when the answer has none.
func serverTime(v any) time.Time {
	ms, ok := v.(int64)
	if !ok || ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// parseLeases reads the leases of a reserve's answer, nine values each:
// until is their Until (the local clock), now their Now (the server's).
func parseLeases(arr []any, until, now time.Time) []*mailqueue.Lease {
	leases := make([]*mailqueue.Lease, 0, len(arr)/9)
	for i := 0; i+9 <= len(arr); i += 9 {
		str := func(k int) string { x, _ := arr[i+k].(string); return x }
		num := func(k int) int64 { x, _ := arr[i+k].(int64); return x }
		leases = append(leases, &mailqueue.Lease{
			ID: str(0), Token: str(1), Data: []byte(str(2)), Attempt: int(num(3)) + 1, MaxAttempts: int(num(4)),
			Redeliveries: int(num(5)), Priority: priorityOf(num(6)), TenantID: str(7),
			EnqueuedAt: time.UnixMilli(num(8)), Until: until, Now: now,
		})
	}
	return leases
}
