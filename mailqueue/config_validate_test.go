package mailqueue_test

import (
	"errors"
	"testing"
	"time"

	"github.com/alexify/mailer/drivers/memory"
	mtransport "github.com/alexify/mailer/mail/memory"
	"github.com/alexify/mailer/mailqueue"
)

// TestConfigRefused: New refuses each value it cannot honour with an
// *OptionError naming the field and the value.
func TestConfigRefused(t *testing.T) {
	t.Parallel()
	d := mustMemory(t, memory.Options{})
	tests := []struct {
		name string
		cfg  mailqueue.Config
		want string
	}{
		{"no driver", mailqueue.Config{}, "mailqueue: Config.Driver is required"},
		{"attempts below 1", mailqueue.Config{Driver: d, MaxAttempts: -1}, "mailqueue: Config.MaxAttempts -1 is not within 1 to 100"},
		{"attempts above 100", mailqueue.Config{Driver: d, MaxAttempts: 101}, "mailqueue: Config.MaxAttempts 101 is not within 1 to 100"},
		{"negative job size", mailqueue.Config{Driver: d, MaxJobBytes: -1}, "mailqueue: Config.MaxJobBytes -1 is negative"},
		{"negative attachment size", mailqueue.Config{Driver: d, MaxInlineAttachmentBytes: -5}, "mailqueue: Config.MaxInlineAttachmentBytes -5 is negative"},
		{"short secret", mailqueue.Config{Driver: d, IDSecret: make([]byte, 16)}, "mailqueue: Config.IDSecret is 16 bytes, shorter than 32"},
		{"a namespace not UTF-8", mailqueue.Config{Driver: d, Namespace: "n\xff"}, `mailqueue: Config.Namespace "n\xff" is not valid UTF-8`},
		{"a queue name not UTF-8", mailqueue.Config{Driver: namedDriver{d, "q\xff"}}, `mailqueue: Config.Driver's QueueName "q\xff" is not valid UTF-8`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q, err := mailqueue.New(tc.cfg)
			var oe *mailqueue.OptionError
			if q != nil || !errors.As(err, &oe) || err.Error() != tc.want {
				t.Fatalf("New = %v, %v; want an *OptionError %q", q, err, tc.want)
			}
		})
	}
	if _, err := mailqueue.New(mailqueue.Config{Driver: d}); err != nil {
		t.Errorf("New with the zero values: %v, want the defaults", err)
	}
}

// namedDriver is a driver whose QueueName is name.
type namedDriver struct {
	mailqueue.Driver
	name string
}

func (d namedDriver) QueueName() string { return d.name }

// TestWorkerConfigRefused: NewWorker refuses each value it cannot honour
// with an *OptionError naming the field and the value.
func TestWorkerConfigRefused(t *testing.T) {
	t.Parallel()
	q, err := mailqueue.New(mailqueue.Config{Driver: mustMemory(t, memory.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	tr := mtransport.New()
	tests := []struct {
		name string
		cfg  mailqueue.WorkerConfig
		want string
	}{
		{"no transport", mailqueue.WorkerConfig{}, "mailqueue: WorkerConfig.Transport is required"},
		{"negative concurrency", mailqueue.WorkerConfig{Transport: tr, Concurrency: -1}, "mailqueue: WorkerConfig.Concurrency -1 is negative"},
		{"negative operator delay", mailqueue.WorkerConfig{Transport: tr, OperatorDelay: -time.Second}, "mailqueue: WorkerConfig.OperatorDelay -1s is negative"},
		{"negative redeliveries", mailqueue.WorkerConfig{Transport: tr, MaxRedeliveries: -2}, "mailqueue: WorkerConfig.MaxRedeliveries -2 is negative"},
		{"unknown rate limit scope", mailqueue.WorkerConfig{Transport: tr, RateLimitScope: "tenants"}, `mailqueue: WorkerConfig.RateLimitScope "tenants" is not one of job, queue, tenant`},
		{"unknown redelivery policy", mailqueue.WorkerConfig{Transport: tr, Redelivered: "again"}, `mailqueue: WorkerConfig.Redelivered "again" is not one of send, delivery_unknown`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, err := q.NewWorker(tc.cfg)
			var oe *mailqueue.OptionError
			if w != nil || !errors.As(err, &oe) || err.Error() != tc.want {
				t.Fatalf("NewWorker = %v, %v; want an *OptionError %q", w, err, tc.want)
			}
		})
	}
	if _, err := q.NewWorker(mailqueue.WorkerConfig{Transport: tr}); err != nil {
		t.Errorf("NewWorker with the zero values: %v, want the defaults", err)
	}
}
