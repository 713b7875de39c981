package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
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
  mailq retry  STORE [--resend] ID...
                          queue failed jobs again by hand, their attempts reset.
                          Under an IdempotencyTransport a job whose key holds a
                          receipt is not sent again: it answers the stored receipt
                          (a delivery_unknown job ends delivery_unknown again), as
                          it may have been accepted. --resend clears the job's
                          idempotency key first and sends it again: THE RECIPIENT
                          MAY GET THE MAIL TWICE
  mailq purge  STORE --state S --older-than D [--forget-keys] [--yes]
                          drop finished jobs (accepted, failed, delivery_unknown)
                          that finished at least D ago (--older-than 0s: all of
                          them; the flag has no default). Each keeps its key and
                          hash until its retention ends, so the same job enqueued
                          again is still a duplicate; --forget-keys forgets them
                          whole: the same job enqueued again IS SENT AGAIN.
                          Says how many it will drop and asks first, unless --yes
    STORE is one of:
` + redisUsage + postgresUsage

// store is a queue mailq opened: the operations, a name to show, and what
// to close when done.
type store struct {
	op   mailqueue.Operator
	name string
	// forget clears a job's idempotency entry, for retry --resend: the
	// Forget of the idempotency store the workers of the queue share; nil
	// when the store has none.
	forget func(ctx context.Context, key string) error
	close  func()
}

// storeFlags are the flags that name a store, one group per kind of store.
// A new kind (--postgres, --mongodb) adds its group here and its case to
// openStore.
type storeFlags struct {
	redis    redisFlags
	postgres postgresFlags
}

// register adds the flags of every kind of store to fs.
func (f *storeFlags) register(fs *flag.FlagSet) {
	f.redis.register(fs)
	f.postgres.register(fs)
}

// errNoStore is returned by openStore when no flag names a store.
var errNoStore = usageError{errors.New("name the store: --redis URL or --postgres URL")}

// usageError is an error of the command line (a flag missing or
// malformed), not of the store: the exit status is 2.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// openStore opens the store the flags name. Exactly one kind may be named.
func openStore(ctx context.Context, f storeFlags, log *slog.Logger) (*store, error) {
	switch {
	case f.redis.url != "" && f.postgres.url != "":
		return nil, usageError{errors.New("name one store: --redis or --postgres, not both")}
	case f.redis.url != "":
		return openRedis(ctx, f.redis, log)
	case f.postgres.url != "":
		return openPostgres(ctx, f.postgres, f.redis.queue, log)
	}
	return nil, errNoStore
}

// opsCommand runs stats, failed, retry or purge on the store its flags
// name, and returns the exit status: 2 for a mistake of usage, 1 when the
// store or an operation failed.
func opsCommand(ctx context.Context, name string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mailq "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sf storeFlags
	sf.register(fs)
	limit := fs.Int("limit", 100, "failed: the most jobs to list")
	resend := fs.Bool("resend", false, "retry: clear each job's idempotency key and send it again; the recipient may get the mail twice")
	state := fs.String("state", "", "purge: accepted, failed or delivery_unknown")
	older := fs.Duration("older-than", 0, "purge: how long ago a job must have finished (required; 0s: every job of the state)")
	forgetKeys := fs.Bool("forget-keys", false, "purge: forget the jobs' keys and hashes too: the same job enqueued again is sent again")
	yes := fs.Bool("yes", false, "purge: do not ask before purging")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if name == "retry" && fs.NArg() == 0 {
		fmt.Fprintln(stderr, "mailq retry: name the ids of the failed jobs to retry")
		return 2
	}
	olderSet := false
	fs.Visit(func(f *flag.Flag) { olderSet = olderSet || f.Name == "older-than" })
	if name == "purge" && !olderSet {
		fmt.Fprintln(stderr, "mailq purge: --older-than is required (--older-than 0s purges every finished job of the state)")
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
	o := opArgs{limit: *limit, state: mailqueue.JobState(*state), olderThan: *older, ids: fs.Args(),
		resend: *resend, forgetKeys: *forgetKeys, yes: *yes, confirm: stdin}
	return runOp(ctx, name, st, o, stdout, stderr)
}

// opArgs are what the operations take besides the store.
type opArgs struct {
	limit     int
	state     mailqueue.JobState
	olderThan time.Duration
	ids       []string
	// resend makes retry a resend (mailqueue.Operator.Resend).
	resend bool
	// forgetKeys, yes and confirm are purge's: forget the keys too, do not
	// ask, and where the answer to the question is read (nil: no answer).
	forgetKeys, yes bool
	confirm         io.Reader
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
		return retry(ctx, st, o, stdout, stderr)
	case "purge":
		return purge(ctx, st, o, stdout, stderr)
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

// retry queues the jobs of o.ids again: as they are (RetryFailed), or
// with their idempotency keys cleared (Resend, o.resend).
func retry(ctx context.Context, st *store, o opArgs, stdout, stderr io.Writer) int {
	if o.resend && st.forget == nil {
		fmt.Fprintf(stderr, "mailq retry --resend: %s has no idempotency store to clear\n", st.name)
		return 1
	}
	status := 0
	for _, id := range o.ids {
		var err error
		if o.resend {
			err = st.op.Resend(ctx, mailqueue.ResendParams{ID: id, Forget: st.forget})
		} else {
			err = st.op.RetryFailed(ctx, id)
		}
		if err != nil {
			fmt.Fprintf(stderr, "mailq retry: %v\n", err)
			status = 1
			continue
		}
		if o.resend {
			fmt.Fprintf(stdout, "%s queued again, its idempotency key cleared: it will be sent again, and the recipient may get it twice\n", id)
		} else {
			fmt.Fprintf(stdout, "%s queued again\n", id)
		}
	}
	return status
}

// purge counts the jobs o asks to purge, tells what a purge of them does,
// asks (unless o.yes), then purges.
func purge(ctx context.Context, st *store, o opArgs, stdout, stderr io.Writer) int {
	n, cut, err := countPurge(ctx, st.op, o.state, o.olderThan)
	if err != nil {
		fmt.Fprintf(stderr, "mailq purge: %v\n", err)
		return 1
	}
	if n == 0 {
		fmt.Fprintf(stdout, "no %s job finished before %s: nothing to purge\n", o.state, cut.UTC().Format(time.RFC3339))
		return 0
	}
	what := "their data dropped; each keeps its key and hash until its retention ends, so the same job enqueued again is still a duplicate"
	if o.forgetKeys {
		what = "forgotten whole, keys too (--forget-keys): the same job enqueued again is stored and SENT AGAIN"
	}
	fmt.Fprintf(stdout, "%d %s jobs finished before %s will be purged: %s\n", n, o.state, cut.UTC().Format(time.RFC3339), what)
	if !o.yes && !confirmed(o.confirm, stdout) {
		fmt.Fprintln(stderr, "mailq purge: not confirmed; nothing purged (--yes purges without asking)")
		return 1
	}
	done, err := st.op.Purge(ctx, mailqueue.PurgeParams{State: o.state, OlderThan: o.olderThan, ForgetKeys: o.forgetKeys})
	if err != nil {
		fmt.Fprintf(stderr, "mailq purge: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "%d %s jobs purged\n", done, o.state)
	return 0
}

// countPurge returns how many jobs of state finished at least olderThan
// ago, by the store's clock, and the time they finished before. Jobs that
// finish meanwhile are not counted, though the purge may take them.
func countPurge(ctx context.Context, in mailqueue.Inspector, state mailqueue.JobState, olderThan time.Duration) (int, time.Time, error) {
	switch state {
	case mailqueue.JobAccepted, mailqueue.JobFailed, mailqueue.JobDeliveryUnknown:
	default:
		return 0, time.Time{}, fmt.Errorf("--state %q is not a finished state (accepted, failed, delivery_unknown)", state)
	}
	if olderThan < 0 {
		return 0, time.Time{}, fmt.Errorf("--older-than %v is negative", olderThan)
	}
	s, err := in.Stats(ctx)
	if err != nil {
		return 0, time.Time{}, err
	}
	cut := s.Now.Add(-olderThan)
	n, cursor := 0, ""
	for {
		// The finished jobs come the oldest first: the count ends at the
		// first one finished after cut.
		p, err := in.Jobs(ctx, mailqueue.JobsParams{State: state, Cursor: cursor, Limit: 1000})
		if err != nil {
			return 0, time.Time{}, err
		}
		for _, j := range p.Rows {
			if j.FinishedAt.After(cut) {
				return n, cut, nil
			}
			n++
		}
		if p.Next == "" {
			return n, cut, nil
		}
		cursor = p.Next
	}
}

// confirmed asks on w whether to go on and reads the answer from r: yes
// is "y" or "yes"; anything else, or no answer, is no.
func confirmed(r io.Reader, w io.Writer) bool {
	fmt.Fprint(w, "purge them? [y/N] ")
	if r == nil {
		fmt.Fprintln(w)
		return false
	}
	line, _ := bufio.NewReader(r).ReadString('\n')
	fmt.Fprintln(w)
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
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
