'use strict';
// The Node check of the wire vectors (docs/wire.md): validates
// gen/vectors/vectors.json against schema/job.v1.json with ajv (draft
// 2020-12) and recomputes the canonical JSON, hashes, ids, Message-IDs,
// Content-IDs, the codec's associated data and the macs (bound to the
// namespace, the queue and the id) with Node's crypto, written here apart
// from the Go code. It opens the stored vectors as a worker does, where
// each is leased, and derives the job id as a worker does; it reads the raw
// ones byte by byte as the producer and the worker must (a strict scanner of
// its own), and gives Go's verdict on every one: the formats mailbox and
// date-time as Go reads them, the cross-field rules the schema holds in its
// x- extensions, and the errors jsonschema/v6 reports (docs/wire.md, "The
// vectors"). Run: node check.js (after npm ci). It exits 1 when any vector
// disagrees.

const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const url = require('node:url');
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

// ---- a strict reading of JSON text (docs/wire.md, "What a worker checks") ----

// JSONFault is a text that is not the one JSON value every reader reads
// alike; pointer is the RFC 6901 pointer of the value at fault ("" for the
// whole text).
class JSONFault extends SyntaxError {
  constructor(message, pointer, syntax) {
    super(message);
    this.pointer = pointer;
    // syntax is true when the text is not JSON at all (RFC 8259), which
    // Go reports at "" (the whole text).
    this.syntax = syntax;
  }
}

const literal = /true|false|null|(-?(?:0|[1-9]\d*))(\.\d+)?([eE][+-]?\d+)?/y;

// maxDepth is internal/strictjson's MaxDepth: how deep a value may sit,
// the job's object at 1, each value inside an array or an object one deeper
// (a scalar is a level: [[1]] is 3 deep). The value past it is refused at
// its own pointer.
const maxDepth = 66;

// maxNesting is encoding/json's limit (its scanner's maxNestingDepth):
// arrays and objects open at most this many at once. Past it Go's
// json.Valid says the text is not JSON.
const maxNesting = 10000;

// numberFault is internal/strictjson's NumberFault for a number text m (the
// match of literal) read as the double n: no double, an integer written
// without fraction or exponent beyond 2^53-1, or any number whose magnitude
// is above 2^53-1 and below 1e21 (FloatFault: canonical JSON writes such a
// double as its digits, which a reader keeping integers exactly reads as
// another number), however it is written.
function numberFault(m, n) {
  if (!Number.isFinite(n)) return 'a number beyond a double';
  const a = Math.abs(n);
  if (m[2] === undefined && m[3] === undefined && !Number.isSafeInteger(n)) return 'an integer beyond 2^53-1';
  if (a > Number.MAX_SAFE_INTEGER && a < 1e21) return 'a number beyond 2^53-1 and below 1e21';
  return '';
}

// scanStrict reads text (a JS string, from UTF-8 already checked) as one
// JSON value, refusing what JSON.parse would read silently in its own way:
// an object with two members of one name (I-JSON, RFC 7493), a \u escape of
// a lone surrogate, numbers numberFault refuses, a value deeper than
// maxDepth. As Go's strictjson.Check, a text that is not JSON is refused at
// "" even when such a fault comes first in it. It returns the value, read
// by JSON.parse once the text passed.
function scanStrict(text) {
  try {
    return scan(text, false);
  } catch (err) {
    if (err instanceof JSONFault && !err.syntax) {
      try {
        scan(text, true);
      } catch (e) {
        if (e instanceof JSONFault && e.syntax) throw new JSONFault('not JSON', '', true);
        throw e;
      }
    }
    throw err;
  }
}

