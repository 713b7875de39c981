package redis_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	redisdriver "github.com/alexify/mailer/drivers/redis"
	"github.com/alexify/mailer/drivers/redis/internal/redistest"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/internal/codetest"
	"github.com/alexify/mailer/mail"
	"github.com/alexify/mailer/mailqueue"
)

const e2eJobs = 200

// TestKillWorkerMidSend: a producer process and two worker processes share
// a queue on Redis (this test binary, run again as child processes). One
// worker hangs in the middle of its third send and is killed with SIGKILL.
// Every job must end accepted or delivery_unknown, none sent twice, none
// lost. Each send is recorded in a Redis list before it returns, so a send
// the killed worker was making counts as sent.
func TestKillWorkerMidSend(t *testing.T) {
	switch os.Getenv("MAILER_E2E_ROLE") {
	case "producer":
		e2eProducer(t)
		return
	case "worker":
		e2eWorker(t)
		return
	}
	if testing.Short() {
		t.Skip("runs three processes; -short")
	}
	c := redistest.Standalone(t)
	prefix := redistest.Prefix(t)
	ctx := context.Background()
	src, err := redisdriver.OpenSource(ctx, redisdriver.Options{Client: c, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = src.Obliterate(context.Background()) })
	key := func(k string) string { return src.Tag() + ":e2e:" + k }

	var outputs []*bytes.Buffer
	child := func(role string, hangAt int) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKillWorkerMidSend$", "-test.v")
		cmd.Env = append(os.Environ(), "MAILER_E2E_ROLE="+role, "MAILER_E2E_PREFIX="+prefix,
			"MAILER_E2E_TAG="+src.Tag(), fmt.Sprintf("MAILER_E2E_HANG_AT=%d", hangAt), "MAILER_REDIS_ADDR="+redistest.Addr())
		out := &bytes.Buffer{}
		outputs = append(outputs, out)
		cmd.Stdout, cmd.Stderr = out, out
		return cmd
	}
	t.Cleanup(func() {
		if t.Failed() {
			for i, o := range outputs {
				t.Logf("child %d:\n%s", i, o)
			}
		}
	})
	a, b := child("worker", 3), child("worker", 0)
	for _, w := range []*exec.Cmd{a, b} {
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		_ = a.Process.Kill()
		_ = b.Process.Kill()
		_ = a.Wait()
		_ = b.Wait()
	}()
	for i := 0; i < 2; i++ {
		if err := c.BLPop(ctx, 20*time.Second, key("ready")).Err(); err != nil {
			t.Fatalf("the workers did not start: %v", err)
		}
	}
	if err := child("producer", 0).Run(); err != nil {
		t.Fatalf("the producer: %v", err)
	}
	hung, err := c.BLPop(ctx, 20*time.Second, key("hung")).Result()
	if err != nil {
		t.Fatalf("worker A never hung mid-send: %v", err)
	}
	if err := a.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = a.Wait()

	e2eWaitFinished(t, src)
	_ = b.Process.Signal(syscall.SIGTERM)
	_ = b.Wait()
	e2eCheckJobs(t, c, src, key, hung[1])
}

