package mailqueue

import (
	"fmt"
	"regexp"

	"github.com/alexify/mailer/internal/sign"
)

// MinSigningKeyBytes is the shortest secret a SigningKey may have.
const MinSigningKeyBytes = 32

// SigningKey is a key of Config.SigningKeys, which sign each job with an
// HMAC-SHA256 (its kid and mac), so that whoever can write to the store
// cannot forge a job: a worker given keys sends only jobs one of them
// signed, and fails any other with queue.signature_invalid, unsent.
//
// The first key signs and each one verifies. To rotate, put the new key
// first, deploy the workers, then the producers, and drop the old key once
// no job it signed is left. A worker without keys checks the hash alone, so
// give every worker the keys before any producer (spec: "Signed jobs").
type SigningKey struct {
	// ID names the key in the job's kid: 1 to 64 of A-Z a-z 0-9 . _ : -,
	// unique among the keys.
	ID string
	// Secret is the HMAC-SHA256 key, at least 32 bytes.
	Secret []byte
}

// kidPattern is the schema's pattern of kid (schema/job.v1.json).
var kidPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`)

// checkSigningKeys checks Config.SigningKeys: every ID non-empty, fit for
// the job's kid and unique; every secret at least MinSigningKeyBytes. No key
// at all is fine: the jobs are then neither signed nor verified. New calls
// it.
func checkSigningKeys(keys []SigningKey) error {
	seen := make(map[string]bool, len(keys))
	for i, k := range keys {
		if k.ID == "" {
			return fmt.Errorf("mailqueue: SigningKeys[%d] has no ID", i)
		}
		if !kidPattern.MatchString(k.ID) {
			return fmt.Errorf("mailqueue: SigningKeys[%d].ID must be 1 to 64 of A-Z a-z 0-9 . _ : -", i)
		}
		if seen[k.ID] {
			return fmt.Errorf("mailqueue: SigningKeys[%d].ID is the ID of another key", i)
		}
		seen[k.ID] = true
		if len(k.Secret) < MinSigningKeyBytes {
			return fmt.Errorf("mailqueue: SigningKeys[%d] (%s) has a secret of %d bytes; at least %d are needed", i, k.ID, len(k.Secret), MinSigningKeyBytes)
		}
	}
	return nil
}

// signJob sets kid and mac on a stored job with the first key, after
// dropping any kid and mac it holds: the queue owns them. The mac binds the
// job to where it is stored (docs/wire.md, "The mac"). It does nothing more
// without keys.
func signJob(keys []SigningKey, at sign.Binding, job map[string]any) error {
	delete(job, "kid")
	delete(job, "mac")
	if len(keys) == 0 {
		return nil
	}
	return sign.Sign(keys[0].ID, keys[0].Secret, at, job)
}

// verifyJob reports whether the key of keys the job's kid names made the
// job's mac for the binding.
func verifyJob(keys []SigningKey, at sign.Binding, job map[string]any) bool {
	kid, _ := job["kid"].(string)
	if kid == "" {
		return false
	}
	for _, k := range keys {
		if k.ID == kid {
			return sign.Verify(k.Secret, at, job)
		}
	}
	return false
}
