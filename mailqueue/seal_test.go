package mailqueue_test

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/alexify/mailer/drivers/memory"
	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/gen/jobv1"
	mmemory "github.com/alexify/mailer/mail/memory"
	"github.com/alexify/mailer/mailqueue"
)

func aesCodec(t *testing.T, b byte) mailqueue.Codec {
	t.Helper()
	c, err := mailqueue.NewAESGCMCodec(bytes.Repeat([]byte{b}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// secretJob holds what must not reach the store in clear.
func secretJob() *jobv1.Job {
	return &jobv1.Job{
		Kind: jobv1.KindContent, Subject: "Your reset link SUBJ-7f3a",
		Content: &jobv1.Content{Text: "Reset: https://app.example.com/reset?t=TOKEN-9c1e", HTML: "<a href=\"https://app.example.com/reset?t=TOKEN-9c1e\">reset</a>"},
		Context: map[string]any{"token": "CTX-VALUE-42d1"},
		From:    "Shop <shop@example.com>", To: []string{"ada.lovelace@example.org"}, Bcc: []string{"audit@example.net"},
		Headers:        map[string]string{"X-Campaign": "HEADER-5e2b"},
		IdempotencyKey: "reset:1", CorrelationID: "req-1",
		Attachments: []jobv1.Attachment{{Filename: "secret-name.txt", ContentType: "text/plain", Content: []byte("ATTACHMENT-BYTES")}},
	}
}

func TestSealedJobKeepsNothingInClear(t *testing.T) {
	t.Parallel()
	codec := aesCodec(t, 1)
	keys := []mailqueue.SigningKey{key("k1", 'a')}
	q, mq, _ := newQueueWith(t, mailqueue.Config{Codec: codec, SigningKeys: keys}, memory.Options{RetainData: mailqueue.RetainAllData})
	r, err := q.Enqueue(context.Background(), secretJob())
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := mq.Data(context.Background(), r.ID)
	for _, s := range []string{"ada.lovelace", "audit@", "example", "SUBJ-7f3a", "TOKEN-9c1e", "CTX-VALUE-42d1", "HEADER-5e2b", "secret-name", "ATTACHMENT-BYTES",
		base64.StdEncoding.EncodeToString([]byte("ATTACHMENT-BYTES")), "reset:1", "template", "content"} {
		if bytes.Contains(raw, []byte(s)) {
			t.Errorf("the stored job holds %q in clear: %s", s, raw)
		}
	}
	var stored map[string]any
	if err := json.Unmarshal(raw, &stored); err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(stored))
	for k := range stored {
		names = append(names, k)
	}
	slices.Sort(names)
	if want := []string{"correlationId", "enc", "enqueuedAt", "hash", "kid", "mac", "v"}; !slices.Equal(names, want) {
		t.Errorf("stored fields %v, want %v", names, want)
	}
	if stored["hash"] != r.Hash {
		t.Errorf("the sealed job's hash %v is not the enqueue's %s", stored["hash"], r.Hash)
	}
	// The same message again is told a duplicate by the hash in clear.
	again, err := q.Enqueue(context.Background(), secretJob())
	if err != nil || !again.Duplicate {
		t.Errorf("enqueue again: %+v, %v; want a duplicate", again, err)
	}
	// A worker of the queue opens and sends it.
	tr := mmemory.New()
	startWorker(t, q, mailqueue.WorkerConfig{Transport: tr})
	drain(t, mq)
	wantJob(t, mq, r.ID, mailqueue.JobAccepted, 1, "")
	msgs := tr.Messages()
	if len(msgs) != 1 || msgs[0].Subject != "Your reset link SUBJ-7f3a" || msgs[0].MessageID != r.MessageID || !slices.Equal(msgs[0].To, []string{"ada.lovelace@example.org"}) {
		t.Errorf("sent: %+v", msgs)
	}
}

// countingCodec wraps a codec, counts Decode calls and may fail them.
type countingCodec struct {
	mailqueue.Codec
	decodes atomic.Int32
	err     error
}

func (c *countingCodec) Decode(ctx context.Context, enc string, ad []byte) ([]byte, error) {
	c.decodes.Add(1)
	if c.err != nil {
		return nil, c.err
	}
	return c.Codec.Decode(ctx, enc, ad)
}

type notRetryable struct{}

func (notRetryable) Error() string   { return "the key was destroyed" }
func (notRetryable) Retryable() bool { return false }

func TestSealedJobAtAWorker(t *testing.T) {
	t.Parallel()
	codec := aesCodec(t, 1)
	keys := []mailqueue.SigningKey{key("k1", 'a')}
	sealed, id := produceID(t, mailqueue.Config{Codec: codec, SigningKeys: keys}, secretJob())
	tests := []struct {
		name     string
		codec    mailqueue.Codec
		failWith error
		state    mailqueue.JobState
		attempts int
		code     codes.Code
	}{
		{"no codec: given back, no attempt spent", nil, nil, mailqueue.JobQueued, 0, codes.QueueCodecMissing},
		{"a codec that fails: retried", codec, errors.New("the key service is down"), mailqueue.JobQueued, 1, codes.QueueCodecFailed},
		{"a PermanentError: failed", codec, mailqueue.PermanentError(errors.New("the key was destroyed")), mailqueue.JobFailed, 1, codes.QueueCodecFailed},
		{"an error with Retryable() false: failed", codec, notRetryable{}, mailqueue.JobFailed, 1, codes.QueueCodecFailed},
		{"a codec of another key: retried", aesCodec(t, 2), nil, mailqueue.JobQueued, 1, codes.QueueCodecFailed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := mailqueue.Config{SigningKeys: keys}
			var cc *countingCodec
			if tc.codec != nil {
				cc = &countingCodec{Codec: tc.codec, err: tc.failWith}
				cfg.Codec = cc
			}
			q, mq, _ := newQueue(t, cfg)
			tr := mmemory.New()
			startWorker(t, q, mailqueue.WorkerConfig{Transport: tr})
			writeRaw(t, mq, id, sealed)
			drain(t, mq)
			wantJob(t, mq, id, tc.state, tc.attempts, tc.code)
			if tr.Attempts() != 0 {
				t.Error("sent")
			}
		})
	}
	t.Run("no codec: failed after a week", func(t *testing.T) {
		q, mq, fc := newQueue(t, mailqueue.Config{SigningKeys: keys})
		startWorker(t, q, mailqueue.WorkerConfig{Transport: mmemory.New()})
		writeRaw(t, mq, id, sealed)
		drain(t, mq)
		fc.Set(t0.Add(mailqueue.MaxReleaseWait + mailqueue.DefaultOperatorDelay))
		mq.Wake()
		drain(t, mq)
		wantJob(t, mq, id, mailqueue.JobFailed, 1, codes.QueueCodecMissing)
	})
	t.Run("forged: failed before the codec", func(t *testing.T) {
		forged := editJSON(t, sealed, func(m map[string]any) {
			other := produce(t, mailqueue.Config{Codec: codec}, contentJob())
			var o map[string]any
			_ = json.Unmarshal(other, &o)
			m["enc"], m["hash"] = o["enc"], o["hash"]
		})
		cc := &countingCodec{Codec: codec}
		q, mq, _ := newQueue(t, mailqueue.Config{SigningKeys: keys, Codec: cc})
		tr := mmemory.New()
		startWorker(t, q, mailqueue.WorkerConfig{Transport: tr})
		writeRaw(t, mq, id, forged)
		drain(t, mq)
		wantJob(t, mq, id, mailqueue.JobFailed, 1, codes.QueueSignatureInvalid)
		if n := cc.decodes.Load(); n != 0 || tr.Attempts() != 0 {
			t.Errorf("a forged sealed job reached the codec (%d decodes) or was sent", n)
		}
	})
}

func TestAESGCMCodec(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, n := range []int{0, 16, 31, 33} {
		if _, err := mailqueue.NewAESGCMCodec(make([]byte, n)); err == nil {
			t.Errorf("a key of %d bytes was taken", n)
		}
	}
	k := bytes.Repeat([]byte{7}, 32)
	c, _ := mailqueue.NewAESGCMCodec(k)
	plain := []byte(`{"to":["ada@example.com"]}`)
	ad := []byte(`["mailer/enc","mail","mailer:mail","id-1"]`)
	a, err := c.Encode(ctx, plain, ad)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := c.Encode(ctx, plain, ad)
	if a == b {
		t.Error("two seals of one text are alike: the nonce is not drawn")
	}
	if got, err := c.Decode(ctx, a, ad); err != nil || !bytes.Equal(got, plain) {
		t.Errorf("Decode: %q, %v", got, err)
	}
	// The associated data binds: another id, queue or none does not open.
	for _, other := range [][]byte{[]byte(`["mailer/enc","mail","mailer:mail","id-2"]`), []byte(`["mailer/enc","mail","mailer:other","id-1"]`), nil} {
		if _, err := c.Decode(ctx, a, other); err == nil || !retryableErr(err) {
			t.Errorf("Decode under the associated data %s: %v, want a retryable error", other, err)
		}
	}
	// The layout of the spec's Node example: base64(iv ‖ tag ‖ ciphertext),
	// with the associated data as GCM's (setAAD).
	block, _ := aes.NewCipher(k)
	gcm, _ := cipher.NewGCM(block)
	iv := bytes.Repeat([]byte{9}, 12)
	out := gcm.Seal(nil, iv, plain, ad)
	node := base64.StdEncoding.EncodeToString(slices.Concat(iv, out[len(plain):], out[:len(plain)]))
	if got, err := c.Decode(ctx, node, ad); err != nil || !bytes.Equal(got, plain) {
		t.Errorf("a text sealed as the Node example does: %q, %v", got, err)
	}
	raw, _ := base64.StdEncoding.DecodeString(a)
	raw[len(raw)-1] ^= 1
	_, err = c.Decode(ctx, base64.StdEncoding.EncodeToString(raw), ad)
	if err == nil || !retryableErr(err) {
		t.Errorf("a text that does not authenticate: %v, want a retryable error", err)
	}
	for _, bad := range []string{"%%%", base64.StdEncoding.EncodeToString(make([]byte, 27))} {
		if _, err := c.Decode(ctx, bad, ad); err == nil || retryableErr(err) {
			t.Errorf("Decode(%q) = %v, want an error not retryable", bad, err)
		}
	}
	if mailqueue.PermanentError(nil) != nil {
		t.Error("PermanentError(nil) is not nil")
	}
	inner := errors.New("inner")
	if !errors.Is(mailqueue.PermanentError(inner), inner) || !strings.Contains(mailqueue.PermanentError(inner).Error(), "inner") {
		t.Error("PermanentError hides its cause")
	}
}

func retryableErr(err error) bool {
	var r interface{ Retryable() bool }
	return !errors.As(err, &r) || r.Retryable()
}

// ctxCodec is a codec that records the value of ctxKey its Encode is given
// and fails when that context is done.
type ctxCodec struct{ got []any }

type ctxKey struct{}

func (c *ctxCodec) Encode(ctx context.Context, plain, _ []byte) (string, error) {
	c.got = append(c.got, ctx.Value(ctxKey{}))
	if err := ctx.Err(); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(plain), nil
}

func (c *ctxCodec) Decode(_ context.Context, enc string, _ []byte) ([]byte, error) {
	return base64.StdEncoding.DecodeString(enc)
}

// TestCodecGetsTheCallersContext: Enqueue and EnqueueMany give the codec's
// Encode the caller's context, so a codec that calls a key service sees
// the caller's values and deadline.
func TestCodecGetsTheCallersContext(t *testing.T) {
	codec := &ctxCodec{}
	q, _, _ := newQueue(t, mailqueue.Config{Codec: codec})
	ctx := context.WithValue(context.Background(), ctxKey{}, "caller")
	if _, err := q.Enqueue(ctx, secretJob()); err != nil {
		t.Fatal(err)
	}
	if _, err := q.EnqueueMany(ctx, []*jobv1.Job{contentJob(), secretJob()}); err != nil {
		t.Fatal(err)
	}
	if want := []any{"caller", "caller", "caller"}; !slices.Equal(codec.got, want) {
		t.Errorf("Encode saw %v, want %v", codec.got, want)
	}
	// A caller's context that is done reaches the codec too: the job is
	// refused with queue.codec_failed, and the cause is the context's.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err := q.Enqueue(cancelled, secretJob())
	if mailqueue.CodeOf(err) != codes.QueueCodecFailed || !errors.Is(err, context.Canceled) {
		t.Errorf("Enqueue with a cancelled context: %v, want queue.codec_failed caused by context.Canceled", err)
	}
}
