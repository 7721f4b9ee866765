// svcVault: end-to-end encryption in the dashboard's pages, the vault plugin's shared script. It
// holds no cryptography itself and loads no libsodium: all of that is in its Web Worker
// (vault-worker.js, libsodium.js before it in one script), so the page compiles no WebAssembly
// and nothing secret passes through a libsodium heap of the page's.
//
// The scheme is the contract's: Argon2id(passphrase, salt, t, m KiB, p 1) gives a 32-byte seed,
// the seed an X25519 key pair (crypto_box_seed_keypair); a value is `e2e::` and the standard
// base64 of a sealed box (crypto_box_seal) to the public key; the verifier is a sealed box of
// `svc-e2e-verify`. The derivation, the key pair, opening and sealing live in a Web Worker
// (vault-worker.js): the page stays responsive while Argon2id runs, the KDF parameters the server
// gives are bounded as svcctl bounds them, and locking terminates the worker, which drops every
// copy libsodium made of the passphrase, seed, key and values. The passphrase, the seed and the
// secret key stay in this browser: no request carries them, nothing stores them (not even
// sessionStorage, which outlives the page and which every script of this origin reads), and
// leaving, reloading or locking the page forgets the key. Values are opened only when the person
// asks (Reveal, Edit) and sealed before anything is sent; before sealing, the page reads the
// account's public key again, and every write names the key it sealed to (X-Svc-E2e-Public-Key),
// so a passphrase changed elsewhere meanwhile locks the page instead of storing values nobody
// holding the new passphrase could open.
//
// Everything shown is built with textContent (svc.el): values are someone else's text.
var svcVault = (function () {
  'use strict';
  var PREFIX = 'e2e::';
  // What a new vault is made with: the contract's parameters (m in KiB: 64 MiB).
  var KDF = { alg: 'argon2id', t: 3, m: 65536, p: 1 };
  var MIN_PASSPHRASE = 8;
  var WORKER = 'vault/vault-worker.js';
  // The header naming the public key a write's values were sealed to (sdk::kSealedToHeader): the
  // server refuses them (409 e2e_key_changed) when the passphrase changed meanwhile.
  var SEALED_TO = 'X-Svc-E2e-Public-Key';
  var ready = Promise.resolve();

  // A Web Worker of vault-worker.js: derives and holds a key pair, opens and seals with it. call()
  // is a Promise of an operation's result; it rejects with an Error carrying the worker's `code`.
  // stop() terminates it: its memory, the key and every copy libsodium made in it, goes with it.
  function KeyWorker(svc) {
    var url = svc.workers && svc.workers[WORKER];
    if (!url) throw new Error('This page does not name ' + WORKER + ': it cannot unlock the vault.');
    var worker = new Worker(url), next = 0, waiting = {};
    function failAll(message) {
      Object.keys(waiting).forEach(function (id) {
        var e = new Error(message);
        e.code = 'stopped';
        waiting[id].reject(e);
      });
      waiting = {};
    }
    worker.onmessage = function (event) {
      var m = event.data, w = waiting[m.id];
      if (!w) return;
      delete waiting[m.id];
      if (m.ok) return w.resolve(m.result);
      var e = new Error(m.error);
      e.code = m.code;
      w.reject(e);
    };
    worker.onerror = function (event) {
      event.preventDefault();
      failAll('The vault\'s worker failed' + (event.message ? ': ' + event.message : '.'));
    };
    this.call = function (op, args) {
      var id = ++next, message = Object.assign({ id: id, op: op }, args || {});
      return new Promise(function (resolve, reject) {
        waiting[id] = { resolve: resolve, reject: reject };
        worker.postMessage(message);
      });
    };
    this.stop = function () {
      worker.terminate();
      failAll('The vault was locked.');
    };
  }

  // Shows text in a status line: an error as an alert, anything else politely.
  function say(status, text, kind) {
    status.textContent = text;
    status.className = kind || 'muted';
    status.setAttribute('role', kind === 'error' ? 'alert' : 'status');
  }

  // Values without end-to-end encryption: the server keeps them as they are.
  var PLAIN = {
    sealed: false, headers: {},
    open: function (values) { return Promise.resolve(values); },
    seal: function (values) { return Promise.resolve(values); }
  };

  // @return a Promise of the account's metadata (GET /api/encryption/), or null when it has none.
  function metadata(svc) {
    return svc.api('/api/encryption/').catch(function (e) {
      if (e.status === 404) return null;
      throw e;
    });
  }

  // @return whether a failed change got no answer at all (fetch rejects with a TypeError on a
  // network error; an answer, whatever its status, rejects with an Error carrying it): the server
  // may have made the change before the answer was lost.
  function noAnswer(e) { return e instanceof TypeError && e.status === undefined; }

  // The clipboard, when the page put a value there: cleared on lock if it still holds that value.
  // Where the page may not read the clipboard it clears it anyway: a password left there is worse
  // than a lost clipboard entry, and the person asked for the lock.
  var copied = null;
  function clearClipboard() {
    var value = copied;
    copied = null;
    if (value === null) return;
    if (!navigator.clipboard || !window.isSecureContext) {
      // Copied with execCommand (plain http): only a copy of nothing replaces it, and the page
      // cannot read what is there.
      var empty = function (e) { e.clipboardData.setData('text/plain', ''); e.preventDefault(); };
      document.addEventListener('copy', empty);
      try { document.execCommand('copy'); } finally { document.removeEventListener('copy', empty); }
      return;
    }
    var clear = function () { return navigator.clipboard.writeText('').catch(function () {}); };
    var mayRead = navigator.permissions && navigator.permissions.query
      ? navigator.permissions.query({ name: 'clipboard-read' }).then(function (p) { return p.state === 'granted'; }, function () { return false; })
      : Promise.resolve(false);
    mayRead.then(function (granted) {
      if (!granted) return clear();
      return navigator.clipboard.readText().then(function (now) { if (now === value) return clear(); }, clear);
    });
  }

  // The account's vault as one page sees it. `bar` says whether values are sealed and, when they
  // are, holds the unlock form; key() is the unlocked key (PLAIN without encryption, null while
  // locked); withKey() a Promise of it, which while locked asks for the passphrase and rejects.
  // A key's open(values) and seal(values) are Promises (the worker does them); its headers go
  // with every write of what it sealed.
  function Vault(svc, meta) {
    var self = this, worker = null, unlocked = null, onLock = [];
    this.meta = meta;
    this.sealed = !!meta;
    this.bar = svc.el('div', null, { id: 'vault-bar' });

    // Forgets the key and what was opened with it (the worker and its memory go), clears the
    // clipboard of what the page copied; also when the page is left, in case the browser keeps
    // the page to come back to.
    function lock(why) {
      if (worker) worker.stop();
      worker = null;
      unlocked = null;
      clearClipboard();
      onLock.forEach(function (f) { f(); });
      render();
      if (typeof why === 'string' && self.askPassphrase) self.askPassphrase(why);
    }
    this.lock = lock;
    window.addEventListener('pagehide', function () { lock(); });

    function render() {
      var nodes = [];
      if (!self.sealed) {
        var p = svc.el('p', 'Values of this account are not end-to-end encrypted: the server can read them. ',
          { id: 'vault-state', 'class': 'note' });
        p.appendChild(svc.el('a', 'Set up end-to-end encryption', { href: svc.prefix + '/vault' }));
        nodes.push(p);
      } else if (unlocked) {
        var row = svc.el('div', null, { 'class': 'row' });
        row.appendChild(svc.el('p', 'Unlocked in this page: values open and are sealed here. Leaving or reloading the page locks it.',
          { id: 'vault-state', 'class': 'note' }));
        var button = svc.el('button', 'Lock', { id: 'vault-lock', type: 'button', 'class': 'small secondary' });
        button.addEventListener('click', function () { lock(); });
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
        // The metadata is read again: the passphrase may have changed since the page loaded.
        var candidate = null;
        metadata(svc).then(function (now) {
          if (!now) throw new Error('This account has no end-to-end encryption any more: reload the page.');
          meta = self.meta = now;
          var k = now.kdf || {};
          if (k.t > KDF.t || k.m > KDF.m) {
            say(status, 'Opening the vault\u2026 Its key derivation is raised above the defaults (t ' + k.t + ', ' +
              Math.round(k.m / 1024) + ' MiB): this takes longer. The page stays usable meanwhile.');
          }
          candidate = new KeyWorker(svc);
          return candidate.call('unlock', { passphrase: passphrase, meta: now });
        }).then(function (got) {
          if (worker) worker.stop();
          worker = candidate;
          unlocked = got.public_key;
          render();
        }, function (e) {
          if (candidate) candidate.stop();
          say(status, e.message, 'error');
          button.disabled = false;
          input.focus();
        });
      });
      self.askPassphrase = function (why) {
        say(status, why, 'error');
        input.focus();
      };
      return form;
    }

    function keyOf(w, publicKey) {
      var headers = {};
      headers[SEALED_TO] = publicKey;
      return {
        sealed: true, headers: headers,
        open: function (values) { return w.call('open', { values: values }); },
        seal: function (values) { return w.call('seal', { values: values }); }
      };
    }
    this.key = function () {
      if (!self.sealed) return PLAIN;
      if (!unlocked) return null;
      return keyOf(worker, unlocked);
    };
    this.withKey = function () {
      var key = self.key();
      if (key) return Promise.resolve(key);
      self.askPassphrase('Unlock the vault first: values open only here, with your passphrase.');
      return Promise.reject(null);
    };
    // A Promise of the key to seal with, the account's metadata read again first: when the
    // passphrase was changed elsewhere (svcctl, another tab), the page locks and asks for the
    // current one rather than seal to a key nobody holding the new passphrase could open.
    this.sealingKey = function () {
      return self.withKey().then(function (key) {
        return metadata(svc).then(function (now) {
          var was = self.sealed ? unlocked : null, is = now ? now.public_key : null;
          return was === is ? key : Promise.reject(self.staleKey());
        });
      });
    };
    // The server refused what was sealed (409 e2e_key_changed), or the page saw the key change:
    // locks and says why in the unlock form. @return an Error to show elsewhere, or null when
    // the unlock form says it.
    this.staleKey = function () {
      if (!self.sealed) return new Error('End-to-end encryption was set up elsewhere: nothing was saved. Reload the page and unlock the vault.');
      lock('The vault\'s passphrase was changed elsewhere: nothing was saved. Unlock again with the current passphrase.');
      return null;
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
  // each an unbiased draw (rejection sampling over the browser's CSPRNG) from the 94 printable
  // ASCII characters but space.
  function generatePassword() {
    var out = '', byte = new Uint8Array(1);
    while (out.length < 20) {
      window.crypto.getRandomValues(byte);
      if (byte[0] < 188) out += String.fromCharCode(33 + byte[0] % 94);  // 188 = 2 * 94
    }
    return out;
  }

  function copy(button, target) {
    var done = function () { button.textContent = 'Copied'; copied = target.textContent; };
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
          return key.open(spec.fields.map(function (f) { return record[f.field]; })).then(function (values) {
            spec.fields.forEach(function (f, i) { record[f.field] = values[i]; });
            return record;
          });
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
        if (!vault.key()) return vault.withKey().catch(failed);
        var body = {}, missing = [], names = [], values = [];
        Object.keys(inputs).forEach(function (name) {
          var d = inputs[name].def, value = inputs[name].input.value;
          if (d.required && !value) missing.push(d.label);
          if (name === spec.name.field) {
            body[name] = value.trim();
          } else {
            names.push(name);
            values.push(value === '' ? null : value);
          }
        });
        if (missing.length) return note(missing.join(', ') + ': required.', 'error');
        save.disabled = true;
        var key = null;
        // The key is checked against the account's current one just before sealing; the server
        // checks it again as it stores (the header), should the passphrase change in between.
        vault.sealingKey().then(function (k) {
          key = k;
          return key.seal(values);
        }).then(function (sealed) {
          names.forEach(function (name, i) { body[name] = sealed[i]; });
          return send(body, key.headers);
        }).then(function () {
          editor.replaceChildren();
          note('Saved' + (key.sealed ? ', sealed in this page.' : '.'));
          load();
        }).catch(function (e) {
          if (e && e.code === 'e2e_key_changed') return failed(vault.staleKey());
          if (noAnswer(e)) {
            note('No answer from the server: it may have been saved. The list is read again; check it before saving again.', 'error');
            return load();
          }
          failed(e);
        }).then(function () { save.disabled = false; });
      });
      editor.replaceChildren(f);
      (values[spec.name.field] ? inputs[spec.fields[0].field] : inputs[spec.name.field]).input.focus();
    }

    function edit(uuid) {
      opened(uuid).then(function (record) {
        form(record, 'Edit ' + record[spec.name.field], function (body, headers) {
          return svc.send('PATCH', spec.api + encodeURIComponent(uuid) + '/', body, headers);
        });
      }).catch(failed);
    }

    function add() {
      if (!vault.key()) return vault.withKey().catch(failed);
      form({}, 'Add ' + spec.one, function (body, headers) {
        // Empty optional fields are simply left out of a new record.
        Object.keys(body).forEach(function (k) { if (body[k] === null) delete body[k]; });
        return svc.send('POST', spec.api + q, body, headers);
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

  // Sets up end-to-end encryption: salt, key pair and verifier made in a worker, then PUT
  // /api/encryption/ with them and the KDF parameters. A vault that already holds values (stored
  // before) goes through the rekey lease instead, which lists them: each is sealed to the new key
  // and all are sent at once. Values the server cannot decrypt (listed as null) would be deleted by
  // that: refused unless `drop` (the person ticked the box), as svcctl's --drop-undecryptable.
  // @return a Promise of the new metadata, with `recovered` set when the answer was lost and the
  // metadata read again shows the change made.
  function setUp(svc, passphrase, drop) {
    var w = new KeyWorker(svc), made = null, body = null, token = null;
    function endLease() {
      if (!token) return Promise.resolve();
      var t = token;
      token = null;
      return svc.send('DELETE', '/api/encryption/rekey/', { rekey_token: t });
    }
    function notSetUpYet() {
      return metadata(svc).then(function (meta) {
        if (meta) throw new Error('This account has end-to-end encryption already (set up elsewhere): reload the page.');
      });
    }
    function throughLease() {
      // Only for a vault without a passphrase: the lease replaces whatever change holds it.
      var places = [], values = [];
      return notSetUpYet().then(function () {
        return svc.send('POST', '/api/encryption/rekey/', {});
      }).then(function (lease) {
        token = lease.rekey_token;
        return notSetUpYet().then(function () {
          var undecryptable = 0;
          lease.records.forEach(function (r, i) {
            Object.keys(r.fields).forEach(function (name) {
              var v = r.fields[name];
              if (typeof v === 'string' && v.indexOf(PREFIX) === 0) throw new Error('The vault holds sealed values already: reload the page.');
              if (v === null) undecryptable++;
              places.push([i, name]);
              values.push(v);
            });
          });
          if (undecryptable && !drop) {
            var e = new Error(undecryptable + (undecryptable === 1 ? ' stored value does' : ' stored values do') +
              ' not decrypt on this server: setting up would delete ' + (undecryptable === 1 ? 'it' : 'them') +
              ', so nothing was changed. Check that every svcd has the same vault.master_key_file; to delete ' +
              (undecryptable === 1 ? 'it' : 'them') + ', tick the box and set up again.');
            e.undecryptable = undecryptable;
            throw e;
          }
          return w.call('seal', { values: values });
        }).then(function (sealed) {
          var records = lease.records.map(function (r) { return { holder: r.holder, uuid: r.uuid, fields: {} }; });
          places.forEach(function (p, k) { records[p[0]].fields[p[1]] = sealed[k]; });
          body.rekey_token = token;
          body.records = records;
          return svc.send('PUT', '/api/encryption/', body);
        });
      });
    }
    // After a change whose answer was lost: ending the lease is safe whatever became of it (a
    // PUT that lands after the DELETE is refused; one that landed before left no lease to end),
    // and then the metadata says whether the change was made.
    function afterLostAnswer() {
      return endLease().then(function () { return metadata(svc); }).then(function (meta) {
        if (meta && meta.public_key === made.public_key) {
          meta.recovered = true;
          return meta;
        }
        throw new Error('No answer from the server, and end-to-end encryption is not set up: nothing was changed. Try again.');
      }, function () {
        throw new Error('No answer from the server: end-to-end encryption may have been set up. Reload the page to see whether it was.');
      });
    }
    return w.call('create', { passphrase: passphrase, kdf: KDF }).then(function (m) {
      made = m;
      body = { salt: m.salt, public_key: m.public_key, verifier: m.verifier, kdf: m.kdf };
      return svc.send('PUT', '/api/encryption/', body).catch(function (e) {
        if (e.code !== 'rekey_required') throw e;
        return throughLease();
      });
    }).catch(function (e) {
      if (noAnswer(e) && made) return afterLostAnswer();
      // End the lease at once rather than hold the vault until it lapses.
      return endLease().then(function () { throw e; }, function () { throw e; });
    }).finally(function () { w.stop(); });
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
      // Shown when the server lists values it cannot decrypt: setting up would delete them.
      var dropRow = svc.el('div', null, { hidden: '' });
      var drop = svc.el('input', null, { id: 'vault-drop-undecryptable', type: 'checkbox' });
      var dropLabel = svc.el('label', null, { 'for': 'vault-drop-undecryptable' });
      dropRow.appendChild(drop);
      dropRow.appendChild(dropLabel);
      form.appendChild(dropRow);
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
        Promise.resolve().then(function () { return setUp(svc, passphrase, drop.checked); }).then(function (meta) {
          setUpState(meta, (meta.recovered ? 'The server\'s answer was lost, but the change was made: end-to-end encryption is set up. ' :
            'End-to-end encryption is set up. ') + 'Keep your passphrase safe: it is the only way to open these values.');
        }).catch(function (e) {
          button.disabled = false;
          if (e.undecryptable) {
            dropLabel.textContent = ' Delete the ' + e.undecryptable + ' stored ' + (e.undecryptable === 1 ? 'value' : 'values') + ' this server cannot decrypt';
            dropRow.removeAttribute('hidden');
          }
          say(status, e.message, 'error');
        });
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
