// Package memory is the memory queue: a mailqueue.Source in memory, run by
// the polling driver, for tests and a single process. Nothing survives the
// process (spec: "The memory queue and the polling driver").
//
// Besides the Source, the queue and its source are a mailqueue.Operator
// (Stats, Jobs, Get, Failed, RetryFailed, Purge, Pause, Resume), the same
// operations as every other store's; for tests they add Data (a job's
// stored JSON), Drain, Wake and a clock of their own (Options.Clock with a
// clock.Fake).
//
// The queue's clock is the store's: it decides when a job is due (a job
// with no RunAt is due at its now), when a lease runs out and when a
// retention ends, whatever the clocks of the producers and the workers,
// and each lease tells it (Lease.Now). A settle is fenced by its token
// alone: a run whose lease ran out still settles while no other run took
// the job (docs/architecture.md, "The store's rules").
package memory

import (
	"container/heap"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/alexify/mailer/clock"
	"github.com/alexify/mailer/drivers/polling"
	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/mailqueue"
)

// The memory queue's own defaults (spec: "Defaults"). Its retention takes
// mailqueue.DefaultDedupeWindow and mailqueue.DefaultRetainFailed, as
// every store does.
const (
	DefaultMaxJobs        = 100_000
	DefaultRetainFinished = 10_000
	// DefaultQueue is the name of a memory queue that sets none.
	DefaultQueue = "mail"
)

// Options configure the memory queue. A zero field takes the default; New
// and NewSource refuse a negative number or duration and a policy that is
// not one of its constants.
type Options struct {
	// Queue names the queue ("mail"): the Source and the Queue answer it as
	// mailqueue.QueueNamer, and the mac and the codec's associated data of
	// its jobs bind it, so a job copied from a queue of another name is
	// refused. It must be valid UTF-8.
	Queue string
	// Clock is the time source; the wall clock when nil. Give a *clock.Fake
	// to drive backoffs, leases and retention in tests.
	Clock clock.Clock
	// Logger hears what the driver does; slog.Default() when nil.
	Logger *slog.Logger
	// PollInterval, LeaseDuration and CloseTimeout are the polling driver's
	// (1 second, 1 minute, 30 seconds); NewSource uses LeaseDuration for a
	// reserve or an extend that asks for none.
	PollInterval, LeaseDuration, CloseTimeout time.Duration
	// DedupeWindow is how long a completed job is kept, the window in which
	// an enqueue under its key is a duplicate (mailqueue.DefaultDedupeWindow,
	// a day).
	DedupeWindow time.Duration
	// RetainFailed is how long a failed job is kept
	// (mailqueue.DefaultRetainFailed, a week).
	RetainFailed time.Duration
	// RetainData says which finished jobs keep their message
	// (mailqueue.RetainFailedData).
	RetainData mailqueue.RetainData
	// MaxJobs is the most jobs queued or running at once (100 000); an
	// enqueue past it is refused with ErrFull.
	MaxJobs int
	// RetainFinished is the most finished jobs that keep their message
	// (10 000); past it the oldest drop theirs, keeping their hash until
	// their retention ends.
	RetainFinished int
	// Fairness is mailqueue.FairnessNone (the default: by priority, then
	// time) or mailqueue.FairnessTenant: a high job of any tenant first,
	// then the tenants in turn, a job each, the jobs of no tenant as one
	// more (spec: "Tenants in turn").
	Fairness mailqueue.Fairness
}

// ErrFull is returned by an enqueue that would hold more than MaxJobs jobs
// queued or running. Nothing of the call is stored.
var ErrFull = errors.New("memory: the queue holds MaxJobs jobs")

// stored is what the memory queue holds of a job.
type stored struct {
	ID, Hash     string
	Version      int
	State        mailqueue.JobState
	Priority     jobv1.Priority
	TenantID     string
	Attempts     int
	MaxAttempts  int
	Redeliveries int
	RunAt        time.Time
	EnqueuedAt   time.Time
	FinishedAt   time.Time
	Code         codes.Code
	Reason       string
	// Data is the job's JSON; nil once it was dropped.
	Data []byte
}

// Queue is the memory queue: a Driver of mailqueue, its Source, and the
// operations of an operator.
type Queue struct {
	*polling.Driver
	src *Source
}

