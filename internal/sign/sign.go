// Package sign computes and checks the mac of a stored job: the
// HMAC-SHA256 of the canonical JSON (RFC 8785) of the job's object without
// its mac, in unpadded base64url (docs/wire.md, "The mac"). Which key signs
// and which keys verify is the queue's to decide (mailqueue.SigningKey);
// this package takes one secret at a time.
package sign

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"

	"github.com/alexify/mailer/internal/jcs"
)

// MAC returns the mac of a stored job given as its decoded JSON object
// under secret: the HMAC-SHA256 of the canonical JSON of the object without
// its mac (its kid included), in unpadded base64url. For a sealed job the
// object is the envelope with enc, so a worker verifies it before it opens
// enc. It fails when the object has no canonical JSON (jcs.Marshal).
func MAC(secret []byte, job map[string]any) (string, error) {
	m := make(map[string]any, len(job))
	for k, v := range job {
		if k != "mac" {
			m[k] = v
		}
	}
	c, err := jcs.Marshal(m)
	if err != nil {
		return "", err
	}
	h := hmac.New(sha256.New, secret)
	h.Write(c)
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)), nil
}

// Sign sets the job's kid to kid and its mac to the MAC under secret. It
// fails when the object has no canonical JSON; kid is then set and mac is
// not.
func Sign(kid string, secret []byte, job map[string]any) error {
	job["kid"] = kid
	mac, err := MAC(secret, job)
	if err != nil {
		return err
	}
	job["mac"] = mac
	return nil
}

// Verify reports whether the job's mac is the MAC under secret. A job with
// no mac, or a mac that is not a string, is not verified.
func Verify(secret []byte, job map[string]any) bool {
	got, _ := job["mac"].(string)
	if got == "" {
		return false
	}
	want, err := MAC(secret, job)
	// Compare the texts: base64 with unused trailing bits has several texts
	// for one mac, and only the one a producer writes is valid.
	return err == nil && hmac.Equal([]byte(want), []byte(got))
}
