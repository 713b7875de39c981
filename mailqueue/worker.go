package mailqueue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/mail"
	"github.com/alexify/mailer/render"
)

// The defaults a zero field of WorkerConfig takes (spec: "Defaults"): a job
// waits DefaultOperatorDelay after a failure of the operator (auth,
// configuration), and fails as of unknown delivery once more than
// DefaultMaxRedeliveries of its runs ended unsettled.
const (
	DefaultOperatorDelay   = 5 * time.Minute
	DefaultMaxRedeliveries = 3
	// MaxReleaseWait is how long a job is given back for a worker that can
	// read it (a later version, a missing codec, an operator's failure)
	// before it is failed: a week.
	MaxReleaseWait = 7 * 24 * time.Hour
)

// RedeliveredPolicy says what a worker does with a run again of an attempt
// whose run before died (its lease ran out unsettled): that run may have
// sent the message. With a transport that dedupes by the idempotency key,
// sending again is safe; with one that does not (SMTP, SES), a second send
// may deliver the message twice (spec: "Once per key").
type RedeliveredPolicy string

// The redelivery policies.
const (
	// RedeliveredSend sends it again: right with a transport that dedupes by
	// the idempotency key (IdempotencyTransport, a provider that takes one).
	RedeliveredSend RedeliveredPolicy = "send"
	// RedeliveredDeliveryUnknown fails it as of unknown delivery
	// (queue.redelivered) instead of sending it a second time, unless the
	// audit sink is an AuditHistory that shows the run before never
	// submitted the message.
	RedeliveredDeliveryUnknown RedeliveredPolicy = "delivery_unknown"
)

// Decision is what a Classify hook decides in place of the rules.
type Decision string

// The decisions of a Classify hook.
const (
	// DecideByRules leaves the decision to the rules of the outcome table.
	DecideByRules Decision = ""
	// DecideRetry retries the job after the backoff.
	DecideRetry Decision = "retry"
	// DecideFail fails it for good.
	DecideFail Decision = "fail"
	// DecideDeliveryUnknown fails it as of unknown delivery.
	DecideDeliveryUnknown Decision = "delivery_unknown"
	// DecideRateLimited takes it as a rate limit (queue.rate_limited), as
	// for a mail.RateLimited receipt: under RateLimitScope queue or tenant
	// it pauses them and gives the job back without spending its attempt,
	// for the receipt's RetryAfter (BackoffBase when it has none). For a
	// reply the transport does not know as a throttle, such as a provider's
	// own wording.
	DecideRateLimited Decision = "rate_limited"
)

// ResolveInfo is what a ResolveAttachment hook is told of the attachment to
// read.
type ResolveInfo struct {
	// Job is the job the attachment belongs to.
	Job *jobv1.Job
	// Attachment is the attachment by reference.
	Attachment *jobv1.Attachment
}

// WorkerConfig configures a worker. A zero field takes the spec's default.
type WorkerConfig struct {
	// Transport sends the messages. Required. A send that fails with an
	// error that is not a *mail.Error is taken as retryable: a transport
	// whose send may have gone must say mail.DeliveryUnknown.
	Transport mail.Transport
	// Renderer renders template jobs; a template job fails with
	// render.no_renderer when nil.
	Renderer render.Renderer
	// Concurrency is the most jobs run at once (1).
	Concurrency int
	// ResolveAttachment reads an attachment by reference; a job with one
	// fails with queue.attachment_unresolved when nil. An error or no bytes
	// retry the job (queue.attachment_failed), as an outage; an error that
	// says it is not retryable (a Retryable() bool method answering false,
	// as attachments.ErrRefused and PermanentError do) fails it at once.
	// The error's text and the ref are logged at debug only
	// (queue.job.detail); the reason says which attachment failed.
	ResolveAttachment func(ctx context.Context, ref string, info ResolveInfo) ([]byte, error)
	// OperatorDelay is how long a job waits after a failure of the operator
	// (auth, configuration) or when it cannot be read yet (5 minutes).
	OperatorDelay time.Duration
	// MaxRedeliveries is the most runs of a job that may end unsettled; a
	// job past it fails before it renders (3).
	MaxRedeliveries int
	// Backoff returns the delay before the retry that follows attempt (from
	// 1). Backoff by default: 30 s doubled per attempt, an hour at most, full
	// jitter.
	Backoff func(attempt int) time.Duration
	// Redelivered is the redelivery policy (RedeliveredSend).
	Redelivered RedeliveredPolicy
	// Classify, when set, decides from the receipt in place of the rules;
	// DecideByRules leaves it to them, and DecideRateLimited makes it a rate
	// limit. The server's words are in the receipt's Text.
	Classify func(receipt mail.Receipt, job *jobv1.Job) Decision
	// CheckJob, when set, may refuse a job for good by returning an error
	// (queue.refused); it runs before the render. The error's text is
	// logged at debug only (queue.job.detail): it may quote the job.
	CheckJob func(ctx context.Context, job *jobv1.Job) error
	// RateLimitScope says what a rate limit (a RateLimited receipt) pauses:
	// the job alone (RateLimitJob, the default: a retry no sooner than its
	// Retry-After), the whole queue (RateLimitQueue) or the jobs of the job's
	// tenant (RateLimitTenant). A queue or tenant pause gives the job back,
	// and the attempt is not spent; it needs a driver that can pause
	// (Pauser), else it acts as RateLimitJob.
	RateLimitScope RateLimitScope
	// AuditStrict retries the job (audit.failed) when the audit sink fails
	// before the send, so that no message goes unrecorded.
	AuditStrict bool
	// Breaker configures the circuit breaker of the transport (see
	// BreakerConfig): a send that fails with mail.ErrUnavailable gives its
	// job back, its attempt not spent, and after 5 in a row the worker
	// stops reserving and probes the transport, every 1 s doubling to 10 s,
	// until it answers.
	Breaker BreakerConfig
	// SkipTransportCheck, when true, starts the worker without checking its
	// transport. By default Start calls the transport's Check (mail.Checker:
	// for SMTP, connect, EHLO, STARTTLS, AUTH, QUIT) once and refuses to
	// start when it fails for a reason an outage does not explain (a wrong
	// password, a TLS setting the server refuses), so that such a mistake is
	// an error at start and not a release of every job every OperatorDelay.
	// A transport that cannot check (errors.ErrUnsupported) or cannot be
	// reached (mail.ErrUnavailable: the breaker waits for it) starts anyway.
	SkipTransportCheck bool
}

