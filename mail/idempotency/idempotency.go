// Package idempotency wraps any mail.Transport so that a message goes at
// most once per idempotency key, across attempts, workers and processes that
// share a Store: a worker that died mid-send leaves the key reserved, and the
// attempt again is of unknown delivery, not a second send (spec: "Once per
// key").
//
// Before a send, the Transport reserves the message's IdempotencyKey (the
// queue's worker sets it to the job's id) for at least Options.LeaseDuration
// (the spec's leaseMs, 10 minutes) and as long as a receipt is kept
// (Options.ReceiptTTL, a day). Then:
//
//   - a key already completed answers the stored receipt without sending: an
//     Accepted one (a send again after a run that settled too late) with a
//     nil error, a DeliveryUnknown one with its *mail.Error;
//   - a key reserved and not completed (a run in flight, or one that died
//     between the reservation and the receipt) answers DeliveryUnknown with
//     ErrInFlight, never a second send;
//   - a send that provably did not go (Retryable, RateLimited, Rejected,
//     Validation, Unsupported, Auth, Configuration) releases the key, so
//     that the retry can send;
//   - a send that went or may have gone (Accepted, DeliveryUnknown, an error
//     that is not a *mail.Error, a receipt of no known category) completes
//     the key with its receipt, kept Options.ReceiptTTL.
//
// A store that does not answer Complete or Release (a restart of a few
// seconds) is asked again after 50 ms, doubling up to 2 s, for as long as
// the send's context lasts (the queue cancels it when the run's lease is
// about to be lost), so that a blip of the store leaves no key reserved
// without its receipt, which an attempt again would take for a send of
// unknown delivery.
//
// An operator who chooses to send a job again whatever its key holds
// (mailq retry --resend) clears its entry with Store.Forget first; the
// recipient may then get the message twice.
//
// A panic of the wrapped transport goes up unrecovered and leaves the
// reservation in place: the queue fails that attempt (queue.thrown), and an
// attempt again answers DeliveryUnknown. A reservation without a receipt is
// kept as long as a receipt would be, not only LeaseDuration: however long
// the workers were down before the job ran again, a run that died mid-send
// may have sent it, so the key never frees itself early for a second send.
//
// The Store must be shared by every worker that may send the same job; a
// store per process only dedupes within it, and a crash mid-send in one
// process can then be sent again by another (spec: "Several processes").
// NewMemoryStore is the store of one process and of tests; the Redis driver
// has a shared one (drivers/redis).
package idempotency

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/alexify/mailer/clock"
	"github.com/alexify/mailer/mail"
)

// The defaults of Options (spec: "Defaults", leaseMs of
// IdempotencyTransport).
const (
	// DefaultLeaseDuration is how long a reservation holds a key when
	// Options.LeaseDuration is zero: 10 minutes, longer than a queue lease
	// (1 minute), so that the run after a run that died does not send again.
	DefaultLeaseDuration = 10 * time.Minute
	// DefaultReceiptTTL is how long a completed key keeps its receipt when
	// Options.ReceiptTTL is zero: a day, the queue's dedupe window.
	DefaultReceiptTTL = 24 * time.Hour
	// storeTimeout bounds each try of Complete and Release, which run on a
	// context without the send's cancellation.
	storeTimeout = 10 * time.Second
	// storeRetryBase and storeRetryMax bound the waits between the tries of
	// a Complete or Release the store did not answer: 50 ms, doubling, at
	// most 2 s.
	storeRetryBase = 50 * time.Millisecond
	storeRetryMax  = 2 * time.Second
)

// ErrInFlight is the cause (matched with errors.Is) of the DeliveryUnknown
// receipt a Send answers when its key is reserved by another run and has no
// receipt: that run is sending, or died mid-send and may have sent.
var ErrInFlight = errors.New("idempotency: a send under this key is in flight or died before its receipt")

// ErrStore is the cause (matched with errors.Is) of the Retryable receipt a
// Send answers when the store failed to reserve the key: nothing was sent.
// The same error also matches mail.ErrUnavailable, so that the queue takes
// a store that is down or full (a Redis answering OOM) as an outage: the
// job is given back without spending its attempt, and the worker's circuit
// breaker stops reserving.
var ErrStore = errors.New("idempotency: the store failed")

// checkKeyPrefix prefixes the key Check reserves and releases in the store;
// checkTTL is how long it holds, should its release fail.
const (
	checkKeyPrefix = "idempotency-check:"
	checkTTL       = time.Minute
)

// Entry is what a Store holds for a key.
type Entry struct {
	// Token identifies the reservation: the run that reserved the key.
	Token string
	// Receipt is the receipt Complete stored; nil while the key is only
	// reserved.
	Receipt *mail.Receipt
}

