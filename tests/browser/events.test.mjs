// The live event stream as agents meet it: a real EventSource client (node's `eventsource`)
// that reconnects and resumes, fences by key and identity, filters, a slow consumer cut off while
// others keep receiving, svcd restarted mid-stream, two processes on one database, bad resume
// points, and a browser's EventSource on the dashboard's session cookie.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { EventSource } from 'eventsource';
import { Svcd, launchBrowser } from './lib.mjs';

function openStream(svcd, key, query = '', headers = {}) {
  const received = [];
  const es = new EventSource(`${svcd.url}/api/events/stream/${query}`, {
    fetch: (input, init) => fetch(input, { ...init,
      headers: { ...init.headers, ...headers, ...(key ? { Authorization: `Bearer ${key}` } : {}) } }),
  });
  const types = ['identity.created', 'identity.updated', 'key.created', 'key.revoked', 'stream.truncated'];
  for (const type of types) {
    es.addEventListener(type, (e) => received.push({ type, id: e.lastEventId, data: JSON.parse(e.data) }));
  }
  const opened = new Promise((resolve, reject) => {
    es.onopen = resolve;
    es.onerror = (e) => { if (es.readyState === EventSource.CLOSED) reject(e); };
  });
  return { es, received, opened };
}

// Waits for a condition; `ms` is a deadline for a slow machine (it returns as soon as it holds).
async function until(predicate, what, ms = 30000) {
  const deadline = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function createIdentity(svcd, key, name) {
  const r = await svcd.api('POST', '/api/identities/', { key, body: { name } });
  assert.equal(r.status, 201, r.text);
  return r.json.uuid;
}

test('events arrive in order and a stream resumes after svcd restarts, nothing lost or repeated', async () => {
  const svcd = await Svcd.start();
  try {
    const key = await svcd.managementKey('ev1@example.com');
    const stream = openStream(svcd, key);
    await stream.opened;
    for (let i = 0; i < 5; i++) await createIdentity(svcd, key, `before ${i}`);
    await until(() => stream.received.length === 5, 'five events');
    assert.deepEqual(stream.received.map((e) => e.data.object.name), [0, 1, 2, 3, 4].map((i) => `before ${i}`));
    const ids = stream.received.map((e) => Number(e.id));
    assert.deepEqual(ids, [...ids].sort((a, b) => a - b), 'increasing ids');
    const first = stream.received[0].data;
    assert.equal(first.type, 'identity.created');
    assert.match(first.id, /^[0-9a-f-]{36}$/);
    assert.match(first.created_dt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    assert.equal(first.identity, first.object.uuid);

    // svcd goes away mid-stream; events happen while the client is disconnected.
    await svcd.restart(async () => {});
    for (let i = 0; i < 3; i++) await createIdentity(svcd, key, `while away ${i}`);
    await until(() => stream.received.length === 8, 'the three missed events after reconnecting', 10000);
    await createIdentity(svcd, key, 'after');
    await until(() => stream.received.length === 9, 'a live event after resuming');
    const names = stream.received.map((e) => e.data.object.name);
    assert.deepEqual(names.slice(5), ['while away 0', 'while away 1', 'while away 2', 'after']);
    assert.equal(new Set(stream.received.map((e) => e.id)).size, 9, 'nothing repeated');
    stream.es.close();
  } finally {
    await svcd.stop();
  }
});

test('keys see only what they may: identity keys their identity, other accounts nothing', async () => {
  const svcd = await Svcd.start();
  try {
    const key = await svcd.managementKey('ev2@example.com');
    const other = await svcd.managementKey('ev3@example.com');
    const a1 = await createIdentity(svcd, key, 'A1');
    const a2 = await createIdentity(svcd, key, 'A2');
    const idKey = (await svcd.api('POST', '/api/auth/keys/identity/', { key, body: { identity: a1 } })).json.key;
    const mine = openStream(svcd, idKey);
    const named = openStream(svcd, key, `?identity=${a2}`);
    const typed = openStream(svcd, key, '?types=identity.updated');
    const stranger = openStream(svcd, other);
    const all = openStream(svcd, key);
    await Promise.all([mine.opened, named.opened, typed.opened, stranger.opened, all.opened]);
    for (const [uuid, name] of [[a1, 'A1 renamed'], [a2, 'A2 renamed'], [a1, 'A1 again']]) {
      const r = await svcd.api('PATCH', `/api/identities/${uuid}/`, { key, body: { name } });
      assert.equal(r.status, 200);
    }
    await createIdentity(svcd, key, 'A3');
    await until(() => all.received.length === 4, 'four events on the account stream');
    await until(() => mine.received.length >= 2, 'two events on the identity key\'s stream');
    await until(() => named.received.length >= 1, 'the event on the named identity\'s stream');
    await until(() => typed.received.length >= 3, 'three events on the typed stream');
    assert.deepEqual(mine.received.map((e) => e.data.object.name), ['A1 renamed', 'A1 again']);
    assert.deepEqual(named.received.map((e) => e.data.object.name), ['A2 renamed']);
    assert.deepEqual(typed.received.map((e) => e.type), ['identity.updated', 'identity.updated', 'identity.updated']);
    assert.equal(stranger.received.length, 0);
    // An identity key naming another identity is refused before any stream starts.
    const refused = await svcd.api('GET', `/api/events/stream/?identity=${a2}`, { key: idKey });
    assert.equal(refused.status, 403);
    for (const s of [mine, named, typed, stranger, all]) s.es.close();
  } finally {
    await svcd.stop();
  }
});

test('a slow consumer is cut off while the others keep receiving', async () => {
  const svcd = await Svcd.start({ 'server.stream_buffer_bytes': '65536' });
  try {
    const key = await svcd.managementKey('ev4@example.com');
    const fast = openStream(svcd, key);
    await fast.opened;
    // A client that asks for the stream and then never reads.
    const slow = net.connect(svcd.port, '127.0.0.1');
    await new Promise((r) => slow.once('connect', r));
    slow.write(`GET /api/events/stream/ HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n\r\n`);
    slow.pause();
    let slowClosed = false;
    slow.on('close', () => { slowClosed = true; });
    slow.on('error', () => {});
    // Socket buffers hold a few hundred KiB; enough events overflow them and then the hub's 64 KiB.
    const total = 800;
    for (let i = 0; i < total; i++) await createIdentity(svcd, key, `${'x'.repeat(90)} ${i}`);
    await until(() => fast.received.length === total, 'all events on the fast stream', 30000);
    // Drain what the kernel buffered; the server must have ended the connection.
    slow.resume();
    await until(() => slowClosed, 'the slow consumer to be disconnected', 10000);
    // The fast one never noticed: every event, in order.
    const ids = fast.received.map((e) => Number(e.id));
    assert.deepEqual(ids, [...ids].sort((x, y) => x - y));
    fast.es.close();
  } finally {
    await svcd.stop();
  }
});

test('two svcd processes on one database see each other\'s events within a second', async () => {
  const a = await Svcd.start();
  let b;
  try {
    b = await Svcd.beside(a);
    const key = await a.managementKey('ev5@example.com');
    const onB = openStream(b, key);
    await onB.opened;
    await createIdentity(a, key, 'made on A');
    // From the commit (A's answer): about a second on a quiet machine, 5 s at most on a slow one.
    const committed = Date.now();
    await until(() => onB.received.length === 1, 'the event on B');
    assert.ok(Date.now() - committed < 5000, `took ${Date.now() - committed} ms`);
    assert.equal(onB.received[0].data.object.name, 'made on A');
    onB.es.close();
  } finally {
    await b?.stop();
    await a.stop();
  }
});

test('bad resume points: garbage, from the future, and older than the log keeps', async () => {
  const svcd = await Svcd.start({ 'testing.clock': 'true', 'events.retention_days': '1' });
  try {
    const key = await svcd.managementKey('ev6@example.com');
    for (const bad of ['abc', '-1', '1.5', '99999999999999999999']) {
      const r = await svcd.api('GET', '/api/events/stream/', { key, headers: { 'Last-Event-ID': bad } });
      assert.equal(r.status, 400, bad);
      assert.equal(r.json.code, 'invalid');
    }
    const unknownType = await svcd.api('GET', '/api/events/stream/?types=identity.created,nonsense', { key });
    assert.equal(unknownType.status, 400);

    await createIdentity(svcd, key, 'old');  // event 2 (the key was event 1)
    // Two days later the old events are pruned.
    const clock = await fetch(`${svcd.admin}/admin/clock/`, { method: 'POST',
      headers: { Authorization: `Bearer ${svcd.adminToken}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ advance_seconds: 2 * 86400 }) });
    assert.equal(clock.status, 200);
    await createIdentity(svcd, key, 'kept');
    // The event thread prunes on its own round: resume from 1 until the old events are gone
    // (before that, the resumed stream starts with `old`).
    let resumed;
    const deadline = Date.now() + 30000;
    for (;;) {
      resumed = openStream(svcd, key, '', { 'Last-Event-ID': '1' });
      await until(() => resumed.received.length >= 2, 'two events from the resume point');
      if (resumed.received[0].type === 'stream.truncated' || Date.now() > deadline) break;
      resumed.es.close();
      await new Promise((r) => setTimeout(r, 100));
    }
    await until(() => resumed.received.length === 2, 'truncation notice and the kept event');
    assert.equal(resumed.received[0].type, 'stream.truncated');
    assert.equal(resumed.received[1].data.object.name, 'kept');
    resumed.es.close();

    // A resume point from the future starts at the present: only new events follow.
    const future = openStream(svcd, key, '?last_event_id=999999');
    await future.opened;
    await createIdentity(svcd, key, 'new');
    await until(() => future.received.length === 1, 'the new event');
    assert.equal(future.received[0].data.object.name, 'new');
    future.es.close();
  } finally {
    await svcd.stop();
  }
});

test('thousands of streams opened and dropped at once leave svcd serving', async () => {
  const svcd = await Svcd.start();
  try {
    const key = await svcd.managementKey('ev7@example.com');
    const sockets = [];
    for (let i = 0; i < 1500; i++) {
      const s = net.connect(svcd.port, '127.0.0.1');
      s.on('error', () => {});
      s.write(`GET /api/events/stream/ HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n\r\n`);
      sockets.push(s);
    }
    await new Promise((r) => setTimeout(r, 500));
    for (const s of sockets) s.destroy();
    const survivor = openStream(svcd, key);
    await survivor.opened;
    await createIdentity(svcd, key, 'still here');
    await until(() => survivor.received.length === 1, 'an event after the storm');
    const health = await svcd.api('GET', '/api/health/');
    assert.equal(health.status, 200);
    await until(async () => true, 'settle');
    survivor.es.close();
  } finally {
    await svcd.stop();
  }
});

test('the dashboard\'s browser EventSource streams on the session cookie', async () => {
  const svcd = await Svcd.start({ 'auth.local_users': 'true' });
  const browser = await launchBrowser();
  try {
    const key = await svcd.managementKey('ev8@example.com');
    const page = await (await browser.newContext()).newPage();
    await page.goto(`${svcd.url}/dashboard/login`);
    await page.fill('#email', 'ev8@example.com');
    await page.fill('#password', 'correct horse battery');
    await page.click('form[action$="/login"] button[type=submit]');
    await page.waitForURL(`${svcd.url}/dashboard/`);
    await page.evaluate(() => {
      window.seen = [];
      const es = new EventSource('/api/events/stream/');
      es.addEventListener('identity.created', (e) => window.seen.push(JSON.parse(e.data).object.name));
      return new Promise((resolve) => { es.onopen = resolve; });
    });
    await createIdentity(svcd, key, 'seen by the browser');
    await page.waitForFunction(() => window.seen.length === 1);
    assert.deepEqual(await page.evaluate(() => window.seen), ['seen by the browser']);
  } finally {
    await browser.close();
    await svcd.stop();
  }
});
