package redis

import (
	"context"
	"sync"

	goredis "github.com/redis/go-redis/v9"
)

// batcher sends the settles of concurrent runs together: a settle that
// comes while another batch is on the wire waits for it, then goes with
// every other settle that came meanwhile, in one pipeline. A lone settle
// goes at once, so batching adds no delay; under load it saves a round
// trip and a read of the server per settle. Each settle is still a script
// of its own, atomic and fenced by its token.
type batcher struct {
	c       goredis.UniversalClient
	keys    []string
	mu      sync.Mutex
	pending []*op
	running bool
}

type op struct {
	ctx  context.Context
	sc   *goredis.Script
	args []any
	n    int64
	err  error
	done chan struct{}
}

// run runs sc with args in the next batch and returns its integer answer.
func (b *batcher) run(ctx context.Context, sc *goredis.Script, args []any) (int64, error) {
	o := &op{ctx: ctx, sc: sc, args: args, done: make(chan struct{})}
	b.mu.Lock()
	b.pending = append(b.pending, o)
	start := !b.running
	b.running = true
	b.mu.Unlock()
	if start {
		go b.flush()
	}
	select {
	case <-o.done:
		return o.n, o.err
	case <-ctx.Done():
		return 0, context.Cause(ctx)
	}
}

// flush sends the pending settles until none is left.
func (b *batcher) flush() {
	for {
		b.mu.Lock()
		batch := b.pending
		b.pending = nil
		if len(batch) == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		b.send(batch)
	}
}

func (b *batcher) send(batch []*op) {
	live := batch[:0:0]
	for _, o := range batch {
		if err := o.ctx.Err(); err != nil {
			o.err = context.Cause(o.ctx)
			close(o.done)
			continue
		}
		live = append(live, o)
	}
	if len(live) == 1 {
		o := live[0]
		o.n, o.err = o.sc.Run(o.ctx, b.c, b.keys, o.args...).Int64()
		close(o.done)
		return
	}
	if len(live) == 0 {
		return
	}
	// The batch runs under the context of none of its settles: one that
	// is cancelled must not fail the others.
	ctx := context.WithoutCancel(live[0].ctx)
	pipe := b.c.Pipeline()
	cmds := make([]*goredis.Cmd, len(live))
	for i, o := range live {
		cmds[i] = o.sc.EvalSha(ctx, pipe, b.keys, o.args...)
	}
	_, _ = pipe.Exec(ctx)
	for i, o := range live {
		o.n, o.err = cmds[i].Int64()
		if o.err != nil && goredis.HasErrorPrefix(o.err, "NOSCRIPT") {
			// The server lost the script (a restart, a failover): Run
			// loads it again. The settle did not run, so it runs once.
			o.n, o.err = o.sc.Run(ctx, b.c, b.keys, o.args...).Int64()
		}
		close(o.done)
	}
}
