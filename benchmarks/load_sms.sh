#!/usr/bin/env bash
# SMS sending through the loopback provider: N messages (default 10,000) from one identity to
# another of this server (each stored twice: sent and received, with both conversations), posted
# over 8 keep-alive connections on the embedded SQLite database. Reports messages per second and the
# latency percentiles of POST /api/messages/send/, then checks that all N arrived.
#   benchmarks/load_sms.sh [BUILD_DIR] [MESSAGES]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
count=${2:-10000}
work=$(mktemp -d /tmp/svc-sms.XXXXXX)
cleanup() {
  [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
source "$root/benchmarks/bench_lib.sh"
# No sending limit: the benchmark sends far more than an hour's allowance.
bench_start_svcd --set plugins.enabled=auth,identities,sms --set sms.send.per_hour=0 \
  --set sms.send.per_day=0
bench_login
mk() {
  curl -sf -X POST "http://127.0.0.1:$port/api/identities/" -H "Authorization: Bearer $key" \
    -H 'Content-Type: application/json' -d "{\"name\":\"$1\",\"provision_phone\":true}"
}
a=$(mk Sender | json uuid)
b_number=$(mk Receiver | python3 -c 'import json,sys; print(json.load(sys.stdin)["phone"]["number"])')

# Eight connections (keep-alive), each posting its share; the wall time gives messages per second.
python3 - "$port" "$key" "$a" "$b_number" "$count" <<'PY'
import http.client, json, sys, threading, time
port, key, identity, to, count = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
conns = 8
body = json.dumps({"to_number": to, "body": "Your verification code is 482913. It expires in 10 minutes."})
headers = {"Authorization": "Bearer " + key, "Content-Type": "application/json"}
latencies, failures = [], []
def worker(n):
    c = http.client.HTTPConnection("127.0.0.1", int(port))
    mine = []
    for _ in range(n):
        t = time.perf_counter()
        c.request("POST", "/api/messages/send/?identity=" + identity, body, headers)
        r = c.getresponse()
        data = r.read()
        mine.append(time.perf_counter() - t)
        if r.status != 201 or json.loads(data)["status"] != "delivered":
            failures.append((r.status, data[:200]))
    latencies.extend(mine)
start = time.perf_counter()
threads = [threading.Thread(target=worker, args=(count // conns + (i < count % conns),)) for i in range(conns)]
for t in threads: t.start()
for t in threads: t.join()
wall = time.perf_counter() - start
latencies.sort()
pct = lambda p: latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000
print("sent %d SMS in %.1f s: %.0f messages/s; POST /api/messages/send/ p50 %.2f ms, p99 %.2f ms, max %.2f ms; %d failures"
      % (len(latencies), wall, len(latencies) / wall, pct(0.5), pct(0.99), latencies[-1] * 1000, len(failures)))
for f in failures[:5]: print("failure:", f)
sys.exit(1 if failures else 0)
PY
list=$(curl -sf "http://127.0.0.1:$port/api/messages/?direction=incoming&limit=1" \
  -H "Authorization: Bearer $key")
received=$(echo "$list" | json count)
echo "received $received of $count"
# The count is exact up to sms.messages.exact_count (10,000); beyond it, it is a lower bound.
if [ "$(echo "$list" | json count_is_exact)" = True ] && [ "$received" -ne "$count" ]; then
  echo "FAILED: $((count - received)) sent messages did not arrive" >&2
  exit 1
fi
