package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/mailqueue"
)

// validate checks each file against the job schema and prints every error
// with its path. It returns 1 when a file is invalid or unreadable.
func validate(files []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(files) == 0 {
		fmt.Fprintln(stderr, "mailq validate: name a job file (or - for standard input)")
		return 2
	}
	status := 0
	for _, name := range files {
		data, err := readJob(name, stdin)
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", name, err)
			status = 1
			continue
		}
		var fields []jobv1.FieldError
		if len(data) > mailqueue.DefaultMaxJobBytes {
			fields = append(fields, jobv1.FieldError{Rule: "maxJobBytes",
				Message: fmt.Sprintf("is %d bytes, more than the %d a queue takes by default", len(data), mailqueue.DefaultMaxJobBytes)})
		}
		err = jobv1.Validate(data)
		var ve *jobv1.ValidationError
		switch {
		case err == nil && len(fields) == 0:
			fmt.Fprintf(stdout, "%s: valid\n", name)
			continue
		case errors.As(err, &ve):
			fields = append(fields, ve.Errors...)
		case err != nil:
			status = 1
			fmt.Fprintf(stdout, "%s: invalid (%s): %v\n", name, codes.QueueInvalidJob, err)
			continue
		}
		status = 1
		fmt.Fprintf(stdout, "%s: invalid (%s), %d error(s):\n", name, codes.QueueInvalidJob, len(fields))
		for _, f := range fields {
			path := f.Path
			if path == "" {
				path = "(the job)"
			}
			fmt.Fprintf(stdout, "  %s: %s [%s]\n", path, f.Message, f.Rule)
		}
	}
	return status
}

// maxReadBytes bounds what validate reads of one file: far more than any
// queue takes, so a bigger file is told too big rather than read whole.
const maxReadBytes = 16 << 20

// readJob reads a job file, or standard input for "-".
func readJob(name string, stdin io.Reader) ([]byte, error) {
	r := stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer func() { _ = f.Close() }() // read only: nothing is lost
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxReadBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxReadBytes {
		return nil, fmt.Errorf("more than %d bytes: not a job a queue takes", maxReadBytes)
	}
	return data, nil
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
