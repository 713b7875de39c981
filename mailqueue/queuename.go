package mailqueue

import (
	"unicode/utf8"
)

// QueueNamer is a Driver or a Source that tells the name of the queue it
// stores jobs in. The mac of a signed job and the associated data of a
// sealed one bind that name, with the namespace and the job's id, so that a
// job copied into another queue whose workers have the same keys is refused
// there (queue.signature_invalid), unsent (docs/wire.md, "The mac").
//
// The memory queue answers its Options.Queue ("mail" by default), the Redis
// driver Prefix + ":" + Queue ("mailer:mail" by default), and the polling
// driver its Source's name. A driver that does not implement QueueNamer has
// the name "": its jobs are bound to their namespace and id alone, so give
// two such queues that share keys two namespaces. Producers and workers of
// one queue must see the same name: New reads it once from the Driver.
type QueueNamer interface {
	// QueueName returns the queue's name: valid UTF-8, the same for every
	// producer and worker of the queue, never changing while jobs are
	// stored under it.
	QueueName() string
}

// queueNameOf returns the name of the queue d stores jobs in, "" when it
// does not tell.
func queueNameOf(d Driver) string {
	if n, ok := d.(QueueNamer); ok {
		return n.QueueName()
	}
	return ""
}

// CheckQueueName returns an *OptionError naming pkg and option when name
// cannot name a queue: it is not valid UTF-8, so the canonical JSON of the
// mac's input would differ between languages. Drivers check their queue's
// name with it.
func CheckQueueName(pkg, option, name string) error {
	if !utf8.ValidString(name) {
		return &OptionError{Package: pkg, Option: option, Value: name, Rule: "is not valid UTF-8"}
	}
	return nil
}
