package httpprovider_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/alexify/mailer/examples/httpprovider"
	"github.com/alexify/mailer/mail"
)

// A send to a provider that asks to slow down (429 with Retry-After), then
// takes the message: the first receipt is RateLimited with the wait the
// provider gave, which the worker honours before the retry; both requests
// carry the message's IdempotencyKey (the job's id), so a provider that
// dedupes by it sends the message once.
func ExampleTransport_Send() {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Println("provider got Idempotency-Key", r.Header.Get("Idempotency-Key"))
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "120")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		fmt.Fprint(w, `{"id":"msg-1"}`)
	}))
	defer srv.Close()

	transport, err := httpprovider.New(httpprovider.Config{Endpoint: srv.URL, Client: srv.Client()})
	if err != nil {
		fmt.Println(err)
		return
	}
	msg := &mail.Message{
		MessageID:      "<job-1@example.com>",
		Date:           time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC),
		From:           "Acme <no-reply@example.com>",
		To:             []string{"ada@example.com"},
		Subject:        "Welcome",
		Text:           "Welcome aboard!",
		IdempotencyKey: "job-1",
	}
	for range 2 {
		r, err := transport.Send(context.Background(), msg)
		fmt.Println(r.Category, r.Code, r.RetryAfter, r.ProviderID, err == nil)
	}
	// Output:
	// provider got Idempotency-Key job-1
	// rate_limited 429 2m0s  false
	// provider got Idempotency-Key job-1
	// accepted 200 0s msg-1 true
}
