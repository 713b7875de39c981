// Package mailqueue sends mail through a durable queue: a producer enqueues
// a message as a job, and a worker renders it, sends it through a transport
// and decides from the receipt what the queue does next: ack, retry after a
// backoff, fail for good, or give it back.
//
//	producer  Queue.Enqueue ─▶ check ─▶ fix ids ─▶ hash ─▶ audit "queued" ─▶ Driver.Enqueue
//	worker    Driver ─▶ Handler: open ─▶ render ─▶ build ─▶ Transport.Send ─▶ Outcome
//
// [New] makes a [Queue] over a [Driver]; [Queue.Enqueue] checks a job
// against schema/job.v1.json before anything is stored and refuses it with
// an [*Error] that carries a code and the path of the bad value; the same
// message under the same idempotency key is one job. [Queue.NewWorker]
// makes the [Worker], the one [Handler] every driver runs. Jobs may be
// signed ([Config.SigningKeys]) and sealed ([Config.Codec],
// [NewAESGCMCodec]) so that the store holds neither a forged job nor the
// message in clear; the mac and the codec's associated data bind a job to
// its id, its queue ([QueueNamer]) and its namespace, and a worker refuses
// a job stored under another id, or whose store record disagrees with it
// (queue.job_tampered).
//
// # Stores
//
// The store is a [Driver]. Most drivers are a [Source], the smallest store
// contract (a store that keeps jobs and lends them out under leases), run
// by the polling driver:
//
//   - drivers/memory: the memory queue, for tests and a single process;
//     nothing survives the process. memory.New returns the polling driver
//     over memory.Source.
//   - drivers/redis: the Redis (or Valkey) driver, for several processes,
//     on a standalone server, Sentinel or Redis Cluster (redis.Open).
//   - drivers/polling: turns any Source into a Driver (polling.New): it
//     reserves, keeps the leases, settles and closes.
//
// Outboxes on PostgreSQL and MongoDB, which enqueue in the transaction of
// the caller's own writes, are planned and not written yet. A store of your
// own implements [Source] and is held to its contract by
// conformance.TestSource.
//
// # The packages around
//
//   - gen/jobv1: the job's Go types, Validate and Decode, generated from
//     schema/job.v1.json; gen/codes: every code, from schema/codes.yaml.
//   - mail: the Message, Build (the MIME message), the Transport interface
//     and its Receipt; mail/smtp sends over SMTP, mail/memory keeps the
//     messages (for tests), mail/file writes .eml files, mail/idempotency
//     wraps a transport so a job is sent once per key.
//   - render: the templates of template jobs (html/template and
//     text/template) from an io/fs.FS, per template and locale.
//   - attachments: resolvers of attachments by reference, for
//     [WorkerConfig.ResolveAttachment] (from a folder, or from allowed URLs).
//   - audit: audit sinks ([AuditSink]): in memory, or to a *slog.Logger.
//   - conformance: TestSource, the Source contract as tests.
//   - clock: the wall clock and a fake one, for tests that never sleep.
//
// The behaviour follows the spec of the original library, docs/spec/queue.md
// in the repository (https://github.com/alexify/mailer/blob/main/docs/spec/queue.md).
// Each rule is told in the documentation where it applies, with the spec's
// section named as a reference only, as in (spec: "Once per key").
//
// Besides storing and lending jobs, the memory queue and the Redis driver
// answer an operator's questions and requests (stats, the jobs by state,
// the failed jobs, a retry of one, a purge); cmd/mailq runs them.
package mailqueue
