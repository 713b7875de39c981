package redis

import (
	"fmt"
	"testing"
	"time"

	"github.com/alexify/mailer/drivers/redis/internal/redistest"
	"github.com/alexify/mailer/mailqueue"
)

// BenchmarkEnqueue stores one job a call.
func BenchmarkEnqueue(b *testing.B) {
	s := newSource(b, redistest.Standalone(b), Options{})
	data := []byte(`{"v":1,"kind":"content","subject":"Your order has shipped","content":{"text":"Hello Ada, your order has shipped."},"from":"Shop <shop@example.com>","to":["ada@example.com"]}`)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		j := testJob(fmt.Sprintf("b%d", i))
		j.Data = data
		if _, err := s.Enqueue(ctx, []mailqueue.NewJob{j}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReserveAck leases and acks one job a call.
func BenchmarkReserveAck(b *testing.B) {
	s := newSource(b, redistest.Standalone(b), Options{})
	var jobs []mailqueue.NewJob
	for i := 0; i < b.N; i++ {
		jobs = append(jobs, testJob(fmt.Sprintf("b%d", i)))
	}
	if _, err := s.Enqueue(ctx, jobs); err != nil {
		b.Fatal(err)
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
