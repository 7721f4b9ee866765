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
import { Svcd, launchBrowser } from './lib.mjs';

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

test('the reference as text and as a page names every operation, from this server alone', async () => {
  const svcd = await Svcd.start();
  const browser = await launchBrowser();
  try {
    const doc = (await svcd.api('GET', '/api/schema/')).json;
    const operations = [];
    for (const [p, item] of Object.entries(doc.paths)) {
      for (const method of Object.keys(item)) operations.push(`${method.toUpperCase()} ${p}/`);
    }
    assert.ok(operations.length > 50, `only ${operations.length} operations`);

    const text = await svcd.api('GET', '/api/schema/reference.txt');
    assert.equal(text.status, 200);
    assert.match(text.headers.get('content-type'), /^text\/plain/);
    for (const op of operations) assert.ok(text.text.includes(`\n${op}\n`), `${op} missing from the text`);
    // Each operation comes with a call to copy, and the shapes and events are spelled out.
    assert.match(text.text, /example: curl -X POST "\$SVC_URL\/api\/secrets\/" -H "Authorization: Bearer \$SVC_KEY" -H 'Content-Type: application\/json' -d '\{"key":"OPENAI_API_KEY","value":"text"\}'/);
    assert.match(text.text, /\nSecretInput\n {2}key: string \(matching .*\), required\. Unique per identity/);
    for (const type of Object.keys(doc.webhooks)) assert.ok(text.text.includes(`\n${type}: `), type);

    const context = await browser.newContext();
    const page = await context.newPage();
    const elsewhere = [];
    page.on('request', (req) => { if (!req.url().startsWith(svcd.url)) elsewhere.push(req.url()); });
    const answer = await page.goto(`${svcd.url}/api/docs/`);
    assert.equal(answer.status(), 200);
    const shown = await page.$$eval('.op', (els) => els.map((e) => e.querySelector('p').textContent));
    for (const op of operations) {
      const [method, p] = op.split(' ');
      assert.ok(shown.some((s) => s.startsWith(method) && s.includes(p)), `${op} missing from the page`);
    }
    await page.click('nav a[href="#shapes"]');
    assert.equal(await page.textContent('#SecretInput'), 'SecretInput');
    assert.deepEqual(elsewhere, []);
    await context.close();
  } finally {
    await browser.close();
    await svcd.stop();
  }
});
