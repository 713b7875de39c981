package mailqueue

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	netmail "net/mail"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/alexify/mailer/internal/jcs"
	"github.com/alexify/mailer/mail"
)

// The kinds of identifier DeriveID is asked for.
const (
	// IDKindJob is the id of a job, from its namespace, tenant and key.
	IDKindJob = "job-id"
	// IDKindMessage is the Message-ID of a job's message, from the job's id.
	IDKindMessage = "message-id"
	// IDKindContent is the Content-ID of an attachment, from the job's id and
	// the attachment's index.
	IDKindContent = "content-id"
)

// DeriveUUID is the default DeriveID: a UUID of version 8 (RFC 9562 section
// 5.8) whose 122 free bits are the first bits of the seed, a SHA-256 in
// hexadecimal. The same seed always gives the same UUID.
func DeriveUUID(kind, seed string) string {
	b, err := hex.DecodeString(seed)
	if err != nil || len(b) < 16 {
		// A seed is always 64 hex digits; hash anything else so the
		// function stays total.
		s := sha256.Sum256([]byte(seed))
		b = s[:]
	}
	var u uuid.UUID
	copy(u[:], b[:16])
	u[6] = (u[6] & 0x0f) | 0x80 // version 8
	u[8] = (u[8] & 0x3f) | 0x80 // variant 10
	return u.String()
}

// seedOf returns the seed an identifier derives from: the SHA-256, in
// hexadecimal, of the canonical JSON array of its parts, or their
// HMAC-SHA256 under secret when one is given (docs/wire.md, "Ids").
func seedOf(secret []byte, parts ...string) string {
	arr := make([]any, len(parts))
	for i, p := range parts {
		arr[i] = p
	}
	c, _ := jcs.Marshal(arr) // an array of strings always encodes
	if len(secret) > 0 {
		m := hmac.New(sha256.New, secret)
		m.Write(c)
		return hex.EncodeToString(m.Sum(nil))
	}
	s := sha256.Sum256(c)
	return hex.EncodeToString(s[:])
}

// jobIDSeed is the seed of a job's id.
func (q *Queue) jobIDSeed(tenant, key string) string {
	return jobIDSeedOf(q.cfg.IDSecret, q.cfg.Namespace, tenant, key)
}

// jobIDSeedOf is the seed of the id of a job of the namespace, tenant and
// key, under secret when one is given (docs/wire.md, "Ids").
func jobIDSeedOf(secret []byte, namespace, tenant, key string) string {
	return seedOf(secret, "mailer/"+IDKindJob, namespace, tenant, key)
}

// messageID returns the Message-ID of the job id, on the domain of from.
func (q *Queue) messageID(jobID, from string) string {
	seed := seedOf(nil, "mailer/"+IDKindMessage, jobID)
	return "<" + q.cfg.DeriveID(IDKindMessage, seed) + "@" + domainOf(from) + ">"
}

// contentID returns the Content-ID of the attachment at index i.
func (q *Queue) contentID(jobID, from string, i int) string {
	seed := seedOf(nil, "mailer/"+IDKindContent, jobID, strconv.Itoa(i))
	return q.cfg.DeriveID(IDKindContent, seed) + "@" + domainOf(from)
}

// domainOf returns the domain of a mailbox, or "localhost" when it has none.
//
// The domain is written in its ASCII form (IDNA, UTS 46 processing, as
// mail.ASCIIDomain and Node's url.domainToASCII write it), then lowercased
// as ASCII: lowercasing a Unicode domain differs between languages
// ("İSTANBUL"), its ASCII form does not (docs/wire.md, "Ids").
func domainOf(mailbox string) string {
	if a, err := netmail.ParseAddress(mailbox); err == nil {
		if i := strings.LastIndexByte(a.Address, '@'); i >= 0 && i+1 < len(a.Address) {
			if d, err := mail.ASCIIDomain(a.Address[i+1:]); err == nil && d != "" {
				return strings.ToLower(d)
			}
		}
	}
	return "localhost"
}

// checkDeriveID checks that f gives the same id for the same seed, as the
// spec requires ("Once per key"): a generator that draws a new id each call
// would make the same message another job.
func checkDeriveID(f func(kind, seed string) string) error {
	seed := seedOf(nil, "mailer/check")
	for _, kind := range []string{IDKindJob, IDKindMessage, IDKindContent} {
		a, b := f(kind, seed), f(kind, seed)
		if a == "" || a != b {
			return fmt.Errorf("mailqueue: DeriveID must give the same non-empty id for the same seed (kind %s)", kind)
		}
		if strings.ContainsAny(a, "<>@ \r\n\"") {
			return fmt.Errorf("mailqueue: DeriveID gave an id with a character not allowed in a Message-ID (kind %s)", kind)
		}
	}
	return nil
}
