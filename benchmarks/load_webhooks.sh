#!/usr/bin/env bash
# Webhook delivery latency under load: one webhook on a local receiver (node's http server,
# answering 204 at once), events produced at RATE a second for SECONDS (POST /api/contacts/, each
# storing a contact and publishing contact.created), and the time from each event's commit to the
# receiver having its request, p50/p99/max, with the rate actually reached. The commit lies between
# two clocks, both reported: the event's created_dt, stamped before its transaction commits (so
# that figure also counts the wait to commit), and the producer receiving the POST's 201, sent
# after the commit (so that figure misses the answer's own trip, well under a millisecond here).
#   benchmarks/load_webhooks.sh [BUILD_DIR] [SECONDS] [RATE] [DB_URL]
# DB_URL: a mysql:// URL to run on MariaDB instead of SQLite.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
secs=${2:-10}
rate=${3:-1000}
db=${4:-}
work=$(mktemp -d /tmp/svc-webhooks.XXXXXX)
cleanup() {
  [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
source "$root/benchmarks/bench_lib.sh"

extra=()
[ -n "$db" ] && extra=(--set "db.url=$db")
bench_start_svcd --set plugins.enabled=auth,identities,contacts,webhooks \
  --set webhooks.allow_private_urls=true "${extra[@]}"
bench_login
uuid=$(curl -sf -X POST "http://127.0.0.1:$port/api/identities/" -H "Authorization: Bearer $key" \
  -H 'Content-Type: application/json' -d '{"name":"Bench"}' | json uuid)

# The receiver runs in a node process of its own, so producing the events does not delay it.
cat >"$work/receiver.mjs" <<'JS'
import { createServer } from 'node:http';
import { writeFileSync } from 'node:fs';
const [portFile, outFile] = process.argv.slice(2);
const latencies = [];  // [microseconds after created_dt, arrival time, contact email]
const server = createServer((req, res) => {
  let body = '';
  req.on('data', (c) => { body += c; });
  req.on('end', () => {
    const at = (performance.timeOrigin + performance.now()) * 1000;  // microseconds
    const event = JSON.parse(body);
    const created = event.created_dt;  // 2026-11-27T10:00:00.123456Z
    const us = Date.parse(created) * 1000 + Number(created.slice(23, 26));
    latencies.push([at - us, at, event.object.email]);
    res.writeHead(204);
    res.end();
  });
});
server.listen(0, '127.0.0.1', () => writeFileSync(portFile, String(server.address().port)));
process.on('SIGTERM', () => { writeFileSync(outFile, JSON.stringify(latencies)); process.exit(0); });
JS
cat >"$work/producer.mjs" <<'JS'
import { writeFileSync } from 'node:fs';
const [port, key, identity, receiverPort, secs, rate, answersFile] = process.argv.slice(2);
const answered = {};  // contact email -> when its 201 arrived (microseconds)
const api = `http://127.0.0.1:${port}`;
const headers = { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' };
const hook = await (await fetch(`${api}/api/webhooks/`, { method: 'POST', headers,
  body: JSON.stringify({ url: `http://127.0.0.1:${receiverPort}/hook`,
    event_types: ['contact.created'] }) })).json();
if (!hook.uuid) throw new Error(JSON.stringify(hook));
const total = Number(secs) * Number(rate);
let sent = 0, failed = 0, n = 0;
const started = performance.now();
const inFlight = new Set();
// Paced: event i is due at i/rate seconds, with up to 16 requests in flight (more only queue on the event log's counter).
while (n < total) {
  const wait = started + (n * 1000) / Number(rate) - performance.now();
  if (wait > 1) await new Promise((r) => setTimeout(r, wait));
  while (inFlight.size >= 16) await Promise.race(inFlight);
  const i = n++;
  const p = fetch(`${api}/api/contacts/?identity=${identity}`, { method: 'POST', headers,
    body: JSON.stringify({ email: `bench${i}@example.com` }) })
    .then(async (r) => {
      if (r.status === 201) {
        answered[`bench${i}@example.com`] = (performance.timeOrigin + performance.now()) * 1000;
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
await Promise.all(inFlight);
const took = (performance.now() - started) / 1000;
writeFileSync(answersFile, JSON.stringify(answered));
console.log(JSON.stringify({ sent, failed, took }));
JS
node "$work/receiver.mjs" "$work/receiver.port" "$work/latencies.json" &
receiver=$!
until [ -s "$work/receiver.port" ]; do sleep 0.05; done
produced=$(node "$work/producer.mjs" "$port" "$key" "$uuid" "$(cat "$work/receiver.port")" "$secs" "$rate" "$work/answers.json")
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
python3 - "$produced" "$rate" "$work/latencies.json" "$work/answers.json" <<'PY'
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
print("from the POST's 201 (after the commit) to receiver: " + quantiles(after))
sys.exit(0 if len(rows) >= p["sent"] else 1)
PY
