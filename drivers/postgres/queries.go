package postgres

import (
	"fmt"
	"hash/fnv"
)

// queries are the driver's statements, in its schema. Every statement
// that reads the clock takes the tests' shift in µs as $1 and reads
// clk.now, the database's now() plus that shift, never a client's clock.
// The queue is $2 (or $1 for those that read no clock).
type queries struct {
	insertQueue, selectQueue                     string
	enqueue, wake, selectHashes                  string
	reserve, reserveFair, nextDue, takeTurns     string
	settleMany, extend, pause, resume            string
	stats, pauses, jobs, get, retryFailed, purge string
	prune                                        string
}

// clk is the CTE of the database's clock, shifted by $1 µs in tests.
const clk = `clk AS (SELECT now() + $1::bigint * interval '1 microsecond' AS now)`

// us turns a parameter of µs into an interval.
func us(param string) string { return "(" + param + "::bigint * interval '1 microsecond')" }

// notPaused is the condition of a reserve on the pauses: the queue is not
// paused, nor the job's tenant.
const notPaused = `NOT EXISTS (SELECT 1 FROM {schema}.pauses p WHERE p.queue = $2 AND NOT p.is_tenant AND p.until > (SELECT now FROM clk))
	AND j.tenant NOT IN (SELECT p.tenant FROM {schema}.pauses p WHERE p.queue = $2 AND p.is_tenant AND p.until > (SELECT now FROM clk))`

// leaseUpdate takes the rows of the CTE c (id, old_state, old_due,
// old_seq, rn, turn): a fresh token each, a redelivery counted for a job
// whose lease ran out, the lease to now + $4 µs.
var leaseUpdate = `UPDATE {schema}.jobs j SET state = 1, token = gen_random_uuid()::text,
	redeliveries = j.redeliveries + CASE WHEN c.old_state = 1 THEN 1 ELSE 0 END,
	lease_until = clk.now + ` + us("$4") + `, due_at = clk.now + ` + us("$4") + `
FROM c, clk
WHERE j.queue = $2 AND j.id = c.id
RETURNING j.id, j.token, j.data, j.attempts, j.max_attempts, j.redeliveries, j.priority, j.tenant, j.enqueued_at, clk.now,
	c.old_due, c.old_seq, c.rn, c.turn`