// scan is scanStrict's reading; lax checks only that the text is JSON as
// Go's json.Valid reads it (no more than maxNesting arrays and objects open
// at once).
function scan(text, lax) {
  let i = 0;
  const at = (path) => path.map((t) => '/' + escapePointer(t)).join('');
  // A fault without a path is one of syntax; syntax faults at a path (a
  // control character, a bad escape) are marked so by fault.
  const fail = (msg, path) => { throw new JSONFault(msg, path === undefined ? '' : at(path), path === undefined); };
  const syntaxAt = (msg, path) => { throw new JSONFault(msg, at(path), true); };
  const strict = (msg, path) => { if (!lax) fail(msg, path); };
  const ws = () => { while (i < text.length && ' \t\n\r'.includes(text[i])) i++; };
  const str = (path) => {
    if (text[i] !== '"') fail('a string expected');
    let out = '';
    i++;
    for (;;) {
      if (i >= text.length) fail('unterminated string');
      const c = text.charCodeAt(i);
      if (c === 0x22) { i++; break; }
      if (c < 0x20) syntaxAt('a control character in a string', path || []);
      if (c !== 0x5c) { out += text[i++]; continue; }
      const e = text[i + 1];
      const simple = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' }[e];
      if (simple !== undefined) { out += simple; i += 2; continue; }
      if (e !== 'u' || !/^[0-9A-Fa-f]{4}$/.test(text.slice(i + 2, i + 6))) syntaxAt('a bad escape', path || []);
      const u = parseInt(text.slice(i + 2, i + 6), 16);
      i += 6;
      if (u >= 0xdc00 && u <= 0xdfff) strict('a \\u escape of a lone low surrogate', path || []);
      if (u >= 0xd800 && u <= 0xdbff) {
        const lo = /^\\u([0-9A-Fa-f]{4})/.exec(text.slice(i, i + 6));
        const l = lo ? parseInt(lo[1], 16) : 0;
        if (!(l >= 0xdc00 && l <= 0xdfff)) { strict('a \\u escape of a lone high surrogate', path || []); out += String.fromCharCode(u); continue; }
        out += String.fromCharCode(u, l);
        i += 6;
        continue;
      }
      out += String.fromCharCode(u);
    }
    return out;
  };
  // The value at path; containers are walked with a stack of their own
  // (a job may nest deeper than the call stack).
  const scalar = (path) => {
    if (text[i] === '"') { str(path); return; }
    literal.lastIndex = i;
    const m = literal.exec(text);
    if (!m) fail('a value expected');
    i += m[0].length;
    if (m[1] !== undefined) {
      const reason = numberFault(m, Number(m[0]));
      if (reason) strict(reason, path);
    }
  };
  const stack = []; // {close, names, n, path}
  // enter starts the value at path: a scalar is read whole, a container is
  // pushed. It reports whether a container was pushed.
  const enter = (path) => {
    ws();
    if (!lax && path.length + 1 > maxDepth) fail('nests deeper than ' + maxDepth + ' levels (the job\'s object at 1)', path);
    const c = text[i];
    if (c !== '{' && c !== '[') { scalar(path); return false; }
    if (stack.length + 1 > maxNesting) fail('nests deeper than encoding/json reads');
    i++;
    stack.push({ close: c === '{' ? '}' : ']', names: c === '{' ? new Set() : null, n: 0, path });
    return true;
  };
  // member reads the next member's name (and colon) of the top object, or
  // takes the next index of the top array, and returns the member's path.
  const member = (top) => {
    if (!top.names) return [...top.path, String(top.n++)];
    ws();
    let name;
    try {
      name = str(top.path);
    } catch (err) {
      if (err instanceof JSONFault) err.pointer = at(top.path); // a bad name is its object's fault
      throw err;
    }
    if (top.names.has(name)) strict('a name appears twice in one object', [...top.path, name]);
    top.names.add(name);
    ws(); if (text[i++] !== ':') fail(': expected');
    return [...top.path, name];
  };
  const value = () => {
    if (!enter([])) return;
    let first = true;
    while (stack.length > 0) {
      const top = stack[stack.length - 1];
      ws();
      if (first && text[i] === top.close) { i++; stack.pop(); first = false; continue; }
      if (!first) {
        if (text[i] === ',') i++;
        else if (text[i] === top.close) { i++; stack.pop(); continue; }
        else fail(', or ' + top.close + ' expected');
      }
      first = enter(member(top));
    }
  };
  value(); ws();
  if (i !== text.length) fail('data after the value');
  return lax ? undefined : JSON.parse(text);
}

// parseStrict is scanStrict: the reading of a stored job's text.
const parseStrict = scanStrict;

// decodeUTF8 reads bytes that must be UTF-8 (RFC 8259 section 8.1): no
// overlong form, no encoded surrogate, nothing cut short.
function decodeUTF8(bytes) {
  return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
}

