package faulttest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	netmail "net/mail"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/alexify/mailer/mail/smtptest"
	"github.com/alexify/mailer/mailqueue"
)

// Measure is the record of one fault run that issue 10 asks for ("Measure"):
// jobs, sent once, sent twice, lost, failed by code, delivery_unknown, and
// the time to recover after the fault ended.
type Measure struct {
	// Fault names the fault.
	Fault string
	// Jobs is how many jobs the run enqueued.
	Jobs int
	// SentOnce and SentTwice count the jobs whose message reached the SMTP
	// server once, and more than once.
	SentOnce, SentTwice int
	// Lost counts the jobs the store no longer holds, and those accepted
	// whose message never reached the server.
	Lost int
	// Unfinished counts the jobs still queued or running when the run
	// ended (its time ran out).
	Unfinished int
	// Accepted counts the jobs that ended accepted; Spent those of them
	// that took more than one attempt.
	Accepted, Spent int
	// Failed counts the jobs failed for good, by code.
	Failed map[string]int
	// DeliveryUnknown counts the jobs of unknown delivery, by code.
	DeliveryUnknown map[string]int
	// Redelivered counts the jobs with a run that ended unsettled.
	Redelivered int
	// Recover is how long after the fault ended the first job was
	// accepted; Drain how long until every job had finished. Both are -1
	// (printed "never") when it did not happen within the run's time;
	// Recover is NonePending when every job had finished already when the
	// fault ended (there was nothing left to recover).
	Recover, Drain time.Duration
}

// Unknown is the number of jobs of unknown delivery, of every code.
func (m Measure) Unknown() int { return sum(m.DeliveryUnknown) }

// FailedAll is the number of jobs failed for good, of every code.
func (m Measure) FailedAll() int { return sum(m.Failed) }

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// String is the Measure line, one line to paste into a note:
//
//	MEASURE smtp-restart: jobs=400 sent_once=400 sent_twice=0 lost=0 unfinished=0 accepted=400 spent=0 failed={} delivery_unknown={} redelivered=0 recover=120ms drain=1.2s
func (m Measure) String() string {
	return fmt.Sprintf("MEASURE %s: jobs=%d sent_once=%d sent_twice=%d lost=%d unfinished=%d accepted=%d spent=%d failed=%s delivery_unknown=%s redelivered=%d recover=%s drain=%s",
		m.Fault, m.Jobs, m.SentOnce, m.SentTwice, m.Lost, m.Unfinished, m.Accepted, m.Spent,
		byCode(m.Failed), byCode(m.DeliveryUnknown), m.Redelivered, dur(m.Recover), dur(m.Drain))
}

func byCode(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s:%d", k, m[k])
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// NonePending is the Recover of a run whose jobs had all finished when
// the fault ended.
const NonePending time.Duration = -2

func dur(d time.Duration) string {
	if d == NonePending {
		return "none_pending"
	}
	if d < 0 {
		return "never"
	}
	return d.Round(time.Millisecond).String()
}

// Sends counts the messages the server read by their Message-ID header
// (with its angle brackets), the message whole or not replied to alike: a
// message read to its end may have been delivered.
func Sends(msgs []smtptest.Received) map[string]int {
	n := map[string]int{}
	for _, m := range msgs {
		msg, err := netmail.ReadMessage(bytes.NewReader(m.Data))
		if err != nil {
			n["(unreadable)"]++
			continue
		}
		n[msg.Header.Get("Message-Id")]++
	}
	return n
}

// Tally reads each job of ids (job id to its Message-ID) through the
// operations interface and counts them, with sends the messages counted by
// Sends. It returns the rows it read, by job id (a lost job has none).
func Tally(ctx context.Context, ops mailqueue.Inspector, fault string, ids map[string]string, sends map[string]int) (Measure, map[string]mailqueue.JobRow, error) {
	m := Measure{Fault: fault, Jobs: len(ids), Failed: map[string]int{}, DeliveryUnknown: map[string]int{}, Recover: -1, Drain: -1}
	rows := make(map[string]mailqueue.JobRow, len(ids))
	for id, mid := range ids {
		switch sends[mid] {
		case 0:
		case 1:
			m.SentOnce++
		default:
			m.SentTwice++
		}
		j, err := ops.Get(ctx, id)
		if errors.Is(err, mailqueue.ErrNotFound) {
			m.Lost++
			continue
		}
		if err != nil {
			return m, rows, fmt.Errorf("faulttest: read job %s: %w", id, err)
		}
		rows[id] = j
		if j.Redeliveries > 0 {
			m.Redelivered++
		}
		switch j.State {
		case mailqueue.JobAccepted:
			m.Accepted++
			if j.Attempt > 1 {
				m.Spent++
			}
			if sends[mid] == 0 {
				m.Lost++
			}
		case mailqueue.JobFailed:
			m.Failed[string(j.Code)]++
		case mailqueue.JobDeliveryUnknown:
			m.DeliveryUnknown[string(j.Code)]++
		default:
			m.Unfinished++
		}
	}
	return m, rows, nil
}

// Watch measures how long after a fault ended the store's jobs finished:
// it polls the store's Stats every 25 ms from Start on.
type Watch struct {
	ops   mailqueue.Inspector
	start time.Time
	stop  chan struct{}
	done  chan struct{}

	mu       sync.Mutex
	base     int64 // the jobs accepted at the start
	baseDone int64 // the jobs finished at the start
	haveBase bool
	first    time.Duration
	finished int64
}

// StartWatch starts watching ops; call it the moment the fault ends.
func StartWatch(ops mailqueue.Inspector) *Watch {
	w := &Watch{ops: ops, start: time.Now(), stop: make(chan struct{}), done: make(chan struct{}), first: -1}
	go w.loop()
	return w
}

func (w *Watch) loop() {
	defer close(w.done)
	t := time.NewTicker(25 * time.Millisecond)
	defer t.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		st, err := w.ops.Stats(ctx)
		cancel()
		if err == nil {
			n := st.Accepted + st.Failed + st.DeliveryUnknown
			w.mu.Lock()
			if !w.haveBase {
				w.base, w.baseDone, w.haveBase = st.Accepted, n, true
			} else if st.Accepted > w.base && w.first < 0 {
				w.first = time.Since(w.start)
			}
			w.finished = n
			w.mu.Unlock()
		}
		select {
		case <-w.stop:
			return
		case <-t.C:
		}
	}
}

// Wait waits until n jobs have finished (accepted, failed or of unknown
// delivery), or timeout, and stops the watch. It returns how long after
// the start the first job was accepted and the n-th finished (-1 for what did not
// happen; NonePending for the first when all n had finished at the
// start), and whether the n finished. The first is when a job was
// accepted, not when one failed: a job failed by the fault is no recovery.
func (w *Watch) Wait(n int64, timeout time.Duration) (recovered, drained time.Duration, ok bool) {
	deadline := time.Now().Add(timeout)
	drained = -1
	for time.Now().Before(deadline) {
		w.mu.Lock()
		f := w.finished
		w.mu.Unlock()
		if f >= n {
			drained = time.Since(w.start)
			ok = true
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.first < 0 && w.haveBase && w.baseDone >= n {
		return NonePending, drained, ok
	}
	return w.first, drained, ok
}
