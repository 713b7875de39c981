package main

// The vectors of the wire format (docs/wire.md): gen/vectors/vectors.json,
// which the Go tests (mailqueue/vectors_test.go) and the Node check
// (conformance/node) run. The expected values are computed here by code of
// the generator's own, apart from mailqueue's, or pinned by hand (RFC 8785's
// published examples), so a test that reads them checks mailqueue against
// another implementation, not against itself.

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"net/mail"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"

	"golang.org/x/net/idna"
)

// vectorsPath is where Vectors' output is written, under the output
// directory.
const vectorsPath = "gen/vectors/vectors.json"

type vectorsFile struct {
	Comment   string          `json:"comment"`
	Canonical []canonVector   `json:"canonical"`
	Numbers   []numberVector  `json:"numbers"`
	Valid     []jobVector     `json:"valid"`
	Invalid   []invalidVector `json:"invalid"`
	Raw       []rawVector     `json:"raw"`
	IDs       []idVector      `json:"ids"`
	Signed    []signedVector  `json:"signed"`
	Stored    []storedVector  `json:"stored"`
}

// canonVector: Input, a JSON text, canonicalizes to Canonical.
type canonVector struct {
	Name      string `json:"name"`
	Input     string `json:"input"`
	Canonical string `json:"canonical"`
}

// numberVector: the IEEE 754 double of Bits (hexadecimal) is written as
// Canonical, or is no JSON number (Error).
type numberVector struct {
	Bits      string `json:"bits"`
	Canonical string `json:"canonical,omitempty"`
	Error     bool   `json:"error,omitempty"`
}

type jobVector struct {
	Name string `json:"name"`
	Job  any    `json:"job"`
}

type fieldVector struct {
	Pointer string `json:"pointer"`
	Rule    string `json:"rule"`
}

// outcomeVector is what a worker does with a stored job: "open" (it reads
// it), or "fail", "retry", "release" with a code.
type outcomeVector struct {
	Action string `json:"action"`
	Code   string `json:"code,omitempty"`
}

type invalidVector struct {
	Name   string        `json:"name"`
	Job    any           `json:"job"`
	Errors []fieldVector `json:"errors"`
	// Code is the producer's refusal.
	Code string `json:"code"`
	// Worker is what a worker without keys or codec does with it stored.
	Worker outcomeVector `json:"worker"`
}

// idVector: the ids a job of the namespace, tenant and key derives (a
// producer derives them all; a worker derives the job id again and refuses
// a job stored under another), and the codec's associated data of the job
// stored under that id in Queue.
type idVector struct {
	Name          string   `json:"name"`
	Namespace     string   `json:"namespace"`
	Tenant        string   `json:"tenant"`
	Key           string   `json:"key"`
	IDSecret      string   `json:"idSecret"` // hexadecimal; "" for none
	From          string   `json:"from"`
	JobIDInput    string   `json:"jobIdInput"`
	JobIDSeed     string   `json:"jobIdSeed"`
	JobID         string   `json:"jobId"`
	MessageIDSeed string   `json:"messageIdSeed"`
	MessageID     string   `json:"messageId"`
	ContentIDs    []string `json:"contentIds"`
	Queue         string   `json:"queue"`
	CodecAD       string   `json:"codecAd"`
}

type keyVector struct {
	ID     string `json:"id"`
	Secret string `json:"secret"` // hexadecimal
}

type signedVector struct {
	Name string     `json:"name"`
	Key  *keyVector `json:"key"`
	// Codec is "" for a clear job, or "base64": enc is the standard base64
	// of the canonical JSON of the sealed fields (a stand-in for a real
	// codec, so the vector is fixed).
	Codec string `json:"codec"`
	// Namespace, Queue and ID are where the job is stored: the mac and the
	// codec's associated data bind them.
	Namespace string `json:"namespace"`
	Queue     string `json:"queue"`
	ID        string `json:"id"`
	// Job is the clear job as a producer has it before hash, kid and mac.
	Job        map[string]any `json:"job"`
	HashInput  string         `json:"hashInput"`
	Hash       string         `json:"hash"`
	SealedJSON string         `json:"sealedJson,omitempty"`
	// CodecAD is the associated data the codec is given for a sealed job
	// (the base64 stand-in ignores it; AES-GCM binds it).
	CodecAD    string         `json:"codecAd,omitempty"`
	MACInput   string         `json:"macInput,omitempty"`
	MAC        string         `json:"mac,omitempty"`
	Stored     map[string]any `json:"stored"`
	StoredJSON string         `json:"storedJson"`
}

// storedVector: a worker of Namespace and Queue, with Keys and Codec (and
// no IDSecret, DeriveUUID), reads Data leased under ID, and Want is what it
// does. Codec is "", "base64" (the stand-in of the signed vectors) or
// "aes-256-gcm" under CodecKey (hexadecimal): the spec's codec, the
// associated data as GCM's.
type storedVector struct {
	Name      string        `json:"name"`
	Data      string        `json:"data"`
	ID        string        `json:"id"`
	Namespace string        `json:"namespace"`
	Queue     string        `json:"queue"`
	Keys      []keyVector   `json:"keys"`
	Codec     string        `json:"codec"`
	CodecKey  string        `json:"codecKey,omitempty"`
	Want      outcomeVector `json:"want"`
}

