package mailqueue_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/alexify/mailer/drivers/memory"
	"github.com/alexify/mailer/internal/postfixtest"
	"github.com/alexify/mailer/mail"
	"github.com/alexify/mailer/mail/smtp"
	"github.com/alexify/mailer/mailqueue"
)

// categoryCounter counts the categories of the receipts of a transport.
type categoryCounter struct {
	mail.Transport
	mu   sync.Mutex
	cats map[mail.Category]int
}

func (c *categoryCounter) Send(ctx context.Context, msg *mail.Message) (mail.Receipt, error) {
	r, err := c.Transport.Send(ctx, msg)
	c.mu.Lock()
	c.cats[r.Category]++
	c.mu.Unlock()
	return r, err
}

func (c *categoryCounter) count(cat mail.Category) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cats[cat]
}

// TestPostfixAnvilPausesTheQueue runs jobs through the kit's SMTP transport
// into a real Postfix whose anvil limits apply to loopback
// (smtpd_client_event_limit_exceptions emptied): 10 messages per 3 s for 30
// jobs. Its "450 4.7.1 Error: too much mail from 127.0.0.1" is a rate limit,
// RateLimitScope queue pauses the queue, and every job goes on its first
// attempt, none failed, none twice (issue 10, points 2 and 12). It runs on
// the wall clock, as Postfix does, bounded to a minute.
func TestPostfixAnvilPausesTheQueue(t *testing.T) {
	const jobs, limit = 30, 10
	pf := postfixtest.Start(t, postfixtest.Options{Main: map[string]string{
		"smtpd_client_event_limit_exceptions": "",
		"smtpd_client_message_rate_limit":     fmt.Sprint(limit),
		"anvil_rate_time_unit":                "3s",
	}})
	st, err := smtp.New(smtp.Config{Host: "127.0.0.1", Port: pf.Port, TLS: smtp.TLSNone, HELO: "client.test",
		Timeout: 10 * time.Second, RateLimitWait: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	tr := &categoryCounter{Transport: st, cats: map[mail.Category]int{}}

	mq := mustMemory(t, memory.Options{PollInterval: 100 * time.Millisecond, RetainData: mailqueue.RetainAllData})
	q, err := mailqueue.New(mailqueue.Config{Driver: mq, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i := range jobs {
		j := contentJob()
		j.To = []string{fmt.Sprintf("r%d@example.test", i)}
		j.From = "Shop <shop@example.test>"
		j.IdempotencyKey = fmt.Sprintf("anvil:%d", i)
		if _, err := q.Enqueue(context.Background(), j); err != nil {
			t.Fatal(err)
		}
	}
	startWorker(t, q, mailqueue.WorkerConfig{Transport: tr, RateLimitScope: mailqueue.RateLimitQueue})

	got, err := pf.WaitMessages(jobs, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := mq.Drain(ctx); err != nil {
		t.Fatalf("drain: %v", err)
	}
	states := map[mailqueue.JobState]int{}
	attempts := map[int]int{}
	for _, j := range allJobs(t, mq) {
		states[j.State]++
		attempts[j.Attempt]++
	}
	t.Logf("jobs %d, delivered %d, rate-limited replies %d, accepted %d, states %v, attempts %v, in %v",
		jobs, len(got), tr.count(mail.RateLimited), tr.count(mail.Accepted), states, attempts, elapsed.Round(100*time.Millisecond))
	if len(got) != jobs || states[mailqueue.JobAccepted] != jobs || attempts[1] != jobs {
		t.Errorf("want %d delivered, accepted, each on its first attempt", jobs)
	}
	if tr.count(mail.RateLimited) == 0 {
		t.Error("Postfix never rate-limited: the test proves nothing")
	}
	seen := map[string]bool{}
	for _, d := range got {
		if seen[d.Recipient] {
			t.Errorf("%s got the message twice", d.Recipient)
		}
		seen[d.Recipient] = true
	}
}

// TestPostfixRecipientLimitThroughTheQueue sends a job of 8 recipients
// through the queue to a Postfix that takes 5 a message
// (smtpd_recipient_limit, "452 4.5.3 Error: too many recipients"): the job
// is accepted on its first attempt and each recipient gets the message
// once (RFC 5321 §4.5.3.1.10; issue 10, point 10).
func TestPostfixRecipientLimitThroughTheQueue(t *testing.T) {
	pf := postfixtest.Start(t, postfixtest.Options{Main: map[string]string{"smtpd_recipient_limit": "5"}})
	st, err := smtp.New(smtp.Config{Host: "127.0.0.1", Port: pf.Port, TLS: smtp.TLSNone, HELO: "client.test", Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	h := newHarness(t, mailqueue.WorkerConfig{Transport: st}).start()
	j := contentJob()
	j.From = "Shop <shop@example.test>"
	j.To = nil
	for i := 1; i <= 8; i++ {
		j.To = append(j.To, fmt.Sprintf("r%d@example.test", i))
	}
	id := h.enqueue(j)
	h.drain()
	h.check(id, outcome{mailqueue.JobAccepted, 1, ""})
	got, err := pf.WaitMessages(8, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, d := range got {
		seen[d.Recipient]++
	}
	for i := 1; i <= 8; i++ {
		if n := seen[fmt.Sprintf("r%d@example.test", i)]; n != 1 {
			t.Errorf("r%d got %d copies, want 1", i, n)
		}
	}
	if len(got) != 8 {
		t.Errorf("%d copies delivered, want 8", len(got))
	}
}
