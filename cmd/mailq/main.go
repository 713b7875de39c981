// Command mailq is the command of the mailer kit.
//
//	mailq demo            send the spec's example jobs through a real SMTP server on loopback
//	mailq validate FILE   check a job file against schema/job.v1.json (exit status 1 when invalid)
//	mailq codes           list the codes of schema/codes.yaml
//	mailq stats|failed|retry|purge --redis URL|--postgres URL   the operations of a queue, on any store
//	mailq migrate --postgres URL   create or bring up to date the PostgreSQL driver's schema
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
)

const usage = `mailq: the command of the mailer kit

Usage:
  mailq demo              run the main job on the embedded default: a memory queue,
                          a worker and a real SMTP server on a loopback port
  mailq validate [--max-job-bytes N] FILE...
                          check job files (JSON) as EnqueueJSON and a worker do: the
                          size (N, 256 KiB by default), the JSON text (no name twice,
                          UTF-8, no lone surrogate, integers within 2^53-1), then
                          schema/job.v1.json; "-" reads standard input; exit status 1
                          when one is invalid
  mailq codes             list the codes the queue gives, with where, state and level
` + opsUsage + migrateUsage

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run runs the command of args and returns its exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "demo":
		if err := demo(ctx, stdout, stderr); err != nil {
			fmt.Fprintln(stderr, "mailq demo:", err)
			return 1
		}
		return 0
	case "validate":
		return validate(args[1:], stdin, stdout, stderr)
	case "codes":
		printCodes(stdout)
		return 0
	case "migrate":
		return migrate(ctx, args[1:], stdout, stderr)
	case "stats", "failed", "retry", "purge":
		return opsCommand(ctx, args[0], args[1:], stdin, stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "mailq: unknown command %q\n\n%s", args[0], usage)
	return 2
}