// templates are the statements with {schema} for the schema.
var templates = queries{
	insertQueue: `INSERT INTO {schema}.queues (queue, fairness, dedupe_ms, retain_failed_ms, retain_data)
VALUES ($1, $2, $3, $4, $5) ON CONFLICT (queue) DO NOTHING`,
	selectQueue: `SELECT fairness, dedupe_ms, retain_failed_ms, retain_data FROM {schema}.queues WHERE queue = $1`,

	// $3.. the jobs' columns, each id once. A finished job whose
	// retention ended is replaced; any other row of the id is left. The
	// ids stored come back; the hashes of the others are read after
	// (selectHashes), the rare path. A plain INSERT, no CTE: its plan is
	// cached (the CTEs and joins of a statement that also told the
	// hashes had it planned afresh every call, 0.6 to 1.6 ms).
	enqueue: `INSERT INTO {schema}.jobs AS j (queue, id, hash, v, data, priority, tenant, state, max_attempts, attempts, redeliveries,
	enqueued_at, run_at, due_at, seq, token, lease_until, code, reason, finished_at, keep_until)
SELECT $2, i.id, i.hash, i.v, i.data, i.priority, i.tenant, 0, i.max_attempts, 0, 0,
	coalesce(i.enqueued_at, now() + ` + us("$1") + `), coalesce(i.run_at, now() + ` + us("$1") + `), coalesce(i.run_at, now() + ` + us("$1") + `), nextval('{schema}.seq'),
	NULL, NULL, '', '', NULL, NULL
FROM unnest($3::text[], $4::text[], $5::int[], $6::bytea[], $7::smallint[], $8::text[], $9::int[], $10::timestamptz[], $11::timestamptz[])
	WITH ORDINALITY AS i(id, hash, v, data, priority, tenant, max_attempts, run_at, enqueued_at, n)
ORDER BY i.n
ON CONFLICT (queue, id) DO UPDATE SET hash = EXCLUDED.hash, v = EXCLUDED.v, data = EXCLUDED.data, priority = EXCLUDED.priority,
	tenant = EXCLUDED.tenant, state = 0, max_attempts = EXCLUDED.max_attempts, attempts = 0, redeliveries = 0,
	enqueued_at = EXCLUDED.enqueued_at, run_at = EXCLUDED.run_at, due_at = EXCLUDED.due_at, seq = EXCLUDED.seq,
	token = NULL, lease_until = NULL, code = '', reason = '', finished_at = NULL, keep_until = NULL
	WHERE j.state >= 2 AND j.keep_until <= now() + ` + us("$1") + `
RETURNING j.id`,
	// The NOTIFY of an enqueue, in the same transaction: $2 the channel,
	// $3 the soonest run_at of the jobs (NULL when one is due now); the
	// payload is the µs until it is due.
	wake:         `SELECT pg_notify($2, greatest(0, coalesce((extract(epoch FROM $3::timestamptz - now() + ` + us("$1") + `) * 1000000)::bigint, 0))::text)`,
	selectHashes: `SELECT id, hash FROM {schema}.jobs WHERE queue = $1 AND id = ANY($2::text[])`,

	reserve: `WITH ` + clk + `,
c AS (
	SELECT j.id, j.state AS old_state, j.due_at AS old_due, j.seq AS old_seq, 0::bigint AS rn, 0::bigint AS turn
	FROM {schema}.jobs j
	WHERE j.queue = $2 AND j.state < 2 AND j.due_at <= (SELECT now FROM clk) AND ` + notPaused + `
	ORDER BY j.priority, j.due_at, j.seq
	LIMIT $3
	FOR UPDATE OF j SKIP LOCKED
)
` + leaseUpdate,

	// With tenant fairness: a high job of any tenant first, by due
	// time; in the normal and low lanes, the first job of each tenant
	// (rn 1) in the order of their turns (the tenant served longest
	// ago first, a tenant never served at once), then the second of
	// each, and so on.
	reserveFair: `WITH ` + clk + `,
cand AS (
	SELECT j.id, j.priority, j.due_at, j.seq,
		CASE WHEN j.priority = 0 THEN 0 ELSE row_number() OVER (PARTITION BY j.priority, j.tenant ORDER BY j.due_at, j.seq) END AS rn,
		CASE WHEN j.priority = 0 THEN 0 ELSE coalesce(t.turn, 0) END AS turn
	FROM {schema}.jobs j
	LEFT JOIN {schema}.turns t ON t.queue = j.queue AND t.priority = j.priority AND t.tenant = j.tenant
	WHERE j.queue = $2 AND j.state < 2 AND j.due_at <= (SELECT now FROM clk) AND ` + notPaused + `
),
pick AS (SELECT id, rn, turn FROM cand ORDER BY priority, rn, turn, due_at, seq LIMIT $3),
c AS (
	SELECT j.id, j.state AS old_state, j.due_at AS old_due, j.seq AS old_seq, pick.rn, pick.turn
	FROM {schema}.jobs j JOIN pick ON j.id = pick.id
	WHERE j.queue = $2 AND j.state < 2 AND j.due_at <= (SELECT now FROM clk)
	FOR UPDATE OF j SKIP LOCKED
)
` + leaseUpdate,

	// The µs until the next job is due (a scheduled job or a lease
	// end), one probe of the index per priority; NULL for none.
	nextDue: `WITH ` + clk + `
SELECT (extract(epoch FROM least(
	(SELECT min(due_at) FROM {schema}.jobs WHERE queue = $2 AND priority = 0 AND state < 2 AND due_at > (SELECT now FROM clk)),
	(SELECT min(due_at) FROM {schema}.jobs WHERE queue = $2 AND priority = 1 AND state < 2 AND due_at > (SELECT now FROM clk)),
	(SELECT min(due_at) FROM {schema}.jobs WHERE queue = $2 AND priority = 2 AND state < 2 AND due_at > (SELECT now FROM clk))
) - (SELECT now FROM clk)) * 1000000)::bigint`,

	takeTurns: `WITH b AS (SELECT nextval('{schema}.seq') * 1024 AS b)
INSERT INTO {schema}.turns AS t (queue, priority, tenant, turn)
SELECT $1, u.p, u.t, b.b + u.n FROM unnest($2::smallint[], $3::text[]) WITH ORDINALITY AS u(p, t, n), b
ON CONFLICT (queue, priority, tenant) DO UPDATE SET turn = EXCLUDED.turn`,

	// The settles of a batch (batch.go): $3.. arrays of one element a
	// settle: the id, the token, the new state, the attempts spent (0 or
	// 1), code, reason, the delay (µs) of a job queued again, the
	// retention (µs) of a finished one, whether it keeps its data. Each
	// row is fenced by its own token alone (a lease that ran out still
	// settles while no reserve took the job); the ordinals of the settles
	// applied come back. The clock is now() inline, not the clk CTE.
	settleMany: `UPDATE {schema}.jobs j SET state = i.state, attempts = j.attempts + i.spent, token = NULL, lease_until = NULL,
	code = i.code, reason = i.reason,
	run_at = CASE WHEN i.state = 0 THEN now() + ` + us("$1") + ` + ` + us("i.delay") + ` ELSE j.run_at END,
	due_at = CASE WHEN i.state = 0 THEN now() + ` + us("$1") + ` + ` + us("i.delay") + ` ELSE j.due_at END,
	seq = CASE WHEN i.state = 0 THEN nextval('{schema}.seq') ELSE j.seq END,
	finished_at = CASE WHEN i.state = 0 THEN NULL ELSE now() + ` + us("$1") + ` END,
	keep_until = CASE WHEN i.state = 0 THEN NULL ELSE now() + ` + us("$1") + ` + ` + us("i.keep") + ` END,
	data = CASE WHEN i.keep_data THEN j.data ELSE NULL END
FROM unnest($3::text[], $4::text[], $5::smallint[], $6::int[], $7::text[], $8::text[], $9::bigint[], $10::bigint[], $11::boolean[])
	WITH ORDINALITY AS i(id, token, state, spent, code, reason, delay, keep, keep_data, n)
WHERE j.queue = $2 AND j.id = i.id AND j.token = i.token AND j.state = 1
RETURNING i.n`,

	extend: `WITH ` + clk + `
UPDATE {schema}.jobs j SET lease_until = clk.now + ` + us("$5") + `, due_at = clk.now + ` + us("$5") + `
FROM clk
WHERE j.queue = $2 AND j.id = $3 AND j.token = $4 AND j.state = 1`,

	pause: `WITH ` + clk + `
INSERT INTO {schema}.pauses AS p (queue, is_tenant, tenant, until)
SELECT $2, $3, $4, clk.now + ` + us("$5") + ` FROM clk
ON CONFLICT (queue, is_tenant, tenant) DO UPDATE SET until = greatest(p.until, EXCLUDED.until)`,

	resume: `WITH d AS (DELETE FROM {schema}.pauses WHERE queue = $1 AND is_tenant = $2 AND tenant = $3)
SELECT pg_notify($4, '0')`,

	stats: `WITH ` + clk + `
SELECT
	count(*) FILTER (WHERE j.state = 0),
	count(*) FILTER (WHERE j.state = 0 AND j.due_at <= clk.now),
	count(*) FILTER (WHERE j.state = 1),
	count(*) FILTER (WHERE j.state = 2 AND j.keep_until > clk.now),
	count(*) FILTER (WHERE j.state = 3 AND j.keep_until > clk.now),
	count(*) FILTER (WHERE j.state = 4 AND j.keep_until > clk.now),
	min(j.due_at) FILTER (WHERE j.state = 0 AND j.due_at <= clk.now),
	clk.now
FROM clk LEFT JOIN {schema}.jobs j ON j.queue = $2
GROUP BY clk.now`,
	pauses: `WITH ` + clk + `
SELECT is_tenant, tenant, until FROM {schema}.pauses, clk WHERE queue = $2 AND until > clk.now ORDER BY is_tenant, tenant`,

	get: `WITH ` + clk + `
SELECT ` + rowColumns + ` FROM {schema}.jobs j, clk
WHERE j.queue = $2 AND j.id = $3 AND (j.state < 2 OR j.state < 5 AND j.keep_until > clk.now)`,

	// $3 id. Answers the state before (-1 for no job held), whether
	// its data is kept, and whether it was queued again.
	retryFailed: `WITH ` + clk + `,
cur AS (
	SELECT j.state, j.data IS NOT NULL AS kept FROM {schema}.jobs j, clk
	WHERE j.queue = $2 AND j.id = $3 AND (j.state < 2 OR j.state < 5 AND j.keep_until > clk.now)
),
upd AS (
	UPDATE {schema}.jobs j SET state = 0, attempts = 0, redeliveries = 0, run_at = clk.now, due_at = clk.now,
		seq = nextval('{schema}.seq'), finished_at = NULL, keep_until = NULL, token = NULL, lease_until = NULL
	FROM clk
	WHERE j.queue = $2 AND j.id = $3 AND j.state IN (3, 4) AND j.data IS NOT NULL AND j.keep_until > clk.now
	RETURNING j.id
),
wake AS (SELECT pg_notify($4, '0') FROM upd)
SELECT coalesce((SELECT state FROM cur), -1), coalesce((SELECT kept FROM cur), false), (SELECT count(*) FROM upd) + 0 * (SELECT count(*) FROM wake)`,

	// $3 the state, $4 OlderThan (µs), $5 ForgetKeys.
	purge: `WITH ` + clk + `,
gone AS (
	SELECT j.id FROM {schema}.jobs j, clk
	WHERE j.queue = $2 AND j.state = $3::smallint AND j.keep_until > clk.now AND j.finished_at <= clk.now - ` + us("$4") + `
	FOR UPDATE OF j
),
del AS (DELETE FROM {schema}.jobs j USING gone WHERE $5::boolean AND j.queue = $2 AND j.id = gone.id RETURNING 1),
upd AS (UPDATE {schema}.jobs j SET state = 5, data = NULL FROM gone WHERE NOT $5::boolean AND j.queue = $2 AND j.id = gone.id RETURNING 1)
SELECT (SELECT count(*) FROM del) + (SELECT count(*) FROM upd)`,

	// $3 the most rows: the finished jobs whose retention ended, a
	// batch at a time, skipping the rows another statement holds.
	prune: `WITH ` + clk + `,
gone AS (
	SELECT j.id FROM {schema}.jobs j, clk
	WHERE j.queue = $2 AND j.state >= 2 AND j.keep_until <= clk.now
	LIMIT $3
	FOR UPDATE OF j SKIP LOCKED
)
DELETE FROM {schema}.jobs j USING gone WHERE j.queue = $2 AND j.id = gone.id`,
	jobs: `WITH ` + clk + `
SELECT ` + rowColumns + ` FROM {schema}.jobs j, clk
WHERE j.queue = $2 AND j.state = $3::smallint AND (j.state < 2 OR j.keep_until > clk.now)
ORDER BY %s
OFFSET $4 LIMIT $5`,
}

