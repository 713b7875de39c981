// Command testsummary runs go test -json with its arguments and prints, for
// each package, the usual ok or FAIL line with a count of the tests that
// passed, failed and skipped, then a line for each skipped test with its
// reason, so that a skipped test (a Redis test without a Redis) is never a
// silent ok. The output of a failed test is printed in full. It exits 1
// when a test or a build failed, or go test did.
//
//	go run ./internal/tools/testsummary -race -count=1 ./...
//
// make test runs it.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"time"
)

// event is one line of go test -json (go doc test2json).
type event struct {
	Action     string
	Package    string
	ImportPath string // build-output and build-fail events
	Test       string
	Elapsed    float64
	Output     string
}

// pkg is what a package's events said.
type pkg struct {
	name                    string
	output                  map[string][]string // by test; "" is the package's own
	passed, failed, skipped []string
	done                    bool
}

type summary struct {
	w        io.Writer
	pkgs     map[string]*pkg
	builds   map[string][]string
	failures int
	tests    [3]int // passed, failed, skipped
}

func main() {
	args := append([]string{"test", "-json"}, os.Args[1:]...)
	cmd := exec.Command("go", args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(2)
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(2)
	}
	s := &summary{w: os.Stdout, pkgs: map[string]*pkg{}, builds: map[string][]string{}}
	s.read(out)
	werr := cmd.Wait()
	s.total()
	if werr != nil || s.failures > 0 {
		os.Exit(1)
	}
}

// read handles each event until in ends; a line that is not an event is
// printed as it is.
func (s *summary) read(in io.Reader) {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			fmt.Fprintln(s.w, sc.Text())
			continue
		}
		s.handle(e)
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(s.w, "testsummary: reading go test:", err)
		s.failures++
	}
	// A package that never ended (go test was killed) is a failure.
	names := make([]string, 0, len(s.pkgs))
	for n, p := range s.pkgs {
		if !p.done {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		s.end(s.pkgs[n], "fail", 0)
	}
}

func (s *summary) pkg(name string) *pkg {
	p := s.pkgs[name]
	if p == nil {
		p = &pkg{name: name, output: map[string][]string{}}
		s.pkgs[name] = p
	}
	return p
}

func (s *summary) handle(e event) {
	switch e.Action {
	case "build-output":
		s.builds[e.ImportPath] = append(s.builds[e.ImportPath], e.Output)
		return
	case "build-fail":
		// The package's own fail event follows; end prints the output.
		return
	}
	if e.Package == "" {
		return
	}
	p := s.pkg(e.Package)
	switch e.Action {
	case "output":
		p.output[e.Test] = append(p.output[e.Test], e.Output)
	case "pass", "fail", "skip":
		if e.Test == "" {
			s.end(p, e.Action, e.Elapsed)
			return
		}
		switch e.Action {
		case "pass":
			p.passed = append(p.passed, e.Test)
		case "fail":
			p.failed = append(p.failed, e.Test)
		case "skip":
			p.skipped = append(p.skipped, e.Test)
		}
	}
}

// end prints a package's lines once its last event came.
func (s *summary) end(p *pkg, action string, elapsed float64) {
	if p.done {
		return
	}
	p.done = true
	s.tests[0] += len(p.passed)
	s.tests[1] += len(p.failed)
	s.tests[2] += len(p.skipped)
	own := strings.Join(p.output[""], "")
	if action == "skip" && len(p.passed)+len(p.failed)+len(p.skipped) == 0 {
		// A package without tests: go test's own line, as it prints it.
		fmt.Fprintf(s.w, "?    %s [no test files]\n", p.name)
		return
	}
	status := "ok  "
	if action == "fail" || len(p.failed) > 0 {
		status = "FAIL"
		s.failures++
	}
	d := time.Duration(elapsed * float64(time.Second)).Round(10 * time.Millisecond)
	fmt.Fprintf(s.w, "%s %s %v (%s)\n", status, p.name, d, counts(p))
	// A build that failed: the compiler's output, under the package's
	// name or that of its test binary ("pkg [pkg.test]").
	for ip, lines := range s.builds {
		if ip == p.name || strings.HasPrefix(ip, p.name+" [") {
			for _, l := range lines {
				fmt.Fprint(s.w, "      "+l)
			}
			delete(s.builds, ip)
		}
	}
	for _, t := range p.failed {
		fmt.Fprintf(s.w, "  --- FAIL %s\n", t)
		for _, l := range testLines(p.output[t]) {
			fmt.Fprintln(s.w, "      "+l)
		}
	}
	if status == "FAIL" {
		// What the package printed outside its tests: a panic, a leak
		// found after the tests (goleak), a TestMain's own failure.
		for _, l := range testLines([]string{own}) {
			if l != "FAIL" && !strings.HasPrefix(l, "FAIL\t") && !strings.HasPrefix(l, "ok  \t") {
				fmt.Fprintln(s.w, "      "+l)
			}
		}
	}
	for _, t := range p.skipped {
		fmt.Fprintf(s.w, "  SKIP %s %s: %s\n", shortName(p.name), t, reason(p.output[t]))
	}
}

func counts(p *pkg) string {
	c := fmt.Sprintf("%d passed", len(p.passed))
	if n := len(p.failed); n > 0 {
		c += fmt.Sprintf(", %d failed", n)
	}
	if n := len(p.skipped); n > 0 {
		c += fmt.Sprintf(", %d skipped", n)
	}
	return c
}

// testLines splits a test's output into lines, leaving out go test's own
// framing (=== RUN, --- PASS ...) and blank lines.
func testLines(output []string) []string {
	var out []string
	for _, l := range strings.Split(strings.Join(output, ""), "\n") {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- PASS") ||
			strings.HasPrefix(t, "--- SKIP") || t == "PASS" {
			continue
		}
		out = append(out, strings.TrimRight(l, " \t"))
	}
	return out
}

// reason is what a skipped test said, on one line; "no reason given" when
// it said nothing.
func reason(output []string) string {
	var parts []string
	for _, l := range testLines(output) {
		parts = append(parts, strings.TrimSpace(l))
	}
	r := strings.Join(parts, " ")
	if r == "" || strings.HasSuffix(r, ":") {
		// t.Skip() with no message: go test prints only the place.
		return strings.TrimSpace("no reason given " + strings.TrimSuffix(r, ":"))
	}
	return r
}

// shortName drops the module's path from a package's name.
func shortName(name string) string {
	const module = "github.com/alexify/mailer"
	if name == module {
		return "."
	}
	return strings.TrimPrefix(name, module+"/")
}

func (s *summary) total() {
	fmt.Fprintf(s.w, "%d tests passed, %d failed, %d skipped", s.tests[0], s.tests[1], s.tests[2])
	if s.failures > 0 {
		fmt.Fprintf(s.w, "; %d packages FAILED", s.failures)
	}
	fmt.Fprintln(s.w)
}