// New returns an empty memory queue. It returns a *mailqueue.OptionError
// when an option is out of range or unknown (see Options).
func New(opts Options) (*Queue, error) {
	src, err := NewSource(opts)
	if err != nil {
		return nil, err
	}
	d, err := polling.New(src, polling.Options{
		PollInterval: opts.PollInterval, LeaseDuration: opts.LeaseDuration, CloseTimeout: opts.CloseTimeout,
		Clock: src.clock, Logger: opts.Logger,
	})
	if err != nil {
		return nil, err
	}
	return &Queue{Driver: d, src: src}, nil
}

// Source returns the queue's Source.
func (q *Queue) Source() *Source { return q.src }

// EnqueueTx refuses every transaction with an error wrapping
// mailqueue.ErrTransactionUnsupported, and stores nothing: the memory
// queue holds no database transaction to store a job in (the outbox needs
// a store that shares the caller's database, as drivers/postgres does).
// Use Enqueue after the commit instead.
func (q *Queue) EnqueueTx(context.Context, any, []mailqueue.NewJob) ([]mailqueue.EnqueueResult, error) {
	return nil, fmt.Errorf("memory: %w", mailqueue.ErrTransactionUnsupported)
}

// Drain waits until no job is due or running (jobs scheduled later do not
// count), or until ctx is done.
func (q *Queue) Drain(ctx context.Context) error { return q.src.Drain(ctx) }

// Source is a mailqueue.Source in memory. It is safe for concurrent use.
type Source struct {
	opts  Options
	clock clock.Clock

	mu        sync.Mutex
	jobs      map[string]*record
	ready     [3]lane    // by priority: high, normal, low
	scheduled recordHeap // by runAt
	// Pauses: the queue's, and each tenant's; held keeps the due jobs of a
	// paused tenant met while reserving, until the pause ends.
	pausedUntil time.Time
	tenantPause map[string]time.Time
	held        map[string][]*record
	leased      map[string]*record
	finished    []*record  // in the order they finished, for RetainFinished
	expiry      expiryHeap // the finished jobs by the end of their retention
	seq         uint64
	active      int // queued or running
	changed     chan struct{}
}

type record struct {
	stored
	seq uint64 // the order it became due in
	// token is the current lease's: set by a reserve, kept when the lease
	// runs out until a reserve replaces it, cleared by a settle.
	token string
	until time.Time
	order uint64 // the order it was enqueued in, for List

	// purged is true for a finished job an operator purged: it keeps only
	// its id, hash, version, state and finish time, to tell duplicates
	// until its retention ends, and is gone for every operation.
	purged bool
	// in and idx place a queued record in its heap; in is nil when the
	// record is in none (running, finished, or held for a paused tenant).
	in  *recordHeap
	idx int
}

// NewSource returns an empty Source. It returns a *mailqueue.OptionError
// when an option is out of range or unknown (see Options).
func NewSource(opts Options) (*Source, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	s := &Source{
		opts: opts, clock: opts.Clock, jobs: map[string]*record{}, leased: map[string]*record{}, changed: make(chan struct{}),
		tenantPause: map[string]time.Time{}, held: map[string][]*record{},
	}
	for i := range s.ready {
		// High jobs go by time whatever their tenant: a code of sign-in
		// waits for no one.
		s.ready[i].fair = opts.Fairness == mailqueue.FairnessTenant && i > 0
	}
	return s, nil
}

// withDefaults returns a copy of the options whose zero fields take their
// defaults. The polling driver's (PollInterval, CloseTimeout) are left to
// polling.New, which takes the same zero values.
func (o Options) withDefaults() Options {
	if o.Queue == "" {
		o.Queue = DefaultQueue
	}
	if o.Clock == nil {
		o.Clock = clock.Real()
	}
	if o.DedupeWindow == 0 {
		o.DedupeWindow = mailqueue.DefaultDedupeWindow
	}
	if o.RetainFailed == 0 {
		o.RetainFailed = mailqueue.DefaultRetainFailed
	}
	if o.RetainData == "" {
		o.RetainData = mailqueue.RetainFailedData
	}
	if o.MaxJobs == 0 {
		o.MaxJobs = DefaultMaxJobs
	}
	if o.RetainFinished == 0 {
		o.RetainFinished = DefaultRetainFinished
	}
	if o.LeaseDuration == 0 {
		o.LeaseDuration = polling.DefaultLeaseDuration
	}
	if o.Fairness == "" {
		o.Fairness = mailqueue.FairnessNone
	}
	return o
}

