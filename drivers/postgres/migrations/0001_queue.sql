-- 0001_queue: the tables of the mail queue.
--
-- queues   one row per queue: the settings every process on it shares
--          (fairness, the retention windows in ms, retain_data), written by
--          the first OpenSource that sets them.
-- jobs     one row per job of every queue of the schema, keyed by (queue, id).
--          state: 0 queued, 1 running, 2 accepted, 3 failed,
--          4 delivery_unknown, 5 purged (only its v and hash are kept until
--          keep_until, so that an enqueue under its key is still a
--          duplicate). due_at is when a queued job is due, and the end of
--          a running job's lease: a reserve takes the rows of state < 2
--          whose due_at has passed, so a lease that ran out makes its job
--          due again with no other write. seq orders the jobs due at the
--          same instant by when they were queued.
-- pauses   the pause of a queue (is_tenant false, tenant '') or of a
--          tenant's jobs, until a time on the database's clock.
-- turns    the last turn of each tenant in a priority lane, for tenant
--          fairness: the tenant served longest ago goes first.
--
-- {schema} is the driver's schema, quoted; every time is the database's
-- (now()), never a client's.

CREATE TABLE {schema}.queues (
    queue text PRIMARY KEY,
    fairness text NOT NULL,
    dedupe_ms bigint NOT NULL,
    retain_failed_ms bigint NOT NULL,
    retain_data text NOT NULL
);

CREATE SEQUENCE {schema}.seq;

CREATE TABLE {schema}.jobs (
    queue text NOT NULL,
    id text NOT NULL,
    hash text NOT NULL,
    v integer NOT NULL DEFAULT 0,
    data bytea,
    priority smallint NOT NULL,
    tenant text NOT NULL DEFAULT '',
    state smallint NOT NULL,
    max_attempts integer NOT NULL,
    attempts integer NOT NULL DEFAULT 0,
    redeliveries integer NOT NULL DEFAULT 0,
    enqueued_at timestamptz NOT NULL,
    run_at timestamptz NOT NULL,
    due_at timestamptz NOT NULL,
    seq bigint NOT NULL,
    token text,
    lease_until timestamptz,
    code text NOT NULL DEFAULT '',
    reason text NOT NULL DEFAULT '',
    finished_at timestamptz,
    keep_until timestamptz,
    PRIMARY KEY (queue, id)
) WITH (fillfactor = 80);

-- The reserve's index: the jobs a reserve may take, by priority then due time.
CREATE INDEX jobs_due ON {schema}.jobs (queue, priority, due_at, seq) WHERE state < 2;
-- The finished jobs by the end of their retention: pruning and the duplicate window.
CREATE INDEX jobs_kept ON {schema}.jobs (queue, keep_until) WHERE state >= 2;

CREATE TABLE {schema}.pauses (
    queue text NOT NULL,
    is_tenant boolean NOT NULL,
    tenant text NOT NULL,
    until timestamptz NOT NULL,
    PRIMARY KEY (queue, is_tenant, tenant)
);

CREATE TABLE {schema}.turns (
    queue text NOT NULL,
    priority smallint NOT NULL,
    tenant text NOT NULL,
    turn bigint NOT NULL,
    PRIMARY KEY (queue, priority, tenant)
);
