// What the dashboard does when an OpenID Connect provider answers wrongly: a provider that can be
// told to misbehave (bad signature, wrong nonce, `alg: none`, HMAC keyed with its public key,
// another audience or issuer, an expired token) stands where the real one would. Each sign-in
// must fail with a clear page and leave no session behind; a well-behaved answer still works.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { generateKeyPairSync, createSign, createHmac, randomBytes } from 'node:crypto';
import { Svcd, listenOnLoopback } from './lib.mjs';

const b64 = (v) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');

// Listens on a port of its own choosing; issuer is known once listening resolves.
function misbehavingProvider(clientId) {
  let issuer;
  const good = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const other = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pending = new Map();  // code -> nonce
  const state = { mode: 'ok' };
  const sign = (header, claims, key) => {
    const input = `${b64(header)}.${b64(claims)}`;
    return `${input}.${createSign('RSA-SHA256').update(input).sign(key).toString('base64url')}`;
  };
  const idToken = (nonce) => {
    const now = Math.floor(Date.now() / 1000);
    const claims = { iss: issuer, aud: clientId, sub: 'mallory-1', email: 'mallory@example.org',
      email_verified: true, name: 'Mallory', iat: now, exp: now + 300, nonce };
    const header = { alg: 'RS256', kid: 'k1', typ: 'JWT' };
    switch (state.mode) {
      case 'bad-signature': return sign(header, claims, other.privateKey);
      case 'wrong-nonce': return sign(header, { ...claims, nonce: 'not-the-nonce' }, good.privateKey);
      case 'no-nonce': { const { nonce: _, ...rest } = claims; return sign(header, rest, good.privateKey); }
      case 'wrong-aud': return sign(header, { ...claims, aud: 'someone-else' }, good.privateKey);
      case 'wrong-iss': return sign(header, { ...claims, iss: 'http://evil.example' }, good.privateKey);
      case 'expired': return sign(header, { ...claims, iat: now - 7200, exp: now - 3600 }, good.privateKey);
      case 'alg-none': return `${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims)}.`;
      case 'hs256': {
        const input = `${b64({ alg: 'HS256', kid: 'k1' })}.${b64(claims)}`;
        const pem = good.publicKey.export({ type: 'spki', format: 'pem' });
        return `${input}.${createHmac('sha256', pem).update(input).digest('base64url')}`;
      }
      case 'truncated': return sign(header, claims, good.privateKey).slice(0, -20);
      default: return sign(header, claims, good.privateKey);
    }
  };
  const server = createServer((req, res) => {
    const url = new URL(req.url, issuer);
    const json = (status, body) => { res.writeHead(status, { 'Content-Type': 'application/json' }); res.end(JSON.stringify(body)); };
    if (url.pathname === '/.well-known/openid-configuration') {
      return json(200, { issuer, authorization_endpoint: `${issuer}/authorize`, token_endpoint: `${issuer}/token`,
        jwks_uri: `${issuer}/jwks` });
    }
    if (url.pathname === '/jwks') {
      return json(200, { keys: [{ ...good.publicKey.export({ format: 'jwk' }), kid: 'k1', use: 'sig', alg: 'RS256' }] });
    }
    if (url.pathname === '/authorize') {
      const code = randomBytes(8).toString('hex');
      pending.set(code, url.searchParams.get('nonce'));
      assert.equal(url.searchParams.get('code_challenge_method'), 'S256');
      const back = new URL(url.searchParams.get('redirect_uri'));
      back.searchParams.set('code', code);
      back.searchParams.set('state', url.searchParams.get('state'));
      res.writeHead(302, { Location: back.href });
      return res.end();
    }
    if (url.pathname === '/token') {
      let body = '';
      req.on('data', (c) => { body += c; });
      req.on('end', () => {
        const form = new URLSearchParams(body);
        const nonce = pending.get(form.get('code'));
        if (!nonce || !form.get('code_verifier')) return json(400, { error: 'invalid_grant' });
        pending.delete(form.get('code'));
        json(200, { access_token: 'at', token_type: 'Bearer', id_token: idToken(nonce) });
      });
      return undefined;
    }
    res.writeHead(404);
    return res.end();
  });
  const self = { state, server };
  self.listening = listenOnLoopback(server).then((port) => {
    issuer = `http://127.0.0.1:${port}`;
    self.issuer = issuer;
  });
  return self;
}

let svcd;
let provider;

before(async () => {
  provider = misbehavingProvider('svc-dashboard');
  await provider.listening;
  svcd = await Svcd.start({ 'auth.oidc.issuer': provider.issuer, 'auth.oidc.client_id': 'svc-dashboard',
    'auth.oidc.client_secret': 's3cret' });
});
after(async () => {
  await svcd?.stop();
  await new Promise((r) => provider.server.close(r));
});

// One sign-in with fetch, following redirects by hand. @return the callback's answer.
async function signIn({ withStateCookie = true } = {}) {
  const start = await fetch(`${svcd.url}/dashboard/login/oidc?next=/dashboard/keys`, { redirect: 'manual' });
  assert.equal(start.status, 303);
  const stateCookie = start.headers.getSetCookie().find((c) => c.startsWith('svc_oidc='));
  assert.ok(stateCookie);
  const atProvider = await fetch(start.headers.get('location'), { redirect: 'manual' });
  const callback = atProvider.headers.get('location');
  const headers = withStateCookie ? { Cookie: stateCookie.split(';')[0] } : {};
  const answer = await fetch(callback, { redirect: 'manual', headers });
  return { answer, text: await answer.text(), callback, headers,
    session: answer.headers.getSetCookie().find((c) => c.startsWith('svc_session=') && !c.includes('Max-Age=0')) };
}

const refusals = {
  'bad-signature': /signature is wrong/,
  'wrong-nonce': /nonce/,
  'no-nonce': /nonce/,
  'wrong-aud': /another client/,
  'wrong-iss': /another issuer/,
  expired: /expired/,
  'alg-none': /RS256/,
  hs256: /RS256/,
  truncated: /signature is wrong|malformed/,
};

for (const [mode, why] of Object.entries(refusals)) {
  test(`an ID token with ${mode} is refused`, async () => {
    provider.state.mode = mode;
    const { answer, text, session } = await signIn();
    assert.equal(answer.status, 401, text);
    assert.match(text, why);
    assert.equal(session, undefined, 'no session was started');
  });
}

test('a good answer signs in (so the refusals above are about the token)', async () => {
  provider.state.mode = 'ok';
  const { answer, session, callback, headers } = await signIn();
  assert.equal(answer.status, 303);
  assert.equal(answer.headers.get('location'), '/dashboard/keys');
  assert.ok(session);
  // The same callback again: the sign-in was used up.
  const replay = await fetch(callback, { redirect: 'manual', headers });
  assert.equal(replay.status, 400);
  assert.match(await replay.text(), /expired or was already used/);
});

test('a callback in a browser that did not start the sign-in is refused', async () => {
  provider.state.mode = 'ok';
  const { answer, text, session } = await signIn({ withStateCookie: false });
  assert.equal(answer.status, 400);
  assert.match(text, /not started in this browser/);
  assert.equal(session, undefined);
});
