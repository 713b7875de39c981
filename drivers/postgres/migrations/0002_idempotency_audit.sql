-- 0002_idempotency_audit: the idempotency store of IdempotencyTransport
-- and the audit sink.
--
-- idempotency  one row per idempotency key (the job's id): a reservation
--              (token set, receipt null) held by a run that is sending, or
--              a receipt (JSON) of a send that went or may have; a row is
--              gone once expires_at has passed.
-- audit        one row per event a queue or a worker told the sink: the
--              job, its state, the attempt, code and reason (never an
--              address), at the teller's clock (at) and the database's
--              (recorded_at). Has(job, attempt, state) reads it by its
--              index.

CREATE TABLE {schema}.idempotency (
    key text PRIMARY KEY,
    token text,
    receipt jsonb,
    expires_at timestamptz NOT NULL
);
CREATE INDEX idempotency_expires ON {schema}.idempotency (expires_at);

CREATE TABLE {schema}.audit (
    seq bigserial PRIMARY KEY,
    job_id text NOT NULL,
    state text NOT NULL,
    attempt integer NOT NULL,
    code text NOT NULL DEFAULT '',
    reason text NOT NULL DEFAULT '',
    tenant text NOT NULL DEFAULT '',
    correlation_id text NOT NULL DEFAULT '',
    at timestamptz NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX audit_job ON {schema}.audit (job_id, attempt, state);
