package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/gen/jobv1"
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
		var data []byte
		var err error
		if name == "-" {
			data, err = io.ReadAll(stdin)
		} else {
			data, err = os.ReadFile(name)
		}
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", name, err)
			status = 1
			continue
		}
		err = jobv1.Validate(data)
		if err == nil {
			fmt.Fprintf(stdout, "%s: valid\n", name)
			continue
		}
		status = 1
		var ve *jobv1.ValidationError
		if !errors.As(err, &ve) {
			fmt.Fprintf(stdout, "%s: invalid (%s): %v\n", name, codes.QueueInvalidJob, err)
			continue
		}
		fmt.Fprintf(stdout, "%s: invalid (%s), %d error(s):\n", name, codes.QueueInvalidJob, len(ve.Errors))
		for _, f := range ve.Errors {
			path := f.Path
			if path == "" {
				path = "(the job)"
			}
			fmt.Fprintf(stdout, "  %s: %s [%s]\n", path, f.Message, f.Rule)
		}
	}
	return status
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
	tw.Flush()
}
