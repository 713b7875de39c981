// Package mailer is a kit for sending mail through a durable queue: no lost
// mail, no mail sent twice, clear errors. This package holds no code; the
// kit is its subpackages.
//
// A producer enqueues a mail job with [github.com/alexify/mailer/mailqueue];
// a worker renders it ([github.com/alexify/mailer/render]), builds the
// message and sends it through a transport ([github.com/alexify/mailer/mail]:
// SMTP, a file, memory) and settles the job from the receipt. The jobs are
// stored by a driver: the memory queue ([github.com/alexify/mailer/drivers/memory]),
// Redis ([github.com/alexify/mailer/drivers/redis]) or any store of your own
// run by the polling driver ([github.com/alexify/mailer/drivers/polling])
// and held to the store contract by [github.com/alexify/mailer/conformance].
// The mailqueue package documentation maps the rest.
//
// The job format is schema-first: schema/job.v1.json and schema/codes.yaml
// are the source of truth, and cmd/generate writes the Go types, the
// validator and the codes into gen/ ([github.com/alexify/mailer/gen/jobv1],
// [github.com/alexify/mailer/gen/codes]). The format is versioned by the
// job's v field, apart from the module's own semantic version (see
// CHANGELOG.md).
package mailer
