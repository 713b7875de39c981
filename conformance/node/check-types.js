// check-types.js type-checks the generated TypeScript declarations
// (gen/typescript/job.v1.d.ts) against the wire vectors: every valid job of
// gen/vectors/vectors.json must be assignable to StoredJob, and a job of an
// unknown kind must not be. It writes a .ts file into a temporary folder and
// runs the TypeScript compiler (devDependency typescript) with --strict.
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const root = path.resolve(__dirname, '..', '..');
const vectors = JSON.parse(fs.readFileSync(path.join(root, 'gen', 'vectors', 'vectors.json'), 'utf8'));
const decl = path.join(root, 'gen', 'typescript', 'job.v1');

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mailer-types-'));
try {
  const lines = [`import type { StoredJob } from ${JSON.stringify(decl)};`, ''];
  vectors.valid.forEach((v, i) => {
    lines.push(`// ${v.name}`);
    lines.push(`export const valid${i}: StoredJob = ${JSON.stringify(v.job)};`);
  });
  const bad = { ...vectors.valid[0].job, kind: 'sms' };
  lines.push('// @ts-expect-error: a kind the format does not know');
  lines.push(`export const unknownKind: StoredJob = ${JSON.stringify(bad)};`);
  const file = path.join(dir, 'vectors.ts');
  fs.writeFileSync(file, lines.join('\n') + '\n');
  const tsc = require.resolve('typescript/bin/tsc');
  execFileSync(process.execPath, [tsc, '--noEmit', '--strict', '--target', 'es2020', '--module', 'commonjs', '--skipLibCheck', 'false', file], { stdio: 'inherit' });
  console.log(`conformance/node: the TypeScript declarations take the ${vectors.valid.length} valid vectors and refuse an unknown kind`);
} catch (err) {
  console.error('conformance/node: the TypeScript declarations do not fit the vectors');
  process.exitCode = 1;
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