// startCheckTimeout bounds the transport check of Worker.Start.
const startCheckTimeout = 30 * time.Second

// RateLimitScope is what a rate limit pauses. A pause of the whole queue
// suits a single provider; with failover among several, take the provider
// out instead of pausing the queue (spec: "What the queue does with an
// attempt", the paragraph after the table).
type RateLimitScope string

// The scopes of a rate limit.
const (
	// RateLimitJob retries the job alone, no sooner than the Retry-After.
	RateLimitJob RateLimitScope = "job"
	// RateLimitQueue pauses the whole queue for the Retry-After.
	RateLimitQueue RateLimitScope = "queue"
	// RateLimitTenant pauses the jobs of the job's tenant for the
	// Retry-After.
	RateLimitTenant RateLimitScope = "tenant"
)

// Worker runs the jobs of a queue's driver. Its methods are safe for
// concurrent use.
type Worker struct {
	q   *Queue
	cfg WorkerConfig
	log *slog.Logger
	br  *breaker // the circuit breaker of the transport

	mu     sync.Mutex
	runner Runner
	closed bool
}

// NewWorker returns a worker of the queue's jobs. It returns an
// *OptionError when the transport is missing, a number or a duration is
// negative, or a policy is not one of its constants.
func (q *Queue) NewWorker(cfg WorkerConfig) (*Worker, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Worker{q: q, cfg: cfg, log: q.log, br: newBreaker(cfg.Breaker, q.cfg.Clock, q.log, cfg.Transport)}, nil
}

// withDefaults returns a copy of the config whose zero fields take their
// defaults. It leaves the values out of range to validate.
func (c WorkerConfig) withDefaults() WorkerConfig {
	if c.Concurrency == 0 {
		c.Concurrency = 1
	}
	if c.OperatorDelay == 0 {
		c.OperatorDelay = DefaultOperatorDelay
	}
	if c.MaxRedeliveries == 0 {
		c.MaxRedeliveries = DefaultMaxRedeliveries
	}
	if c.Backoff == nil {
		c.Backoff = Backoff
	}
	if c.RateLimitScope == "" {
		c.RateLimitScope = RateLimitJob
	}
	if c.Redelivered == "" {
		c.Redelivered = RedeliveredSend
	}
	c.Breaker = c.Breaker.withDefaults()
	return c
}

// validate refuses a config NewWorker cannot honour, naming the field and
// its value.
func (c WorkerConfig) validate() error {
	const pkg = "mailqueue"
	if c.Transport == nil {
		return &OptionError{Package: pkg, Option: "WorkerConfig.Transport", Rule: "is required"}
	}
	for _, err := range []error{
		CheckNotNegative(pkg, "WorkerConfig.Concurrency", c.Concurrency),
		CheckNotNegative(pkg, "WorkerConfig.OperatorDelay", c.OperatorDelay),
		CheckNotNegative(pkg, "WorkerConfig.MaxRedeliveries", c.MaxRedeliveries),
		CheckOneOf(pkg, "WorkerConfig.RateLimitScope", c.RateLimitScope, RateLimitJob, RateLimitQueue, RateLimitTenant),
		CheckOneOf(pkg, "WorkerConfig.Redelivered", c.Redelivered, RedeliveredSend, RedeliveredDeliveryUnknown),
		c.Breaker.validate(),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

// Start starts running jobs on the queue's driver. It returns at once.
func (w *Worker) Start() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return errors.New("mailqueue: worker closed")
	}
	if w.runner != nil {
		return errors.New("mailqueue: worker started already")
	}
	if err := w.checkTransport(); err != nil {
		return err
	}
	r, err := w.q.cfg.Driver.Work(w, WorkOptions{Concurrency: w.cfg.Concurrency, Gate: w.br.Gate})
	if err != nil {
		return err
	}
	w.runner = r
	w.warnUnsafeRedelivery()
	return nil
}

