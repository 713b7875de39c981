package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSummary: a package's line gives its counts, each skipped test gets a
// SKIP line with its reason, a failed test its output, and the failures are
// counted.
func TestSummary(t *testing.T) {
	t.Parallel()
	events := `{"Action":"start","Package":"github.com/alexify/mailer/drivers/redis"}
{"Action":"run","Package":"github.com/alexify/mailer/drivers/redis","Test":"TestOK"}
{"Action":"output","Package":"github.com/alexify/mailer/drivers/redis","Test":"TestOK","Output":"=== RUN   TestOK\n"}
{"Action":"pass","Package":"github.com/alexify/mailer/drivers/redis","Test":"TestOK","Elapsed":0}
{"Action":"run","Package":"github.com/alexify/mailer/drivers/redis","Test":"TestRedis"}
{"Action":"output","Package":"github.com/alexify/mailer/drivers/redis","Test":"TestRedis","Output":"    redis_test.go:30: no Redis at 127.0.0.1:6379\n"}
{"Action":"output","Package":"github.com/alexify/mailer/drivers/redis","Test":"TestRedis","Output":"--- SKIP: TestRedis (0.00s)\n"}
{"Action":"skip","Package":"github.com/alexify/mailer/drivers/redis","Test":"TestRedis","Elapsed":0}
{"Action":"pass","Package":"github.com/alexify/mailer/drivers/redis","Elapsed":1.5}
not an event
{"Action":"run","Package":"github.com/alexify/mailer/mail","Test":"TestBad"}
{"Action":"output","Package":"github.com/alexify/mailer/mail","Test":"TestBad","Output":"    build_test.go:9: boom\n"}
{"Action":"fail","Package":"github.com/alexify/mailer/mail","Test":"TestBad","Elapsed":0}
{"Action":"fail","Package":"github.com/alexify/mailer/mail","Elapsed":0.2}
{"Action":"skip","Package":"github.com/alexify/mailer/clock","Elapsed":0}
`
	var b strings.Builder
	s := &summary{w: &b, pkgs: map[string]*pkg{}, builds: map[string][]string{}}
	s.read(strings.NewReader(events))
	s.total()
	want := `ok   github.com/alexify/mailer/drivers/redis 1.5s (1 passed, 1 skipped)
  SKIP drivers/redis TestRedis: redis_test.go:30: no Redis at 127.0.0.1:6379
not an event
FAIL github.com/alexify/mailer/mail 200ms (0 passed, 1 failed)
  --- FAIL TestBad
          build_test.go:9: boom
?    github.com/alexify/mailer/clock [no test files]
1 tests passed, 1 failed, 1 skipped; 1 packages FAILED
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
	if s.failures != 1 {
		t.Errorf("%d failures, want 1", s.failures)
	}
}
