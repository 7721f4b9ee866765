// Outbound webhooks as a receiver meets them: every delivery checked with the `standardwebhooks`
// package (the specification's own verifier), a receiver that fails then recovers (the retries
// arrive, in order), svcd restarted mid-backoff (nothing lost), replay, secret rotation (both
// secrets verify during the grace period), automatic disabling after persistent failure with its
// `webhook.disabled` event, and two svcd processes on one MariaDB (every event delivered,
// duplicates only as at-least-once allows).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { Webhook } from 'standardwebhooks';
import { Svcd, dbKind, listenOnLoopback } from './lib.mjs';

const fast = { 'webhooks.allow_private_urls': 'true', 'webhooks.retry_base_ms': '100',
  'webhooks.poll_ms': '50' };

async function until(predicate, what, ms = 10000) {
  const deadline = Date.now() + ms;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

// A receiver: verifies every request with the secrets it is given (any may match), records it,
// and answers what `answer()` says (a status).
async function startReceiver() {
  const r = { secrets: [], requests: [], accepted: [], answer: () => 204, unverified: [] };
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      const headers = { 'webhook-id': req.headers['webhook-id'],
        'webhook-timestamp': req.headers['webhook-timestamp'],
        'webhook-signature': req.headers['webhook-signature'] };
      const verified = r.secrets.map((s) => {
        try { new Webhook(s).verify(body, headers); return true; } catch { return false; }
      });
      if (!verified.some(Boolean)) r.unverified.push({ headers, body });
      const status = r.answer(body);
      const entry = { id: headers['webhook-id'], body: JSON.parse(body), headers, verified, status };
      r.requests.push(entry);
      if (status >= 200 && status < 300) r.accepted.push(entry);
      res.writeHead(status);
      res.end();
    });
  });
  r.url = `http://127.0.0.1:${await listenOnLoopback(server)}/hook`;
  r.close = () => new Promise((done) => { server.closeAllConnections(); server.close(done); });
  return r;
}

async function setUp(settings = {}) {
  const svcd = await Svcd.start({ ...fast, ...settings });
  const key = await svcd.managementKey(`owner-${Math.random().toString(36).slice(2)}@example.com`);
  const made = await svcd.api('POST', '/api/identities/', { key, body: { name: 'Hooked' } });
  assert.equal(made.status, 201, made.text);
  return { svcd, key, identity: made.json.uuid };
}

async function createHook(svcd, key, receiver, eventTypes = ['contact.created']) {
  const r = await svcd.api('POST', '/api/webhooks/', { key,
    body: { url: receiver.url, event_types: eventTypes, description: 'test' } });
  assert.equal(r.status, 201, r.text);
  assert.match(r.json.secret, /^whsec_/);
  receiver.secrets.push(r.json.secret);
  return r.json;
}

async function contact(svcd, key, identity, n) {
  const r = await svcd.api('POST', `/api/contacts/?identity=${identity}`, { key,
    body: { email: `c${n}@example.com` } });
  assert.equal(r.status, 201, r.text);
  return r.json;
}

// The emails of the accepted deliveries, first acceptance of each event only.
function acceptedEmails(receiver) {
  const seen = new Set();
  const out = [];
  for (const a of receiver.accepted) {
    if (seen.has(a.id)) continue;
    seen.add(a.id);
    out.push(a.body.object.email);
  }
  return out;
}

test('a receiver that fails then recovers gets every event, retried, verified and in order', async () => {
  const { svcd, key, identity } = await setUp();
  const receiver = await startReceiver();
  let failures = 4;
  receiver.answer = () => (failures-- > 0 ? 503 : 200);
  try {
    const hook = await createHook(svcd, key, receiver);
    for (let i = 0; i < 5; i++) await contact(svcd, key, identity, i);
    await until(() => receiver.accepted.length >= 5, 'five deliveries');
    assert.deepEqual(acceptedEmails(receiver), ['c0', 'c1', 'c2', 'c3', 'c4'].map((c) => `${c}@example.com`));
    assert.equal(receiver.unverified.length, 0);
    // Nothing after the first event was sent while it was failing.
    assert.ok(receiver.requests.slice(0, 5).every((q) => q.body.object.email === 'c0@example.com'));
    const first = receiver.accepted[0];
    assert.equal(first.body.type, 'contact.created');
    assert.equal(first.headers['webhook-id'], first.body.id);
    assert.equal(first.body.identity, identity);
    // Recorded after the receiver answered: wait for the log to say so.
    let log;
    await until(async () => {
      log = await svcd.api('GET', `/api/webhooks/${hook.uuid}/deliveries/`, { key });
      return log.status === 200 && log.json.results.every((d) => d.state === 'delivered');
    }, 'the log to record the deliveries');
    assert.equal(log.json.count, 5);
    const oldest = log.json.results[4];
    assert.equal(oldest.state, 'delivered');
    assert.equal(oldest.attempts, 5);
    assert.equal(oldest.last_status_code, 200);
  } finally {
    await receiver.close();
    await svcd.stop();
  }
});