// checkTransport runs the transport's Check at start (see
// WorkerConfig.SkipTransportCheck).
func (w *Worker) checkTransport() error {
	c, ok := w.cfg.Transport.(mail.Checker)
	if !ok || w.cfg.SkipTransportCheck {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), startCheckTimeout)
	defer cancel()
	err := c.Check(ctx)
	switch {
	case err == nil, errors.Is(err, errors.ErrUnsupported):
		return nil
	case errors.Is(err, mail.ErrUnavailable):
		w.log.Warn(string(codes.QueueTransportUnavailable), "reason", "the transport cannot be reached at start; the worker starts, and its jobs wait for it: "+mail.Redact(err.Error()))
		return nil
	}
	return fmt.Errorf("mailqueue: the transport's check failed at start (WorkerConfig.SkipTransportCheck skips it): %w", err)
}

// warnUnsafeRedelivery logs, once at start, that a lost lease may send a
// message twice: the transport does not dedupe by the idempotency key (it
// is no mail.Deduper that says it does) and a run again after a run that
// died sends again (spec: "Once per key").
func (w *Worker) warnUnsafeRedelivery() {
	if w.cfg.Redelivered != RedeliveredSend {
		return
	}
	if d, ok := w.cfg.Transport.(mail.Deduper); ok && d.Dedupes() {
		return
	}
	w.log.Warn(string(codes.QueueRedeliveryUnsafe),
		"reason", "the transport does not dedupe by the idempotency key and Redelivered is send: a run again after a lost lease may send a message twice",
		"remedies", "wrap the transport in an IdempotencyTransport (mail/idempotency), or set WorkerConfig.Redelivered to delivery_unknown")
}

// Close stops reserving jobs, waits for the jobs in flight until ctx is done
// (30 seconds when ctx has no deadline), then aborts them: a job not yet
// sent is given back, and the attempt is not spent.
//
// The polling driver then waits as long again (at least a second) for the
// aborted runs to settle, so Close may take the timeout plus that; a run
// still going then is logged (queue.close_abandoned) and Close returns an
// error. Close also ends the probes of the circuit breaker. Close may be
// called more than once; a closed worker does not start again.
func (w *Worker) Close(ctx context.Context) error {
	w.mu.Lock()
	w.closed = true
	r := w.runner
	w.mu.Unlock()
	defer w.br.stop(ctx)
	if r == nil {
		return nil
	}
	return r.Close(ctx)
}

// run holds what one run knows of its job, for the log and the audit.
type run struct {
	lease *Lease
	job   *jobv1.Job
	// now is when the run began, by the store's clock: expiry is decided on
	// it (docs/architecture.md, "Time is the store's").
	now time.Time
	// detail is what its failure holds beside the reason (detail.go).
	detail *detail
}

// maxAttempts is the job's attempts in all: the verified job's (5 when it
// sets none, as the schema says), never the store's record. A job not read
// yet (a codec that failed) takes the queue's Config.MaxAttempts.
func (r *run) maxAttempts(q *Queue) int {
	switch {
	case r.job == nil:
		return q.cfg.MaxAttempts
	case r.job.MaxAttempts == 0:
		return DefaultMaxAttempts
	}
	return r.job.MaxAttempts
}

// tenant is the verified job's tenant, never the store's record: "" for a
// job not read yet.
func (r *run) tenant() string {
	if r.job == nil {
		return ""
	}
	return r.job.TenantID
}

// checkLease refuses, as queue.job_tampered, a lease whose metadata
// disagrees with the verified job: the store's record of its attempts in
// all, its tenant, or (when the lease tells them, non-zero) its priority
// and attempts. Whoever can write to the store could change them beside a
// signed job; the worker decides on the job's own (run.maxAttempts,
// run.tenant), and refuses the job rather than send what the store holds
// under another tenant or with other attempts.
func (w *Worker) checkLease(ctx context.Context, r *run) (Outcome, bool) {
	job, l := r.job, r.lease
	priority := job.Priority
	if priority == "" {
		priority = jobv1.PriorityNormal
	}
	var field string
	switch {
	case l.MaxAttempts != 0 && l.MaxAttempts != r.maxAttempts(w.q):
		field = "attempts"
	case l.TenantID != job.TenantID:
		field = "tenant"
	case l.Priority != "" && l.Priority != priority:
		field = "priority"
	default:
		return Outcome{}, true
	}
	return w.fail(ctx, r, codes.QueueJobTampered, codes.StateFailed, "the store's record of the job's "+field+" disagrees with the job"), false
}