// e2eWaitFinished waits until every job of the test is finished.
func e2eWaitFinished(t *testing.T, src *redisdriver.Source) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(60 * time.Second)
	for {
		st, err := src.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Accepted+st.Failed+st.DeliveryUnknown == e2eJobs {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not every job finished: %+v", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// e2eCheckJobs checks that every job the producer enqueued ended accepted
// or delivery_unknown, none sent twice, none lost, and the job killed
// mid-send of unknown delivery after one redelivery.
func e2eCheckJobs(t *testing.T, c *goredis.Client, src *redisdriver.Source, key func(string) string, killed string) {
	t.Helper()
	ctx := context.Background()

	sent := map[string]int{}
	for _, id := range c.LRange(ctx, key("sent"), 0, -1).Val() {
		sent[id]++
	}
	ids := c.LRange(ctx, key("ids"), 0, -1).Val()
	if len(ids) != e2eJobs {
		t.Fatalf("the producer enqueued %d jobs, want %d", len(ids), e2eJobs)
	}
	var accepted, unknown int
	for _, id := range ids {
		j, err := src.Get(ctx, id)
		if err != nil {
			t.Fatalf("job %s lost: %v", id, err)
		}
		if sent[id] > 1 {
			t.Errorf("job %s sent %d times", id, sent[id])
		}
		switch j.State {
		case mailqueue.JobAccepted:
			accepted++
			if sent[id] != 1 {
				t.Errorf("job %s accepted but sent %d times", id, sent[id])
			}
		case mailqueue.JobDeliveryUnknown:
			unknown++
		default:
			t.Errorf("job %s ended %s (%s), want accepted or delivery_unknown", id, j.State, j.Code)
		}
	}
	if j, _ := src.Get(ctx, killed); j.State != mailqueue.JobDeliveryUnknown || j.Redeliveries != 1 {
		t.Errorf("the job killed mid-send ended %s with %d redeliveries, want delivery_unknown after 1", j.State, j.Redeliveries)
	}
	t.Logf("%d jobs: %d accepted, %d delivery_unknown, %d sends recorded", e2eJobs, accepted, unknown, len(sent))
}

func e2eClient(t *testing.T) *goredis.Client {
	c := goredis.NewClient(&goredis.Options{Addr: os.Getenv("MAILER_REDIS_ADDR")})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func e2eQueue(t *testing.T, c *goredis.Client) (*redisdriver.Queue, *mailqueue.Queue) {
	log := slog.New(codetest.Wrap(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	q, err := redisdriver.Open(context.Background(), redisdriver.Options{
		Client: c, Prefix: os.Getenv("MAILER_E2E_PREFIX"), LeaseDuration: time.Second, Logger: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	mq, err := mailqueue.New(mailqueue.Config{Driver: q, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	return q, mq
}

func e2eProducer(t *testing.T) {
	c := e2eClient(t)
	_, mq := e2eQueue(t, c)
	ctx := context.Background()
	for i := 0; i < e2eJobs; i++ {
		res, err := mq.Enqueue(ctx, &jobv1.Job{
			Kind: jobv1.KindContent, Subject: fmt.Sprintf("Order %d", i),
			Content: &jobv1.Content{Text: fmt.Sprintf("Your order %d has shipped.", i)},
			From:    "Shop <shop@example.com>", To: []string{"ada@example.com"},
			IdempotencyKey: fmt.Sprintf("order-shipped:%d", i),
		})
		if err != nil {
			t.Fatal(err)
		}
		c.RPush(ctx, os.Getenv("MAILER_E2E_TAG")+":e2e:ids", res.ID)
	}
}

// recorder is a transport that records each send in a Redis list, and
// hangs forever in the middle of its hangAt-th send.
type recorder struct {
	c      *goredis.Client
	tag    string
	hangAt int32
	n      atomic.Int32
}

func (r *recorder) Send(ctx context.Context, msg *mail.Message) (mail.Receipt, error) {
	if err := r.c.RPush(context.Background(), r.tag+":e2e:sent", msg.IdempotencyKey).Err(); err != nil {
		rc := mail.Receipt{Category: mail.Retryable, Reason: "the record failed"}
		return rc, &mail.Error{Receipt: rc, Err: err}
	}
	if r.n.Add(1) == r.hangAt {
		r.c.RPush(context.Background(), r.tag+":e2e:hung", msg.IdempotencyKey)
		select {} // mid-send, until SIGKILL
	}
	return mail.Receipt{Category: mail.Accepted, Code: 250}, nil
}

func e2eWorker(t *testing.T) {
	c := e2eClient(t)
	_, mq := e2eQueue(t, c)
	var hangAt int32
	if _, err := fmt.Sscan(os.Getenv("MAILER_E2E_HANG_AT"), &hangAt); err != nil {
		t.Fatalf("MAILER_E2E_HANG_AT: %v", err)
	}
	tag := os.Getenv("MAILER_E2E_TAG")
	w, err := mq.NewWorker(mailqueue.WorkerConfig{
		Transport: &recorder{c: c, tag: tag, hangAt: hangAt}, Concurrency: 4,
		// SMTP takes no idempotency key: a run again after a run that died
		// is of unknown delivery, never a second send.
		Redelivered: mailqueue.RedeliveredDeliveryUnknown,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	c.RPush(context.Background(), tag+":e2e:ready", "1")
	<-ctx.Done()
	cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = w.Close(cctx)
	_, _ = io.WriteString(os.Stdout, "worker closed\n")
}
