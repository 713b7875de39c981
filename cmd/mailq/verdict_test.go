package main

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/alexify/mailer/drivers/memory"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/internal/strictjson"
	"github.com/alexify/mailer/mailqueue"
)

// verdict is what a check says of a job's JSON: every error as its path and
// rule, and how many there were in all.
type verdict struct {
	Errors []string // "path [rule]"
	Total  int
}

func jobv1Verdict(data []byte) verdict {
	var ve *jobv1.ValidationError
	if err := jobv1.Validate(data); !errors.As(err, &ve) {
		return verdict{}
	}
	var v verdict
	for _, f := range ve.Errors {
		v.Errors = append(v.Errors, f.Path+" ["+f.Rule+"]")
	}
	v.Total = len(ve.Errors) + ve.More
	return v
}

var (
	errorLine = regexp.MustCompile(`^  (.*?): .* \[([A-Za-z-]+)\]$`)
	countLine = regexp.MustCompile(`^-: invalid \(queue\.invalid_job\), (\d+) error\(s\):$`)
)

func mailqVerdict(t *testing.T, data []byte) verdict {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"validate", "-"}, bytes.NewReader(data), &out, &errOut)
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if code == 0 {
		if out.String() != "-: valid\n" {
			t.Fatalf("mailq validate exited 0 saying %q", out.String())
		}
		return verdict{}
	}
	m := countLine.FindStringSubmatch(lines[0])
	if code != 1 || m == nil {
		t.Fatalf("mailq validate exited %d:\n%s%s", code, out.String(), errOut.String())
	}
	var v verdict
	v.Total, _ = strconv.Atoi(m[1])
	for _, l := range lines[1:] {
		if strings.HasPrefix(l, "  ... and ") {
			continue
		}
		m := errorLine.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("mailq validate wrote %q", l)
		}
		path := m[1]
		if path == "(the job)" {
			path = ""
		}
		v.Errors = append(v.Errors, path+" ["+m[2]+"]")
	}
	return v
}

