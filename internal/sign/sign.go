// Package sign computes and checks the mac of a stored job and the
// associated data a codec seals it under (docs/wire.md, "The mac" and
// "Sealed jobs"). The mac is the HMAC-SHA256 of the canonical JSON (RFC
// 8785) of the array
//
//	["mailer/mac", namespace, queue, id, job without its mac]
//
// in unpadded base64url, so that it binds the job to where it was
// enqueued: a copy under another id, into another queue or another
// namespace, does not verify. Which key signs and which keys verify is the
// queue's to decide (mailqueue.SigningKey); this package takes one secret
// at a time.
package sign

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"unicode/utf8"

	"github.com/alexify/mailer/internal/jcs"
)

// The domain-separation tags of the mac input and of the codec's
// associated data: the first element of each array, so that neither can be
// taken for the other nor for an id's seed ("mailer/job-id", ...).
const (
	MACTag = "mailer/mac"
	ADTag  = "mailer/enc"
)

// Binding is where a job is stored: the namespace of its id, the name of
// the queue it was enqueued into (mailqueue.QueueNamer; "" for a driver
// that has none) and its id.
type Binding struct {
	Namespace, Queue, ID string
}

// errBinding is the error of a binding that is not valid UTF-8: its
// canonical JSON would not be the same text in every language.
var errBinding = errors.New("sign: the namespace, the queue or the id is not valid UTF-8")

func (b Binding) valid() bool {
	return utf8.ValidString(b.Namespace) && utf8.ValidString(b.Queue) && utf8.ValidString(b.ID)
}

// MACInput returns the bytes the mac is taken over: the canonical JSON of
// [MACTag, namespace, queue, id, job without "mac"]. It fails when the
// job, the namespace, the queue or the id has no canonical JSON
// (jcs.Marshal: a NaN; a namespace, queue or id not valid UTF-8).
func MACInput(b Binding, job map[string]any) ([]byte, error) {
	if !b.valid() {
		return nil, errBinding
	}
	m := make(map[string]any, len(job))
	for k, v := range job {
		if k != "mac" {
			m[k] = v
		}
	}
	return jcs.Marshal([]any{MACTag, b.Namespace, b.Queue, b.ID, m})
}

// AD returns the associated data a codec seals a job's enc under: the
// canonical JSON of [ADTag, namespace, queue, id]. It fails when one of
// them has no canonical JSON (invalid UTF-8).
func AD(b Binding) ([]byte, error) {
	if !b.valid() {
		return nil, errBinding
	}
	return jcs.Marshal([]any{ADTag, b.Namespace, b.Queue, b.ID})
}

// MAC returns the mac of a stored job, given as its decoded JSON object
// and where it is stored, under secret: the HMAC-SHA256 of MACInput, in
// unpadded base64url. For a sealed job the object is the envelope with
// enc, so a worker verifies it before it opens enc.
func MAC(secret []byte, b Binding, job map[string]any) (string, error) {
	c, err := MACInput(b, job)
	if err != nil {
		return "", err
	}
	h := hmac.New(sha256.New, secret)
	h.Write(c)
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)), nil
}

// Sign sets the job's kid to kid and its mac to the MAC under secret. It
// fails when MACInput does; kid is then set and mac is not.
func Sign(kid string, secret []byte, b Binding, job map[string]any) error {
	job["kid"] = kid
	mac, err := MAC(secret, b, job)
	if err != nil {
		return err
	}
	job["mac"] = mac
	return nil
}

// Verify reports whether the job's mac is the MAC under secret for the
// binding. A job with no mac, or a mac that is not a string, is not
// verified.
func Verify(secret []byte, b Binding, job map[string]any) bool {
	got, _ := job["mac"].(string)
	if got == "" {
		return false
	}
	want, err := MAC(secret, b, job)
	// Compare the texts: base64 with unused trailing bits has several texts
	// for one mac, and only the one a producer writes is valid.
	return err == nil && hmac.Equal([]byte(want), []byte(got))
}
