package codetest

import (
	"bufio"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/alexify/mailer/gen/codes"
)

// Want is a row of schema/codes.yaml as the generated test checks it.
type Want struct {
	// Code is the code; Level the level the table gives it.
	Code  codes.Code
	Level slog.Level
	// NotYet, when set, is the table's reason that no part of the kit gives
	// the code yet (its field emitted: "none yet — why").
	NotYet string
}

// ReadRecords reads every record appended under dir (MAILER_CODES_RECORD).
func ReadRecords(dir string) (map[Seen]bool, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.tsv"))
	if err != nil {
		return nil, err
	}
	out := map[Seen]bool{}
	for _, name := range names {
		if err := readFile(name, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func readFile(name string, out map[Seen]bool) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		fields := strings.Split(sc.Text(), "\t")
		if len(fields) != 3 {
			return fmt.Errorf("%s:%d: want code, level and kind separated by tabs", name, n)
		}
		var l slog.Level
		if err := l.UnmarshalText([]byte(fields[1])); err != nil {
			return fmt.Errorf("%s:%d: %w", name, n, err)
		}
		out[Seen{codes.Code(fields[0]), l, Kind(fields[2])}] = true
	}
	return sc.Err()
}

// Check fails t for each code of wants that no test logged at its level
// (as the message of a record or its "code" attribute), and for each code
// marked as given by no part of the kit yet that a test did log. It skips,
// saying why, when MAILER_CODES_CHECK is not set: it must run after every
// other test package has recorded what it saw, which `make codes` does.
func Check(t *testing.T, wants []Want) {
	t.Helper()
	dir := os.Getenv(CheckEnv)
	if dir == "" {
		t.Skipf("%s is not set: this test reads the codes the other test packages recorded under %s; `make check` runs it (make codes) after the tests", CheckEnv, RecordEnv)
	}
	recs, err := ReadRecords(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) == 0 {
		t.Fatalf("no records under %s: run the tests with %s=%s first (make test)", dir, RecordEnv, dir)
	}
	for _, w := range wants {
		got := seenAs(recs, w.Code)
		logged := false
		for _, g := range got {
			logged = logged || g != string(KindAudit)
		}
		switch {
		case w.NotYet != "" && logged:
			t.Errorf("%s is marked emitted: %q in schema/codes.yaml, and a test saw it (%s): drop the mark", w.Code, w.NotYet, strings.Join(got, ", "))
		case w.NotYet != "":
		case recs[Seen{w.Code, w.Level, KindMessage}] || recs[Seen{w.Code, w.Level, KindAttr}]:
		case len(got) == 0:
			t.Errorf("%s: no test saw it, and schema/codes.yaml says the kit gives it at %s (or mark it emitted: none yet)", w.Code, w.Level)
		default:
			t.Errorf("%s: schema/codes.yaml gives it at %s; the tests saw it only as %s", w.Code, w.Level, strings.Join(got, ", "))
		}
	}
}

// seenAs lists how code was seen: "WARN message", "ERROR attr", "audit".
func seenAs(recs map[Seen]bool, code codes.Code) []string {
	var out []string
	for s := range recs {
		if s.Code != code {
			continue
		}
		if s.Kind == KindAudit {
			out = append(out, string(KindAudit))
			continue
		}
		out = append(out, s.Level.String()+" "+string(s.Kind))
	}
	sort.Strings(out)
	return out
}
