// svcVault: end-to-end encryption in the dashboard's pages, the vault plugin's shared script. It
// is served after libsodium.js (libsodium-wrappers-sumo, which defines `sodium`), in one script,
// so nothing runs between them.
//
// The scheme is the contract's: Argon2id(passphrase, salt, t, m KiB, p 1) gives a 32-byte seed,
// the seed an X25519 key pair (crypto_box_seed_keypair); a value is `e2e::` and the standard
// base64 of a sealed box (crypto_box_seal) to the public key; the verifier is a sealed box of
// `svc-e2e-verify`. The passphrase, the seed and the secret key stay in this page: no request
// carries them, nothing stores them (not even sessionStorage, which outlives the page and which
// every script of this origin reads), and leaving, reloading or locking the page forgets the key.
// Values are opened only when the person asks (Reveal, Edit) and sealed before anything is sent.
//
// Everything shown is built with textContent (svc.el): values are someone else's text.
var svcVault = (function () {
  'use strict';
  var PREFIX = 'e2e::';
  var VERIFY = 'svc-e2e-verify';
  // What a new vault is made with: the contract's parameters (m in KiB: 64 MiB).
  var KDF = { alg: 'argon2id', t: 3, m: 65536, p: 1 };
  var MIN_PASSPHRASE = 8;
  var ready = sodium.ready;

  function b64(bytes) { return sodium.to_base64(bytes, sodium.base64_variants.ORIGINAL); }
  function unb64(text) { return sodium.from_base64(text, sodium.base64_variants.ORIGINAL); }

  // The key pair of a passphrase. The seed is wiped before this returns.
  function derive(passphrase, salt, kdf) {
    if (!kdf || kdf.alg !== 'argon2id' || kdf.p !== 1) {
      throw new Error('This vault uses a key derivation this page cannot make (' + JSON.stringify(kdf) + ').');
    }
    var secret = sodium.from_string(passphrase), seed = null;
    try {
      seed = sodium.crypto_pwhash(32, secret, salt, kdf.t, kdf.m * 1024, sodium.crypto_pwhash_ALG_ARGON2ID13);
      return sodium.crypto_box_seed_keypair(seed);
    } finally {
      sodium.memzero(secret);
      if (seed) sodium.memzero(seed);
    }
  }

  // A sealed box in standard base64 (the verifier), and as a value (`e2e::` and that).
  function sealBox(publicKey, text) {
    return b64(sodium.crypto_box_seal(sodium.from_string(text), publicKey));
  }
  function seal(publicKey, text) { return PREFIX + sealBox(publicKey, text); }

  // @return the text a sealed box (standard base64) holds. @throws when it is not to this key.
  function openBox(pair, box) {
    try {
      return sodium.to_string(sodium.crypto_box_seal_open(unb64(box), pair.publicKey, pair.privateKey));
    } catch (e) {
      throw new Error('A value does not open with this passphrase\'s key.');
    }
  }

  // @return the text a sealed value holds. @throws when it is not one or not to this key.
  function open(pair, value) {
    if (typeof value !== 'string' || value.indexOf(PREFIX) !== 0) {
      throw new Error('A value is not sealed, though this account has end-to-end encryption.');
    }
    return openBox(pair, value.slice(PREFIX.length));
  }

  // The pair is the one the account's metadata names: its public key, and it opens the verifier.
  function matches(pair, meta) {
    if (b64(pair.publicKey) !== meta.public_key) return false;
    try { return openBox(pair, meta.verifier) === VERIFY; } catch (e) { return false; }
  }

  // Shows text in a status line: an error as an alert, anything else politely.
  function say(status, text, kind) {
    status.textContent = text;
    status.className = kind || 'muted';
    status.setAttribute('role', kind === 'error' ? 'alert' : 'status');
  }

  // Values without end-to-end encryption: the server keeps them as they are.
  var PLAIN = { sealed: false, open: function (v) { return v; }, seal: function (v) { return v; } };

  // @return a Promise of the account's metadata (GET /api/encryption/), or null when it has none.
  function metadata(svc) {
    return svc.api('/api/encryption/').catch(function (e) {
      if (e.status === 404) return null;
      throw e;
    });
  }

  // The account's vault as one page sees it. `bar` says whether values are sealed and, when they
  // are, holds the unlock form; key() is the unlocked key (PLAIN without encryption, null while
  // locked); withKey() a Promise of it, which while locked asks for the passphrase and rejects.
  function Vault(svc, meta) {
    var self = this, pair = null, onLock = [];
    this.meta = meta;
    this.sealed = !!meta;
    this.bar = svc.el('div', null, { id: 'vault-bar' });

    // Forgets the key and what was opened with it; also when the page is left, in case the
    // browser keeps the page to come back to.
    function lock() {
      if (pair) sodium.memzero(pair.privateKey);
      pair = null;
      onLock.forEach(function (f) { f(); });
      render();
    }
    window.addEventListener('pagehide', lock);

    function render() {
      var nodes = [];
      if (!self.sealed) {
        var p = svc.el('p', 'Values of this account are not end-to-end encrypted: the server can read them. ',
          { id: 'vault-state', 'class': 'note' });
        p.appendChild(svc.el('a', 'Set up end-to-end encryption', { href: svc.prefix + '/vault' }));
        nodes.push(p);
      } else if (pair) {
        var row = svc.el('div', null, { 'class': 'row' });
        row.appendChild(svc.el('p', 'Unlocked in this page: values open and are sealed here. Leaving or reloading the page locks it.',
          { id: 'vault-state', 'class': 'note' }));
        var button = svc.el('button', 'Lock', { id: 'vault-lock', type: 'button', 'class': 'small secondary' });
        button.addEventListener('click', lock);
        row.appendChild(button);
        nodes.push(row);
      } else {
        nodes.push(unlockForm());
      }
      self.bar.replaceChildren.apply(self.bar, nodes);
    }

    // No input has a name: were the handler ever missing, a submitted form would carry nothing.
    // autocomplete is off on every passphrase and value: the browser would offer to keep them as
    // this site's password, then fill the dashboard's sign-in form with them.
    function unlockForm() {
      var form = svc.el('form', null, { id: 'vault-unlock', autocomplete: 'off' });
      form.appendChild(svc.el('p', 'Values are end-to-end encrypted: unlock them here with your passphrase. It never leaves this page.',
        { id: 'vault-state', 'class': 'muted' }));
      form.appendChild(svc.el('label', 'Passphrase', { 'for': 'vault-passphrase' }));
      var input = svc.el('input', null, { id: 'vault-passphrase', type: 'password', autocomplete: 'off' });
      form.appendChild(input);
      var button = svc.el('button', 'Unlock', { type: 'submit' });
      form.appendChild(button);
      var status = svc.el('p', null, { id: 'vault-status', 'class': 'muted' });
      form.appendChild(status);
      form.addEventListener('submit', function (event) {
        event.preventDefault();
        var passphrase = input.value;
        input.value = '';
        if (!passphrase) return say(status, 'Enter the passphrase.', 'error');
        button.disabled = true;
        say(status, 'Opening the vault\u2026');
        // Let that show: the derivation holds the page for about a second.
        setTimeout(function () {
          try {
            var candidate = derive(passphrase, unb64(meta.salt), meta.kdf);
            if (matches(candidate, meta)) {
              pair = candidate;
              render();
              return;
            }
            sodium.memzero(candidate.privateKey);
            say(status, 'Wrong passphrase: it does not open this account\'s vault.', 'error');
          } catch (e) {
            say(status, e.message, 'error');
          }
          button.disabled = false;
          input.focus();
        }, 30);
      });
      self.askPassphrase = function (why) {
        say(status, why, 'error');
        input.focus();
      };
      return form;
    }

    this.key = function () {
      if (!self.sealed) return PLAIN;
      if (!pair) return null;
      return {
        sealed: true,
        open: function (v) { return v === null || v === undefined || v === '' ? v : open(pair, v); },
        seal: function (text) { return seal(pair.publicKey, text); }
      };
    };
    this.withKey = function () {
      var key = self.key();
      if (key) return Promise.resolve(key);
      self.askPassphrase('Unlock the vault first: values open only here, with your passphrase.');
      return Promise.reject(null);
    };
    // fn runs when the person locks the page: what was opened must go.
    this.onLock = function (fn) { onLock.push(fn); };
    render();
  }

  // @return a Promise of the page's Vault.
  function start(svc) {
    return ready.then(function () { return metadata(svc); }).then(function (meta) { return new Vault(svc, meta); });
  }

  // A random password drawn in the page (the server's generator would know it): 20 characters,
  // each an unbiased draw from the 94 printable ASCII characters but space.
  function generatePassword() {
    var out = '';
    for (var i = 0; i < 20; i++) out += String.fromCharCode(33 + sodium.randombytes_uniform(94));
    return out;
  }

  function copy(button, target) {
    var done = function () { button.textContent = 'Copied'; };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(target.textContent).then(done, function () { button.textContent = 'Select and copy'; });
      return;
    }
    var range = document.createRange();
    range.selectNodeContents(target);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    if (document.execCommand('copy')) done();
  }

  // An identity's records of one kind (password entries, secrets): listed by name only; each can
  // be revealed, copied and edited, and one added, opening and sealing in the page.
  // spec: {noun, one, api, attr, name: {field, label}, fields: [{field, label, secret?,
  // required?, long?, copy?, generate?}]}; `fields` are the protected ones.
  function records(svc, spec) {
    var identity = svc.params.identity, q = '?identity=' + encodeURIComponent(identity);
    var vault, list = svc.el('div', null, { id: 'vault-list' });
    var message = svc.el('p', null, { id: 'vault-message', role: 'status' });
    var editor = svc.el('div', null, { id: 'vault-editor' });
    svc.back(svc.prefix + '/identities', 'Identities');

    function note(text, kind) { say(message, text, kind); }
    function failed(e) { if (e) note(e.message, 'error'); }

    function closeOpened() {
      list.querySelectorAll('tr.vault-detail').forEach(function (r) { r.remove(); });
      editor.replaceChildren();
    }

    // A record with its protected fields opened (GET answers them sealed).
    function opened(uuid) {
      return vault.withKey().then(function (key) {
        return svc.api(spec.api + encodeURIComponent(uuid) + '/').then(function (record) {
          spec.fields.forEach(function (f) { record[f.field] = key.open(record[f.field]); });
          return record;
        });
      });
    }

    function reveal(uuid, row) {
      var shown = list.querySelector('tr.vault-detail[data-detail="' + uuid + '"]');
      if (shown) return shown.remove();
      opened(uuid).then(function (record) {
        var detail = svc.el('tr', null, { 'class': 'vault-detail', 'data-detail': uuid });
        var cell = svc.el('td', null, { colspan: '4' });
        spec.fields.forEach(function (f) {
          var value = record[f.field];
          if (value === null || value === undefined || value === '') return;
          var line = svc.el('div', null, { 'data-field': f.field });
          line.appendChild(svc.el('div', f.label, { 'class': 'muted' }));
          var text = svc.el(f.long ? 'pre' : 'div', value, { 'class': f.long ? 'body' : 'key', 'data-value': f.field });
          line.appendChild(text);
          if (f.copy) {
            var b = svc.el('button', 'Copy', { type: 'button', 'class': 'small secondary', 'data-copy-field': f.field });
            b.addEventListener('click', function () { copy(b, text); });
            line.appendChild(b);
          }
          cell.appendChild(line);
        });
        var hide = svc.el('button', 'Hide', { type: 'button', 'class': 'small secondary' });
        hide.addEventListener('click', function () { detail.remove(); });
        cell.appendChild(hide);
        detail.appendChild(cell);
        row.parentNode.insertBefore(detail, row.nextSibling);
      }).catch(failed);
    }

    // The add and edit form. values: the record opened, or {} for a new one.
    function form(values, title, send) {
      var f = svc.el('form', null, { id: 'vault-form', 'class': 'message', autocomplete: 'off' });
      f.appendChild(svc.el('h2', title));
      var inputs = {};
      [{ field: spec.name.field, label: spec.name.label, required: true }].concat(spec.fields).forEach(function (d) {
        var id = 'vault-field-' + d.field;
        f.appendChild(svc.el('label', d.label, { 'for': id }));
        var input = svc.el(d.long ? 'textarea' : 'input', null, { id: id, rows: '3' });
        if (!d.long) input.setAttribute('type', d.secret ? 'password' : 'text');
        input.setAttribute('autocomplete', 'off');
        input.value = values[d.field] || '';
        f.appendChild(input);
        if (d.generate) {
          var g = svc.el('button', 'Generate', { type: 'button', 'class': 'small secondary' });
          g.addEventListener('click', function () { input.value = generatePassword(); });
          f.appendChild(g);
        }
        inputs[d.field] = { def: d, input: input };
      });
      var row = svc.el('div', null, { 'class': 'row' });
      var save = svc.el('button', 'Save', { type: 'submit' });
      var cancel = svc.el('button', 'Cancel', { type: 'button', 'class': 'secondary' });
      cancel.addEventListener('click', function () { editor.replaceChildren(); });
      row.appendChild(save);
      row.appendChild(cancel);
      f.appendChild(row);
      f.addEventListener('submit', function (event) {
        event.preventDefault();
        var key = vault.key();
        if (!key) return vault.withKey().catch(failed);
        var body = {}, missing = [];
        Object.keys(inputs).forEach(function (name) {
          var d = inputs[name].def, value = inputs[name].input.value;
          if (d.required && !value) missing.push(d.label);
          if (name === spec.name.field) body[name] = value.trim();
          else body[name] = value === '' ? null : key.seal(value);
        });
        if (missing.length) return note(missing.join(', ') + ': required.', 'error');
        save.disabled = true;
        send(body).then(function () {
          editor.replaceChildren();
          note('Saved' + (key.sealed ? ', sealed in this page.' : '.'));
          load();
        }).catch(failed).then(function () { save.disabled = false; });
      });
      editor.replaceChildren(f);
      (values[spec.name.field] ? inputs[spec.fields[0].field] : inputs[spec.name.field]).input.focus();
    }

    function edit(uuid) {
      opened(uuid).then(function (record) {
        form(record, 'Edit ' + record[spec.name.field], function (body) {
          return svc.send('PATCH', spec.api + encodeURIComponent(uuid) + '/', body);
        });
      }).catch(failed);
    }

    function add() {
      if (!vault.key()) return vault.withKey().catch(failed);
      form({}, 'Add ' + spec.one, function (body) {
        // Empty optional fields are simply left out of a new record.
        Object.keys(body).forEach(function (k) { if (body[k] === null) delete body[k]; });
        return svc.send('POST', spec.api + q, body);
      });
    }

    function load() {
      return svc.api(spec.api + q + '&limit=200&values=false').then(function (page) {
        if (!page.results.length) {
          return list.replaceChildren(svc.el('p', 'No ' + spec.noun.toLowerCase() + ' yet.', { 'class': 'muted' }));
        }
        var rows = page.results.map(function (r) {
          var row = svc.el('tr', null);
          row.setAttribute(spec.attr, r.uuid);
          row.appendChild(svc.el('td', r[spec.name.field]));
          row.appendChild(svc.el('td', svc.when(r.updated_dt)));
          row.appendChild(svc.el('td', svc.when(r.created_dt)));
          var cell = svc.el('td'), actions = svc.el('div', null, { 'class': 'row' });
          cell.appendChild(actions);
          var show = svc.el('button', 'Reveal', { type: 'button', 'class': 'small secondary', 'data-action': 'reveal' });
          show.addEventListener('click', function () { reveal(r.uuid, row); });
          var change = svc.el('button', 'Edit', { type: 'button', 'class': 'small secondary', 'data-action': 'edit' });
          change.addEventListener('click', function () { edit(r.uuid); });
          actions.appendChild(show);
          actions.appendChild(change);
          row.appendChild(cell);
          return row;
        });
        var nodes = [svc.table([spec.name.label, 'Updated', 'Created', ''], rows)];
        if (page.count > page.results.length) {
          nodes.push(svc.el('p', 'The newest ' + page.results.length + ' of ' + page.count + ' are shown.', { 'class': 'muted' }));
        }
        list.replaceChildren.apply(list, nodes);
      }).catch(failed);
    }

    Promise.all([svc.api('/api/identities/' + encodeURIComponent(identity) + '/'), start(svc)]).then(function (got) {
      svc.title(got[0].name + ' \u00b7 ' + spec.noun);
      vault = got[1];
      vault.onLock(closeOpened);
      var adding = svc.el('button', 'Add ' + spec.one, { id: 'vault-add', type: 'button', 'class': 'secondary' });
      adding.addEventListener('click', add);
      svc.show([vault.bar, list, message, adding, editor]);
      return load();
    }).catch(svc.fail);
  }

  // Sets up end-to-end encryption: salt, key pair and verifier made here, then PUT
  // /api/encryption/. A vault that already holds values (stored before) goes through the rekey
  // lease instead, which lists them: each is sealed here to the new key and all are sent at once.
  function setUp(svc, passphrase) {
    var salt = sodium.randombytes_buf(16), pair = derive(passphrase, salt, KDF);
    var publicKey = pair.publicKey;
    sodium.memzero(pair.privateKey);
    var body = { salt: b64(salt), public_key: b64(publicKey), verifier: sealBox(publicKey, VERIFY) };
    return svc.send('PUT', '/api/encryption/', body).catch(function (e) {
      if (e.code !== 'rekey_required') throw e;
      return svc.send('POST', '/api/encryption/rekey/', {}).then(function (lease) {
        return metadata(svc).then(function (meta) {
          // The lease holds the vault now; a passphrase set meanwhile is not this page's to replace.
          if (meta) throw new Error('This account has end-to-end encryption already: reload the page.');
          var records = lease.records.map(function (r) {
            var fields = {};
            Object.keys(r.fields).forEach(function (name) {
              var v = r.fields[name];
              if (typeof v === 'string' && v.indexOf(PREFIX) === 0) {
                throw new Error('The vault holds sealed values already: reload the page.');
              }
              fields[name] = v === null ? null : seal(publicKey, v);
            });
            return { holder: r.holder, uuid: r.uuid, fields: fields };
          });
          body.rekey_token = lease.rekey_token;
          body.records = records;
          return svc.send('PUT', '/api/encryption/', body);
        }).catch(function (e2) {
          // End the lease at once rather than hold the vault until it lapses.
          var rethrow = function () { throw e2; };
          return svc.send('DELETE', '/api/encryption/rekey/').then(rethrow, rethrow);
        });
      });
    });
  }

  // The vault page: the account's end-to-end encryption, and setting it up.
  function vaultPage(svc) {
    var box = svc.el('div');
    function setUpState(meta, done) {
      var nodes = [];
      if (done) nodes.push(svc.el('p', done, { id: 'vault-status', 'class': 'note', role: 'status' }));
      nodes.push(svc.el('p', 'End-to-end encryption is set up (since ' + svc.when(meta.created_dt) + '). Passwords and secrets are sealed in your browser, or by your agents, to a key made from your passphrase: the server cannot open them, and nobody can recover them without the passphrase.',
        { id: 'vault-state' }));
      nodes.push(svc.el('p', 'Key derivation: Argon2id, ' + meta.kdf.t + ' passes, ' + Math.round(meta.kdf.m / 1024) + ' MiB.', { 'class': 'muted' }));
      if (meta.rekey) nodes.push(svc.el('p', 'A passphrase change holds the vault until ' + svc.when(meta.rekey.expires_dt) + '.', { 'class': 'muted' }));
      box.replaceChildren.apply(box, nodes);
    }
    function setUpForm() {
      var form = svc.el('form', null, { id: 'vault-setup', autocomplete: 'off' });
      form.appendChild(svc.el('p', 'End-to-end encryption is not set up: the server can read this account\'s passwords and secrets (it keeps them encrypted at rest). Set it up with a passphrase: values are then sealed in your browser, or by your agents, and only the passphrase opens them. Nobody can recover it for you. Values stored so far are sealed now too.',
        { id: 'vault-state' }));
      form.appendChild(svc.el('label', 'Passphrase', { 'for': 'vault-new-passphrase' }));
      var one = svc.el('input', null, { id: 'vault-new-passphrase', type: 'password', autocomplete: 'off' });
      form.appendChild(one);
      form.appendChild(svc.el('label', 'The passphrase again', { 'for': 'vault-new-passphrase-again' }));
      var two = svc.el('input', null, { id: 'vault-new-passphrase-again', type: 'password', autocomplete: 'off' });
      form.appendChild(two);
      var button = svc.el('button', 'Set up end-to-end encryption', { type: 'submit' });
      form.appendChild(button);
      var status = svc.el('p', null, { id: 'vault-status', 'class': 'muted' });
      form.appendChild(status);
      form.addEventListener('submit', function (event) {
        event.preventDefault();
        if (one.value !== two.value) return say(status, 'The two passphrases differ.', 'error');
        if (one.value.length < MIN_PASSPHRASE) return say(status, 'Use a passphrase of at least ' + MIN_PASSPHRASE + ' characters.', 'error');
        var passphrase = one.value;
        one.value = two.value = '';
        button.disabled = true;
        say(status, 'Setting up\u2026');
        setTimeout(function () {
          Promise.resolve().then(function () { return setUp(svc, passphrase); }).then(function (meta) {
            setUpState(meta, 'End-to-end encryption is set up. Keep your passphrase safe: it is the only way to open these values.');
          }).catch(function (e) {
            button.disabled = false;
            say(status, e.message, 'error');
          });
        }, 30);
      });
      box.replaceChildren(form);
    }
    svc.title('Vault');
    ready.then(function () { return metadata(svc); }).then(function (meta) {
      svc.show([box]);
      if (meta) setUpState(meta); else setUpForm();
    }).catch(svc.fail);
  }

  return { records: records, vaultPage: vaultPage, start: start, KDF: KDF };
})();
