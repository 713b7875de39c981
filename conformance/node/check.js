'use strict';
// The Node check of the wire vectors (docs/wire.md): validates
// gen/vectors/vectors.json against schema/job.v1.json with ajv (draft
// 2020-12) and recomputes the canonical JSON, hashes, ids, Message-IDs,
// Content-IDs, the codec's associated data and the macs (bound to the
// namespace, the queue and the id) with Node's crypto, written here apart
// from the Go code. It opens the stored vectors as a worker does, where
// each is leased, and derives the job id as a worker does. Run: node check.js
// (after npm ci). It exits 1 when any vector disagrees.

const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const Ajv2020 = require('ajv/dist/2020');
const addFormats = require('ajv-formats');

const root = path.resolve(__dirname, '..', '..');
const schema = JSON.parse(fs.readFileSync(path.join(root, 'schema', 'job.v1.json'), 'utf8'));
const vectors = JSON.parse(fs.readFileSync(path.join(root, 'gen', 'vectors', 'vectors.json'), 'utf8'));

// ---- RFC 8785 (JCS) ------------------------------------------------------

// jcs writes a JSON value canonically: members sorted by UTF-16 code units
// (JavaScript's own string order), no whitespace, numbers as ECMAScript
// writes them, strings as JSON.stringify writes them (RFC 8785 section 3.2).
function jcs(v) {
  if (v === null) return 'null';
  switch (typeof v) {
    case 'boolean':
      return v ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(v)) throw new Error('not a JSON number: ' + v);
      return String(v); // -0 is written 0
    case 'string':
      if (/\p{Surrogate}/u.test(v)) throw new Error('a lone surrogate');
      return JSON.stringify(v);
    case 'object':
      if (Array.isArray(v)) return '[' + v.map(jcs).join(',') + ']';
      return '{' + Object.keys(v).sort().map((k) => JSON.stringify(k) + ':' + jcs(v[k])).join(',') + '}';
    default:
      throw new Error('no JSON for ' + typeof v);
  }
}

// parseStrict is JSON.parse that refuses an object with two members of one
// name (I-JSON), which JSON.parse would read as the last one.
function parseStrict(text) {
  let i = 0;
  const ws = () => { while (i < text.length && ' \t\n\r'.includes(text[i])) i++; };
  const str = () => {
    const start = i++;
    while (text[i] !== '"') { if (i >= text.length) throw new SyntaxError('unterminated string'); if (text[i] === '\\') i++; i++; }
    i++;
    return JSON.parse(text.slice(start, i));
  };
  const value = () => {
    ws();
    if (text[i] === '{') {
      i++; ws();
      const names = new Set();
      if (text[i] === '}') { i++; return; }
      for (;;) {
        ws();
        if (text[i] !== '"') throw new SyntaxError('a name expected');
        const name = str();
        if (names.has(name)) throw new SyntaxError('a name appears twice in one object');
        names.add(name);
        ws(); if (text[i++] !== ':') throw new SyntaxError(': expected');
        value(); ws();
        if (text[i] === ',') { i++; continue; }
        if (text[i++] === '}') return;
        throw new SyntaxError(', or } expected');
      }
    }
    if (text[i] === '[') {
      i++; ws();
      if (text[i] === ']') { i++; return; }
      for (;;) {
        value(); ws();
        if (text[i] === ',') { i++; continue; }
        if (text[i++] === ']') return;
        throw new SyntaxError(', or ] expected');
      }
    }
    if (text[i] === '"') { str(); return; }
    const m = /^(?:true|false|null|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?)/.exec(text.slice(i));
    if (!m) throw new SyntaxError('a value expected');
    i += m[0].length;
  };
  value(); ws();
  if (i !== text.length) throw new SyntaxError('data after the value');
  return JSON.parse(text);
}

// ---- the schema ----------------------------------------------------------

// mailbox approximates the Go validator's format (net/mail.ParseAddress):
// an addr-spec, or a display name and an addr-spec in angle brackets.
const addrSpec = /^[^\s@<>()[\]\\,;:"]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*$/;
function mailbox(s) {
  if (/[\r\n]/.test(s)) return false;
  const m = /^(?:"[^"\\@]*"|[^<>"@]*?)\s*<([^<>]+)>$/.exec(s); // no '@' in a display name
  return addrSpec.test(m ? m[1] : s);
}