// badUTF8Pointer returns the pointer of the string that holds the first
// bytes that are not UTF-8 (of the object, for a name): the text is scanned
// with each bad sequence made a control character, which a string may not
// hold raw. It is "" when the text is not JSON but for those bytes (Go's
// json.Valid does not read UTF-8), as Go's strictjson.Check says.
function badUTF8Pointer(bytes) {
  const text = new TextDecoder('utf-8').decode(bytes);
  try {
    scan(text, true);
  } catch (err) {
    if (err instanceof JSONFault) return '';
    throw err;
  }
  let ptr = '';
  try {
    scan(text.replace(/\uFFFD/g, '\u0001'), false);
  } catch (err) {
    if (err instanceof JSONFault) ptr = err.pointer;
  }
  return ptr;
}

// maxJobBytes is mailqueue.DefaultMaxJobBytes.
const maxJobBytes = 256 << 10;

// readRaw is the producer's reading of a job given as bytes: the size
// first, then UTF-8, then the strict scan. It returns {job} or {errors}.
function readRaw(bytes) {
  if (bytes.length > maxJobBytes) return { errors: [['', 'maxJobBytes']] };
  let text;
  try {
    text = decodeUTF8(bytes);
  } catch {
    return { errors: [[badUTF8Pointer(bytes), 'json']] };
  }
  try {
    return { job: scanStrict(text) };
  } catch (err) {
    if (err instanceof JSONFault) return { errors: [[err.syntax ? '' : err.pointer, 'json']] };
    throw err;
  }
}

// ---- the schema ----------------------------------------------------------

// mailbox is the Go validator's format mailbox (validateMailbox in
// gen/jobv1, after net/mail.ParseAddress): an addr-spec, or a display name
// and an addr-spec in angle brackets; the addr-spec's local part and domain
// dot-atoms (RFC 5322 atext, and any character beyond ASCII that is not
// white space or a control character, as RFC 6531 allows: user@bücher.example
// is a mailbox), or the domain an address literal in brackets; a quoted local
// part only when what it quotes is a dot-atom itself (net/mail unquotes it);
// a display name of atoms, quoted strings and comments (not nested), with no
// '@' in it; no invisible character (format, or default
// ignorable but a variation selector: Go's unicode.Cf and
// Other_Default_Ignorable_Code_Point) in the address.
const atom = String.raw`(?:[A-Za-z0-9!#$%&'*+\-/=?^_\x60{|}~]|(?![\p{White_Space}\p{Cc}\uFFFD])[^\x00-\x7f])+`;
const dotAtom = new RegExp(`^${atom}(?:\\.${atom})*$`, 'u');
const addrLiteral = /^\[[^\x00-\x20\x7f-\x9f[\]\\<>"]+\]$/u;
const phraseWord = String.raw`(?:[^\x00-\x20\x7f()<>[\]:;@\\,"]+|"(?:[^"\\\r\n]|\\[^\r\n])*"|\((?:[^()\\\r\n]|\\[^\r\n])*\))`;
const angleForm = new RegExp(String.raw`^[ \t]*(${phraseWord}(?:[ \t]+${phraseWord})*)?[ \t]*<([^<>]*)>[ \t]*$`, 'u');
const invisible = /\p{Cf}|(?!\p{Variation_Selector})\p{Default_Ignorable_Code_Point}/u;
function addrSpecOK(a) {
  const at = a.lastIndexOf('@');
  if (at <= 0 || at === a.length - 1) return false;
  let local = a.slice(0, at);
  const domain = a.slice(at + 1);
  const quoted = /^"((?:[^"\\]|\\.)*)"$/su.exec(local);
  if (quoted) local = quoted[1].replace(/\\(.)/gsu, '$1');
  if (!dotAtom.test(local)) return false;
  if (!dotAtom.test(domain) && !addrLiteral.test(domain)) return false;
  return !invisible.test(local + '@' + domain);
}
function mailbox(s) {
  if (/[\r\n]/.test(s)) return false;
  const m = angleForm.exec(s);
  if (m) return !(m[1] || '').includes('@') && addrSpecOK(m[2]);
  return addrSpecOK(s.replace(/^[ \t]+|[ \t]+$/g, ''));
}

