// A Twilio-compatible server on loopback, for svcd's sms tests (see README.md).
//
// It serves, in memory, the REST resources the twilio provider calls (AvailablePhoneNumbers,
// IncomingPhoneNumbers, Messages) behind HTTP Basic auth, records every REST request, can fail or
// hang the next one, and acts as Twilio toward svcd: it POSTs inbound SMS, status callbacks and
// incoming calls to the webhooks a number was given, signed by the official `twilio` package.
//
// Usage: node server.mjs [--account-sid AC...] [--auth-token TOKEN] [--host 127.0.0.1]
// It listens on a free port and prints that port alone on its first line of stdout.
import http from 'node:http';
import crypto from 'node:crypto';
import twilio from 'twilio';

function option(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}

const ACCOUNT_SID = option('account-sid', process.env.TWILIO_ACCOUNT_SID || 'AC00000000000000000000000000000001');
const AUTH_TOKEN = option('auth-token', process.env.TWILIO_AUTH_TOKEN || 'test-auth-token');
const HOST = option('host', '127.0.0.1');
const API = `/2010-04-01/Accounts/${ACCOUNT_SID}`;
const HANG_MS = 120_000;

// Numbers to buy, per country: fictional ranges (NANP 555-01xx, Ofcom's drama range).
const DEFAULT_AVAILABLE = {
  US: ['+12025550101', '+12025550102', '+12025550103', '+12025550104', '+12025550105'],
  GB: ['+447700900101', '+447700900102', '+447700900103'],
};

let state;
function reset() {
  state = {
    available: structuredClone(DEFAULT_AVAILABLE),
    incoming: new Map(), // sid → number resource
    messages: new Map(), // sid → message resource
    requests: [], // every REST request, in order
    failures: [], // [{match, status, code, message}] for the next matching calls
    hangs: [], // [{match}] for the next matching calls
    hung: new Set(), // responses held open
    early: [], // [{status, ...}]: status callbacks to send before answering the next messages
    webhooks: [], // every webhook sent to svcd, with its answer
  };
}
reset();

function sid(prefix) {
  return prefix + crypto.randomBytes(16).toString('hex');
}

