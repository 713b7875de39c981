package memory_test

import (
	"context"
	"fmt"

	"github.com/alexify/mailer/mail"
	"github.com/alexify/mailer/mail/memory"
)

// A test scripts the receipts a send answers: here a greylisting server
// (a 451 reply, which the queue retries), then the default, Accepted. Every
// message is kept, whatever came of it.
func ExampleTransport_Script() {
	tr := memory.New()
	tr.Script(mail.Receipt{Category: mail.Retryable, Code: 451, Reason: "greylisted, try again later"})
	msg := &mail.Message{From: "shop@example.com", To: []string{"ada@example.com"}, Subject: "Your invoice", Text: "Hello"}
	for range 2 {
		r, err := tr.Send(context.Background(), msg)
		fmt.Println(r.Category, r.Code, r.ProviderID, err != nil)
	}
	fmt.Println("attempts:", tr.Attempts(), "sent:", tr.Sent(), "kept:", len(tr.Messages()))
	// Output:
	// retryable 451  true
	// accepted 250 memory-2 false
	// attempts: 2 sent: 1 kept: 2
}