// Handle runs one attempt of a leased job and returns its outcome. It is the
// one handler every driver runs (docs/architecture.md, "The flow").
func (w *Worker) Handle(ctx context.Context, lease *Lease) (out Outcome) {
	r := &run{lease: lease, now: w.q.cfg.Clock.Now()}
	if !lease.Now.IsZero() {
		// The store's clock when it made the lease, just before this run:
		// this clock corrected by its offset to the store's, which may be
		// minutes off.
		r.now = lease.Now
	}
	w.log.Debug(string(codes.QueueJobStarted), "job_id", lease.ID, "attempt", lease.Attempt)
	defer func() {
		if p := recover(); p != nil {
			w.log.Error(string(codes.QueueWorkerError), "job_id", lease.ID, "panic", mail.Redact(fmt.Sprint(p)), "stack", string(debug.Stack()))
			w.q.warn(codes.MailerQueueWorkerThrew, fmt.Errorf("the worker panicked: %s", mail.Redact(fmt.Sprint(p))), "job_id", lease.ID)
			out = w.fail(ctx, r, codes.QueueThrown, codes.StateFailed, fmt.Sprintf("the worker panicked: %v", p))
		}
	}()
	return w.handle(ctx, r)
}

func (w *Worker) handle(ctx context.Context, r *run) Outcome {
	lease := r.lease
	ok, probe := w.br.admit()
	if !ok {
		// Reserved as the breaker opened, or by a driver that does not
		// honour WorkOptions.Gate: given back unsent, due again soon, and
		// the gate holds it in the store until the breaker closes.
		return w.release(r, codes.QueueTransportUnavailable, outageDelay, "the transport's circuit breaker is open")
	}
	if probe {
		defer w.br.probeDone()
	}
	if lease.Redeliveries > w.cfg.MaxRedeliveries {
		return w.fail(ctx, r, codes.QueueRedeliveryExhausted, codes.StateDeliveryUnknown,
			fmt.Sprintf("its runs ended unsettled %d times, more than %d", lease.Redeliveries, w.cfg.MaxRedeliveries))
	}
	if out, ok := w.open(ctx, r); !ok {
		return out
	}
	if out, ok := w.checkLease(ctx, r); !ok {
		return out
	}
	job := r.job
	if w.cfg.CheckJob != nil {
		if err := w.cfg.CheckJob(ctx, job); err != nil {
			if ctx.Err() != nil {
				return w.release(r, codes.QueueStopped, 0, "the worker stopped during CheckJob")
			}
			r.detail = errorDetail(err)
			return w.fail(ctx, r, codes.QueueRefused, codes.StateFailed, "CheckJob refused the job"+errorKind(err))
		}
	}
	if job.ExpiresAt != nil && r.now.After(*job.ExpiresAt) {
		return w.fail(ctx, r, codes.QueueExpired, codes.StateFailed, "past its expiresAt")
	}
	if lease.Redeliveries > 0 {
		w.log.Warn(string(codes.QueueJobRedelivered), "job_id", lease.ID, "attempt", lease.Attempt, "redeliveries", lease.Redeliveries)
		if w.cfg.Redelivered == RedeliveredDeliveryUnknown && !w.neverSubmitted(ctx, r) {
			return w.fail(ctx, r, codes.QueueRedelivered, codes.StateDeliveryUnknown, "a run again after a run that may have sent it")
		}
	}
	msg, out, ok := w.message(ctx, r)
	if !ok {
		return out
	}
	_ = w.audit(ctx, r, AuditRendered, "", "") // a failure is logged and warned by audit; only "submitted" stops a run
	if err := context.Cause(ctx); err != nil {
		return w.release(r, codes.QueueStopped, 0, "the worker stopped before the send")
	}
	if err := w.audit(ctx, r, AuditSubmitted, "", ""); err != nil && w.cfg.AuditStrict {
		return w.retry(ctx, r, codes.AuditFailed, 0, "the audit sink failed before the send")
	}
	receipt, thrown, err := w.send(ctx, msg)
	if thrown != "" {
		return w.fail(ctx, r, codes.QueueThrown, codes.StateFailed, thrown)
	}
	return w.settle(ctx, r, receipt, err)
}