// Store keeps the reservations and the receipts of idempotency keys. Every
// method is atomic for its key: a Redis store does Reserve with
// SET key token NX PX ttl (then GET on failure), and Complete and Release
// with a Lua script that compares the stored token before it writes; an SQL
// store with an INSERT ... ON CONFLICT DO NOTHING and an UPDATE or DELETE
// ... WHERE key = $1 AND token = $2. An entry past its time-to-live is gone.
type Store interface {
	// Reserve reserves key for token for ttl when the key holds no live
	// entry, and returns nil. When it holds one (a reservation or a
	// receipt), Reserve changes nothing and returns a copy of it. Of two
	// concurrent calls for one key, exactly one reserves it.
	Reserve(ctx context.Context, key, token string, ttl time.Duration) (*Entry, error)
	// Complete stores receipt for key, kept for ttl, when key is reserved
	// by token, and returns true. It returns false and changes nothing when
	// the key is not reserved by token (its reservation ran out, or another
	// run holds it).
	Complete(ctx context.Context, key, token string, receipt mail.Receipt, ttl time.Duration) (bool, error)
	// Release deletes the reservation of key when token holds it and it has
	// no receipt, and returns true; otherwise it changes nothing and returns
	// false.
	Release(ctx context.Context, key, token string) (bool, error)
	// Forget deletes the entry of key, a reservation or a receipt, whoever
	// holds it; a key that holds none is no error. It is an operator's
	// choice to send a message again (mailqueue.Operator.Resend): the next
	// send under key goes, though the message may have gone already.
	Forget(ctx context.Context, key string) error
}

// Options configures a Transport. The zero value takes the defaults.
type Options struct {
	// LeaseDuration is the least time a reservation holds a key before its
	// receipt; DefaultLeaseDuration (10 minutes) when zero. A reservation is
	// kept the longer of LeaseDuration and ReceiptTTL: a run that died
	// mid-send leaves a key that answers DeliveryUnknown for as long.
	LeaseDuration time.Duration
	// ReceiptTTL is how long a completed key keeps its receipt;
	// DefaultReceiptTTL (a day) when zero.
	ReceiptTTL time.Duration
	// NewToken draws the token of a reservation; 16 random bytes in
	// hexadecimal when nil. It must not give the same token twice.
	NewToken func() string
	// Clock times the waits between the tries of a Complete or Release the
	// store did not answer; the wall clock when nil (clock.NewFake in
	// tests).
	Clock clock.Clock
}

// Transport sends through another transport at most once per idempotency
// key. It implements mail.Transport and is safe for concurrent use.
type Transport struct {
	inner mail.Transport
	store Store
	opts  Options
}

var (
	_ mail.Transport = (*Transport)(nil)
	_ mail.Deduper   = (*Transport)(nil)
	_ mail.Checker   = (*Transport)(nil)
)

// Dedupes reports true: the Transport sends a message at most once per
// idempotency key (mail.Deduper), so the queue's worker does not warn that
// a lost lease may send twice.
func (t *Transport) Dedupes() bool { return true }

// Check tells whether the Transport can send, for the queue's circuit
// breaker (mail.Checker): it reserves and releases a key of its own in the
// store (idempotency-check: and a token, held a minute at most), then
// checks the inner transport when that is a mail.Checker. A store that
// fails gives an error matching ErrStore and mail.ErrUnavailable; an inner
// transport without Check gives one matching errors.ErrUnsupported, and the
// breaker then probes with a job.
func (t *Transport) Check(ctx context.Context) error {
	token := t.opts.NewToken()
	key := checkKeyPrefix + token
	if _, err := t.store.Reserve(ctx, key, token, checkTTL); err != nil {
		return errors.Join(ErrStore, mail.ErrUnavailable, err)
	}
	if _, err := t.store.Release(ctx, key, token); err != nil {
		return errors.Join(ErrStore, mail.ErrUnavailable, err)
	}
	c, ok := t.inner.(mail.Checker)
	if !ok {
		return fmt.Errorf("idempotency: the inner transport has no Check: %w", errors.ErrUnsupported)
	}
	return c.Check(ctx)
}

// New returns a Transport that sends through inner, keeping its keys in
// store. It fails when inner or store is nil or a duration is negative.
func New(inner mail.Transport, store Store, opts Options) (*Transport, error) {
	if inner == nil || store == nil {
		return nil, errors.New("idempotency: a transport and a store are required")
	}
	if opts.LeaseDuration < 0 || opts.ReceiptTTL < 0 {
		return nil, errors.New("idempotency: negative LeaseDuration or ReceiptTTL")
	}
	if opts.LeaseDuration == 0 {
		opts.LeaseDuration = DefaultLeaseDuration
	}
	if opts.ReceiptTTL == 0 {
		opts.ReceiptTTL = DefaultReceiptTTL
	}
	if opts.NewToken == nil {
		opts.NewToken = randomToken
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real()
	}
	return &Transport{inner: inner, store: store, opts: opts}, nil
}

func randomToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Send sends msg once per msg.IdempotencyKey, as the package documentation
// tells; a message without a key is sent through as it is, undeduplicated.
// Like every mail.Transport, it returns a receipt whatever happened and an
// error exactly when the receipt is not Accepted, a *mail.Error: with
// ErrInFlight for a key reserved by another run, ErrStore and
// mail.ErrUnavailable when the store failed before the send (Retryable,
// nothing sent: the queue gives the job back unspent), ctx.Err()
// (Retryable) when ctx ended before the reservation.
func (t *Transport) Send(ctx context.Context, msg *mail.Message) (mail.Receipt, error) {
	if msg == nil || msg.IdempotencyKey == "" {
		return t.inner.Send(ctx, msg)
	}
	if err := ctx.Err(); err != nil {
		return fail(mail.Retryable, "cancelled before the send", err)
	}
	key, token := msg.IdempotencyKey, t.opts.NewToken()
	hold := max(t.opts.LeaseDuration, t.opts.ReceiptTTL)
	existing, err := t.store.Reserve(ctx, key, token, hold)
	if err != nil {
		// Nothing was sent, and nothing can be until the store answers: an
		// outage, which spends no attempt of the job.
		return fail(mail.Retryable, "the idempotency store failed to reserve the key; nothing was sent", errors.Join(ErrStore, mail.ErrUnavailable, err))
	}
	if existing != nil && existing.Receipt == nil && existing.Token == token {
		// The reservation is this call's own: the store made it, lost its
		// answer and was asked again (a client that retries a command
		// after a connection dropped by a restart). The key is ours to
		// send under, not a send in flight.
		existing = nil
	}
	if existing != nil {
		if existing.Receipt == nil {
			return fail(mail.DeliveryUnknown, "a send under this idempotency key is in flight or died before its receipt", ErrInFlight)
		}
		r := *existing.Receipt
		if r.Category == mail.Accepted {
			return r, nil
		}
		return r, &mail.Error{Receipt: r}
	}

	// From here until Complete or Release the key stays reserved: a panic
	// or a crash of the process leaves it so, and an attempt again answers
	// DeliveryUnknown.
	r, err := t.inner.Send(ctx, msg)
	var me *mail.Error
	switch {
	case err == nil:
	case errors.As(err, &me):
		r = me.Receipt
	default:
		// A failure without a receipt says nothing of whether the message
		// went: it may have.
		r = mail.Receipt{Category: mail.DeliveryUnknown, Reason: "the transport failed without a receipt: the message may have gone"}
		err = &mail.Error{Receipt: r, Err: err}
	}

	if notSent(r.Category) {
		// A failure to release keeps the key reserved: an attempt again
		// answers DeliveryUnknown, the safe side.
		t.untilAnswered(ctx, func(sctx context.Context) error {
			_, err := t.store.Release(sctx, key, token)
			return err
		})
	} else {
		// A failure to complete leaves the reservation: the same.
		t.untilAnswered(ctx, func(sctx context.Context) error {
			_, err := t.store.Complete(sctx, key, token, r, t.opts.ReceiptTTL)
			return err
		})
	}
	return r, err
}

// untilAnswered calls the store through call, each try bounded by
// storeTimeout and free of ctx's cancellation, until it answers (a nil
// error, whatever the answer), waiting storeRetryBase, then twice as long
// each time up to storeRetryMax, between the tries; it stops trying once
// ctx is done (the run's lease is about to be lost, or the worker stops):
// the key then stays reserved, the safe side.
func (t *Transport) untilAnswered(ctx context.Context, call func(context.Context) error) {
	wait := storeRetryBase
	for {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
		err := call(sctx)
		cancel()
		if err == nil || ctx.Err() != nil {
			return
		}
		tm := t.opts.Clock.NewTimer(wait)
		select {
		case <-tm.C():
		case <-ctx.Done():
			tm.Stop()
			return
		}
		wait = min(2*wait, storeRetryMax)
	}
}

// notSent reports whether a receipt of category c proves the message did not
// go, so that its key may be released for a retry.
func notSent(c mail.Category) bool {
	switch c {
	case mail.Retryable, mail.RateLimited, mail.Rejected, mail.Validation,
		mail.Unsupported, mail.Auth, mail.Configuration:
		return true
	}
	return false
}

func fail(cat mail.Category, reason string, cause error) (mail.Receipt, error) {
	r := mail.Receipt{Category: cat, Reason: reason}
	return r, &mail.Error{Receipt: r, Err: cause}
}
