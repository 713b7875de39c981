package httpprovider_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/alexify/mailer/clock"
	"github.com/alexify/mailer/drivers/memory"
	"github.com/alexify/mailer/examples/httpprovider"
	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/mail"
	"github.com/alexify/mailer/mailqueue"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// provider is a fake HTTP provider: it answers the scripted statuses in
// order, then 200, and records each request's Idempotency-Key.
type provider struct {
	mu      sync.Mutex
	script  []func(w http.ResponseWriter)
	keys    []string
	bodies  []map[string]any
	authors []string
}

func (p *provider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	_ = json.NewDecoder(r.Body).Decode(&body)
	p.mu.Lock()
	p.keys = append(p.keys, r.Header.Get("Idempotency-Key"))
	p.bodies = append(p.bodies, body)
	p.authors = append(p.authors, r.Header.Get("Authorization"))
	var f func(w http.ResponseWriter)
	if len(p.script) > 0 {
		f, p.script = p.script[0], p.script[1:]
	}
	n := len(p.keys)
	p.mu.Unlock()
	if f != nil {
		f(w)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"id": "prov-" + string(rune('0'+n))})
}

func (p *provider) requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.keys...)
}

func status(code int, header ...string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(code)
		_, _ = w.Write([]byte(`{"message":"refused for ada@example.com"}`))
	}
}

// TestRateLimitThroughTheQueue sends a job through the queue to a provider
// that answers 429 with Retry-After: 120: the job's next run is no sooner
// than 120 s after, and both attempts carry the job's id as their
// Idempotency-Key.
func TestRateLimitThroughTheQueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := &provider{script: []func(http.ResponseWriter){status(http.StatusTooManyRequests, "Retry-After", "120")}}
	srv := httptest.NewServer(p)
	defer srv.Close()

	fc := clock.NewFake(t0)
	mq := mustMemory(t, memory.Options{Clock: fc})
	q, err := mailqueue.New(mailqueue.Config{Driver: mq, Clock: fc})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := httpprovider.New(httpprovider.Config{Endpoint: srv.URL, APIKey: "key", Client: srv.Client(), Clock: fc})
	if err != nil {
		t.Fatal(err)
	}
	w, err := q.NewWorker(mailqueue.WorkerConfig{Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := w.Close(ctx); err != nil {
			t.Error(err)
		}
	}()

	res, err := q.Enqueue(ctx, &jobv1.Job{
		Kind: jobv1.KindContent, Subject: "Your invoice", Content: &jobv1.Content{Text: "Hello"},
		From: "Shop <shop@example.com>", To: []string{"ada@example.com"}, IdempotencyKey: "invoice:1",
	})
	if err != nil {
		t.Fatal(err)
	}
	drain(t, mq)
	job, _ := mq.Get(context.Background(), res.ID)
	if job.State != mailqueue.JobQueued || job.Code != codes.QueueRateLimited || job.Attempt != 0 {
		t.Fatalf("after the 429: state %s, code %s, attempts %d; want queued, queue.rate_limited, 0 (a rate limit spends no attempt)", job.State, job.Code, job.Attempt)
	}
	if wait := job.RunAt.Sub(fc.Now()); wait < 120*time.Second {
		t.Fatalf("the next run in %v, sooner than the Retry-After of 120s", wait)
	}

	// Not run before its time; run at it.
	fc.Set(job.RunAt.Add(-time.Second))
	mq.Wake()
	drain(t, mq)
	if n := len(p.requests()); n != 1 {
		t.Fatalf("%d requests before the Retry-After passed, want 1", n)
	}
	fc.Set(job.RunAt)
	mq.Wake()
	drain(t, mq)
	job, _ = mq.Get(context.Background(), res.ID)
	if job.State != mailqueue.JobAccepted || job.Attempt != 1 {
		t.Fatalf("after the retry: state %s, attempts %d; want accepted, 1 (the rate limit spent none)", job.State, job.Attempt)
	}
	keys := p.requests()
	if len(keys) != 2 || keys[0] != res.ID || keys[1] != res.ID {
		t.Errorf("Idempotency-Keys %q, want the job id %s twice", keys, res.ID)
	}
	if p.authors[0] != "Bearer key" || p.bodies[0]["messageId"] != res.MessageID {
		t.Errorf("request: auth %q, body %v", p.authors[0], p.bodies[0])
	}
}