function send(res, status, body, type = 'application/json') {
  const text = body === undefined ? '' : type === 'application/json' ? JSON.stringify(body) : body;
  res.writeHead(status, { 'Content-Type': type, 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

// Twilio's error shape.
function twilioError(res, status, code, message) {
  send(res, status, { code, message, more_info: `https://www.twilio.com/docs/errors/${code}`, status });
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function formObject(text) {
  const out = {};
  for (const [k, v] of new URLSearchParams(text)) {
    if (k in out) out[k] = [].concat(out[k], v);
    else out[k] = v;
  }
  return out;
}

function basicAuth(req) {
  const m = /^Basic (.+)$/i.exec(req.headers.authorization || '');
  if (!m) return null;
  const decoded = Buffer.from(m[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon < 0 ? null : { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

function takeFirst(list, path) {
  const i = list.findIndex((f) => !f.match || path.includes(f.match));
  return i < 0 ? null : list.splice(i, 1)[0];
}

const E164 = /^\+[1-9][0-9]{6,14}$/;

function numberResource(phone, form) {
  return {
    sid: sid('PN'),
    account_sid: ACCOUNT_SID,
    phone_number: phone,
    friendly_name: phone,
    sms_url: form.SmsUrl || '',
    sms_method: form.SmsMethod || 'POST',
    voice_url: form.VoiceUrl || '',
    voice_method: form.VoiceMethod || 'POST',
    capabilities: { voice: true, sms: true, mms: false },
    date_created: new Date().toUTCString(),
  };
}

function findNumber(phone) {
  for (const n of state.incoming.values()) if (n.phone_number === phone) return n;
  return null;
}

// The REST API: /2010-04-01/Accounts/{sid}/...
async function rest(req, res, url, body) {
  const form = formObject(body);
  const auth = basicAuth(req);
  state.requests.push({
    method: req.method,
    path: url.pathname,
    query: Object.fromEntries(url.searchParams),
    form,
    content_type: req.headers['content-type'] || '',
    auth_user: auth ? auth.user : null,
    auth_ok: !!auth && auth.user === ACCOUNT_SID && auth.password === AUTH_TOKEN,
    time: new Date().toISOString(),
  });
  if (!auth || auth.user !== ACCOUNT_SID || auth.password !== AUTH_TOKEN) {
    res.setHeader('WWW-Authenticate', 'Basic realm="Twilio API"');
    return twilioError(res, 401, 20003, 'Authenticate');
  }
  if (!url.pathname.startsWith(API + '/')) {
    return twilioError(res, 404, 20404, `The requested resource ${url.pathname} was not found`);
  }
  const hang = takeFirst(state.hangs, url.pathname);
  if (hang) {
    state.hung.add(res);
    res.on('close', () => state.hung.delete(res));
    setTimeout(() => res.destroy(), HANG_MS).unref();
    return;
  }
  const fail = takeFirst(state.failures, url.pathname);
  if (fail) return twilioError(res, fail.status, fail.code, fail.message);

  const path = url.pathname.slice(API.length);
  let m;
  if (req.method === 'GET' && (m = /^\/AvailablePhoneNumbers\/([A-Z]{2})\/Local\.json$/.exec(path))) {
    const country = m[1];
    const free = (state.available[country] || []).filter((p) => !findNumber(p));
    return send(res, 200, {
      uri: url.pathname + url.search,
      available_phone_numbers: free.map((p) => ({
        friendly_name: p, phone_number: p, iso_country: country,
        capabilities: { voice: true, SMS: true, MMS: false },
      })),
    });
  }
  if (req.method === 'POST' && path === '/IncomingPhoneNumbers.json') {
    const phone = form.PhoneNumber;
    const listed = Object.values(state.available).some((list) => list.includes(phone));
    if (!phone || !listed || findNumber(phone)) {
      return twilioError(res, 400, 21422, 'PhoneNumber requested is not available');
    }
    const number = numberResource(phone, form);
    state.incoming.set(number.sid, number);
    return send(res, 201, number);
  }
  if (req.method === 'GET' && path === '/IncomingPhoneNumbers.json') {
    return send(res, 200, { incoming_phone_numbers: [...state.incoming.values()] });
  }
  if (req.method === 'DELETE' && (m = /^\/IncomingPhoneNumbers\/(PN[0-9a-f]{32})\.json$/.exec(path))) {
    if (!state.incoming.delete(m[1])) {
      return twilioError(res, 404, 20404, `The requested resource ${url.pathname} was not found`);
    }
    return send(res, 204);
  }
  if (req.method === 'POST' && path === '/Messages.json') {
    if (!form.To || !E164.test(form.To)) {
      return twilioError(res, 400, 21211, `The 'To' number ${form.To || ''} is not a valid phone number.`);
    }
    if (!form.From || !findNumber(form.From)) {
      return twilioError(res, 400, 21606,
        'The From phone number is not a valid, SMS-capable inbound phone number or short code for your account.');
    }
    if (!form.Body) return twilioError(res, 400, 21602, 'Message body is required.');
    const message = {
      sid: sid('SM'), account_sid: ACCOUNT_SID, from: form.From, to: form.To, body: form.Body,
      status: 'queued', direction: 'outbound-api', num_segments: '1', error_code: null,
      error_message: null, status_callback: form.StatusCallback || null,
      date_created: new Date().toUTCString(),
    };
    state.messages.set(message.sid, message);
    const { status_callback: _, ...shown } = message;
    const early = state.early.shift();
    if (early && message.status_callback) {
      // Twilio's callback can overtake its own answer (which still says queued): send it first.
      await webhook(message.status_callback, statusParams(message, message.sid, early));
    }
    return send(res, 201, shown);
  }
  if (req.method === 'GET' && path === '/Messages.json') {
    return send(res, 200, { messages: [...state.messages.values()] });
  }
  return twilioError(res, 404, 20404, `The requested resource ${url.pathname} was not found`);
}

// Acts as Twilio: POSTs params to url, signed (unless signature overrides it: '' sends none).
async function webhook(url, params, signature) {
  const body = new URLSearchParams(params).toString();
  const headers = { 'Content-Type': 'application/x-www-form-urlencoded' };
  const sig = signature === undefined ? twilio.getExpectedTwilioSignature(AUTH_TOKEN, url, params) : signature;
  if (sig !== '') headers['X-Twilio-Signature'] = sig;
  const record = { url, params, body, headers };
  const answer = await deliver(record);
  state.webhooks.push({ ...record, answer });
  return answer;
}

async function deliver({ url, body, headers }) {
  try {
    const r = await fetch(url, { method: 'POST', headers, body, signal: AbortSignal.timeout(30_000) });
    return { status: r.status, content_type: r.headers.get('content-type') || '', body: await r.text() };
  } catch (e) {
    return { status: 0, error: String(e) };
  }
}

function webhookUrl(body, number, field) {
  if (body.url) return body.url;
  if (!number) return null;
  return number[field] || null;
}

// A status callback's parameters for message sid (unknown to us when message is null); updates
// the message. report: {status, error_code?, error_message?}.
function statusParams(message, messageSid, report) {
  if (message) {
    message.status = report.status;
    message.error_code = report.error_code ?? null;
    message.error_message = report.error_message ?? null;
  }
  const params = {
    SmsSid: messageSid, SmsStatus: report.status, MessageStatus: report.status,
    To: message ? message.to : '', MessageSid: messageSid, AccountSid: ACCOUNT_SID,
    From: message ? message.from : '', ApiVersion: '2010-04-01',
  };
  if (report.error_code) params.ErrorCode = String(report.error_code);
  if (report.error_message) params.ErrorMessage = report.error_message;
  return params;
}

async function control(req, res, url, text) {
  let body = {};
  if (text) {
    try {
      body = JSON.parse(text);
    } catch {
      return send(res, 400, { error: 'the body must be JSON' });
    }
  }
  const p = url.pathname;
  if (req.method === 'GET' && p === '/_test/requests') return send(res, 200, state.requests);
  if (req.method === 'DELETE' && p === '/_test/requests') {
    state.requests = [];
    return send(res, 204);
  }
  if (req.method === 'GET' && p === '/_test/webhooks') return send(res, 200, state.webhooks);
  if (req.method === 'GET' && p === '/_test/state') {
    return send(res, 200, {
      available: state.available,
      incoming_phone_numbers: [...state.incoming.values()],
      messages: [...state.messages.values()],
    });
  }
  if (req.method !== 'POST') return send(res, 404, { error: 'no such test endpoint' });
  switch (p) {
    case '/_test/reset':
      for (const r of state.hung) r.destroy();
      reset();
      return send(res, 204);
    case '/_test/fail':
      state.failures.push({
        match: body.match || '',
        status: body.status || 400,
        code: body.code || 21211,
        message: body.message || 'The request was refused (a failure asked for by the test).',
      });
      return send(res, 204);
    case '/_test/hang':
      state.hangs.push({ match: body.match || '' });
      return send(res, 204);
    case '/_test/early_status':
      if (!body.status) return send(res, 400, { error: 'status is required' });
      state.early.push(body);
      return send(res, 204);
    case '/_test/available':
      if (!/^[A-Z]{2}$/.test(body.country || '') || !Array.isArray(body.numbers)) {
        return send(res, 400, { error: 'country (ISO alpha-2) and numbers (a list) are required' });
      }
      state.available[body.country] = body.numbers;
      return send(res, 204);
    case '/_test/own': {
      // A number the operator set up in Twilio's console (the pool provider's numbers).
      if (!E164.test(body.phone_number || '')) return send(res, 400, { error: 'phone_number (E.164) is required' });
      const number = numberResource(body.phone_number, { SmsUrl: body.sms_url, VoiceUrl: body.voice_url });
      state.incoming.set(number.sid, number);
      return send(res, 201, number);
    }
    case '/_test/inbound': {
      const to = body.to || '';
      const target = webhookUrl(body, findNumber(to), 'sms_url');
      if (!target) return send(res, 404, { error: `no SmsUrl for ${to}` });
      const messageSid = sid('SM');
      const params = {
        ToCountry: 'US', ToState: '', SmsMessageSid: messageSid, NumMedia: '0', ToCity: '',
        FromZip: '', SmsSid: messageSid, FromState: '', SmsStatus: 'received', FromCity: '',
        Body: body.body ?? '', FromCountry: 'US', To: to, ToZip: '', NumSegments: '1',
        MessageSid: messageSid, AccountSid: ACCOUNT_SID, From: body.from || '', ApiVersion: '2010-04-01',
      };
      const answer = await webhook(target, params, body.signature);
      return send(res, 200, { ...answer, message_sid: messageSid, url: target });
    }
    case '/_test/status': {
      const message = state.messages.get(body.sid || '');
      const target = body.url || (message && message.status_callback);
      if (!target) return send(res, 404, { error: `no StatusCallback for message ${body.sid}` });
      if (!body.status) return send(res, 400, { error: 'status is required' });
      const answer = await webhook(target, statusParams(message, body.sid, body), body.signature);
      return send(res, 200, { ...answer, url: target });
    }
    case '/_test/call': {
      const to = body.to || '';
      const target = webhookUrl(body, findNumber(to), 'voice_url');
      if (!target) return send(res, 404, { error: `no VoiceUrl for ${to}` });
      const callSid = sid('CA');
      const params = {
        AccountSid: ACCOUNT_SID, ApiVersion: '2010-04-01', CallSid: callSid, CallStatus: 'ringing',
        Called: to, Caller: body.from || '', Direction: 'inbound', From: body.from || '', To: to,
      };
      const answer = await webhook(target, params, body.signature);
      return send(res, 200, { ...answer, call_sid: callSid, url: target });
    }
    case '/_test/replay': {
      // The last webhook sent again, byte for byte: svcd must refuse it.
      const last = state.webhooks[state.webhooks.length - 1];
      if (!last) return send(res, 404, { error: 'no webhook was sent yet' });
      const answer = await deliver(last);
      state.webhooks.push({ ...last, answer, replay: true });
      return send(res, 200, { ...answer, url: last.url });
    }
    default:
      return send(res, 404, { error: 'no such test endpoint' });
  }
}

const server = http.createServer(async (req, res) => {
  try {
    const url = new URL(req.url, `http://${req.headers.host || HOST}`);
    const body = await readBody(req);
    if (url.pathname.startsWith('/_test/')) await control(req, res, url, body);
    else await rest(req, res, url, body);
  } catch (e) {
    if (!res.headersSent) send(res, 500, { error: String(e) });
  }
});

server.listen(0, HOST, () => {
  process.stdout.write(`${server.address().port}\n`);
});

function stop() {
  for (const r of state.hung) r.destroy();
  server.close(() => process.exit(0));
  setTimeout(() => process.exit(0), 1000).unref();
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
