// The API description as a client's tools meet it: GET /api/schema/ of an svcd with every bundled
// plugin, linted by Redocly's CLI with its recommended rules (no error, no warning), and the
// shapes it declares enforced on the wire.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Svcd } from './lib.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));

test('the description is OpenAPI 3.1 that Redocly lints clean with its recommended rules', async () => {
  const svcd = await Svcd.start();
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-openapi-'));
  try {
    const r = await svcd.api('GET', '/api/schema/');
    assert.equal(r.status, 200);
    assert.equal(r.json.openapi, '3.1.0');
    assert.equal(r.json.servers[0].url, svcd.url);
    const file = path.join(dir, 'openapi.json');
    writeFileSync(file, r.text);
    let out = '';
    try {
      out = execFileSync(path.join(here, 'node_modules/.bin/redocly'),
        ['lint', '--extends=recommended', '--format=stylish', file],
        { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, REDOCLY_TELEMETRY: 'off',
          REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' } });
    } catch (e) {
      assert.fail(`redocly lint failed:\n${e.stdout}\n${e.stderr}`);
    }
    assert.doesNotMatch(out, /warning/i, out);

    // What the description says, the server does: a declared body refuses an unknown field.
    const key = await svcd.managementKey('lint@example.com');
    const identity = (await svcd.api('POST', '/api/identities/', { key, body: { name: 'Agent' } })).json.uuid;
    const post = r.json.paths['/api/secrets'].post;
    assert.equal(post.requestBody.content['application/json'].schema.$ref, '#/components/schemas/SecretInput');
    assert.deepEqual(r.json.components.schemas.SecretInput.required, ['key', 'value']);
    const refused = await svcd.api('POST', `/api/secrets/?identity=${identity}`,
      { key, body: { key: 'K', value: 'v', subject: 'x' } });
    assert.equal(refused.status, 400, refused.text);
    assert.match(refused.json.errors.subject[0], /unknown field/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await svcd.stop();
  }
});