// message renders the job and builds its message.
func (w *Worker) message(ctx context.Context, r *run) (*mail.Message, Outcome, bool) {
	job := r.job
	msg := &mail.Message{
		MessageID: job.MessageID, From: job.From, To: job.To, Cc: job.Cc, Bcc: job.Bcc, ReplyTo: job.ReplyTo,
		Subject: job.Subject, Headers: job.Headers, IdempotencyKey: r.lease.ID,
	}
	if job.EnqueuedAt != nil {
		msg.Date = *job.EnqueuedAt
	} else {
		msg.Date = r.lease.EnqueuedAt
	}
	switch job.Kind {
	case jobv1.KindContent:
		if job.Content != nil {
			msg.HTML, msg.Text = job.Content.HTML, job.Content.Text
		}
	case jobv1.KindTemplate:
		if w.cfg.Renderer == nil {
			return nil, w.fail(ctx, r, codes.RenderNoRenderer, codes.StateFailed, "a template job, and the worker has no renderer"), false
		}
		res, err := w.cfg.Renderer.Render(ctx, render.Request{Template: job.Template, Locale: job.Locale, Context: job.Context})
		if err != nil {
			return nil, w.renderFailed(ctx, r, err), false
		}
		if msg.Subject == "" {
			msg.Subject = res.Subject
		}
		msg.HTML, msg.Text = res.HTML, res.Text
	}
	if msg.Subject == "" {
		return nil, w.fail(ctx, r, codes.RenderNoSubject, codes.StateFailed, "neither the template nor the job gives a subject"), false
	}
	for i := range job.Attachments {
		a := &job.Attachments[i]
		att := mail.Attachment{Filename: a.Filename, ContentType: a.ContentType, ContentID: a.ContentID, Inline: a.Disposition == jobv1.DispositionInline, Data: a.Content}
		if a.Ref != "" {
			r.detail = &detail{ref: a.Ref}
			if w.cfg.ResolveAttachment == nil {
				return nil, w.fail(ctx, r, codes.QueueAttachmentUnresolved, codes.StateFailed, fmt.Sprintf("attachment %d is by reference, and the worker has no ResolveAttachment", i)), false
			}
			data, err := w.cfg.ResolveAttachment(ctx, a.Ref, ResolveInfo{Job: job, Attachment: a})
			if err != nil && ctx.Err() != nil {
				return nil, w.release(r, codes.QueueStopped, 0, "the worker stopped while an attachment was resolved"), false
			}
			if err != nil {
				r.detail.text = mail.Redact(err.Error())
			}
			if err != nil && !retryable(err) {
				return nil, w.fail(ctx, r, codes.QueueAttachmentFailed, codes.StateFailed, fmt.Sprintf("ResolveAttachment refused attachment %d for good%s", i, errorKind(err))), false
			}
			if err != nil || len(data) == 0 {
				reason := fmt.Sprintf("ResolveAttachment gave no content for attachment %d", i)
				if err != nil {
					reason = fmt.Sprintf("ResolveAttachment failed for attachment %d%s", i, errorKind(err))
				}
				return nil, w.retry(ctx, r, codes.QueueAttachmentFailed, 0, reason), false
			}
			r.detail = nil
			att.Data = data
			if att.Filename == "" {
				att.Filename = fmt.Sprintf("attachment-%d", i+1)
			}
		}
		msg.Attachments = append(msg.Attachments, att)
	}
	// The message is built once, by the transport (mail.Build): a job that
	// does not make a message fails there with mail.ErrInvalidMessage, and
	// settle fails it with queue.invalid_message.
	return msg, Outcome{}, true
}

// renderFailed decides what a render error does: a broken or missing
// template fails the job, an outage or a timeout retries it.
func (w *Worker) renderFailed(ctx context.Context, r *run, err error) Outcome {
	var (
		re *render.Error
		le *render.LoadError
	)
	switch {
	case errors.As(err, &re):
		w.log.Debug(string(codes.QueueRenderFailed), "job_id", r.lease.ID, "template", re.Template, "locale", re.Locale, "where", re.Where, "detail", re.Detail)
		return w.fail(ctx, r, codes.RenderFailed, codes.StateFailed, re.Error())
	case errors.As(err, &le):
		r.detail = errorDetail(le.Err)
		return w.retry(ctx, r, codes.RenderLoadFailed, 0, fmt.Sprintf("render: loading template %q failed%s", le.Template, errorKind(le.Err)))
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return w.retry(ctx, r, codes.RenderTimeout, 0, "the render timed out")
	case ctx.Err() != nil:
		return w.release(r, codes.QueueStopped, 0, "the worker stopped during the render")
	}
	r.detail = errorDetail(err)
	return w.retry(ctx, r, codes.RenderLoadFailed, 0, "the renderer failed"+errorKind(err))
}