// vAESKey is the AES-256-GCM key of the stored vectors, and vNonce the
// nonce their seal is pinned to (a codec draws one per job).
const (
	vAESKey = "0101010101010101010101010101010101010101010101010101010101010101"
	vNonce  = "000102030405060708090a0b"
)

// vAESSealed returns the sealed-and-signed vector sealed with AES-256-GCM
// instead of the stand-in: enc = base64(nonce ‖ tag ‖ ciphertext) of its
// sealed JSON under the associated data, then signed again.
func vAESSealed(v signedVector) (map[string]any, error) {
	key, _ := hex.DecodeString(vAESKey)
	nonce, _ := hex.DecodeString(vNonce)
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	out := gcm.Seal(nil, nonce, []byte(v.SealedJSON), []byte(v.CodecAD))
	ct, tag := out[:len(v.SealedJSON)], out[len(v.SealedJSON):]
	stored := maps.Clone(v.Stored)
	stored["enc"] = base64.StdEncoding.EncodeToString(slices.Concat(nonce, tag, ct))
	in, err := vMACInput(v.Namespace, v.Queue, v.ID, stored)
	if err != nil {
		return nil, err
	}
	stored["mac"] = vMACOf(*v.Key, in)
	return stored, nil
}

// Vectors returns the text of gen/vectors/vectors.json, some of its
// vectors derived from the job schema in schema (job.v1.json).
func Vectors(schema fs.FS) ([]byte, error) {
	f := vectorsFile{
		Comment: "Generated by cmd/generate. DO NOT EDIT. Source: cmd/generate/vectors.go, whose code computes them or pins them by hand. The vectors of docs/wire.md: every producer and worker of job v1 must agree with them.",
	}
	f.Canonical = canonVectors
	for _, c := range f.Canonical {
		// The generator's own JCS must give the pinned bytes.
		got, err := vjcsText(c.Input)
		if err != nil || got != c.Canonical {
			return nil, fmt.Errorf("vectors: canonical %q: got %q (%w), pinned %q", c.Name, got, err, c.Canonical)
		}
	}
	f.Numbers = rfc8785Numbers
	for _, n := range f.Numbers {
		b, _ := strconv.ParseUint(n.Bits, 16, 64)
		got, err := vjcsNumber(math.Float64frombits(b))
		if (err != nil) != n.Error || got != n.Canonical {
			return nil, fmt.Errorf("vectors: number %s: got %q (%w), pinned %q", n.Bits, got, err, n.Canonical)
		}
	}
	f.Valid = append(validJobs(), ruleValidJobs()...)
	f.Invalid = append(invalidJobs(), ruleInvalidJobs()...)
	if err := addSchemaVectors(schema, &f); err != nil {
		return nil, err
	}
	f.Raw = rawVectors()
	ids, err := idVectors()
	if err != nil {
		return nil, err
	}
	f.IDs = ids
	signed, err := signedVectors(ids[1])
	if err != nil {
		return nil, err
	}
	f.Signed = signed
	if f.Stored, err = storedVectors(signed, ids); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(f); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// canonVectors are pinned: RFC 8785's own examples (section 3.2.2 and
// 3.2.3) and the string rules.
var canonVectors = []canonVector{
	{"rfc8785-3.2.2 worked example",
		`{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001], "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/", "literals": [null, true, false]}`,
		`{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`},
	{"rfc8785-3.2.3 sorting by UTF-16 code units",
		`{"\u20ac": "Euro Sign", "\r": "Carriage Return", "\ufb33": "Hebrew Letter Dalet With Dagesh", "1": "One", "\ud83d\ude00": "Emoji: Grinning Face", "\u0080": "Control", "\u00f6": "Latin Small Letter O With Diaeresis"}`,
		"{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"ö\":\"Latin Small Letter O With Diaeresis\",\"€\":\"Euro Sign\",\"😀\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}"},
	{"escapes: the short ones, \\u00XX for the other controls, nothing else",
		`["\b\f\n\r\t", "\u0000\u001f\u007f", "<>&\u2028\u2029", "\/", "é\u00e9"]`,
		"[\"\\b\\f\\n\\r\\t\",\"\\u0000\\u001f\u007f\",\"<>&\u2028\u2029\",\"/\",\"éé\"]"},
	{"whitespace and nesting",
		"{ \"b\" : [ 1 , { \"d\" : {} , \"c\" : [] } ] ,\n\t\"a\" : -0 }",
		`{"a":0,"b":[1,{"c":[],"d":{}}]}`},
	{"integers and exponents",
		`[1.0, 100, 1e2, -1.5e-7, 123456789012345678901, 0.1, 1e21, 1e-6]`,
		`[1,100,100,-1.5e-7,123456789012345680000,0.1,1e+21,0.000001]`},
}

// rfc8785Numbers are RFC 8785 appendix B, pinned.
var rfc8785Numbers = []numberVector{
	{Bits: "0000000000000000", Canonical: "0"},
	{Bits: "8000000000000000", Canonical: "0"},
	{Bits: "0000000000000001", Canonical: "5e-324"},
	{Bits: "8000000000000001", Canonical: "-5e-324"},
	{Bits: "7fefffffffffffff", Canonical: "1.7976931348623157e+308"},
	{Bits: "ffefffffffffffff", Canonical: "-1.7976931348623157e+308"},
	{Bits: "4340000000000000", Canonical: "9007199254740992"},
	{Bits: "c340000000000000", Canonical: "-9007199254740992"},
	{Bits: "4430000000000000", Canonical: "295147905179352830000"},
	{Bits: "7fffffffffffffff", Error: true},
	{Bits: "7ff0000000000000", Error: true},
	{Bits: "44b52d02c7e14af5", Canonical: "9.999999999999997e+22"},
	{Bits: "44b52d02c7e14af6", Canonical: "1e+23"},
	{Bits: "44b52d02c7e14af7", Canonical: "1.0000000000000001e+23"},
	{Bits: "444b1ae4d6e2ef4e", Canonical: "999999999999999700000"},
	{Bits: "444b1ae4d6e2ef4f", Canonical: "999999999999999900000"},
	{Bits: "444b1ae4d6e2ef50", Canonical: "1e+21"},
	{Bits: "3eb0c6f7a0b5ed8c", Canonical: "9.999999999999997e-7"},
	{Bits: "3eb0c6f7a0b5ed8d", Canonical: "0.000001"},
	{Bits: "41b3de4355555553", Canonical: "333333333.3333332"},
	{Bits: "41b3de4355555554", Canonical: "333333333.33333325"},
	{Bits: "41b3de4355555555", Canonical: "333333333.3333333"},
	{Bits: "41b3de4355555556", Canonical: "333333333.3333334"},
	{Bits: "41b3de4355555557", Canonical: "333333333.33333343"},
	{Bits: "becbf647612f3696", Canonical: "-0.0000033333333333333333"},
	{Bits: "43143ff3c1cb0959", Canonical: "1424953923781206.2"},
}

const (
	vHash = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	vMAC  = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
)

func contentJob() map[string]any {
	return map[string]any{
		"v": 1, "kind": "content", "subject": "Your invoice", "content": map[string]any{"html": "<p>Hi</p>", "text": "Hi"},
		"from": "Shop <shop@example.com>", "to": []any{"ada@example.com"}, "idempotencyKey": "invoice:1",
	}
}

func templateJob() map[string]any {
	return map[string]any{
		"v": 1, "kind": "template", "template": "reset-password", "locale": "pt-BR",
		"context": map[string]any{"name": "Ada", "url": "https://app.example.com/reset?t=1"},
		"from":    "Hirevel <no-reply@example.com>", "to": []any{"Ada <ada@example.com>", "bob@example.org"},
		"cc": []any{"c@example.com"}, "replyTo": []any{"help@example.com"},
		"headers":   map[string]any{"X-Campaign": "spring", "List-Unsubscribe": "<https://example.com/u>"},
		"messageId": "<abc.123@example.com>", "idempotencyKey": "reset-password:42",
		"scheduledAt": "2026-11-30T12:00:00Z", "expiresAt": "2026-12-01T12:00:00+02:00",
		"tenantId": "acme", "correlationId": "c-1", "maxAttempts": 5, "priority": "high",
		"hash": vHash, "kid": "k1", "mac": vMAC, "enqueuedAt": "2026-11-30T12:00:00.123Z",
		"trace": map[string]any{"traceparent": "00-0123456789abcdef0123456789abcdef-0123456789abcdef-01", "tracestate": "a=b"},
	}
}

func sealedJob() map[string]any {
	return map[string]any{
		"v": 1, "hash": vHash, "enqueuedAt": "2026-11-30T12:00:00Z", "correlationId": "c-1", "kid": "k1", "mac": vMAC,
		"trace": map[string]any{"traceparent": "00-0123456789abcdef0123456789abcdef-0123456789abcdef-01"}, "enc": "c2VhbGVk",
	}
}

func edited(job map[string]any, f func(m map[string]any)) map[string]any {
	m := maps.Clone(job)
	f(m)
	return m
}

func validJobs() []jobVector {
	return []jobVector{
		{"template, every field", templateJob()},
		{"content with attachments", edited(contentJob(), func(m map[string]any) {
			m["attachments"] = []any{
				map[string]any{"filename": "invoice.pdf", "contentType": "application/pdf", "content": "aGVsbG8=", "disposition": "attachment"},
				map[string]any{"ref": "invoices/42.pdf", "contentId": "logo@example.com", "disposition": "inline"},
			}
		})},
		{"content, text only, numbers in no context", edited(contentJob(), func(m map[string]any) {
			m["content"] = map[string]any{"text": "Hi"}
		})},
		{"template, context of every JSON type", edited(templateJob(), func(m map[string]any) {
			m["context"] = map[string]any{"s": "é", "n": 4.5, "i": -3, "b": true, "z": nil, "a": []any{1, "x", map[string]any{}}, "o": map[string]any{"€": 1}}
		})},
		{"sealed", sealedJob()},
		{"sealed, the least", map[string]any{"v": 1, "hash": vHash, "enc": "x"}},
	}
}

func invalidJobs() []invalidVector {
	fail := outcomeVector{Action: "fail", Code: "queue.invalid_job"}
	unsupported := outcomeVector{Action: "release", Code: "queue.unsupported_version"}
	iv := func(name string, job any, worker outcomeVector, errs ...fieldVector) invalidVector {
		return invalidVector{Name: name, Job: job, Errors: errs, Code: "queue.invalid_job", Worker: worker}
	}
	return []invalidVector{
		iv("no to", edited(contentJob(), func(m map[string]any) { delete(m, "to") }), fail, fieldVector{"/to", "required"}),
		iv("empty to", edited(contentJob(), func(m map[string]any) { m["to"] = []any{} }), fail, fieldVector{"/to", "minItems"}),
		iv("not a mailbox in to[1]", edited(contentJob(), func(m map[string]any) { m["to"] = []any{"ada@example.com", "not an address"} }), fail, fieldVector{"/to/1", "format"}),
		iv("CR LF in the subject", edited(contentJob(), func(m map[string]any) { m["subject"] = "Hi\r\nBcc: eve@example.com" }), fail, fieldVector{"/subject", "pattern"}),
		iv("a field version 1 does not know", edited(contentJob(), func(m map[string]any) { m["extra"] = 1 }), unsupported, fieldVector{"/extra", "additionalProperties"}),
		iv("a field version 1 does not know, in content", edited(contentJob(), func(m map[string]any) {
			m["content"] = map[string]any{"text": "Hi", "amp": "x"}
		}), unsupported, fieldVector{"/content/amp", "additionalProperties"}),
		iv("a later version", edited(contentJob(), func(m map[string]any) { m["v"] = 2 }), unsupported, fieldVector{"/v", "const"}),
		iv("an unknown priority", edited(contentJob(), func(m map[string]any) { m["priority"] = "urgent" }), fail, fieldVector{"/priority", "enum"}),
		iv("a template job without template", edited(contentJob(), func(m map[string]any) { m["kind"] = "template" }), fail, fieldVector{"/template", "required"}),
		iv("a content job without subject", edited(contentJob(), func(m map[string]any) { delete(m, "subject") }), fail, fieldVector{"/subject", "required"}),
		iv("a header the kit owns", edited(contentJob(), func(m map[string]any) { m["headers"] = map[string]any{"Message-ID": "<x@example.com>"} }), fail, fieldVector{"/headers/Message-ID", "reservedHeader"}),
		iv("an attachment by reference with content", edited(contentJob(), func(m map[string]any) {
			m["attachments"] = []any{map[string]any{"ref": "invoices/1.pdf", "content": "eA=="}}
		}), fail, fieldVector{"/attachments/0/content", "not"}),
		iv("maxAttempts 0", edited(contentJob(), func(m map[string]any) { m["maxAttempts"] = 0 }), fail, fieldVector{"/maxAttempts", "minimum"}),
		iv("maxAttempts not an integer", edited(contentJob(), func(m map[string]any) { m["maxAttempts"] = 2.5 }), fail, fieldVector{"/maxAttempts", "type"}),
		iv("a hash in capitals", edited(contentJob(), func(m map[string]any) { m["hash"] = strings.ToUpper(vHash) }), fail, fieldVector{"/hash", "pattern"}),
		iv("a padded mac", edited(contentJob(), func(m map[string]any) { m["mac"] = vMAC + "=" }), fail, fieldVector{"/mac", "pattern"}),
		iv("expiresAt not RFC 3339", edited(contentJob(), func(m map[string]any) { m["expiresAt"] = "tomorrow" }), fail, fieldVector{"/expiresAt", "format"}),
		iv("a bad locale", edited(contentJob(), func(m map[string]any) { m["locale"] = "en_US" }), fail, fieldVector{"/locale", "pattern"}),
		iv("sealed with a field of the clear shape", edited(sealedJob(), func(m map[string]any) { m["to"] = []any{"ada@example.com"} }), unsupported, fieldVector{"/to", "additionalProperties"}),
		iv("sealed without hash", edited(sealedJob(), func(m map[string]any) { delete(m, "hash") }), fail, fieldVector{"/hash", "required"}),
		iv("sealed with an empty enc", edited(sealedJob(), func(m map[string]any) { m["enc"] = "" }), fail, fieldVector{"/enc", "minLength"}),
	}
}

// idVectors derive ids as docs/wire.md says, with this file's own code.
func idVectors() ([]idVector, error) {
	ins := []struct{ name, ns, tenant, key, secret, from, queue string }{
		{"default namespace, no tenant", "mail", "", "invoice:1", "", "Shop <shop@example.com>", "mail"},
		{"tenant, a key with Unicode", "mail", "acme", "reset-password:42 ✓", "", "Hirevel <no-reply@Example.COM>", vQueue},
		{"idSecret", "mail", "acme", "reset-password:42 ✓", strings.Repeat("2a", 32), "Hirevel <no-reply@Example.COM>", vQueue},
		{"another namespace, a sender without domain", "billing", "", "invoice:1", "", "not a mailbox", ""},
		{"an IDN sender: the domain's A-labels", "mail", "", "invoice:2", "", "Bücher <ada@bücher.example>", vQueue},
		{"a sender whose domain lowercases apart in Go and JavaScript (İ)", "mail", "", "invoice:3", "", "x@İx.EXAMPLE", vQueue},
		{"a sender with ß, kept (no transitional mapping)", "mail", "", "invoice:4", "", "x@Straße.example", vQueue},
		{"an ASCII sender domain is kept as it is, an A-label that does not decode too", "mail", "", "invoice:5", "", "x@XN--ZZ.example", vQueue},
		{"an IDN sender with a label of -- at 3 and 4: no ASCII form", "mail", "", "invoice:6", "", "x@ab--c.bücher.example", vQueue},
		{"an IDN sender with a label that starts with -: no ASCII form", "mail", "", "invoice:7", "", "x@-ü.example", vQueue},
		{"an IDN sender with _ (STD3 rules): no ASCII form", "mail", "", "invoice:8", "", "x@a_b.bücher.example", vQueue},
		{"an IDN sender with ≠ (STD3 rules): no ASCII form", "mail", "", "invoice:9", "", "x@a≠b.bücher.example", vQueue},
		{"an IDN sender with an A-label that does not decode: no ASCII form", "mail", "", "invoice:10", "", "x@xn--zz.bücher.example", vQueue},
	}
	var out []idVector
	for _, in := range ins {
		secret, err := hex.DecodeString(in.secret)
		if err != nil {
			return nil, err
		}
		input, err := vjcs([]any{"mailer/job-id", in.ns, in.tenant, in.key})
		if err != nil {
			return nil, err
		}
		var seed string
		if len(secret) > 0 {
			m := hmac.New(sha256.New, secret)
			m.Write([]byte(input))
			seed = hex.EncodeToString(m.Sum(nil))
		} else {
			seed = vsha256(input)
		}
		id := vuuid(seed)
		domain := vdomain(in.from)
		msgInput, _ := vjcs([]any{"mailer/message-id", id})
		msgSeed := vsha256(msgInput)
		v := idVector{
			Name: in.name, Namespace: in.ns, Tenant: in.tenant, Key: in.key, IDSecret: in.secret, From: in.from,
			JobIDInput: input, JobIDSeed: seed, JobID: id, MessageIDSeed: msgSeed,
			MessageID: "<" + vuuid(msgSeed) + "@" + domain + ">",
		}
		for i := range 2 {
			cidInput, _ := vjcs([]any{"mailer/content-id", id, strconv.Itoa(i)})
			v.ContentIDs = append(v.ContentIDs, vuuid(vsha256(cidInput))+"@"+domain)
		}
		v.Queue = in.queue
		if v.CodecAD, err = vjcs([]any{"mailer/enc", in.ns, in.queue, id}); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// vdomain is the domain of a mailbox in its ASCII form, lowercased as
// ASCII, or localhost (docs/wire.md, "Ids"): an ASCII domain as it is, any
// other through IDNA's Lookup profile (UTS 46, transitional mapping off),
// localhost when that fails.
func vdomain(from string) string {
	a, err := mail.ParseAddress(from)
	if err != nil {
		return "localhost"
	}
	at := strings.LastIndex(a.Address, "@")
	if at < 0 || at == len(a.Address)-1 {
		return "localhost"
	}
	d := a.Address[at+1:]
	for i := 0; i < len(d); i++ {
		if d[i] >= 0x80 {
			if d, err = idna.Lookup.ToASCII(d); err != nil || d == "" {
				return "localhost"
			}
			break
		}
	}
	return strings.ToLower(d)
}

// vuuid is a UUID of version 8 from the first 16 bytes of a hexadecimal
// seed.
func vuuid(seed string) string {
	b, _ := hex.DecodeString(seed[:32])
	b[6] = b[6]&0x0f | 0x80
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

func vsha256(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// vNotHashed and vEnvelope are docs/wire.md's lists, written out again.
var (
	vNotHashed = []string{"hash", "kid", "mac", "enc", "enqueuedAt", "trace", "scheduledAt", "expiresAt", "correlationId", "priority", "maxAttempts"}
	vEnvelope  = []string{"v", "hash", "enqueuedAt", "correlationId", "kid", "mac", "trace"}
)

var vKey = keyVector{ID: "2026-10", Secret: "6d61696c65722d746573742d6b65792d6f662d33322d62797465732d2d2d2d21"}

// vQueue is the queue of the signed and stored vectors: the Redis driver's
// default name.
const vQueue = "mailer:mail"

// vMACInput is the mac's input (docs/wire.md, "The mac"): the canonical
// JSON of ["mailer/mac", namespace, queue, id, the stored object without
// mac].
func vMACInput(ns, queue, id string, stored map[string]any) (string, error) {
	return vjcs([]any{"mailer/mac", ns, queue, id, without(stored, "mac")})
}

// vMACOf is the mac under a key of the vectors.
func vMACOf(k keyVector, input string) string {
	secret, _ := hex.DecodeString(k.Secret)
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(input))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func signedVectors(ids idVector) ([]signedVector, error) {
	base := map[string]any{
		"v": 1, "kind": "template", "template": "reset-password", "locale": "pt-BR",
		"context": map[string]any{
			"name": "Ada Lovelace", "url": "https://app.example.com/reset?t=abc&x=<1>",
			"numbers": []any{333333333.33333329, 1e30, 4.5, 0.002, math.Copysign(0, -1), 100},
			"€":       "euro", "😀": "grin", "\ufb33": "dalet", "\r": "cr", "note": "line\nbreak \"quoted\" \\ é",
		},
		"from": ids.From, "to": []any{"Ada <ada@example.com>"}, "bcc": []any{"audit@example.com"},
		"subject":        "Réinitialiser le mot de passe €",
		"idempotencyKey": ids.Key, "tenantId": ids.Tenant, "messageId": ids.MessageID,
		"attachments": []any{map[string]any{"filename": "logo.png", "contentType": "image/png", "content": "iVBORw0KGgo=", "contentId": ids.ContentIDs[0], "disposition": "inline"}},
		"scheduledAt": "2026-11-30T12:00:00Z", "expiresAt": "2026-11-30T12:15:00Z", "correlationId": "req-7",
		"maxAttempts": 5, "priority": "high", "enqueuedAt": "2026-11-30T12:00:00Z",
		"trace": map[string]any{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
	}
	cases := []struct {
		name  string
		key   *keyVector
		codec string
	}{
		{"clear, unsigned", nil, ""},
		{"clear, signed", &vKey, ""},
		{"sealed, signed", &vKey, "base64"},
	}
	var out []signedVector
	for _, c := range cases {
		job := maps.Clone(base)
		hashInput, err := vjcs(without(job, vNotHashed...))
		if err != nil {
			return nil, err
		}
		v := signedVector{
			Name: c.name, Key: c.key, Codec: c.codec, Namespace: ids.Namespace, Queue: ids.Queue, ID: ids.JobID,
			Job: job, HashInput: hashInput, Hash: vsha256(hashInput),
		}
		stored := maps.Clone(job)
		stored["hash"] = v.Hash
		if c.codec != "" {
			inner := map[string]any{}
			sealed := map[string]any{}
			for k, x := range stored {
				if slices.Contains(vEnvelope, k) {
					sealed[k] = x
				} else {
					inner[k] = x
				}
			}
			v.SealedJSON, err = vjcs(inner)
			if err != nil {
				return nil, err
			}
			sealed["enc"] = base64.StdEncoding.EncodeToString([]byte(v.SealedJSON))
			stored = sealed
			v.CodecAD = ids.CodecAD
		}
		if c.key != nil {
			stored["kid"] = c.key.ID
			v.MACInput, err = vMACInput(v.Namespace, v.Queue, v.ID, stored)
			if err != nil {
				return nil, err
			}
			v.MAC = vMACOf(*c.key, v.MACInput)
			stored["mac"] = v.MAC
		}
		v.Stored = stored
		if v.StoredJSON, err = vjcs(stored); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func without(m map[string]any, names ...string) map[string]any {
	out := maps.Clone(m)
	for _, n := range names {
		delete(out, n)
	}
	return out
}

// storedVectors are stored jobs and what a worker does with them. Each is
// leased under the signed vectors' id and read by a worker of their
// namespace and queue unless it says otherwise.
func storedVectors(signed []signedVector, ids []idVector) ([]storedVector, error) {
	clearSigned, sealedSigned := signed[1], signed[2]
	keys := []keyVector{vKey}
	other := keyVector{ID: "2026-11", Secret: strings.Repeat("07", 32)}
	open := outcomeVector{Action: "open"}
	bad := outcomeVector{Action: "fail", Code: "queue.signature_invalid"}
	tampered := outcomeVector{Action: "fail", Code: "queue.job_tampered"}
	text := func(m map[string]any) string { s, _ := vjcs(m); return s }
	// forge changes the message and recomputes the hash, as whoever can
	// write to the store can.
	forge := func(v signedVector) string {
		job := maps.Clone(v.Job)
		job["to"] = []any{"eve@example.net"}
		h, _ := vjcs(without(job, vNotHashed...))
		job["hash"] = vsha256(h)
		job["kid"], job["mac"] = v.Stored["kid"], v.Stored["mac"]
		return text(job)
	}
	// unbound is the signed job with the mac of before the mac bound where
	// the job is stored: over the stored object alone.
	unbound := func(v signedVector) string {
		in, _ := vjcs(without(v.Stored, "mac"))
		return text(edited(v.Stored, func(m map[string]any) { m["mac"] = vMACOf(vKey, in) }))
	}
	sealedUnsigned := text(without(sealedSigned.Stored, "kid", "mac"))
	aesStored, err := vAESSealed(sealedSigned)
	if err != nil {
		return nil, err
	}
	aesSealed, aesUnsigned := text(aesStored), text(without(aesStored, "kid", "mac"))
	aes := func(v storedVector) storedVector { v.Codec, v.CodecKey = "aes-256-gcm", vAESKey; return v }
	at := func(id, ns, queue string, v storedVector) storedVector {
		v.ID, v.Namespace, v.Queue = id, ns, queue
		return v
	}
	copied := func(id string, v storedVector) storedVector {
		return at(id, clearSigned.Namespace, clearSigned.Queue, v)
	}
	intoQueue := func(queue string, v storedVector) storedVector {
		return at(clearSigned.ID, clearSigned.Namespace, queue, v)
	}
	intoNamespace := func(ns string, v storedVector) storedVector { return at(clearSigned.ID, ns, clearSigned.Queue, v) }
	anotherID := ids[0].JobID
	out := []storedVector{
		{Name: "clear, unsigned, no keys", Data: signed[0].StoredJSON, Want: open},
		{Name: "clear, signed, its key", Data: clearSigned.StoredJSON, Keys: keys, Want: open},
		{Name: "clear, signed, the old key listed second", Data: clearSigned.StoredJSON, Keys: []keyVector{other, vKey}, Want: open},
		{Name: "clear, signed, read without keys", Data: clearSigned.StoredJSON, Want: open},
		{Name: "clear, signed, its key dropped", Data: clearSigned.StoredJSON, Keys: []keyVector{other}, Want: bad},
		{Name: "clear, unsigned, keys", Data: signed[0].StoredJSON, Keys: keys, Want: bad},
		{Name: "clear, forged: hash recomputed, mac kept", Data: forge(clearSigned), Keys: keys, Want: bad},
		{Name: "clear, altered: expiresAt moved, hash still good", Data: text(edited(clearSigned.Stored, func(m map[string]any) { m["expiresAt"] = "2027-01-01T00:00:00Z" })), Keys: keys, Want: bad},
		{Name: "clear, another mac text of the same bytes", Data: text(edited(clearSigned.Stored, func(m map[string]any) { m["mac"] = otherBase64Text(clearSigned.MAC) })), Keys: keys, Want: bad},
		{Name: "clear, signed with a mac that binds no place (the rule before)", Data: unbound(clearSigned), Keys: keys, Want: bad},
		copied(anotherID, storedVector{Name: "clear, signed, copied under another id", Data: clearSigned.StoredJSON, Keys: keys, Want: tampered}),
		copied(anotherID, storedVector{Name: "clear, unsigned, copied under another id, no keys", Data: signed[0].StoredJSON, Want: tampered}),
		intoQueue("mailer:other", storedVector{Name: "clear, signed, copied into another queue, same id", Data: clearSigned.StoredJSON, Keys: keys, Want: bad}),
		intoQueue("", storedVector{Name: "clear, signed, read by a queue with no name", Data: clearSigned.StoredJSON, Keys: keys, Want: bad}),
		intoNamespace("billing", storedVector{Name: "clear, signed, copied into another namespace, same id", Data: clearSigned.StoredJSON, Keys: keys, Want: bad}),
		intoQueue("mailer:other", storedVector{Name: "clear, signed, another queue, read without keys: the id still binds", Data: clearSigned.StoredJSON, Want: open}),
		intoNamespace("billing", storedVector{Name: "clear, unsigned, another namespace, no keys: its id does not derive there", Data: signed[0].StoredJSON, Want: tampered}),
		{Name: "clear, hash mismatch", Data: text(edited(signed[0].Stored, func(m map[string]any) { m["subject"] = "Changed" })), Want: outcomeVector{"fail", "queue.hash_mismatch"}},
		{Name: "clear, no hash", Data: text(without(signed[0].Stored, "hash")), Want: outcomeVector{"fail", "queue.hash_mismatch"}},
		{Name: "clear, a later version", Data: text(edited(signed[0].Stored, func(m map[string]any) { m["v"] = 2 })), Want: outcomeVector{"release", "queue.unsupported_version"}},
		{Name: "clear, a field version 1 does not know", Data: text(edited(signed[0].Stored, func(m map[string]any) { m["extra"] = true })), Want: outcomeVector{"release", "queue.unsupported_version"}},
		{Name: "clear, no version", Data: text(without(signed[0].Stored, "v")), Want: outcomeVector{"fail", "queue.invalid_job"}},
		{Name: "not an object", Data: `["v", 1]`, Want: outcomeVector{"fail", "queue.invalid_job"}},
		{Name: "not JSON", Data: `{"v":1,`, Want: outcomeVector{"fail", "queue.invalid_job"}},
		{Name: "a name twice", Data: strings.Replace(signed[0].StoredJSON, `{"attachments"`, `{"to":["eve@example.net"],"attachments"`, 1), Want: outcomeVector{"fail", "queue.invalid_job"}},
		{Name: "sealed, signed, its key and codec", Data: sealedSigned.StoredJSON, Keys: keys, Codec: "base64", Want: open},
		{Name: "sealed, signed, no codec", Data: sealedSigned.StoredJSON, Keys: keys, Want: outcomeVector{"release", "queue.codec_missing"}},
		copied(anotherID, storedVector{Name: "sealed, signed, copied under another id: its tenant and key are sealed, so the mac tells", Data: sealedSigned.StoredJSON, Keys: keys, Codec: "base64", Want: bad}),
		intoQueue("mailer:other", storedVector{Name: "sealed, signed, copied into another queue, same id", Data: sealedSigned.StoredJSON, Keys: keys, Codec: "base64", Want: bad}),
		copied(anotherID, storedVector{Name: "sealed, unsigned, copied under another id, a codec that binds no associated data", Data: sealedUnsigned, Codec: "base64", Want: tampered}),
		aes(storedVector{Name: "sealed with AES-256-GCM, signed, its place", Data: aesSealed, Keys: keys, Want: open}),
		aes(storedVector{Name: "sealed with AES-256-GCM, unsigned, its place", Data: aesUnsigned, Want: open}),
		aes(copied(anotherID, storedVector{Name: "sealed with AES-256-GCM, unsigned, copied under another id: the associated data does not authenticate", Data: aesUnsigned, Want: outcomeVector{"retry", "queue.codec_failed"}})),
		aes(intoQueue("mailer:other", storedVector{Name: "sealed with AES-256-GCM, unsigned, copied into another queue", Data: aesUnsigned, Want: outcomeVector{"retry", "queue.codec_failed"}})),
		aes(intoNamespace("billing", storedVector{Name: "sealed with AES-256-GCM, unsigned, copied into another namespace", Data: aesUnsigned, Want: outcomeVector{"retry", "queue.codec_failed"}})),
		aes(intoQueue("mailer:other", storedVector{Name: "sealed with AES-256-GCM, signed, copied into another queue: the mac tells first", Data: aesSealed, Keys: keys, Want: bad})),
		{Name: "sealed, forged enc: failed before the codec", Data: text(edited(sealedSigned.Stored, func(m map[string]any) {
			m["enc"] = base64.StdEncoding.EncodeToString([]byte(`{"kind":"content"}`))
		})), Keys: keys, Codec: "base64", Want: bad},
		{Name: "sealed, a field of the envelope in enc", Data: text(edited(without(sealedSigned.Stored, "kid", "mac"), func(m map[string]any) {
			inner := strings.Replace(sealedSigned.SealedJSON, `{"attachments"`, `{"v":1,"attachments"`, 1)
			m["enc"] = base64.StdEncoding.EncodeToString([]byte(inner))
		})), Codec: "base64", Want: outcomeVector{"fail", "queue.invalid_job"}},
		{Name: "sealed, enc of another message", Data: text(edited(without(sealedSigned.Stored, "kid", "mac"), func(m map[string]any) {
			inner := strings.Replace(sealedSigned.SealedJSON, "Ada <ada@example.com>", "eve@example.net", 1)
			m["enc"] = base64.StdEncoding.EncodeToString([]byte(inner))
		})), Codec: "base64", Want: outcomeVector{"fail", "queue.hash_mismatch"}},
		{Name: "sealed, enc not base64: the codec's error is not retryable", Data: text(edited(without(sealedSigned.Stored, "kid", "mac"), func(m map[string]any) { m["enc"] = "%%%" })), Codec: "base64", Want: outcomeVector{"fail", "queue.codec_failed"}},
	}
	for i := range out {
		if out[i].ID == "" {
			out[i] = at(clearSigned.ID, clearSigned.Namespace, clearSigned.Queue, out[i])
		}
	}
	return out, nil
}

// otherBase64Text returns another unpadded base64url text of the same 32
// bytes: the last character's two unused bits set.
func otherBase64Text(s string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	i := strings.IndexByte(alphabet, s[len(s)-1])
	return s[:len(s)-1] + string(alphabet[i^1])
}

// vjcsText canonicalizes a JSON text.
func vjcsText(s string) (string, error) {
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return "", err
	}
	return vjcs(v)
}

// vjcs is the generator's own RFC 8785 canonicalization.
func vjcs(v any) (string, error) {
	var b strings.Builder
	err := vjcsWrite(&b, v)
	return b.String(), err
}

func vjcsWrite(b *strings.Builder, v any) error {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case string:
		vjcsString(b, x)
	case int:
		return vjcsWrite(b, float64(x))
	case float64:
		s, err := vjcsNumber(x)
		if err != nil {
			return err
		}
		b.WriteString(s)
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return err
		}
		return vjcsWrite(b, f)
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := vjcsWrite(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case map[string]any:
		names := slices.Collect(maps.Keys(x))
		slices.SortFunc(names, func(p, q string) int {
			return slices.Compare(utf16.Encode([]rune(p)), utf16.Encode([]rune(q)))
		})
		b.WriteByte('{')
		for i, n := range names {
			if i > 0 {
				b.WriteByte(',')
			}
			vjcsString(b, n)
			b.WriteByte(':')
			if err := vjcsWrite(b, x[n]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		return fmt.Errorf("vectors: no JSON for %T", v)
	}
	return nil
}

func vjcsString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 {
				fmt.Fprintf(b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}

// vjcsNumber writes f as ECMAScript does: fixed notation from 1e-6 up to
// 1e21, exponent notation outside, always the shortest digits that read
// back as f.
func vjcsNumber(f float64) (string, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "", fmt.Errorf("vectors: %v is no JSON number", f)
	}
	if f == 0 {
		return "0", nil
	}
	if a := math.Abs(f); a >= 1e-6 && a < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64), nil
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // 1e+21, 9.999999999999997e-07
	mant, exp, _ := strings.Cut(s, "e")
	sign := exp[:1]
	exp = strings.TrimLeft(exp[1:], "0")
	return mant + "e" + sign + exp, nil
}
