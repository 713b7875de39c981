package mailqueue

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
)

// AES-GCM's sizes in the text of enc.
const (
	gcmNonceBytes = 12
	gcmTagBytes   = 16
)

// aesGCMCodec is the codec of the spec's example (spec: "Sealed jobs"):
// AES-256-GCM under one key, a random nonce per job.
type aesGCMCodec struct {
	aead cipher.AEAD
}

// NewAESGCMCodec returns a Codec that seals with AES-256-GCM under key (32
// bytes), a random 96-bit nonce per job, and the associated data the queue
// gives (where the job is stored) as GCM's additional data: an enc copied
// under another id, into another queue or another namespace does not
// authenticate there. The text of enc is the standard
// base64 (padded) of nonce (12 bytes), tag (16 bytes) and ciphertext, in
// that order: the layout of the spec's Node.js example, so a job sealed by
// either opens with the other under the same key (docs/wire.md, "Sealed
// jobs").
//
// A text that is not of that layout fails the job at once (a PermanentError);
// a text that does not authenticate is retried, as it may be sealed under a
// key this worker is not given yet (so is one copied from where it was
// sealed: it is retried until its attempts are spent, never sent).
func NewAESGCMCodec(key []byte) (Codec, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("mailqueue: an AES-256-GCM key is 32 bytes, not %d", len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("mailqueue: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("mailqueue: %w", err)
	}
	return &aesGCMCodec{aead: aead}, nil
}

// Encode seals plain under the additional data ad: base64(nonce ‖ tag ‖
// ciphertext).
func (c *aesGCMCodec) Encode(_ context.Context, plain, ad []byte) (string, error) {
	nonce := make([]byte, gcmNonceBytes)
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("mailqueue: drawing a nonce: %w", err)
	}
	sealed := c.aead.Seal(nil, nonce, plain, ad) // ciphertext ‖ tag
	ct, tag := sealed[:len(plain)], sealed[len(plain):]
	out := make([]byte, 0, gcmNonceBytes+gcmTagBytes+len(ct))
	out = append(append(append(out, nonce...), tag...), ct...)
	return base64.StdEncoding.EncodeToString(out), nil
}

// Decode opens a text Encode made under the same additional data.
func (c *aesGCMCodec) Decode(_ context.Context, enc string, ad []byte) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return nil, PermanentError(errors.New("mailqueue: enc is not standard base64"))
	}
	if len(b) < gcmNonceBytes+gcmTagBytes {
		return nil, PermanentError(errors.New("mailqueue: enc is too short for AES-GCM"))
	}
	nonce, tag, ct := b[:gcmNonceBytes], b[gcmNonceBytes:gcmNonceBytes+gcmTagBytes], b[gcmNonceBytes+gcmTagBytes:]
	plain, err := c.aead.Open(nil, nonce, append(append([]byte(nil), ct...), tag...), ad)
	if err != nil {
		return nil, errors.New("mailqueue: enc does not authenticate under this key and where the job is stored")
	}
	return plain, nil
}
