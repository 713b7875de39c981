package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"text/tabwriter"
	"time"

	"github.com/alexify/mailer/mailqueue"
)

// opsUsage is the part of the usage text of the operator's commands. Each
// takes the store through one flag of its kind (storeFlags).
const opsUsage = `  mailq stats  STORE
                          count the jobs of a queue by state, and tell its pauses
  mailq failed STORE [--limit N]
                          list the jobs failed for good (failed, delivery_unknown)
  mailq retry  STORE ID...
                          queue failed jobs again by hand, their attempts reset
  mailq purge  STORE --state S [--older-than D]
                          forget finished jobs (accepted, failed, delivery_unknown)
                          that finished at least D ago (0: all of them)
    STORE is one of:
` + redisUsage

// store is a queue mailq opened: the operations, a name to show, and what
// to close when done.
type store struct {
	op    mailqueue.Operator
	name  string
	close func()
}

// storeFlags are the flags that name a store, one group per kind of store.
// A new kind (--postgres, --mongodb) adds its group here and its case to
// openStore.
type storeFlags struct {
	redis redisFlags
}

// register adds the flags of every kind of store to fs.
func (f *storeFlags) register(fs *flag.FlagSet) {
	f.redis.register(fs)
}

// errNoStore is returned by openStore when no flag names a store.
var errNoStore = usageError{errors.New("name the store: --redis URL")}

// usageError is an error of the command line (a flag missing or
// malformed), not of the store: the exit status is 2.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// openStore opens the store the flags name. Exactly one kind may be named.
func openStore(ctx context.Context, f storeFlags, log *slog.Logger) (*store, error) {
	switch {
	case f.redis.url != "":
		return openRedis(ctx, f.redis, log)
	}
	return nil, errNoStore
}

// opsCommand runs stats, failed, retry or purge on the store its flags
// name, and returns the exit status: 2 for a mistake of usage, 1 when the
// store or an operation failed.
func opsCommand(ctx context.Context, name string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mailq "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sf storeFlags
	sf.register(fs)
	limit := fs.Int("limit", 100, "failed: the most jobs to list")
	state := fs.String("state", "", "purge: accepted, failed or delivery_unknown")
	older := fs.Duration("older-than", 0, "purge: how long ago a job must have finished")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if name == "retry" && fs.NArg() == 0 {
		fmt.Fprintln(stderr, "mailq retry: name the ids of the failed jobs to retry")
		return 2
	}
	// An operator's command reads and repairs: what the store warns of
	// (an eviction policy that may lose jobs) is told on stderr.
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	st, err := openStore(ctx, sf, log)
	if errors.As(err, new(usageError)) {
		fmt.Fprintf(stderr, "mailq %s: %v\n", name, err)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "mailq %s: %v\n", name, err)
		return 1
	}
	defer st.close()
	o := opArgs{limit: *limit, state: mailqueue.JobState(*state), olderThan: *older, ids: fs.Args()}
	return runOp(ctx, name, st, o, stdout, stderr)
}

// opArgs are what the operations take besides the store.
type opArgs struct {
	limit     int
	state     mailqueue.JobState
	olderThan time.Duration
	ids       []string
}

// runOp runs the operation name on st, through mailqueue.Operator alone.
func runOp(ctx context.Context, name string, st *store, o opArgs, stdout, stderr io.Writer) int {
	var err error
	switch name {
	case "stats":
		err = printStats(ctx, st, stdout)
	case "failed":
		err = printFailed(ctx, st.op, o.limit, stdout)
	case "retry":
		status := 0
		for _, id := range o.ids {
			if err := st.op.RetryFailed(ctx, id); err != nil {
				fmt.Fprintf(stderr, "mailq retry: %v\n", err)
				status = 1
				continue
			}
			fmt.Fprintf(stdout, "%s queued again\n", id)
		}
		return status
	case "purge":
		var n int
		n, err = st.op.Purge(ctx, mailqueue.PurgeParams{State: o.state, OlderThan: o.olderThan})
		if err == nil {
			fmt.Fprintf(stdout, "%d %s jobs forgotten\n", n, o.state)
		}
	default:
		fmt.Fprintf(stderr, "mailq: unknown operation %q\n", name)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "mailq %s: %v\n", name, err)
		return 1
	}
	return 0
}

// printStats prints the counts of st by state, then its pauses: the line
// "paused" comes last but for the tenants paused.
func printStats(ctx context.Context, st *store, w io.Writer) error {
	s, err := st.op.Stats(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "queue\t%s\n", st.name)
	fmt.Fprintf(tw, "queued\t%d\t(%d due)\n", s.Queued, s.Due)
	fmt.Fprintf(tw, "running\t%d\n", s.Running)
	fmt.Fprintf(tw, "accepted\t%d\n", s.Accepted)
	fmt.Fprintf(tw, "failed\t%d\n", s.Failed)
	fmt.Fprintf(tw, "delivery_unknown\t%d\n", s.DeliveryUnknown)
	fmt.Fprintf(tw, "oldest_due\t%s\n", s.OldestQueuedAge.Round(time.Millisecond))
	if s.Paused {
		fmt.Fprintf(tw, "paused\ttrue\t(until %s)\n", s.PausedUntil.UTC().Format(time.RFC3339))
	} else {
		fmt.Fprintf(tw, "paused\tfalse\n")
	}
	for _, p := range s.PausedTenants {
		fmt.Fprintf(tw, "paused_tenant\t%q\t(until %s)\n", p.TenantID, p.Until.UTC().Format(time.RFC3339))
	}
	return tw.Flush()
}

// printFailed lists up to limit jobs failed for good.
func printFailed(ctx context.Context, op mailqueue.Inspector, limit int, w io.Writer) error {
	jobs, err := op.Failed(ctx, limit)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tCODE\tATTEMPTS\tFINISHED\tDATA\tREASON")
	for _, j := range jobs {
		data := "kept"
		if !j.DataKept {
			data = "dropped"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%s\t%s\t%s\n", j.ID, j.State, j.Code, j.Attempt, j.MaxAttempts,
			j.FinishedAt.UTC().Format(time.RFC3339), data, j.Reason)
	}
	return tw.Flush()
}
