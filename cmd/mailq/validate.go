package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/mailqueue"
)

// validate checks each file as EnqueueJSON checks a job's JSON, and as a
// worker reads one (jobv1.Validate, which reads the text through
// internal/strictjson): first its size, unread when it is over
// --max-job-bytes (mailqueue.DefaultMaxJobBytes), then the text, then the
// schema. It prints every error with its path (the first jobv1.MaxErrors,
// and how many more). It returns 1 when a file is invalid or unreadable, 2
// for a bad command line.
func validate(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mailq validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	maxBytes := fs.Int("max-job-bytes", mailqueue.DefaultMaxJobBytes, "the most bytes of a job, as the queue's Config.MaxJobBytes")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	files := fs.Args()
	if len(files) == 0 {
		fmt.Fprintln(stderr, "mailq validate: name a job file (or - for standard input)")
		return 2
	}
	if *maxBytes <= 0 {
		fmt.Fprintln(stderr, "mailq validate: --max-job-bytes must be positive")
		return 2
	}
	status := 0
	for _, name := range files {
		data, err := readJob(name, stdin, *maxBytes)
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", name, err)
			status = 1
			continue
		}
		fields, more, err := checkJob(data, *maxBytes)
		switch {
		case err != nil:
			status = 1
			fmt.Fprintf(stdout, "%s: invalid (%s): %v\n", name, codes.QueueInvalidJob, err)
			continue
		case len(fields) == 0:
			fmt.Fprintf(stdout, "%s: valid\n", name)
			continue
		}
		status = 1
		fmt.Fprintf(stdout, "%s: invalid (%s), %d error(s):\n", name, codes.QueueInvalidJob, len(fields)+more)
		for _, f := range fields {
			path := f.Path
			if path == "" {
				path = "(the job)"
			}
			fmt.Fprintf(stdout, "  %s: %s [%s]\n", path, f.Message, f.Rule)
		}
		if more > 0 {
			fmt.Fprintf(stdout, "  ... and %d more\n", more)
		}
	}
	return status
}

// checkJob checks a job's JSON: its size first, the rest unread when it is
// over maxBytes, then jobv1.Validate. It returns the errors and how many
// more there were, or err when the validator failed otherwise.
func checkJob(data []byte, maxBytes int) (fields []jobv1.FieldError, more int, err error) {
	if len(data) > maxBytes {
		return []jobv1.FieldError{{Rule: "maxJobBytes",
			Message: fmt.Sprintf("is more than the %d bytes a queue takes: not read further", maxBytes)}}, 0, nil
	}
	err = jobv1.Validate(data)
	var ve *jobv1.ValidationError
	if errors.As(err, &ve) {
		return ve.Errors, ve.More, nil
	}
	return nil, 0, err
}

// readJob reads a job file, or standard input for "-": at most maxBytes+1
// bytes, so that a file bigger than a queue takes is told so (checkJob)
// without being read whole.
func readJob(name string, stdin io.Reader, maxBytes int) ([]byte, error) {
	r := stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer func() { _ = f.Close() }() // read only: nothing is lost
		r = f
	}
	return io.ReadAll(io.LimitReader(r, int64(maxBytes)+1))
}

// printCodes lists the codes of schema/codes.yaml.
func printCodes(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CODE\tWHERE\tSTATE\tLEVEL\tWHAT")
	for _, c := range codes.All() {
		state := string(c.State)
		if state == "" {
			state = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.Code, c.Where, state, c.Level, c.What)
	}
	_ = tw.Flush() // to the terminal: nothing to tell if it fails
}