// send calls the transport, recovering a panic (a bug of the transport).
func (w *Worker) send(ctx context.Context, msg *mail.Message) (receipt mail.Receipt, thrown string, err error) {
	defer func() {
		if p := recover(); p != nil {
			thrown = fmt.Sprintf("the transport panicked: %v", p)
			w.log.Error(string(codes.QueueThrown), "job_id", msg.IdempotencyKey, "panic", mail.Redact(fmt.Sprint(p)), "stack", string(debug.Stack()))
		}
	}()
	receipt, err = w.cfg.Transport.Send(ctx, msg)
	return receipt, "", err
}

// settle decides the outcome of a send from its receipt: accepted is done;
// of unknown delivery fails for good, never sent blindly again; retryable
// retries after the backoff (no sooner than a Retry-After); refused fails
// at once; a failure of the operator waits OperatorDelay (spec: "What the
// queue does with an attempt").
func (w *Worker) settle(ctx context.Context, r *run, receipt mail.Receipt, err error) Outcome {
	var me *mail.Error
	if err != nil && errors.As(err, &me) {
		receipt = me.Receipt
	}
	if err != nil && me == nil && !errors.Is(err, mail.ErrInvalidMessage) && receipt.Category != mail.Accepted {
		// The error's text is the transport's: debug only.
		receipt = mail.Receipt{Category: mail.Retryable, Reason: "the transport failed with an error that is no *mail.Error", Text: err.Error()}
	}
	r.detail = receiptDetail(receipt)
	if out, done := w.settleBroken(ctx, r, receipt, err); done {
		return out
	}
	if err != nil && errors.Is(err, mail.ErrUnavailable) && receipt.Category != mail.DeliveryUnknown {
		// An outage: nothing was sent, and the message is not to blame. It
		// is no business of Classify, which judges what a server answered.
		w.br.outage()
		return w.outage(ctx, r, reasonOf(receipt))
	}
	if err == nil || receipt.Category != mail.Retryable || receipt.Code != 0 {
		// The transport answered (whatever it answered): a run of outages
		// is over. A retryable failure with no reply proves neither.
		w.br.reached()
	}
	if w.cfg.Classify != nil {
		switch w.cfg.Classify(receipt, r.job) {
		case DecideRetry:
			return w.retry(ctx, r, codes.QueueSendFailed, receipt.RetryAfter, reasonOf(receipt))
		case DecideFail:
			return w.fail(ctx, r, codes.QueueMessageRefused, codes.StateFailed, reasonOf(receipt))
		case DecideDeliveryUnknown:
			return w.fail(ctx, r, codes.DeliveryUnknown, codes.StateDeliveryUnknown, reasonOf(receipt))
		case DecideRateLimited:
			return w.rateLimited(ctx, r, receipt)
		}
	}
	return w.settleCategory(ctx, r, receipt)
}

// settleBroken settles the sends that say nothing of the message: a job
// that makes no message, a transport that contradicts itself, and a run
// aborted during its send. done is false for every other send.
func (w *Worker) settleBroken(ctx context.Context, r *run, receipt mail.Receipt, err error) (out Outcome, done bool) {
	switch {
	case errors.Is(err, mail.ErrInvalidMessage):
		return w.fail(ctx, r, codes.QueueInvalidMessage, codes.StateFailed, "the job does not make a message: "+err.Error()), true
	case err != nil && receipt.Category == mail.Accepted:
		// Accepted and failed at once: the transport contradicts itself,
		// and a retry could send the message twice.
		return w.fail(ctx, r, codes.QueueInvalidReceipt, codes.StateFailed, "the transport gave an accepted receipt and an error"), true
	case err != nil && ctx.Err() != nil:
		// The run was aborted during the send (Close ran out of time, or the
		// lease was lost). A send the transport says provably did not go is
		// given back, and the attempt is not spent; any other may have gone.
		if receipt.Category == mail.Retryable {
			return w.release(r, codes.QueueStopped, 0, "the worker stopped during the send, and the transport says the message did not go"), true
		}
		return w.fail(ctx, r, codes.QueueAborted, codes.StateDeliveryUnknown, "the worker stopped while the message was sent"), true
	case err == nil && receipt.Category != mail.Accepted:
		return w.fail(ctx, r, codes.QueueInvalidReceipt, codes.StateFailed, "the transport gave no accepted receipt and no error"), true
	}
	return Outcome{}, false
}

