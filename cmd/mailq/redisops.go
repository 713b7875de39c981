package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	goredis "github.com/redis/go-redis/v9"

	redisdriver "github.com/alexify/mailer/drivers/redis"
	"github.com/alexify/mailer/mailqueue"
)

// redisUsage is the part of the usage text of the operator's commands on a
// Redis queue.
const redisUsage = `  mailq stats  --redis URL [--prefix P] [--queue Q]
                          count the jobs of a Redis queue by state
  mailq failed --redis URL [--prefix P] [--queue Q] [--limit N]
                          list the jobs failed for good (failed, delivery_unknown)
  mailq retry  --redis URL [--prefix P] [--queue Q] ID...
                          queue failed jobs again by hand, their attempts reset
  mailq purge  --redis URL [--prefix P] [--queue Q] --state S [--older-than D]
                          forget finished jobs (accepted, failed, delivery_unknown)
                          that finished at least D ago (0: all of them)
      URL is redis://[:password@]host:port[/db] (rediss:// for TLS); a
      comma-separated list of host:port, or --cluster, for a Redis Cluster
`

// redisCommand runs stats, failed, retry or purge on a Redis queue.
func redisCommand(ctx context.Context, name string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mailq "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("redis", "", "the Redis server: redis://host:port/db")
	cluster := fs.Bool("cluster", false, "the server is a Redis Cluster")
	prefix := fs.String("prefix", redisdriver.DefaultPrefix, "the queue's key prefix")
	queue := fs.String("queue", redisdriver.DefaultQueue, "the queue's name")
	limit := fs.Int("limit", 100, "failed: the most jobs to list")
	state := fs.String("state", "", "purge: accepted, failed or delivery_unknown")
	older := fs.Duration("older-than", 0, "purge: how long ago a job must have finished")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *url == "" {
		fmt.Fprintf(stderr, "mailq %s: --redis URL is required\n", name)
		return 2
	}
	client, err := redisClient(*url, *cluster)
	if err != nil {
		fmt.Fprintf(stderr, "mailq %s: %v\n", name, err)
		return 2
	}
	defer client.Close()
	// An operator's command reads and repairs; a policy that may evict is
	// told, not a reason to refuse. The queue is taken as it is in Redis:
	// its fairness and retention are those its workers stored, never
	// mailq's defaults, and opening it writes nothing (UseStored), so that
	// stats on a queue that does not exist does not make it.
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	q, err := redisdriver.Open(ctx, redisdriver.Options{UseStored: true,
		Client: client, Prefix: *prefix, Queue: *queue, EvictionPolicyWarnOnly: true, Logger: log,
	})
	if err != nil {
		fmt.Fprintf(stderr, "mailq %s: %v\n", name, err)
		return 1
	}
	switch name {
	case "stats":
		st, err := q.Stats(ctx)
		if err != nil {
			fmt.Fprintf(stderr, "mailq stats: %v\n", err)
			return 1
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "queue\t%s\n", q.Source().Tag())
		fmt.Fprintf(tw, "queued\t%d\t(%d due)\n", st.Queued, st.Due)
		fmt.Fprintf(tw, "running\t%d\n", st.Running)
		fmt.Fprintf(tw, "accepted\t%d\n", st.Accepted)
		fmt.Fprintf(tw, "failed\t%d\n", st.Failed)
		fmt.Fprintf(tw, "delivery_unknown\t%d\n", st.DeliveryUnknown)
		fmt.Fprintf(tw, "paused\t%t\n", st.Paused)
		_ = tw.Flush()
		return 0
	case "failed":
		jobs, err := q.Failed(ctx, *limit)
		if err != nil {
			fmt.Fprintf(stderr, "mailq failed: %v\n", err)
			return 1
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tSTATE\tCODE\tATTEMPTS\tFINISHED\tDATA\tREASON")
		for _, j := range jobs {
			data := "kept"
			if j.Data == nil {
				data = "dropped"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%s\t%s\t%s\n", j.ID, j.State, j.Code, j.Attempts, j.MaxAttempts,
				j.FinishedAt.UTC().Format(time.RFC3339), data, j.Reason)
		}
		_ = tw.Flush()
		return 0
	case "retry":
		if fs.NArg() == 0 {
			fmt.Fprintln(stderr, "mailq retry: name the ids of the failed jobs to retry")
			return 2
		}
		status := 0
		for _, id := range fs.Args() {
			if err := q.RetryFailed(ctx, id); err != nil {
				fmt.Fprintf(stderr, "mailq retry: %v\n", err)
				status = 1
				continue
			}
			fmt.Fprintf(stdout, "%s queued again\n", id)
		}
		return status
	case "purge":
		n, err := q.Purge(ctx, redisdriver.PurgeParams{State: mailqueue.JobState(*state), OlderThan: *older})
		if err != nil {
			fmt.Fprintf(stderr, "mailq purge: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "%d %s jobs forgotten\n", n, *state)
		return 0
	}
	return 2
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