// validate refuses the options NewSource cannot honour, naming the option
// and its value.
func (o Options) validate() error {
	const pkg = "memory"
	for _, err := range []error{
		mailqueue.CheckQueueName(pkg, "Options.Queue", o.Queue),
		mailqueue.CheckNotNegative(pkg, "Options.PollInterval", o.PollInterval),
		mailqueue.CheckNotNegative(pkg, "Options.LeaseDuration", o.LeaseDuration),
		mailqueue.CheckNotNegative(pkg, "Options.CloseTimeout", o.CloseTimeout),
		mailqueue.CheckNotNegative(pkg, "Options.DedupeWindow", o.DedupeWindow),
		mailqueue.CheckNotNegative(pkg, "Options.RetainFailed", o.RetainFailed),
		mailqueue.CheckNotNegative(pkg, "Options.MaxJobs", o.MaxJobs),
		mailqueue.CheckNotNegative(pkg, "Options.RetainFinished", o.RetainFinished),
		mailqueue.CheckOneOf(pkg, "Options.RetainData", o.RetainData, mailqueue.AllRetainData...),
		mailqueue.CheckOneOf(pkg, "Options.Fairness", o.Fairness, mailqueue.AllFairness...),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

func priorityIndex(p jobv1.Priority) int {
	switch p {
	case jobv1.PriorityHigh:
		return 0
	case jobv1.PriorityLow:
		return 2
	}
	return 1
}

// QueueName returns the queue's name, Options.Queue ("mail"); see
// mailqueue.QueueNamer.
func (s *Source) QueueName() string { return s.opts.Queue }

// Enqueue stores jobs; see mailqueue.Source.
func (s *Source) Enqueue(ctx context.Context, jobs []mailqueue.NewJob) ([]mailqueue.EnqueueResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	s.purge(now)
	fresh := 0
	seen := map[string]bool{}
	for _, j := range jobs {
		if _, ok := s.jobs[j.ID]; !ok && !seen[j.ID] {
			fresh++
			seen[j.ID] = true
		}
	}
	if s.active+fresh > s.opts.MaxJobs {
		return nil, fmt.Errorf("%w (%d): %d more refused", ErrFull, s.opts.MaxJobs, fresh)
	}
	res := make([]mailqueue.EnqueueResult, len(jobs))
	for i, j := range jobs {
		res[i].ID = j.ID
		if r, ok := s.jobs[j.ID]; ok {
			res[i].Duplicate = r.Hash == j.Hash
			res[i].Conflict = r.Hash != j.Hash
			continue
		}
		s.seq++
		r := &record{stored: stored{
			ID: j.ID, Hash: j.Hash, State: mailqueue.JobQueued, Priority: j.Priority, TenantID: j.TenantID,
			MaxAttempts: j.MaxAttempts, RunAt: j.RunAt, EnqueuedAt: j.EnqueuedAt, Data: append([]byte(nil), j.Data...),
			Version: version(j.Data),
		}, order: s.seq}
		// A job with no RunAt is due now by this clock, never by the
		// producer's (docs/architecture.md, "Time is the store's").
		if r.RunAt.IsZero() {
			r.RunAt = now
		}
		if r.EnqueuedAt.IsZero() {
			r.EnqueuedAt = now
		}
		if r.Priority == "" {
			r.Priority = jobv1.PriorityNormal
		}
		s.jobs[j.ID] = r
		s.active++
		s.queue(r, now)
	}
	s.notify()
	return res, nil
}

// queue puts a queued record in the ready heaps or the scheduled heap.
func (s *Source) queue(r *record, now time.Time) {
	s.seq++
	r.seq = s.seq
	if r.RunAt.After(now) {
		heap.Push(&s.scheduled, r)
		return
	}
	s.ready[priorityIndex(r.Priority)].push(r)
}

// Reserve leases due jobs; see mailqueue.Source.
func (s *Source) Reserve(ctx context.Context, p mailqueue.ReserveParams) ([]*mailqueue.Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if p.Limit < 1 {
		p.Limit = 1
	}
	if p.LeaseDuration <= 0 {
		p.LeaseDuration = s.opts.LeaseDuration
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	s.purge(now)
	s.reclaim(now)
	for s.scheduled.Len() > 0 && !s.scheduled.items[0].RunAt.After(now) {
		r := heap.Pop(&s.scheduled).(*record)
		s.ready[priorityIndex(r.Priority)].push(r)
	}
	s.endPauses(now)
	if s.pausedUntil.After(now) {
		return nil, nil
	}
	paused := func(tenant string) bool { _, ok := s.tenantPause[tenant]; return ok }
	var out []*mailqueue.Lease
	for pi := range s.ready {
		for len(out) < p.Limit {
			r := s.ready[pi].pop(paused, s.hold)
			if r == nil {
				break
			}
			r.State = mailqueue.JobRunning
			r.token = newToken()
			r.until = now.Add(p.LeaseDuration)
			s.leased[r.ID] = r
			out = append(out, &mailqueue.Lease{
				ID: r.ID, Token: r.token, Data: append([]byte(nil), r.Data...), Attempt: r.Attempts + 1,
				MaxAttempts: r.MaxAttempts, Redeliveries: r.Redeliveries, Priority: r.Priority,
				TenantID: r.TenantID, EnqueuedAt: r.EnqueuedAt, Until: r.until, Now: now,
			})
		}
	}
	if len(out) > 0 {
		s.notify()
	}
	return out, nil
}

// reclaim queues again the jobs whose lease ran out, counting a
// redelivery. The job keeps its token until a run takes it again: a late
// settle of the run whose lease ran out still applies until then
// (takeBack).
func (s *Source) reclaim(now time.Time) {
	for id, r := range s.leased {
		if r.until.After(now) {
			continue
		}
		delete(s.leased, id)
		r.State = mailqueue.JobQueued
		r.Redeliveries++
		r.RunAt = r.until
		s.queue(r, now)
	}
}

// takeBack is the fence of every settle and extend: it returns the record
// of the id whose current token is token, or nil. A settle is fenced by its
// token alone (docs/architecture.md, "Fenced by the token"): a run whose
// lease ran out still holds the job while no other run took it, so its
// record is running (its lease not yet reclaimed) or queued again by
// reclaim with the token kept. takeBack takes such a queued record out of
// its lane and undoes the redelivery reclaim counted, since the run ended
// settled after all; the record is then running, out of s.leased, and the
// caller settles or leases it.
func (s *Source) takeBack(id, token string) *record {
	r, ok := s.jobs[id]
	if !ok || token == "" || r.token != token {
		return nil
	}
	switch r.State {
	case mailqueue.JobRunning:
		delete(s.leased, id)
	case mailqueue.JobQueued:
		s.unqueue(r)
		r.Redeliveries--
		r.State = mailqueue.JobRunning
	default:
		return nil
	}
	return r
}

// unqueue takes a queued record out of the scheduled heap, its ready lane
// or its tenant's held jobs, wherever it is.
func (s *Source) unqueue(r *record) {
	switch {
	case r.in == &s.scheduled:
		heap.Remove(&s.scheduled, r.idx)
	case r.in != nil:
		s.ready[priorityIndex(r.Priority)].remove(r)
	default:
		h := s.held[r.TenantID]
		for i, x := range h {
			if x == r {
				s.held[r.TenantID] = append(h[:i], h[i+1:]...)
				break
			}
		}
		if len(s.held[r.TenantID]) == 0 {
			delete(s.held, r.TenantID)
		}
	}
}

// Extend extends a lease; see mailqueue.Source.
func (s *Source) Extend(ctx context.Context, p mailqueue.ExtendParams) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	// A lease that ran out is extended while its token is current: no
	// other run took the job, so the run still holds it.
	r := s.takeBack(p.ID, p.Token)
	if r == nil {
		return false, nil
	}
	d := p.Duration
	if d <= 0 {
		d = s.opts.LeaseDuration
	}
	r.until = now.Add(d)
	s.leased[r.ID] = r
	return true, nil
}

// Ack settles a run as accepted; see mailqueue.Source.
func (s *Source) Ack(ctx context.Context, p mailqueue.AckParams) (bool, error) {
	return s.settle(ctx, p.ID, p.Token, func(r *record, now time.Time) {
		r.Attempts++
		s.finish(r, mailqueue.JobAccepted, "", "", now)
	})
}

// Retry spends an attempt and queues the job again; see mailqueue.Source.
func (s *Source) Retry(ctx context.Context, p mailqueue.RetryParams) (bool, error) {
	return s.settle(ctx, p.ID, p.Token, func(r *record, now time.Time) {
		r.Attempts++
		r.Code, r.Reason = p.Code, p.Reason
		s.requeue(r, now, p.Delay)
	})
}

// Fail settles the job for good; see mailqueue.Source.
func (s *Source) Fail(ctx context.Context, p mailqueue.FailParams) (bool, error) {
	return s.settle(ctx, p.ID, p.Token, func(r *record, now time.Time) {
		r.Attempts++
		st := mailqueue.JobFailed
		if p.State == codes.StateDeliveryUnknown {
			st = mailqueue.JobDeliveryUnknown
		}
		s.finish(r, st, p.Code, p.Reason, now)
	})
}

// Release gives the job back unspent; see mailqueue.Source.
func (s *Source) Release(ctx context.Context, p mailqueue.ReleaseParams) (bool, error) {
	return s.settle(ctx, p.ID, p.Token, func(r *record, now time.Time) {
		r.Code, r.Reason = p.Code, p.Reason
		s.requeue(r, now, p.Delay)
	})
}

func (s *Source) settle(ctx context.Context, id, token string, f func(*record, time.Time)) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	r := s.takeBack(id, token)
	if r == nil {
		return false, nil
	}
	r.token = ""
	f(r, now)
	s.notify()
	return true, nil
}

func (s *Source) requeue(r *record, now time.Time, delay time.Duration) {
	r.State = mailqueue.JobQueued
	if delay < 0 {
		delay = 0
	}
	r.RunAt = now.Add(delay)
	s.queue(r, now)
}

// finish settles a record for good and applies RetainData and
// RetainFinished.
func (s *Source) finish(r *record, st mailqueue.JobState, code codes.Code, reason string, now time.Time) {
	r.State, r.Code, r.Reason, r.FinishedAt = st, code, reason, now
	s.active--
	if s.opts.RetainData == mailqueue.RetainNoData || s.opts.RetainData == mailqueue.RetainFailedData && st == mailqueue.JobAccepted {
		r.Data = nil
	}
	keep := s.opts.DedupeWindow
	if st != mailqueue.JobAccepted {
		keep = s.opts.RetainFailed
	}
	heap.Push(&s.expiry, expiryEntry{r: r, at: now.Add(keep), finished: now})
	s.finished = append(s.finished, r)
	for n := len(s.finished); n > s.opts.RetainFinished; n-- {
		s.finished[0].Data = nil
		s.finished = s.finished[1:]
	}
}

// purge forgets the finished jobs whose retention ended.
func (s *Source) purge(now time.Time) {
	for len(s.expiry) > 0 && !s.expiry[0].at.After(now) {
		e := heap.Pop(&s.expiry).(expiryEntry)
		r := e.r
		// A job retried by hand since it finished is not forgotten.
		if r.finishedState() && r.FinishedAt.Equal(e.finished) && s.jobs[r.ID] == r {
			delete(s.jobs, r.ID)
		}
	}
}

// expiryEntry is the end of the retention of a job finished at finished.
type expiryEntry struct {
	r        *record
	at       time.Time
	finished time.Time
}

type expiryHeap []expiryEntry

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h expiryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiryHeap) Push(x any)        { *h = append(*h, x.(expiryEntry)) }
func (h *expiryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

func (r *record) finishedState() bool {
	return r.State == mailqueue.JobAccepted || r.State == mailqueue.JobFailed || r.State == mailqueue.JobDeliveryUnknown
}

// Drain waits until no job is due or running, or until ctx is done.
func (s *Source) Drain(ctx context.Context) error {
	for {
		s.mu.Lock()
		now := s.clock.Now()
		busy := len(s.leased) > 0
		for i := range s.ready {
			busy = busy || !s.pausedUntil.After(now) && s.ready[i].len() > 0
		}
		busy = busy || s.scheduled.Len() > 0 && !s.scheduled.items[0].RunAt.After(now)
		ch := s.changed
		s.mu.Unlock()
		if !busy {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *Source) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// hold keeps a due job of a paused tenant until its pause ends.
func (s *Source) hold(r *record) {
	s.held[r.TenantID] = append(s.held[r.TenantID], r)
}

// endPauses ends the pauses whose time is up and gives their held jobs back
// to the ready lanes.
func (s *Source) endPauses(now time.Time) {
	for t, until := range s.tenantPause {
		if !until.After(now) {
			s.resumeTenant(t)
		}
	}
}

func (s *Source) resumeTenant(t string) {
	delete(s.tenantPause, t)
	for _, r := range s.held[t] {
		s.ready[priorityIndex(r.Priority)].push(r)
	}
	delete(s.held, t)
}

// Pause pauses the queue, or a tenant's jobs, for p.For; a longer pause in
// place is kept. See mailqueue.Pauser.
func (s *Source) Pause(ctx context.Context, p mailqueue.Pause) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := mailqueue.CheckNotNegative("memory", "Pause.For", p.For); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	until := s.clock.Now().Add(p.For)
	if !p.Tenant {
		if until.After(s.pausedUntil) {
			s.pausedUntil = until
		}
	} else if cur, ok := s.tenantPause[p.TenantID]; !ok || until.After(cur) {
		s.tenantPause[p.TenantID] = until
	}
	s.notify()
	return nil
}

// Resume ends a pause of the queue, or of a tenant, before its time. See
// mailqueue.Pauser.
func (s *Source) Resume(ctx context.Context, p mailqueue.ResumeParams) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.Tenant {
		s.resumeTenant(p.TenantID)
	} else {
		s.pausedUntil = time.Time{}
	}
	s.notify()
	return nil
}

// lane holds the due jobs of one priority: one heap by time, or with
// fairness a heap per tenant taken in turn.
type lane struct {
	fair    bool
	all     recordHeap
	tenants map[string]*recordHeap
	ring    []string // the tenants with due jobs, in turn order
	next    int
	n       int
}

func (l *lane) len() int { return l.n }

func (l *lane) push(r *record) {
	l.n++
	if !l.fair {
		heap.Push(&l.all, r)
		return
	}
	if l.tenants == nil {
		l.tenants = map[string]*recordHeap{}
	}
	h, ok := l.tenants[r.TenantID]
	if !ok {
		h = &recordHeap{}
		l.tenants[r.TenantID] = h
		l.ring = append(l.ring, r.TenantID)
	}
	heap.Push(h, r)
}

// remove takes a record out of the lane, and its tenant out of the turn
// when it was the tenant's last job.
func (l *lane) remove(r *record) {
	h := r.in
	heap.Remove(h, r.idx)
	l.n--
	if !l.fair || h.Len() > 0 {
		return
	}
	delete(l.tenants, r.TenantID)
	for i, t := range l.ring {
		if t == r.TenantID {
			l.ring = append(l.ring[:i], l.ring[i+1:]...)
			if i < l.next {
				l.next--
			}
			break
		}
	}
}

// pop takes the next job of the lane that is not of a paused tenant. Without
// fairness, a job of a paused tenant met on the way is handed to hold.
func (l *lane) pop(paused func(string) bool, hold func(*record)) *record {
	if !l.fair {
		for l.all.Len() > 0 {
			r := heap.Pop(&l.all).(*record)
			l.n--
			if paused(r.TenantID) {
				hold(r)
				continue
			}
			return r
		}
		return nil
	}
	for tries := len(l.ring); tries > 0 && len(l.ring) > 0; tries-- {
		if l.next >= len(l.ring) {
			l.next = 0
		}
		t := l.ring[l.next]
		if paused(t) {
			l.next++
			continue
		}
		h := l.tenants[t]
		r := heap.Pop(h).(*record)
		l.n--
		if h.Len() == 0 {
			delete(l.tenants, t)
			l.ring = append(l.ring[:l.next], l.ring[l.next+1:]...)
		} else {
			l.next++
		}
		return r
	}
	return nil
}

// recordHeap orders records by RunAt (when they are, or became, due), then
// by the order they were queued in. Each record in it knows the heap and
// its index there (record.in, record.idx), so that a late settle can take
// it out (Source.unqueue).
type recordHeap struct {
	items []*record
}

func (h recordHeap) Len() int { return len(h.items) }
func (h recordHeap) Less(i, j int) bool {
	a, b := h.items[i], h.items[j]
	if !a.RunAt.Equal(b.RunAt) {
		return a.RunAt.Before(b.RunAt)
	}
	return a.seq < b.seq
}
func (h recordHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.items[i].idx, h.items[j].idx = i, j
}
func (h *recordHeap) Push(x any) {
	r := x.(*record)
	r.in, r.idx = h, len(h.items)
	h.items = append(h.items, r)
}
func (h *recordHeap) Pop() any {
	n := len(h.items)
	r := h.items[n-1]
	h.items[n-1] = nil
	h.items = h.items[:n-1]
	r.in, r.idx = nil, -1
	return r
}
