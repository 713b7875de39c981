package postgres

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alexify/mailer/internal/pgtest"
	"github.com/alexify/mailer/mailqueue"
)

var benchData = []byte(`{"v":1,"kind":"content","subject":"Your order has shipped","content":{"text":"Hello Ada, your order has shipped."},"from":"Shop <shop@example.com>","to":["ada@example.com"]}`)

// BenchmarkEnqueue stores one job a call, each its own transaction.
func BenchmarkEnqueue(b *testing.B) {
	s := newSource(b, pgtest.Pool(b), Options{})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		j := testJob(fmt.Sprintf("b%d", i), i)
		j.Data = benchData
		if _, err := s.Enqueue(ctx, []mailqueue.NewJob{j}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReserveAck leases and acks one job a call.
func BenchmarkReserveAck(b *testing.B) {
	s := newSource(b, pgtest.Pool(b), Options{})
	var jobs []mailqueue.NewJob
	for i := 0; i < b.N; i++ {
		jobs = append(jobs, testJob(fmt.Sprintf("b%d", i), 0))
	}
	for i := 0; i < len(jobs); i += 1000 {
		if _, err := s.Enqueue(ctx, jobs[i:min(i+1000, len(jobs))]); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ls, err := s.Reserve(ctx, mailqueue.ReserveParams{Limit: 1, LeaseDuration: time.Minute})
		if err != nil || len(ls) != 1 {
			b.Fatal(err)
		}
		if ok, err := s.Ack(ctx, mailqueue.AckParams{ID: ls[0].ID, Token: ls[0].Token}); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}

// BenchmarkEndToEnd runs b.N stored jobs through the polling driver at
// concurrency 10, a handler that acks at once: the driver's own cost per
// job (reserve, SettleAndReserve), without the worker's.
func BenchmarkEndToEnd(b *testing.B) {
	p := pgtest.Pool(b)
	q, err := Open(ctx, Options{Pool: p, Schema: newSchema(b, p)})
	if err != nil {
		b.Fatal(err)
	}
	var jobs []mailqueue.NewJob
	for i := 0; i < b.N; i++ {
		j := testJob(fmt.Sprintf("b%d", i), 0)
		j.Data = benchData
		jobs = append(jobs, j)
	}
	for i := 0; i < len(jobs); i += 1000 {
		if _, err := q.Enqueue(ctx, jobs[i:min(i+1000, len(jobs))]); err != nil {
			b.Fatal(err)
		}
	}
	var done atomic.Int64
	all := make(chan struct{})
	b.ResetTimer()
	r, err := q.Work(mailqueue.HandlerFunc(func(context.Context, *mailqueue.Lease) mailqueue.Outcome {
		if done.Add(1) == int64(b.N) {
			close(all)
		}
		return mailqueue.Outcome{Action: mailqueue.Ack}
	}), mailqueue.WorkOptions{Concurrency: 10})
	if err != nil {
		b.Fatal(err)
	}
	<-all
	b.StopTimer()
	_ = r.Close(context.Background())
}
