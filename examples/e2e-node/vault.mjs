#!/usr/bin/env node
// An agent without svcctl: svc's end-to-end encryption with libsodium, in node.
//
//   SVC_URL=http://127.0.0.1:8080 SVC_KEY=... SVC_VAULT_PASSPHRASE_FILE=pass.txt \
//     node vault.mjs init                          # set up end-to-end encryption
//     node vault.mjs set KEY [--identity UUID]     # a secret's value from stdin, sealed here
//     node vault.mjs get KEY [--identity UUID]     # the secret's value, opened here, on stdout
//
// The scheme (the API contract's): Argon2id13 of the passphrase and the account's 16-byte salt,
// opslimit t = 3, memlimit m = 65536 KiB (64 MiB), gives a 32-byte seed; crypto_box_seed_keypair
// turns the seed into an X25519 key pair; a value is crypto_box_seal(value, public key) sent as
// "e2e::" + standard base64 with padding; the verifier is a sealed box of "svc-e2e-verify". The
// server keeps only the salt, the public key, the verifier and sealed values.
import sodiumModule from 'libsodium-wrappers-sumo';
import { readFileSync } from 'node:fs';

await sodiumModule.ready;
const sodium = sodiumModule;
const B64 = sodium.base64_variants.ORIGINAL; // standard base64, with padding
const VERIFIER_TEXT = 'svc-e2e-verify';

const fail = (message) => {
  process.stderr.write(`vault.mjs: ${message}\n`);
  process.exit(1);
};

const url = process.env.SVC_URL ?? 'http://127.0.0.1:8080';
const apiKey = process.env.SVC_KEY ?? fail('set SVC_KEY to an account key');

async function api(method, path, body) {
  const reply = await fetch(url + path, {
    method,
    headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await reply.text();
  if (!reply.ok) fail(`${method} ${path}: ${reply.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

// The passphrase: the file SVC_VAULT_PASSPHRASE_FILE names, without one final line break.
function passphrase() {
  const file = process.env.SVC_VAULT_PASSPHRASE_FILE ?? fail('set SVC_VAULT_PASSPHRASE_FILE');
  return readFileSync(file, 'utf8').replace(/\r?\n$/, '');
}

// Argon2id to the seed, the seed to the key pair; the seed is wiped at once.
function deriveKeys(pass, saltBase64, kdf) {
  const seed = sodium.crypto_pwhash(32, pass, sodium.from_base64(saltBase64, B64), kdf.t,
    kdf.m * 1024, sodium.crypto_pwhash_ALG_ARGON2ID13);
  const keys = sodium.crypto_box_seed_keypair(seed);
  sodium.memzero(seed);
  return keys;
}

const sealBox = (text, publicKey) =>
  sodium.to_base64(sodium.crypto_box_seal(sodium.from_string(text), publicKey), B64);
const seal = (text, publicKey) => 'e2e::' + sealBox(text, publicKey);
const openBox = (base64, keys) => sodium.to_string(
  sodium.crypto_box_seal_open(sodium.from_base64(base64, B64), keys.publicKey, keys.privateKey));
const open = (value, keys) => {
  if (!value.startsWith('e2e::')) return value; // stored before encryption was set up
  return openBox(value.slice('e2e::'.length), keys);
};

// The account's keys, checked: the passphrase must open the verifier, and the server's public
// key must be the one the passphrase makes (else a server could have swapped in its own).
async function unlock() {
  const m = await api('GET', '/api/encryption/');
  const keys = deriveKeys(passphrase(), m.salt, m.kdf);
  let opened = '';
  try { opened = openBox(m.verifier, keys); } catch { /* not sealed to these keys */ }
  if (opened !== VERIFIER_TEXT) fail('wrong passphrase: it does not open this account\'s vault');
  if (sodium.to_base64(keys.publicKey, B64) !== m.public_key) {
    fail('the server\'s public key is not the one this passphrase makes');
  }
  return keys;
}

async function init() {
  const kdf = { alg: 'argon2id', t: 3, m: 65536, p: 1 };
  const salt = sodium.to_base64(sodium.randombytes_buf(16), B64);
  const keys = deriveKeys(passphrase(), salt, kdf);
  await api('PUT', '/api/encryption/', {
    salt,
    public_key: sodium.to_base64(keys.publicKey, B64),
    verifier: sealBox(VERIFIER_TEXT, keys.publicKey),
    kdf,
  });
  process.stdout.write('end-to-end encryption set up\n');
}

function identityQuery(args) {
  const at = args.indexOf('--identity');
  return at >= 0 ? `&identity=${encodeURIComponent(args[at + 1])}` : '';
}

async function find(name, args) {
  const page = await api('GET', `/api/secrets/?key=${encodeURIComponent(name)}${identityQuery(args)}`);
  return page.results[0];
}

async function set(name, args) {
  const keys = await unlock();
  const value = readFileSync(0, 'utf8').replace(/\r?\n$/, '');
  const sealed = seal(value, keys.publicKey);
  const existing = await find(name, args);
  if (existing) {
    await api('PATCH', `/api/secrets/${existing.uuid}/`, { value: sealed });
  } else {
    await api('POST', `/api/secrets/?${identityQuery(args).slice(1)}`, { key: name, value: sealed });
  }
  process.stdout.write(`${existing ? 'updated' : 'created'} ${name}\n`);
}

async function get(name, args) {
  const keys = await unlock();
  const secret = (await find(name, args)) ?? fail(`no secret has the key ${name}`);
  let value;
  try { value = open(secret.value, keys); } catch { fail(`${name} does not open with this key`); }
  process.stdout.write(value + '\n');
}

const [command, name, ...rest] = process.argv.slice(2);
if (command === 'init') await init();
else if (command === 'set' && name) await set(name, rest);
else if (command === 'get' && name) await get(name, rest);
else fail('usage: vault.mjs init | set KEY [--identity UUID] | get KEY [--identity UUID]');
