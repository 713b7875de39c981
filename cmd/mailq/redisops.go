package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	redisdriver "github.com/alexify/mailer/drivers/redis"
)

// redisUsage is the part of the usage text of the Redis store's flags.
const redisUsage = `      --redis URL [--prefix P] [--queue Q] [--cluster] [--idempotency-prefix I]
                          a Redis queue: URL is redis://[:password@]host:port[/db]
                          (rediss:// for TLS); a comma-separated list of host:port,
                          or --cluster, for a Redis Cluster; I is the prefix of the
                          workers' IdempotencyStore (retry --resend; "mailer")
`

// redisFlags name a Redis queue, and the idempotency store its workers
// share (for retry --resend).
type redisFlags struct {
	url           string
	cluster       bool
	prefix, queue string
	idemPrefix    string
}

// register adds the Redis flags to fs.
func (f *redisFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.url, "redis", "", "the Redis server: redis://host:port/db")
	fs.BoolVar(&f.cluster, "cluster", false, "the Redis server is a Redis Cluster")
	fs.StringVar(&f.prefix, "prefix", redisdriver.DefaultPrefix, "the Redis queue's key prefix")
	fs.StringVar(&f.queue, "queue", redisdriver.DefaultQueue, "the queue's name (Redis or PostgreSQL)")
	fs.StringVar(&f.idemPrefix, "idempotency-prefix", redisdriver.DefaultIdempotencyPrefix,
		"retry --resend: the key prefix of the workers' Redis IdempotencyStore")
}

// openRedis opens the Redis queue f names, as it is in Redis: its
// fairness and retention are those its workers stored, never mailq's
// defaults, and opening it writes nothing (UseStored), so that stats on a
// queue that does not exist does not make it. A policy that may evict is
// told, not a reason to refuse.
func openRedis(ctx context.Context, f redisFlags, log *slog.Logger) (*store, error) {
	client, err := redisClient(f.url, f.cluster)
	if err != nil {
		return nil, usageError{err}
	}
	q, err := redisdriver.Open(ctx, redisdriver.Options{UseStored: true,
		Client: client, Prefix: f.prefix, Queue: f.queue, EvictionPolicyWarnOnly: true, Logger: log,
	})
	if err != nil {
		_ = client.Close()
		return nil, err
	}
	idem := redisdriver.NewIdempotencyStore(client, f.idemPrefix)
	// A resend clears the workers' entry of the job; an entry that is not
	// there means the prefix is not the workers' (their receipt would still
	// answer), so nothing is cleared and nothing is queued.
	forget := func(ctx context.Context, key string) error {
		pfx := f.idemPrefix
		if pfx == "" {
			pfx = redisdriver.DefaultIdempotencyPrefix
		}
		n, err := client.Exists(ctx, pfx+":idem:"+key).Result()
		if err != nil {
			return fmt.Errorf("reading the idempotency entry: %w", err)
		}
		if n == 0 {
			return fmt.Errorf("no idempotency entry of %s under the prefix %q: nothing was cleared and nothing queued; give the workers' --idempotency-prefix, or use retry (without --resend) if they use no IdempotencyTransport", key, pfx)
		}
		return idem.Forget(ctx, key)
	}
	return &store{op: q, name: q.Source().Tag(), forget: forget, close: func() { _ = client.Close() }}, nil
}

// redisClient connects to url: a redis:// URL, or for a cluster a
// comma-separated list of addresses or a URL with --cluster.
func redisClient(url string, cluster bool) (goredis.UniversalClient, error) {
	if !strings.Contains(url, "://") {
		return goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: strings.Split(url, ",")}), nil
	}
	if cluster {
		o, err := goredis.ParseClusterURL(url)
		if err != nil {
			return nil, fmt.Errorf("--redis: %w", err)
		}
		return goredis.NewClusterClient(o), nil
	}
	o, err := goredis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("--redis: %w", err)
	}
	return goredis.NewClient(o), nil
}
