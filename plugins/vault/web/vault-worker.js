// The vault's Web Worker: it derives the account's key from the passphrase and holds the key pair,
// so the slow Argon2id never holds the page, and the secret key never enters the page's memory.
// It is served after libsodium.js in one script (`vault/vault-worker.js`), under a policy of its
// own that lets it compile WebAssembly and fetch nothing: what it holds has no way out but the
// page that started it. Locking the page terminates it, which drops its whole heap: the
// passphrase, the seed, the key pair and every value it opened or sealed, whatever copies
// libsodium made of them.
//
// Messages: {id, op, ...} in, {id, ok: true, result} or {id, ok: false, error, code} out.
//   unlock {passphrase, meta}   derive with meta's salt and kdf; keep the pair when it opens the
//                               verifier and is meta's public key (else code `wrong`)
//   create {passphrase, kdf}    a new salt, the pair, a verifier: {salt, public_key, verifier, kdf}
//   open {values}               each `e2e::` value opened ('' and null stay as they are)
//   seal {values}               each text sealed to the pair's public key (null stays null)
'use strict';
var PREFIX = 'e2e::';
var VERIFY = 'svc-e2e-verify';
// What this client accepts from a server, the same as svcctl (sdk/src/e2e_cli.cpp): never weaker
// than the contract's parameters, never more than the server itself allows; m is in KiB.
var BOUNDS = { t: [3, 100], m: [65536, 4194304] };
var pair = null;

function b64(bytes) { return sodium.to_base64(bytes, sodium.base64_variants.ORIGINAL); }
function unb64(text) { return sodium.from_base64(text, sodium.base64_variants.ORIGINAL); }

function refuse(code, message) {
  var e = new Error(message);
  e.code = code;
  throw e;
}

function checkKdf(kdf) {
  var ok = kdf && kdf.alg === 'argon2id' && kdf.p === 1 && Number.isInteger(kdf.t) && Number.isInteger(kdf.m) &&
    kdf.t >= BOUNDS.t[0] && kdf.t <= BOUNDS.t[1] && kdf.m >= BOUNDS.m[0] && kdf.m <= BOUNDS.m[1];
  if (!ok) {
    refuse('kdf', 'The server\'s key derivation parameters (' + JSON.stringify(kdf) + ') are outside what the contract ' +
      'allows (argon2id, t 3-100, m 65536-4194304 KiB, p 1): nothing was derived.');
  }
  // libsodium.js is 32-bit WebAssembly: its memlimit is a 32-bit number and its memory at most
  // 4 GiB in all, so m * 1024 must stay well below 2^32 (it would wrap around to a tiny limit).
  if (kdf.m * 1024 > 0x7fffffff) {
    refuse('kdf', 'This vault\'s key derivation needs ' + Math.round(kdf.m / 1024) + ' MiB, more than a browser page ' +
      'can give it: unlock it with svcctl.');
  }
}

function derive(passphrase, salt, kdf) {
  checkKdf(kdf);
  var secret = sodium.from_string(passphrase), seed = null;
  try {
    seed = sodium.crypto_pwhash(32, secret, salt, kdf.t, kdf.m * 1024, sodium.crypto_pwhash_ALG_ARGON2ID13);
    return sodium.crypto_box_seed_keypair(seed);
  } catch (e) {
    if (e.code) throw e;
    refuse('kdf', 'The key derivation failed (' + Math.round(kdf.m / 1024) + ' MiB of memory may be more than this browser gives): unlock with svcctl.');
  } finally {
    sodium.memzero(secret);
    if (seed) sodium.memzero(seed);
  }
}

function openBox(keys, box) {
  try {
    return sodium.to_string(sodium.crypto_box_seal_open(unb64(box), keys.publicKey, keys.privateKey));
  } catch (e) {
    return refuse('open', 'A value does not open with this passphrase\'s key.');
  }
}

var ops = {
  unlock: function (m) {
    var meta = m.meta, candidate = derive(m.passphrase, unb64(meta.salt), meta.kdf);
    var opens = false;
    try { opens = openBox(candidate, meta.verifier) === VERIFY; } catch (e) { opens = false; }
    if (!opens) {
      sodium.memzero(candidate.privateKey);
      refuse('wrong', 'Wrong passphrase: it does not open this account\'s vault.');
    }
    if (b64(candidate.publicKey) !== meta.public_key) {
      sodium.memzero(candidate.privateKey);
      refuse('key', 'The server\'s public key is not the one this passphrase makes: nothing is sealed to it.');
    }
    pair = candidate;
    return { public_key: meta.public_key };
  },
  create: function (m) {
    var salt = sodium.randombytes_buf(16);
    pair = derive(m.passphrase, salt, m.kdf);
    return {
      salt: b64(salt), public_key: b64(pair.publicKey),
      verifier: b64(sodium.crypto_box_seal(sodium.from_string(VERIFY), pair.publicKey)),
      kdf: m.kdf
    };
  },
  open: function (m) {
    if (!pair) refuse('locked', 'The vault is locked.');
    return m.values.map(function (v) {
      if (v === null || v === undefined || v === '') return v;
      if (typeof v !== 'string' || v.indexOf(PREFIX) !== 0) {
        refuse('unsealed', 'A value is not sealed, though this account has end-to-end encryption.');
      }
      return openBox(pair, v.slice(PREFIX.length));
    });
  },
  seal: function (m) {
    if (!pair) refuse('locked', 'The vault is locked.');
    return m.values.map(function (v) {
      return v === null || v === undefined ? v : PREFIX + b64(sodium.crypto_box_seal(sodium.from_string(v), pair.publicKey));
    });
  }
};

self.onmessage = function (event) {
  var m = event.data || {};
  sodium.ready.then(function () {
    if (!Object.prototype.hasOwnProperty.call(ops, m.op)) refuse('op', 'Unknown operation.');
    return ops[m.op](m);
  }).then(function (result) {
    self.postMessage({ id: m.id, ok: true, result: result });
  }, function (e) {
    self.postMessage({ id: m.id, ok: false, error: e.message, code: e.code || 'error' });
  });
};
