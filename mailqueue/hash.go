package mailqueue

import (
	"slices"

	"github.com/alexify/mailer/internal/jcs"
)

// notHashed are the fields of a clear job the hash leaves out: the envelope
// (what the queue adds around the message) and the delivery parameters, so
// that a producer that enqueues the same message again with a new expiresAt,
// schedule, priority or correlation id is told a duplicate, not refused
// (docs/wire.md, "The hash").
var notHashed = []string{"hash", "kid", "mac", "enc", "enqueuedAt", "trace", "scheduledAt", "expiresAt", "correlationId", "priority", "maxAttempts"}

// hashOf returns the hash of a clear job given as its decoded JSON object:
// the lowercase hexadecimal SHA-256 of its canonical JSON (RFC 8785) without
// the fields the hash leaves out (docs/wire.md).
func hashOf(job map[string]any) (string, error) {
	m := make(map[string]any, len(job))
	for k, v := range job {
		if !slices.Contains(notHashed, k) {
			m[k] = v
		}
	}
	return jcs.Hash(m)
}
