#!/usr/bin/env bash
# Webhook delivery latency under load: one webhook on a local receiver (node's http server,
# answering 204 at once), events produced at RATE a second for SECONDS, and the time from each
# event's commit to the receiver having its request, p50/p99/max, with the rate actually reached.
# SOURCE says what produces the events:
#   contacts (default): POST /api/contacts/, each storing a contact and publishing contact.created
#     in its own transaction. The commit lies between two clocks, both reported: the event's
#     created_dt, stamped before its transaction commits (so that figure also counts the wait to
#     commit), and the producer receiving the POST's 201, sent after the commit (so that figure
#     misses the answer's own trip, well under a millisecond here). Each such event is a durable
#     commit of its own, serialized by the event log's counter: the rate this reaches is the
#     database's commit rate.
#   smtp: mail over SMTP (16 connections, paced), each message durably spooled before its 250 and
#     filed into the inbox in batches, one transaction per batch publishing email.received. The
#     second clock is then the 250 (the message durable in the spool, before it is filed): the
#     latency a sender of mail sees until the agent's webhook has it.
#   benchmarks/load_webhooks.sh [BUILD_DIR] [SECONDS] [RATE] [DB_URL] [SOURCE]
# DB_URL: a mysql:// URL to run on MariaDB instead of SQLite ("" for SQLite).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
secs=${2:-10}
rate=${3:-1000}
db=${4:-}
source_kind=${5:-contacts}
work=$(mktemp -d /tmp/svc-webhooks.XXXXXX)
cleanup() {
  [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
source "$root/benchmarks/bench_lib.sh"

extra=()
[ -n "$db" ] && extra=(--set "db.url=$db")
case "$source_kind" in
  contacts) plugins=auth,identities,contacts,webhooks event=contact.created who='{"name":"Bench"}' ;;
  smtp) plugins=auth,identities,email,webhooks event=email.received
    who='{"name":"Bench","email_identifier":"sink"}'
    extra+=(--set email.domains=bench.test --set email.inbound.verify=false) ;;
  *) echo "SOURCE: contacts or smtp" >&2; exit 2 ;;
esac
bench_start_svcd --set plugins.enabled=$plugins --set webhooks.allow_private_urls=true "${extra[@]}"
bench_login
uuid=$(curl -sf -X POST "http://127.0.0.1:$port/api/identities/" -H "Authorization: Bearer $key" \
  -H 'Content-Type: application/json' -d "$who" | json uuid)
smtp=$(sed -n 's/.*SMTP listener on port \([0-9]*\).*/\1/p' "$work/svcd.log")

# The receiver runs in a node process of its own, so producing the events does not delay it.
cat >"$work/receiver.mjs" <<'JS'
import { createServer } from 'node:http';
import { writeFileSync } from 'node:fs';
const [portFile, outFile] = process.argv.slice(2);
const latencies = [];  // [microseconds after created_dt, arrival time, contact email or subject]
const server = createServer((req, res) => {
  let body = '';
  req.on('data', (c) => { body += c; });
  req.on('end', () => {
    const at = (performance.timeOrigin + performance.now()) * 1000;  // microseconds
    const event = JSON.parse(body);
    const created = event.created_dt;  // 2026-11-27T10:00:00.123456Z
    const us = Date.parse(created) * 1000 + Number(created.slice(23, 26));
    latencies.push([at - us, at, event.object.email ?? event.object.subject]);
    res.writeHead(204);
    res.end();
  });
});
server.listen(0, '127.0.0.1', () => writeFileSync(portFile, String(server.address().port)));
process.on('SIGTERM', () => { writeFileSync(outFile, JSON.stringify(latencies)); process.exit(0); });
JS
cat >"$work/producer.mjs" <<'JS'
import { writeFileSync } from 'node:fs';
import net from 'node:net';
const [port, key, identity, receiverPort, secs, rate, answersFile, eventType, smtpPort] =
  process.argv.slice(2);
