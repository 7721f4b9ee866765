// The Model Context Protocol server at /mcp, as an agent's MCP client meets it: the official
// TypeScript SDK's client over the Streamable HTTP transport, authenticated with svc keys,
// listing tools made from the route declarations and calling them against a real svcd.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Svcd } from './lib.mjs';

async function connect(svcd, key) {
  const client = new Client({ name: 'svc-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${svcd.url}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${key}` } },
  });
  await client.connect(transport);
  return client;
}

const json = (result) => JSON.parse(result.content[0].text);

test('tools come from the declarations and act with the caller\'s key, fenced like REST', async () => {
  const svcd = await Svcd.start();
  try {
    const key = await svcd.managementKey('mcp@example.com');
    const client = await connect(svcd, key);
    assert.equal(client.getServerVersion().name, 'svc');
    const { tools } = await client.listTools();
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    const doc = (await svcd.api('GET', '/api/schema/')).json;
    // Every described route of a plugin is a tool named by its operationId, with the route's
    // body as the tool's `body`.
    for (const [p, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        if (op.tags[0] === 'kernel' || op.security.length === 0) continue;
        assert.ok(byName[op.operationId], `no tool ${op.operationId} for ${method} ${p}`);
      }
    }
    for (const name of ['post_identities', 'get_identities', 'get_email_messages_wait',
      'get_messages_wait', 'post_messages_send', 'post_contacts', 'get_secrets', 'post_secrets']) {
      assert.ok(byName[name], `missing tool ${name}`);
    }
    assert.equal(byName.post_secrets.inputSchema.properties.body.required.join(), 'key,value');
    assert.equal(byName.get_identities.annotations.readOnlyHint, true);

    const created = await client.callTool({ name: 'post_identities', arguments: { body: { name: 'Agent A' } } });
    assert.equal(created.isError, false, created.content[0].text);
    const a = json(created).uuid;
    const b = json(await client.callTool({ name: 'post_identities', arguments: { body: { name: 'Agent B' } } })).uuid;
    const secret = await client.callTool({ name: 'post_secrets',
      arguments: { identity: a, body: { key: 'API_TOKEN', value: 'tok-a' } } });
    assert.equal(secret.isError, false, secret.content[0].text);
    assert.equal(secret.structuredContent.key, 'API_TOKEN');
    // A refusal reaches the model as a tool error naming what to fix.
    const refused = await client.callTool({ name: 'post_secrets',
      arguments: { identity: a, body: { key: 'API_TOKEN', value: 'x', colour: 'red' } } });
    assert.equal(refused.isError, true);
    assert.match(refused.content[0].text, /colour/);
    const wrong = await client.callTool({ name: 'get_identities',
      arguments: { colour: 'red', size: 2 } });
    assert.equal(wrong.isError, true);
    assert.match(wrong.content[0].text, /`colour`, `size`/);

    // An identity key sees its own identity's data through the tools, never another's.
    const idKey = (await svcd.api('POST', '/api/auth/keys/identity/', { key, body: { identity: b } })).json.key;
    const agentB = await connect(svcd, idKey);
    const mine = await agentB.callTool({ name: 'get_secrets', arguments: {} });
    assert.equal(json(mine).count, 0);
    const theirs = await agentB.callTool({ name: 'get_secrets', arguments: { identity: a } });
    assert.equal(theirs.isError, true);
    assert.equal(json(theirs).code, 'permission_denied');
    const one = await agentB.callTool({ name: 'get_secrets_by_uuid', arguments: { uuid: json(secret).uuid } });
    assert.equal(json(one).code, 'not_found');
    await agentB.close();

    // Without a key there is no session at all.
    await assert.rejects(connect(svcd, 'svc_mgmt_nope'));
    await client.close();

    // A tool call is a request of its route: counted in its metrics and access log.
    const metrics = await (await fetch(`${svcd.admin}/metrics`,
      { headers: { Authorization: `Bearer ${svcd.adminToken}` } })).text();
    assert.match(metrics, /svc_http_requests_total\{method="POST",route="\/api\/secrets\/",status="(201|2xx)"\} [1-9]/);
    // The access log reaches svcd's output a moment later than the answer: look for a while.
    for (let i = 0; i < 300 && !/POST \/api\/secrets\/ 201/.test(svcd.log); i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.match(svcd.log, /POST \/api\/secrets\/ 201/);
  } finally {
    await svcd.stop();
  }
});

// What is not a well-formed JSON-RPC request is answered in JSON-RPC's shape, never the REST
// API's, and never with a server error.
test('malformed messages get JSON-RPC errors', async () => {
  const svcd = await Svcd.start();
  try {
    const key = await svcd.managementKey('rpc@example.com');
    const post = async (body, type = 'application/json') => {
      const r = await fetch(`${svcd.url}/mcp`, { method: 'POST', body,
        headers: { Authorization: `Bearer ${key}`, 'Content-Type': type, Accept: 'application/json, text/event-stream' } });
      return { status: r.status, json: await r.json() };
    };
    const cases = [
      ['{"jsonrpc": null, "id": 1, "method": "ping"}', -32600, 1],
      ['{"jsonrpc": "2.0", "id": 2, "method": null}', -32600, 2],
      ['{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}', -32600, null],
      ['[{"jsonrpc": "2.0", "id": 3, "method": "ping"}]', -32600, null],
      ['{"jsonrpc": "2.0", "id": 4, "method": "ping"', -32700, null],
    ];
    for (const [body, code, id] of cases) {
      const r = await post(body);
      assert.equal(r.status, 400, body);
      assert.equal(r.json.jsonrpc, '2.0', body);
      assert.equal(r.json.error.code, code, body);
      assert.equal(r.json.id, id, body);
    }
    const wrongType = await post('{"jsonrpc": "2.0", "id": 5, "method": "ping"}', 'text/plain');
    assert.equal(wrongType.status, 415);
    assert.equal(wrongType.json.error.code, -32600);
    const ok = await post('{"jsonrpc": "2.0", "id": 6, "method": "ping"}');
    assert.deepEqual(ok, { status: 200, json: { jsonrpc: '2.0', id: 6, result: {} } });
  } finally {
    await svcd.stop();
  }
});

test('a wait tool holds the call until the SMS with the code arrives', async () => {
  const svcd = await Svcd.start();
  try {
    const key = await svcd.managementKey('wait@example.com');
    const client = await connect(svcd, key);
    const made = json(await client.callTool({ name: 'post_identities',
      arguments: { body: { name: 'Waiter', provision_phone: true } } }));
    const waiting = client.callTool({ name: 'get_messages_wait',
      arguments: { identity: made.uuid, timeout: 20 } }, undefined, { timeout: 30000 });
    // Held before the SMS comes (else it would find it already there): the hub's gauge says so.
    const held = async () => {
      const metrics = await (await fetch(`${svcd.admin}/metrics`,
        { headers: { Authorization: `Bearer ${svcd.adminToken}` } })).text();
      return Number((/^svc_held_responses_open (\S+)$/m.exec(metrics) ?? [])[1] ?? 0);
    };
    for (const deadline = Date.now() + 30000; (await held()) < 1;) {
      assert.ok(Date.now() < deadline, 'the wait was never held');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    svcd.svcctl(['sms', 'inject', '--to', made.phone.number, '--from', '+15005550006',
      'Your code is 246 810']);
    const got = await waiting;
    assert.equal(got.isError, false, got.content[0].text);
    assert.equal(json(got).extracted_code, '246810');
    const none = await client.callTool({ name: 'get_messages_wait',
      arguments: { identity: made.uuid, timeout: 1 } });
    assert.equal(none.content[0].text,
      'Nothing arrived within the timeout (204). Call again to keep waiting.');
    await client.close();
  } finally {
    await svcd.stop();
  }
});