// Strict, but for two rules of ajv's own that this valid 2020-12 schema
// breaks: "to" adds minItems beside a $ref to an array (strictTypes), and
// the if/then name properties their branches define (strictRequired).
const ajv = new Ajv2020({ allErrors: true, strict: true, strictRequired: false, strictTypes: false, verbose: true });
addFormats(ajv);
ajv.addFormat('mailbox', { type: 'string', validate: mailbox });
for (const keyword of ['x-enum-doc', 'x-reservedHeaders']) ajv.addKeyword({ keyword }); // annotations
const validate = ajv.compile(schema);

const reserved = schema.$defs.clear.properties.headers['x-reservedHeaders'];
const escapePointer = (s) => s.replace(/~/g, '~0').replace(/\//g, '~1');

// fieldErrors validates a job and returns its errors as [pointer, rule],
// each where the Go validator puts it, sorted.
function fieldErrors(job) {
  const out = [];
  if (!validate(job)) {
    for (const e of validate.errors) {
      switch (e.keyword) {
        case 'if': case 'then': case 'else': case 'allOf': case 'anyOf': case 'oneOf':
          break; // wrappers of the errors below
        case 'required':
          out.push([e.instancePath + '/' + escapePointer(e.params.missingProperty), 'required']);
          break;
        case 'additionalProperties':
          out.push([e.instancePath + '/' + escapePointer(e.params.additionalProperty), 'additionalProperties']);
          break;
        case 'not':
          for (const n of e.schema.required || []) if (n in e.data) out.push([e.instancePath + '/' + escapePointer(n), 'not']);
          break;
        default:
          out.push([e.instancePath, e.keyword]);
      }
    }
  }
  // The rule the schema cannot say: x-reservedHeaders on a clear job.
  if (job && typeof job === 'object' && !('enc' in job) && job.headers && typeof job.headers === 'object') {
    for (const name of Object.keys(job.headers)) {
      const lower = name.toLowerCase();
      if (reserved.some((r) => (r.endsWith('*') ? lower.startsWith(r.slice(0, -1)) : lower === r))) {
        out.push(['/headers/' + escapePointer(name), 'reservedHeader']);
      }
    }
  }
  const seen = new Set();
  return out.filter(([p, r]) => !seen.has(p + ' ' + r) && seen.add(p + ' ' + r))
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
}

// ---- hash, mac, ids --------------------------------------------------------

const notHashed = ['hash', 'kid', 'mac', 'enc', 'enqueuedAt', 'trace', 'scheduledAt', 'expiresAt', 'correlationId', 'priority', 'maxAttempts'];
const envelope = ['v', 'hash', 'enqueuedAt', 'correlationId', 'kid', 'mac', 'trace'];
const omit = (o, names) => Object.fromEntries(Object.entries(o).filter(([k]) => !names.includes(k)));
const sha256 = (s) => crypto.createHash('sha256').update(s, 'utf8').digest('hex');
const hmac = (secret, s) => crypto.createHmac('sha256', secret).update(s, 'utf8').digest();
const hashOf = (job) => sha256(jcs(omit(job, notHashed)));
// The mac binds where the job is stored (docs/wire.md, "The mac"): at is
// { namespace, queue, id }.
const macInput = (at, stored) => jcs(['mailer/mac', at.namespace, at.queue, at.id, omit(stored, ['mac'])]);
const macOf = (secretHex, at, stored) => hmac(Buffer.from(secretHex, 'hex'), macInput(at, stored)).toString('base64url');
const codecAd = (at) => jcs(['mailer/enc', at.namespace, at.queue, at.id]);
const jobIdOf = (namespace, tenant, key) => uuid8(sha256(jcs(['mailer/job-id', namespace, tenant, key])));

function uuid8(seedHex) {
  const b = Buffer.from(seedHex.slice(0, 32), 'hex');
  b[6] = (b[6] & 0x0f) | 0x80;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = b.toString('hex');
  return [h.slice(0, 8), h.slice(8, 12), h.slice(12, 16), h.slice(16, 20), h.slice(20)].join('-');
}

function domainOf(from) {
  const m = /<([^<>]*)>\s*$/.exec(from);
  const addr = m ? m[1] : from;
  if (!mailbox(from)) return 'localhost';
  return addr.slice(addr.lastIndexOf('@') + 1).toLowerCase();
}

// ---- a worker's opening of a stored job (docs/wire.md) --------------------

// unseal opens enc with the codec: 'base64' (the vectors' stand-in, which
// binds no associated data) or 'aes-256-gcm' under codecKey (hexadecimal),
// base64(nonce ‖ tag ‖ ciphertext) with the associated data as GCM's. It
// returns the text, or the worker's outcome.
function unseal(enc, codec, codecKey, at) {
  if (!/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(enc)) return { outcome: { action: 'fail', code: 'queue.codec_failed' } };
  const b = Buffer.from(enc, 'base64');
  if (codec === 'base64') return { text: b.toString('utf8') };
  if (b.length < 28) return { outcome: { action: 'fail', code: 'queue.codec_failed' } };
  const d = crypto.createDecipheriv('aes-256-gcm', Buffer.from(codecKey, 'hex'), b.subarray(0, 12));
  d.setAAD(Buffer.from(codecAd(at), 'utf8'));
  d.setAuthTag(b.subarray(12, 28));
  try {
    return { text: Buffer.concat([d.update(b.subarray(28)), d.final()]).toString('utf8') };
  } catch {
    return { outcome: { action: 'retry', code: 'queue.codec_failed' } }; // it may be sealed under a key this worker lacks
  }
}

// open reads a stored job as a worker of at.namespace and at.queue does,
// leased under at.id, with no IDSecret.
function open(text, keys, codec, at, codecKey) {
  let job;
  try {
    job = parseStrict(text);
  } catch {
    return { action: 'fail', code: 'queue.invalid_job' };
  }
  if (job === null || typeof job !== 'object' || Array.isArray(job)) return { action: 'fail', code: 'queue.invalid_job' };
  if (Number.isInteger(job.v) && job.v > 1) return { action: 'release', code: 'queue.unsupported_version' };
  if (job.v !== 1) return { action: 'fail', code: 'queue.invalid_job' };
  if (keys.length > 0) {
    const verified = (where) => {
      const key = keys.find((k) => k.id === job.kid);
      if (!key || typeof job.mac !== 'string') return false;
      try {
        const want = Buffer.from(macOf(key.secret, where, job));
        const got = Buffer.from(job.mac);
        return want.length === got.length && crypto.timingSafeEqual(want, got);
      } catch {
        return false;
      }
    };
    if (!verified(at)) {
      // A clear job signed for the id its own tenant and key derive, stored
      // under another: a copy.
      const str = (name) => (!(name in job) ? '' : typeof job[name] === 'string' ? job[name] : null);
      const tenant = str('tenantId');
      const key = str('idempotencyKey');
      if (!('enc' in job) && tenant !== null && key !== null) {
        const id = jobIdOf(at.namespace, tenant, key);
        if (id !== at.id && verified({ ...at, id })) return { action: 'fail', code: 'queue.job_tampered' };
      }
      return { action: 'fail', code: 'queue.signature_invalid' };
    }
  }
  const checked = (obj) => {
    const errs = fieldErrors(obj);
    if (errs.length === 0) return null;
    if (errs.some(([, rule]) => rule === 'additionalProperties')) return { action: 'release', code: 'queue.unsupported_version' };
    return { action: 'fail', code: 'queue.invalid_job' };
  };
  let refusal = checked(job);
  if (refusal) return refusal;
  let whole = job;
  if ('enc' in job) {
    if (codec !== 'base64' && codec !== 'aes-256-gcm') return { action: 'release', code: 'queue.codec_missing' };
    const opened = unseal(job.enc, codec, codecKey, at);
    if (opened.outcome) return opened.outcome;
    let inner;
    try {
      inner = parseStrict(opened.text);
    } catch {
      return { action: 'fail', code: 'queue.invalid_job' };
    }
    if (inner === null || typeof inner !== 'object' || Array.isArray(inner)) return { action: 'fail', code: 'queue.invalid_job' };
    if (Object.keys(inner).some((k) => envelope.includes(k) || k === 'enc')) return { action: 'fail', code: 'queue.invalid_job' };
    whole = { ...inner, ...omit(job, ['enc']) };
    refusal = checked(whole);
    if (refusal) return refusal;
  }
  if (typeof job.hash !== 'string' || hashOf(whole) !== job.hash) return { action: 'fail', code: 'queue.hash_mismatch' };
  // The worker derives the job's id and refuses one stored under another.
  if (jobIdOf(at.namespace, whole.tenantId ?? '', whole.idempotencyKey ?? '') !== at.id) return { action: 'fail', code: 'queue.job_tampered' };
  return { action: 'open' };
}

// ---- the vectors -----------------------------------------------------------

let passed = 0;
let failed = 0;
function check(name, f) {
  try {
    f();
    passed++;
  } catch (err) {
    failed++;
    console.error(`FAIL ${name}\n  ${String(err.message).split('\n').join('\n  ')}`);
  }
}

for (const v of vectors.canonical) {
  check(`canonical: ${v.name}`, () => assert.equal(jcs(JSON.parse(v.input)), v.canonical));
}
for (const v of vectors.numbers) {
  check(`number ${v.bits}`, () => {
    const n = Buffer.from(v.bits, 'hex').readDoubleBE(0);
    if (v.error) assert.throws(() => jcs(n));
    else assert.equal(jcs(n), v.canonical);
  });
}
for (const v of vectors.valid) {
  check(`valid: ${v.name}`, () => assert.deepEqual(fieldErrors(v.job), []));
}
for (const v of vectors.invalid) {
  check(`invalid: ${v.name}`, () => {
    assert.deepEqual(fieldErrors(v.job), v.errors.map((e) => [e.pointer, e.rule]));
    assert.equal(v.code, 'queue.invalid_job');
    assert.deepEqual(open(JSON.stringify(v.job), [], '', { namespace: 'mail', queue: '', id: 'an-id' }), dropEmptyCode(v.worker));
  });
}
for (const v of vectors.ids) {
  check(`ids: ${v.name}`, () => {
    const input = jcs(['mailer/job-id', v.namespace, v.tenant, v.key]);
    assert.equal(input, v.jobIdInput);
    const seed = v.idSecret ? hmac(Buffer.from(v.idSecret, 'hex'), input).toString('hex') : sha256(input);
    assert.equal(seed, v.jobIdSeed);
    const id = uuid8(seed);
    assert.equal(id, v.jobId);
    const msgSeed = sha256(jcs(['mailer/message-id', id]));
    assert.equal(msgSeed, v.messageIdSeed);
    const domain = domainOf(v.from);
    assert.equal(`<${uuid8(msgSeed)}@${domain}>`, v.messageId);
    assert.deepEqual([0, 1].map((i) => `${uuid8(sha256(jcs(['mailer/content-id', id, String(i)])))}@${domain}`), v.contentIds);
    assert.equal(codecAd({ namespace: v.namespace, queue: v.queue, id }), v.codecAd);
  });
}
for (const v of vectors.signed) {
  check(`signed: ${v.name}`, () => {
    assert.equal(jcs(omit(v.job, notHashed)), v.hashInput);
    assert.equal(hashOf(v.job), v.hash);
    const at = { namespace: v.namespace, queue: v.queue, id: v.id };
    assert.equal(jobIdOf(v.namespace, v.job.tenantId ?? '', v.job.idempotencyKey ?? ''), v.id);
    let stored = { ...v.job, hash: v.hash };
    if (v.codec === 'base64') {
      assert.equal(codecAd(at), v.codecAd);
      const sealedJson = jcs(omit(stored, envelope));
      assert.equal(sealedJson, v.sealedJson);
      stored = { ...Object.fromEntries(Object.entries(stored).filter(([k]) => envelope.includes(k))), enc: Buffer.from(sealedJson, 'utf8').toString('base64') };
    }
    if (v.key) {
      stored.kid = v.key.id;
      assert.equal(macInput(at, stored), v.macInput);
      stored.mac = macOf(v.key.secret, at, stored);
      assert.equal(stored.mac, v.mac);
    }
    assert.deepEqual(stored, v.stored);
    assert.equal(jcs(stored), v.storedJson);
    assert.deepEqual(fieldErrors(stored), []);
    assert.deepEqual(open(v.storedJson, v.key ? [v.key] : [], v.codec, at), { action: 'open' });
  });
}
for (const v of vectors.stored) {
  check(`stored: ${v.name}`, () => assert.deepEqual(open(v.data, v.keys || [], v.codec, { namespace: v.namespace, queue: v.queue, id: v.id }, v.codecKey), dropEmptyCode(v.want)));
}

function dropEmptyCode(o) {
  return o.code ? { action: o.action, code: o.code } : { action: o.action };
}

console.log(`conformance/node: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