const answered = {};  // contact email -> when its 201 arrived (microseconds)
const api = `http://127.0.0.1:${port}`;
const headers = { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' };
const hook = await (await fetch(`${api}/api/webhooks/`, { method: 'POST', headers,
  body: JSON.stringify({ url: `http://127.0.0.1:${receiverPort}/hook`,
    event_types: [eventType] }) })).json();
if (!hook.uuid) throw new Error(JSON.stringify(hook));
const total = Number(secs) * Number(rate);
let sent = 0, failed = 0, n = 0;
const started = performance.now();
const due = async (i) => {  // event i is due at i/rate seconds
  const wait = started + (i * 1000) / Number(rate) - performance.now();
  if (wait > 1) await new Promise((r) => setTimeout(r, wait));
};
const inFlight = new Set();
const now = () => (performance.timeOrigin + performance.now()) * 1000;  // microseconds
if (eventType === 'contact.created') {
  // Up to 16 requests in flight (more only queue on the event log's counter).
  while (n < total) {
    const i = n++;
    await due(i);
    while (inFlight.size >= 16) await Promise.race(inFlight);
    const p = fetch(`${api}/api/contacts/?identity=${identity}`, { method: 'POST', headers,
      body: JSON.stringify({ email: `bench${i}@example.com` }) })
      .then(async (r) => {
        if (r.status === 201) {
          answered[`bench${i}@example.com`] = now();
          sent++;
        } else {
          failed++;
        }
        await r.arrayBuffer();
      })
      .catch(() => { failed++; })
      .finally(() => inFlight.delete(p));
    inFlight.add(p);
  }
} else {
  // 16 SMTP connections, each sending one message at a time as its turn comes.
  const connect = () => new Promise((resolve, reject) => {
    const sock = net.connect(Number(smtpPort), '127.0.0.1');
    sock.setEncoding('latin1');
    let buffer = '';
    const lines = [], readers = [];
    sock.on('data', (d) => {
      buffer += d;
      for (let at; (at = buffer.indexOf('\r\n')) >= 0;) {
        const line = buffer.slice(0, at);
        buffer = buffer.slice(at + 2);
        if (line[3] === '-') continue;  // a reply's inner line
        const reader = readers.shift();
        if (reader) reader(line); else lines.push(line);
      }
    });
    sock.on('error', reject);
    const reply = () => (lines.length ? Promise.resolve(lines.shift())
                                      : new Promise((r) => readers.push(r)));
    const say = (text) => { sock.write(text + '\r\n'); return reply(); };
    sock.once('connect', async () => {
      await reply();
      await say('EHLO bench.example');
      resolve({ say, end: () => sock.end() });
    });
  });
  const body = 'The quick brown fox jumps over the lazy dog.\r\n'.repeat(20);
  const worker = async () => {
    const c = await connect();
    for (let i; (i = n++) < total;) {
      await due(i);
      const subject = `bench ${i}`;
      const ok = (await c.say('MAIL FROM:<load@bench.example>')).startsWith('250') &&
        (await c.say('RCPT TO:<sink@bench.test>')).startsWith('250') &&
        (await c.say('DATA')).startsWith('354') &&
        (await c.say(`From: <load@bench.example>\r\nTo: <sink@bench.test>\r\n` +
          `Subject: ${subject}\r\n\r\n${body}.`)).startsWith('250');
      if (ok) { answered[subject] = now(); sent++; } else { failed++; await c.say('RSET'); }
    }
    c.end();
  };
  await Promise.all(Array.from({ length: 16 }, worker));
}
await Promise.all(inFlight);
const took = (performance.now() - started) / 1000;
writeFileSync(answersFile, JSON.stringify(answered));
console.log(JSON.stringify({ sent, failed, took }));
JS
node "$work/receiver.mjs" "$work/receiver.port" "$work/latencies.json" &
receiver=$!
until [ -s "$work/receiver.port" ]; do
  kill -0 "$receiver" 2>/dev/null || exit 1
  sleep 0.05
done
produced=$(node "$work/producer.mjs" "$port" "$key" "$uuid" "$(cat "$work/receiver.port")" "$secs" "$rate" "$work/answers.json" "$event" "$smtp")
sent=$(echo "$produced" | json sent)
# Every event delivered (or 60 s passed): the delivered counter on /metrics says how many.
for _ in $(seq 1 1200); do
  done_count=$(curl -sf -H "Authorization: Bearer $token" "http://127.0.0.1:$admin/metrics" |
    awk '/^svc_webhooks_delivered_total/ {print int($2)}')
  [ "${done_count:-0}" -ge "$sent" ] && break
  sleep 0.05
done
kill -TERM "$receiver"
wait "$receiver" || true
python3 - "$produced" "$rate" "$work/latencies.json" "$work/answers.json" "$source_kind" <<'PY'
import json, sys
p, rate = json.loads(sys.argv[1]), int(sys.argv[2])
rows, answered = json.load(open(sys.argv[3])), json.load(open(sys.argv[4]))
def quantiles(values):
  values = sorted(values)
  q = lambda f: values[min(len(values) - 1, int(f * len(values)))] / 1000
  return "p50 %.1f ms  p99 %.1f ms  max %.1f ms" % (q(0.5), q(0.99), q(1.0))
print("events: %d in %.1f s (%.0f/s, asked %d/s; %d failed)" % (p["sent"], p["took"], p["sent"] / p["took"], rate, p["failed"]))
print("delivered: %d" % len(rows))
print("from created_dt (before the commit) to receiver: " + quantiles([r[0] for r in rows]))
after = [r[1] - answered[r[2]] for r in rows if r[2] in answered]
print(("from the POST's 201 (after the commit)" if sys.argv[5] == "contacts" else
       "from the SMTP 250 (spooled, before filing)") + " to receiver: " + quantiles(after))
sys.exit(0 if len(rows) >= p["sent"] else 1)
PY