// newQueries returns the statements in schema.
func newQueries(schema string) queries {
	q := templates
	for _, p := range []*string{
		&q.insertQueue, &q.selectQueue, &q.enqueue, &q.wake, &q.selectHashes, &q.reserve, &q.reserveFair, &q.nextDue, &q.takeTurns,
		&q.settleMany, &q.extend, &q.pause, &q.resume, &q.stats, &q.pauses, &q.get, &q.jobs, &q.retryFailed, &q.purge, &q.prune,
	} {
		*p = inSchema(*p, schema)
	}
	return q
}

// rowColumns are the columns of a mailqueue.JobRow (scanRow).
const rowColumns = `j.id, j.hash, j.v, j.state, j.priority, j.tenant, j.attempts, j.max_attempts, j.redeliveries,
	j.enqueued_at, j.run_at, j.finished_at, j.lease_until, j.code, j.reason, j.data IS NOT NULL`

// jobsOrder is the order of Jobs by state: queued by due time, running by
// the end of the lease, finished by the time they finished, the oldest
// first, ties by the order they were queued or by id.
func jobsOrder(state int16) string {
	switch state {
	case stQueued:
		return "j.due_at, j.seq"
	case stRunning:
		return "j.lease_until, j.id"
	}
	return "j.finished_at, j.id"
}

// channel is the queue's NOTIFY channel: its name, or a hash of it when
// that is longer than PostgreSQL's identifiers (63 bytes).
func (s *Source) channel() string {
	name := s.QueueName()
	if len(name) <= 63 {
		return name
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(name))
	return fmt.Sprintf("mailer_%016x", h.Sum64())
}