// settleCategory settles a send by its receipt's category.
func (w *Worker) settleCategory(ctx context.Context, r *run, receipt mail.Receipt) Outcome {
	switch receipt.Category {
	case mail.Accepted:
		if errors.Is(context.Cause(ctx), ErrLeaseLost) {
			// The run lost its lease during the send: the driver drops this
			// ack (queue.lease.lost, at error) and another run may take the
			// job, so it is not completed.
			w.log.Debug(string(codes.QueueLeaseLost), "job_id", r.lease.ID, "attempt", r.lease.Attempt, "reason", "the message was accepted after the run lost its lease; the job is not settled")
			_ = w.audit(ctx, r, AuditAccepted, "", "") // the message was accepted all the same
			return Outcome{Action: Ack}
		}
		// A partial refusal: the accepted recipients got the message (the
		// transport's documented rule); say how many did not, never who, and
		// how many of those were refused for now only (a 4xx, or no reply:
		// not retried). The server's reply code is smtp_code: code is the
		// kit's own code in every record.
		w.log.Info(string(codes.QueueJobCompleted), "job_id", r.lease.ID, "attempt", r.lease.Attempt, "smtp_code", receipt.Code, "refused_recipients", len(receipt.Refused), "deferred_recipients", deferredRecipients(receipt))
		_ = w.audit(ctx, r, AuditAccepted, "", "") // a failure is logged and warned by audit; only "submitted" stops a run
		return Outcome{Action: Ack}
	case mail.DeliveryUnknown:
		return w.fail(ctx, r, codes.DeliveryUnknown, codes.StateDeliveryUnknown, reasonOf(receipt))
	case mail.Retryable:
		return w.retry(ctx, r, codes.QueueSendFailed, receipt.RetryAfter, reasonOf(receipt))
	case mail.RateLimited:
		return w.rateLimited(ctx, r, receipt)
	case mail.Rejected, mail.Validation, mail.Unsupported:
		return w.fail(ctx, r, codes.QueueMessageRefused, codes.StateFailed, reasonOf(receipt))
	case mail.Auth, mail.Configuration:
		return w.unreadableOutcome(ctx, r, codes.QueueOperatorFailed, reasonOf(receipt))
	}
	return w.fail(ctx, r, codes.QueueInvalidReceipt, codes.StateFailed, "the transport gave a receipt of no known category")
}

// outage gives the job back after an outage of the transport (nothing was
// sent), its attempt not spent, due again after outageDelay: the breaker,
// not a backoff, decides when the worker tries again. A job given back for
// outages for more than MaxReleaseWait since its enqueue fails, as one
// waiting for the operator does.
func (w *Worker) outage(ctx context.Context, r *run, reason string) Outcome {
	reason = "the transport is unavailable: " + reason
	if !r.lease.EnqueuedAt.IsZero() && r.now.Sub(r.lease.EnqueuedAt) > MaxReleaseWait {
		return w.fail(ctx, r, codes.QueueTransportUnavailable, codes.StateFailed, reason+"; waited more than a week")
	}
	return w.release(r, codes.QueueTransportUnavailable, outageDelay, reason)
}

func (w *Worker) unreadableOutcome(ctx context.Context, r *run, code codes.Code, reason string) Outcome {
	out, _ := w.unreadable(ctx, r, code, reason)
	return out
}

// deferredRecipients counts the recipients a server refused for now only (a
// 4xx) or that had no reply, while the message went to the others.
func deferredRecipients(rc mail.Receipt) int {
	n := 0
	for _, r := range rc.Refused {
		if r.Code < 500 {
			n++
		}
	}
	return n
}

// reasonOf is the reason of a receipt: its category, code, enhanced code
// and Reason, never its Text (the server's words, which may quote the
// message: detail.go).
func reasonOf(rc mail.Receipt) string {
	s := string(rc.Category)
	if rc.Code != 0 {
		s += fmt.Sprintf(" %d", rc.Code)
	}
	if rc.EnhancedCode != "" {
		s += " " + rc.EnhancedCode
	}
	if rc.Reason != "" {
		s += ": " + rc.Reason
	}
	return s
}

// retry retries the job after the backoff (no sooner than retryAfter, with a
// little jitter above it), or fails it when this was its last attempt or the
// retry would come after its expiresAt.
func (w *Worker) retry(ctx context.Context, r *run, code codes.Code, retryAfter time.Duration, reason string) Outcome {
	reason = mail.Redact(reason)
	if maxAttempts := r.maxAttempts(w.q); r.lease.Attempt >= maxAttempts {
		return w.fail(ctx, r, codes.QueueAttemptsExhausted, codes.StateFailed, fmt.Sprintf("attempt %d of %d: %s: %s", r.lease.Attempt, maxAttempts, code, reason))
	}
	delay := w.cfg.Backoff(r.lease.Attempt)
	if retryAfter > 0 {
		delay = max(delay, retryAfter+retryAfterJitter(retryAfter))
	}
	if r.job != nil && r.job.ExpiresAt != nil && r.now.Add(delay).After(*r.job.ExpiresAt) {
		return w.fail(ctx, r, codes.QueueExpired, codes.StateFailed, "its retry would come after its expiresAt: "+reason)
	}
	w.log.Warn(string(codes.QueueJobRetrying), w.outcomeArgs(r, code, "job_id", r.lease.ID, "attempt", r.lease.Attempt, "code", string(code), "delay", delay, "reason", reason)...)
	_ = w.audit(ctx, r, AuditQueued, code, reason) // a failure is logged and warned by audit; only "submitted" stops a run
	return Outcome{Action: Retry, Delay: delay, Code: code, Reason: reason}
}

