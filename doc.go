// Package mailer is a kit for sending mail through a durable queue.
//
// A producer enqueues a mail job with [github.com/alexify/mailer/mailqueue];
// a worker renders it ([github.com/alexify/mailer/render]), builds the
// message and sends it through a transport ([github.com/alexify/mailer/mail])
// and settles the job from the receipt. The job format is schema-first:
// schema/job.v1.json and schema/codes.yaml are the source of truth, and
// cmd/generate writes the Go types, the validator and the codes into gen/.
package mailer
