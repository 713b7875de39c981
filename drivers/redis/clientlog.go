package redis

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	goredis "github.com/redis/go-redis/v9"
)

// go-redis writes its own log lines (a pool that failed to dial, a
// duration truncated, a sentinel that failed) through one logger per
// process, to stderr by default. The driver routes them to the kit's
// slog logger at debug instead: they are the
// client's, not the queue's, and the queue tells what matters to an
// operator under its own codes (queue.reserve_failed,
// queue.settle_failed). The logger is the process's, so the lines go to
// the Logger of the queue or store opened last; Options.KeepClientLogger
// leaves go-redis's logger as it is, for an application that set its own
// with redis.SetLogger.

// clientLogMessage is the message of the records of go-redis's lines.
const clientLogMessage = "redis: client"

var (
	clientLog     atomic.Pointer[slog.Logger]
	clientLogOnce sync.Once
)

// clientLogger is go-redis's logger (redis.SetLogger): each line a debug
// record of the logger clientLog holds. It never logs the context.
type clientLogger struct{}

// Printf implements go-redis's logging interface.
func (clientLogger) Printf(_ context.Context, format string, v ...any) {
	if l := clientLog.Load(); l != nil {
		l.Debug(clientLogMessage, "line", fmt.Sprintf(format, v...))
	}
}

// routeClientLog sends go-redis's lines to l from now on.
func routeClientLog(l *slog.Logger) {
	clientLog.Store(l)
	clientLogOnce.Do(func() { goredis.SetLogger(clientLogger{}) })
}