// dateTime is the format date-time as the Go validator (jsonschema/v6)
// reads RFC 3339 section 5.6: T and Z in either case, the offset with its
// colon, a real day of the month, a leap second only at 23:59:60 UTC.
const dateTimeRE = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:[Zz]|([+-])(\d{2}):(\d{2}))$/;
function daysIn(y, m) {
  return m === 2 ? (y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0) ? 29 : 28) : [4, 6, 9, 11].includes(m) ? 30 : 31;
}
function instantOf(s) {
  const m = dateTimeRE.exec(s);
  if (!m) return null;
  const [y, mo, d, h, mi, se] = m.slice(1, 7).map(Number);
  if (mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) || h > 23 || mi > 59 || se > 60) return null;
  let offset = 0;
  if (m[8]) {
    const oh = Number(m[9]);
    const om = Number(m[10]);
    if (oh > 23 || om > 59) return null;
    offset = (m[8] === '-' ? -1 : 1) * (oh * 60 + om);
  }
  // Seconds from the epoch, exact in a double for years 0 to 9999; a leap
  // second counts as the first second of the next minute.
  const date = new Date(0);
  date.setUTCFullYear(y, mo - 1, d);
  date.setUTCHours(0, 0, 0, 0);
  const sec = date.getTime() / 1000 + h * 3600 + mi * 60 + se - offset * 60;
  return { sec, frac: (m[7] || '').replace(/0+$/, ''), utcMinutes: ((h * 60 + mi - offset) % 1440 + 1440) % 1440, leap: se === 60 };
}
function dateTime(s) {
  const t = instantOf(s);
  return t !== null && (!t.leap || t.utcMinutes === 23 * 60 + 59);
}
function compareInstants(a, b) {
  const x = instantOf(a);
  const y = instantOf(b);
  if (!x || !y) return null;
  if (x.sec !== y.sec) return x.sec < y.sec ? -1 : 1;
  const n = Math.max(x.frac.length, y.frac.length);
  const fx = x.frac.padEnd(n, '0');
  const fy = y.frac.padEnd(n, '0');
  return fx < fy ? -1 : fx > fy ? 1 : 0;
}

// goBase64 is what Go's base64.StdEncoding.DecodeString takes (the
// schema's contentEncoding, which jsonschema/v6 asserts and ajv does not):
// the standard alphabet with its padding, CR and LF ignored.
function goBase64(s) {
  const t = s.replace(/[\r\n]/g, '');
  return t.length % 4 === 0 && /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(t);
}

// Strict, but for two rules of ajv's own that this valid 2020-12 schema
// breaks: "to" adds minItems beside a $ref to an array (strictTypes), and
// the if/then name properties their branches define (strictRequired).
const ajv = new Ajv2020({ allErrors: true, strict: true, strictRequired: false, strictTypes: false, verbose: true });
addFormats(ajv);
ajv.addFormat('mailbox', { type: 'string', validate: mailbox });
ajv.addFormat('date-time', { type: 'string', validate: dateTime });
// Annotations, and the rules the schema cannot say, applied below.
for (const keyword of ['x-enum-doc', 'x-reservedHeaders', 'x-after', 'x-maxItemsInAll']) ajv.addKeyword({ keyword });
const validate = ajv.compile(schema);

const reserved = schema.$defs.clear.properties.headers['x-reservedHeaders'];