// rateLimited gives back a job the provider asked to slow down for, the
// attempt not spent, due no sooner than its Retry-After (BackoffBase when
// it gives none) with a little jitter above it; with a queue or tenant
// scope it also pauses the queue or the tenant for the Retry-After. It
// fails the job when it would come back after its expiresAt, or when the
// job has waited more than a week (MaxReleaseWait).
func (w *Worker) rateLimited(ctx context.Context, r *run, receipt mail.Receipt) Outcome {
	wait := receipt.RetryAfter
	if wait <= 0 {
		wait = BackoffBase
	}
	delay := wait + retryAfterJitter(wait)
	if r.job != nil && r.job.ExpiresAt != nil && r.now.Add(delay).After(*r.job.ExpiresAt) {
		return w.fail(ctx, r, codes.QueueExpired, codes.StateFailed, "its retry would come after its expiresAt: "+reasonOf(receipt))
	}
	if !r.lease.EnqueuedAt.IsZero() && r.now.Sub(r.lease.EnqueuedAt) > MaxReleaseWait {
		return w.fail(ctx, r, codes.QueueRateLimited, codes.StateFailed, reasonOf(receipt)+"; rate-limited for more than a week")
	}
	// A rate limit says nothing of the message and nothing was sent: the
	// job is given back, the attempt not spent, as BullMQ and asynq do with
	// a rate limit, so a throttling provider fails no mail for good.
	out := w.release(r, codes.QueueRateLimited, delay, reasonOf(receipt))
	_ = w.audit(ctx, r, AuditQueued, codes.QueueRateLimited, out.Reason) // a failure is logged and warned by audit
	if w.cfg.RateLimitScope == RateLimitJob || !w.q.canPause() {
		return out
	}
	out.Pause = &Pause{For: wait}
	if w.cfg.RateLimitScope == RateLimitTenant {
		out.Pause.Tenant, out.Pause.TenantID = true, r.tenant()
	}
	return out
}

// neverSubmitted reports whether the audit sink can tell that the run of
// this attempt that died never submitted the message.
func (w *Worker) neverSubmitted(ctx context.Context, r *run) bool {
	h, ok := w.q.cfg.Audit.(AuditHistory)
	if !ok {
		return false
	}
	has, err := h.Has(ctx, r.lease.ID, r.lease.Attempt, AuditSubmitted)
	if err != nil {
		w.log.Warn(string(codes.QueueAuditFailed), "job_id", r.lease.ID, "err", err)
		return false
	}
	return !has
}

// release gives the job back; the attempt is not spent.
func (w *Worker) release(r *run, code codes.Code, delay time.Duration, reason string) Outcome {
	reason = mail.Redact(reason)
	w.log.Warn(string(codes.QueueJobReleased), w.outcomeArgs(r, code, "job_id", r.lease.ID, "attempt", r.lease.Attempt, "code", string(code), "delay", delay, "reason", reason)...)
	return Outcome{Action: Release, Delay: delay, Code: code, Reason: reason}
}

// fail settles the job for good.
func (w *Worker) fail(ctx context.Context, r *run, code codes.Code, state codes.State, reason string) Outcome {
	reason = mail.Redact(reason)
	w.log.Error(string(codes.QueueJobFailed), w.outcomeArgs(r, code, "job_id", r.lease.ID, "attempt", r.lease.Attempt, "code", string(code), "state", string(state), "reason", reason)...)
	as := AuditFailed
	if state == codes.StateDeliveryUnknown {
		as = AuditDeliveryUnknown
	}
	_ = w.audit(ctx, r, as, code, reason) // a failure is logged and warned by audit; only "submitted" stops a run
	return Outcome{Action: Fail, State: state, Code: code, Reason: reason}
}

// audit tells the sink a state; a failing sink is a warning.
func (w *Worker) audit(ctx context.Context, r *run, s AuditState, code codes.Code, reason string) error {
	sink := w.q.cfg.Audit
	if sink == nil {
		return nil
	}
	e := AuditEvent{JobID: r.lease.ID, State: s, At: w.q.cfg.Clock.Now(), Attempt: r.lease.Attempt, Code: code, Reason: reason, TenantID: r.tenant()}
	if r.job != nil {
		e.CorrelationID = r.job.CorrelationID
	}
	err := sink.Record(context.WithoutCancel(ctx), e)
	if err != nil {
		w.log.Warn(string(codes.QueueAuditFailed), "job_id", r.lease.ID, "state", string(s), "err", err)
		w.q.warn(codes.MailerAuditFailed, err, "job_id", r.lease.ID)
	}
	return err
}