test('svcd restarted mid-backoff loses nothing; replay sends a delivery again', async () => {
  const { svcd, key, identity } = await setUp();
  const receiver = await startReceiver();
  receiver.answer = () => 500;
  try {
    const hook = await createHook(svcd, key, receiver);
    for (let i = 0; i < 3; i++) await contact(svcd, key, identity, i);
    await until(() => receiver.requests.length >= 2, 'failed attempts');
    await svcd.restart();
    receiver.answer = () => 204;
    await until(() => receiver.accepted.length >= 3, 'the three events after the restart');
    assert.deepEqual(acceptedEmails(receiver), ['c0@example.com', 'c1@example.com', 'c2@example.com']);
    assert.equal(receiver.unverified.length, 0);

    let log;
    await until(async () => {
      log = await svcd.api('GET', `/api/webhooks/${hook.uuid}/deliveries/`, { key });
      return log.json.results.every((d) => d.state === 'delivered');
    }, 'the log to record the deliveries');
    const newest = log.json.results[0];
    const before = receiver.accepted.length;
    const replayed = await svcd.api('POST', `/api/webhooks/${hook.uuid}/deliveries/${newest.id}/replay/`,
      { key, body: {} });
    assert.equal(replayed.status, 202, replayed.text);
    await until(() => receiver.accepted.length > before, 'the replay');
    const again = receiver.accepted.at(-1);
    assert.equal(again.id, newest.event_id);
    assert.ok(again.verified.some(Boolean));
    await until(async () => {
      const d = (await svcd.api('GET', `/api/webhooks/${hook.uuid}/deliveries/`, { key })).json.results[0];
      return d.state === 'delivered' && d.attempts === newest.attempts + 1;
    }, 'the replay recorded as an attempt');
  } finally {
    await receiver.close();
    await svcd.stop();
  }
});

test('after a rotation both secrets verify during the grace period', async () => {
  const { svcd, key, identity } = await setUp();
  const receiver = await startReceiver();
  try {
    const hook = await createHook(svcd, key, receiver);
    const old = receiver.secrets[0];
    const rotated = await svcd.api('POST', `/api/webhooks/${hook.uuid}/rotate-secret/`, { key, body: {} });
    assert.equal(rotated.status, 200, rotated.text);
    assert.notEqual(rotated.json.secret, old);
    receiver.secrets.push(rotated.json.secret);
    await contact(svcd, key, identity, 1);
    await until(() => receiver.accepted.length >= 1, 'a delivery');
    const d = receiver.accepted[0];
    assert.equal(d.headers['webhook-signature'].split(' ').length, 2);
    assert.deepEqual(d.verified, [true, true]);
    // The read never shows the secret again.
    const read = await svcd.api('GET', `/api/webhooks/${hook.uuid}/`, { key });
    assert.equal(read.json.secret, undefined);
  } finally {
    await receiver.close();
    await svcd.stop();
  }
});

test('a webhook failing for 24 hours is failed and disabled, with a webhook.disabled event', async () => {
  const { svcd, key, identity } = await setUp({ 'testing.clock': 'true' });
  const failing = await startReceiver();
  failing.answer = () => 500;
  const watcher = await startReceiver();
  try {
    const hook = await createHook(svcd, key, failing);
    await createHook(svcd, key, watcher, ['webhook.disabled']);
    await contact(svcd, key, identity, 1);
    await until(() => failing.requests.length >= 2, 'failed attempts');
    const advanced = await fetch(`${svcd.admin}/admin/clock/`, { method: 'POST',
      headers: { Authorization: `Bearer ${svcd.adminToken}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ advance_seconds: 25 * 3600 }) });
    assert.equal(advanced.status, 200);
    await until(() => watcher.accepted.length >= 1, 'the webhook.disabled event');
    const event = watcher.accepted[0].body;
    assert.equal(event.type, 'webhook.disabled');
    assert.equal(event.object.uuid, hook.uuid);
    assert.equal(event.object.enabled, false);
    assert.match(event.object.disabled_reason, /failed for 24 hours.*HTTP 500/);
    assert.equal(event.object.secret, undefined);
    const read = await svcd.api('GET', `/api/webhooks/${hook.uuid}/`, { key });
    assert.equal(read.json.enabled, false);
    let log;
    await until(async () => {
      log = await svcd.api('GET', `/api/webhooks/${hook.uuid}/deliveries/`, { key });
      return log.json.results[0].state === 'failed';
    }, 'the delivery to be failed');
    assert.equal(log.json.results[0].next_attempt_dt, null);
    const attempts = failing.requests.length;
    await new Promise((r) => setTimeout(r, 400));
    assert.equal(failing.requests.length, attempts, 'a disabled webhook is not called');
  } finally {
    await failing.close();
    await watcher.close();
    await svcd.stop();
  }
});

test('two svcd on one MariaDB deliver every event, duplicates only as at-least-once allows',
  { skip: dbKind() !== 'mariadb' && 'one svcd per SQLite database' }, async () => {
    const { svcd, key, identity } = await setUp();
    const second = await Svcd.beside(svcd, fast);
    const receiver = await startReceiver();
    try {
      await createHook(svcd, key, receiver);
      const n = 40;
      for (let i = 0; i < n; i++) await contact(i % 2 ? second : svcd, key, identity, i);
      await until(() => new Set(receiver.accepted.map((a) => a.id)).size >= n, 'every event', 20000);
      const emails = acceptedEmails(receiver);
      assert.deepEqual(emails, Array.from({ length: n }, (_, i) => `c${i}@example.com`));
      assert.equal(receiver.unverified.length, 0);
      // A delivery may be repeated only when a process stopped between sending and recording it:
      // none did here.
      assert.equal(receiver.accepted.length, n);
    } finally {
      await receiver.close();
      await second.stop();
      await svcd.stop();
    }
  });