func drain(t *testing.T, mq *memory.Queue) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := mq.Drain(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestStatusMapping(t *testing.T) {
	t.Parallel()
	fc := clock.NewFake(t0)
	for _, tc := range []struct {
		reply      func(http.ResponseWriter)
		cat        mail.Category
		retryAfter time.Duration
	}{
		{status(http.StatusOK), mail.Accepted, 0},
		{status(http.StatusAccepted), mail.Accepted, 0},
		{status(http.StatusTooManyRequests, "Retry-After", "120"), mail.RateLimited, 120 * time.Second},
		{status(http.StatusTooManyRequests, "Retry-After", t0.Add(90*time.Second).Format(http.TimeFormat)), mail.RateLimited, 90 * time.Second},
		{status(http.StatusTooManyRequests), mail.RateLimited, 0},
		{status(http.StatusServiceUnavailable, "Retry-After", "30"), mail.Retryable, 30 * time.Second},
		{status(http.StatusInternalServerError), mail.Retryable, 0},
		{status(http.StatusBadRequest), mail.Rejected, 0},
		{status(http.StatusUnprocessableEntity), mail.Rejected, 0},
		{status(http.StatusUnauthorized), mail.Auth, 0},
		{status(http.StatusForbidden), mail.Auth, 0},
		{status(http.StatusConflict), mail.DeliveryUnknown, 0},
	} {
		p := &provider{script: []func(http.ResponseWriter){tc.reply}}
		srv := httptest.NewServer(p)
		tr, _ := httpprovider.New(httpprovider.Config{Endpoint: srv.URL, Clock: fc})
		r, err := tr.Send(context.Background(), message())
		srv.Close()
		if r.Category != tc.cat || r.RetryAfter != tc.retryAfter || (err == nil) != (tc.cat == mail.Accepted) {
			t.Errorf("%d: got %s, retry after %v, %v; want %s, %v", r.Code, r.Category, r.RetryAfter, err, tc.cat, tc.retryAfter)
		}
		if tc.cat != mail.Accepted {
			var me *mail.Error
			if !errors.As(err, &me) || me.Receipt.Category != tc.cat {
				t.Errorf("%d: the error %v is not a *mail.Error of the receipt", r.Code, err)
			}
		}
		if containsAt(r.Reason) || containsAt(r.Text) {
			t.Errorf("%d: the reason or the text quotes an address: %q %q", r.Code, r.Reason, r.Text)
		}
	}
}

func containsAt(s string) bool {
	for _, c := range s {
		if c == '@' {
			return true
		}
	}
	return false
}

func message() *mail.Message {
	return &mail.Message{
		MessageID: "<m@example.com>", Date: t0, From: "a@example.com", To: []string{"b@example.com"},
		Subject: "Hi", Text: "Hi", IdempotencyKey: "job-1",
	}
}

func TestNoReply(t *testing.T) {
	t.Parallel()
	// A refused connection: the request never left.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	tr, _ := httpprovider.New(httpprovider.Config{Endpoint: "http://" + addr + "/send"})
	if r, _ := tr.Send(context.Background(), message()); r.Category != mail.Retryable {
		t.Errorf("connection refused: %s, want retryable", r.Category)
	}
	// A server that takes the request and never answers: it may have sent.
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-hang }))
	defer srv.Close()
	defer close(hang)
	tr, _ = httpprovider.New(httpprovider.Config{Endpoint: srv.URL, Client: &http.Client{Timeout: 100 * time.Millisecond}})
	if r, _ := tr.Send(context.Background(), message()); r.Category != mail.DeliveryUnknown {
		t.Errorf("no reply: %s, want delivery_unknown", r.Category)
	}
}