// crossFieldErrors applies the rules of the clear shape that JSON Schema
// cannot say (docs/wire.md, "The checks every producer must add"), read from
// the schema's x-after and x-maxItemsInAll, and the contentEncoding that
// ajv does not assert, each reported as the Go validator does.
function crossFieldErrors(job) {
  const out = [];
  for (const [prop, than] of Object.entries(schema.$defs.clear['x-after'] || {})) {
    if (typeof job[prop] !== 'string' || typeof job[than] !== 'string') continue;
    const c = compareInstants(job[prop], job[than]);
    if (c !== null && c <= 0) out.push(['/' + escapePointer(prop), 'after']);
  }
  for (const r of schema.$defs.clear['x-maxItemsInAll'] || []) {
    const n = r.properties.reduce((sum, p) => sum + (Array.isArray(job[p]) ? job[p].length : 0), 0);
    if (n > r.maxItems) out.push(['/' + escapePointer(r.properties[0]), 'maxItemsInAll']);
  }
  if (Array.isArray(job.attachments)) {
    job.attachments.forEach((a, i) => {
      if (a && typeof a === 'object' && typeof a.content === 'string' && !goBase64(a.content)) out.push([`/attachments/${i}/content`, 'contentEncoding']);
    });
  }
  return out;
}
const escapePointer = (s) => s.replace(/~/g, '~0').replace(/\//g, '~1');

// goErrors keeps of ajv's errors (allErrors) those the Go validator
// reports: jsonschema/v6 stops a subschema at the first of type, const,
// enum and format that fails, in that order, whose error is then the
// subschema's only one.
const firstOnly = ['type', 'const', 'enum', 'format'];
function goErrors(errors) {
  const group = (e) => e.instancePath + ' ' + e.schemaPath.slice(0, e.schemaPath.lastIndexOf('/'));
  const winner = new Map();
  for (const e of errors) {
    const rank = firstOnly.indexOf(e.keyword);
    if (rank >= 0 && !(winner.get(group(e)) <= rank)) winner.set(group(e), rank);
  }
  return errors.filter((e) => !winner.has(group(e)) || firstOnly.indexOf(e.keyword) === winner.get(group(e)));
}

// fieldErrors validates a job and returns its errors as [pointer, rule],
// each where the Go validator puts it, sorted.
function fieldErrors(job) {
  const out = [];
  if (!validate(job)) {
    for (const e of goErrors(validate.errors)) {
      if (e.propertyName !== undefined) continue; // the cause of a propertyNames error, below
      switch (e.keyword) {
        case 'if': case 'then': case 'else': case 'allOf': case 'anyOf': case 'oneOf':
          break; // wrappers of the errors below
        case 'propertyNames':
          out.push([e.instancePath + '/' + escapePointer(e.params.propertyName), 'propertyNames']);
          break;
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
  if (job && typeof job === 'object' && !Array.isArray(job) && !('enc' in job)) out.push(...crossFieldErrors(job));
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

// asciiDomain is a domain's ASCII form as Go's mail.ASCIIDomain gives it
// (docs/wire.md, "Ids"), or null when it has none: an ASCII domain as it is
// (url.domainToASCII would refuse an A-label that does not decode, such as
// xn--zz, which Go keeps), any other through url.domainToASCII (UTS 46,
// transitional mapping off) with the two checks of Go's Lookup profile that
// Node's URL profile leaves out: STD3 rules (ASCII letters, digits and '-'
// alone; not ≠ ≮ ≯) and hyphens (no label that starts or ends with '-' or
// has "--" at its 3rd and 4th characters), both on the labels in Unicode.
// Go's Lookup also applies the Bidi rule (RFC 5893), which Node does not:
// for a domain with right-to-left characters the two can differ (١٢.example:
// Go has none, Node xn--9hbc.example), and no vector holds one.
function asciiDomain(d) {
  if (/^[\x00-\x7f]*$/.test(d)) return d;
  const a = url.domainToASCII(d);
  if (a === '') return null;
  for (const label of url.domainToUnicode(a).split('.')) {
    if (/[^a-z0-9\-\x80-\u{10ffff}]|[\u2260\u226e\u226f]/u.test(label)) return null;
    if (label.startsWith('-') || label.endsWith('-') || label.slice(2, 4) === '--') return null;
  }
  return a;
}

// domainOf is the domain of a Message-ID and the Content-IDs: from's
// domain in its ASCII form, lowercased as ASCII, or localhost.
function domainOf(from) {
  const m = /<([^<>]*)>\s*$/.exec(from);
  const addr = (m ? m[1] : from).replace(/^[ \t]+|[ \t]+$/g, '');
  if (!mailbox(from)) return 'localhost';
  const d = asciiDomain(addr.slice(addr.lastIndexOf('@') + 1));
  return d ? d.replace(/[A-Z]/g, (c) => c.toLowerCase()) : 'localhost';
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

// openBytes is open for stored bytes: the size and UTF-8 first.
function openBytes(bytes) {
  if (bytes.length > 2 * maxJobBytes) return { action: 'fail', code: 'queue.invalid_job' }; // a worker reads twice MaxJobBytes
  let text;
  try {
    text = decodeUTF8(bytes);
  } catch {
    return { action: 'fail', code: 'queue.invalid_job' };
  }
  return open(text, [], '', { namespace: 'mail', queue: '', id: 'an-id' });
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
for (const v of vectors.raw) {
  check(`raw: ${v.name}`, () => {
    const bytes = Buffer.concat(v.parts.flatMap((p) => Array(p.repeat || 1).fill(Buffer.from(p.base64, 'base64'))));
    const read = readRaw(bytes);
    const errors = read.errors || fieldErrors(read.job);
    assert.deepEqual(errors, (v.errors || []).map((e) => [e.pointer, e.rule]));
    assert.equal(errors.length === 0, v.valid);
    assert.equal(v.code || '', v.valid ? '' : 'queue.invalid_job');
    assert.deepEqual(openBytes(bytes), dropEmptyCode(v.worker));
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