func enqueueVerdict(t *testing.T, data []byte) verdict {
	t.Helper()
	mq, err := memory.New(memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	q, err := mailqueue.New(mailqueue.Config{Driver: mq})
	if err != nil {
		t.Fatal(err)
	}
	_, err = q.EnqueueJSON(context.Background(), data)
	if err == nil {
		return verdict{}
	}
	var e *mailqueue.Error
	if !errors.As(err, &e) || len(e.Fields) == 0 {
		t.Fatalf("EnqueueJSON = %v, want an *Error with fields", err)
	}
	var v verdict
	for _, f := range e.Fields {
		v.Errors = append(v.Errors, f.Path+" ["+f.Rule+"]")
	}
	v.Total = len(e.Fields) + e.More
	return v
}

// TestOneVerdict: jobv1.Validate, mailq validate and EnqueueJSON give the
// same verdict on every job's JSON, errors and paths alike; and the text
// checks refuse exactly what the worker's reading of a stored job
// (strictjson, the first step of openJob) refuses.
func TestOneVerdict(t *testing.T) {
	head := `{"v":1,"kind":"template","template":"welcome","from":"shop@example.com",`
	many := make([]string, 150)
	for i := range many {
		many[i] = `"not a mailbox"`
	}
	tests := []struct {
		name, in string
		valid    bool
	}{
		{"a template job", head + `"to":["Ada <ada@example.com>"],"context":{"n":[9007199254740991,1.5,1e21]},"maxAttempts":3}`, true},
		{"a content job", `{"v":1,"kind":"content","subject":"Hi","content":{"text":"Hi"},"from":"shop@example.com","to":["ada@example.com"]}`, true},
		{"white space and escapes", " { \"v\" : 1 , \"kind\":\"template\",\"template\":\"welcome\",\"from\":\"shop@example.com\",\"to\":[\"ada@example.com\"],\"subject\":\"\\ud83d\\ude00 \\u00e9\"}\n", true},
		{"a name twice", head + `"to":["ada@example.com"],"to":["eve@example.net"]}`, false},
		{"a name twice in the context", head + `"to":["ada@example.com"],"context":{"a":1,"\u0061":2}}`, false},
		{"invalid UTF-8", head + "\"to\":[\"ada@example.com\"],\"subject\":\"\xff\"}", false},
		{"a lone surrogate", head + `"to":["ada@example.com"],"subject":"\ud800"}`, false},
		{"2^53+1", head + `"to":["ada@example.com"],"context":{"id":9007199254740993}}`, false},
		{"beyond a double", head + `"to":["ada@example.com"],"context":{"n":1e400}}`, false},
		{"nested too deep", head + `"to":["ada@example.com"],"context":{"v":` + strings.Repeat("[", 65) + strings.Repeat("]", 65) + `}}`, false},
		{"nested to the limit", head + `"to":["ada@example.com"],"context":{"v":` + strings.Repeat("[", 64) + strings.Repeat("]", 64) + `}}`, true},
		{"not JSON", head, false},
		{"two values", head + `"to":["ada@example.com"]}{}`, false},
		{"not an object", `[1]`, false},
		{"maxAttempts 0", head + `"to":["ada@example.com"],"maxAttempts":0}`, false},
		{"no recipient", head + `"to":[]}`, false},
		{"bad values", head + `"to":["ada@example.com","not a mailbox"],"priority":"urgent","headers":{"Message-ID":"<x@y>"}}`, false},
		{"150 bad recipients", head + `"to":[` + strings.Join(many, ",") + `]}`, false},
		{"an unknown field", head + `"to":["ada@example.com"],"sendAt":"2030-01-01T00:00:00Z"}`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := []byte(tc.in)
			v := jobv1Verdict(data)
			if diff := cmp.Diff(v, mailqVerdict(t, data)); diff != "" {
				t.Errorf("jobv1.Validate and mailq validate differ (-jobv1 +mailq):\n%s", diff)
			}
			if diff := cmp.Diff(v, enqueueVerdict(t, data)); diff != "" {
				t.Errorf("jobv1.Validate and EnqueueJSON differ (-jobv1 +EnqueueJSON):\n%s", diff)
			}
			if (v.Total == 0) != tc.valid {
				t.Errorf("verdict %+v, want valid %t", v, tc.valid)
			}
			json := len(v.Errors) > 0 && strings.HasSuffix(v.Errors[0], " [json]")
			if worker := strictjson.Check(data) != nil; worker != json {
				t.Errorf("the worker's reading refuses it: %t; the verdict's rule is json: %t (%v)", worker, json, v.Errors)
			}
		})
	}
	// Over the size, both refuse it unread (jobv1.Validate checks no size).
	big := []byte(head + `"to":["ada@example.com"],"subject":"` + strings.Repeat("x", mailqueue.DefaultMaxJobBytes) + `"}`)
	want := verdict{Errors: []string{" [maxJobBytes]"}, Total: 1}
	if diff := cmp.Diff(want, mailqVerdict(t, big)); diff != "" {
		t.Errorf("mailq validate of a big job (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, enqueueVerdict(t, big)); diff != "" {
		t.Errorf("EnqueueJSON of a big job (-want +got):\n%s", diff)
	}
}

// TestValidateMaxJobBytes: --max-job-bytes is the queue's MaxJobBytes.
func TestValidateMaxJobBytes(t *testing.T) {
	job := `{"v":1,"kind":"template","template":"welcome","from":"shop@example.com","to":["ada@example.com"]}`
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"validate", "--max-job-bytes", "1000", "-"}, 0, "-: valid"},
		{[]string{"validate", "--max-job-bytes", "50", "-"}, 1, "(the job): is more than the 50 bytes a queue takes: not read further [maxJobBytes]"},
		{[]string{"validate", "--max-job-bytes", "0", "-"}, 2, ""},
		{[]string{"validate", "--max-job-bytes", "x", "-"}, 2, ""},
	} {
		var out, errOut bytes.Buffer
		code := run(context.Background(), tc.args, strings.NewReader(job), &out, &errOut)
		if code != tc.code || !strings.Contains(out.String(), tc.want) {
			t.Errorf("%v: exit %d, want %d\n%s%s", tc.args, code, tc.code, out.String(), errOut.String())
		}
	}
}
