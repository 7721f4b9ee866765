#!/usr/bin/env bash
# Webhook fairness: HANG_ACCOUNTS accounts (3) with WEBHOOKS webhooks each (20, an account's most)
# on a receiver that accepts every connection and never answers, each account sent an event
# (identity.created) so that every one of those webhooks has an attempt hanging until
# webhooks.timeout_seconds (10 s) and retries after; meanwhile a fourth account's webhook on a
# healthy receiver (answering 204 at once) is sent EVENTS events one after the other. Prints the
# healthy delivery's latency, from the POST's 201 (after its event committed) to the receiver
# having it, p50/max, and how many connections the hanging receiver was given. Fails when a
# healthy delivery does not arrive within 120 s.
#   benchmarks/load_webhooks_fair.sh [BUILD_DIR] [EVENTS] [HANG_ACCOUNTS] [WEBHOOKS] [DB_URL]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
events=${2:-20}
accounts=${3:-3}
hooks=${4:-20}
db=${5:-}
work=$(mktemp -d /tmp/svc-webhooks-fair.XXXXXX)
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

login() {  # login EMAIL: a management key of a new account
  bench_op /admin/auth/users/ "{\"email\":\"$1\",\"password\":\"correct horse\"}"
  local device
  device=$(curl -sf -X POST "http://127.0.0.1:$port/api/auth/device/")
  bench_op /admin/auth/device/approve/ \
    "{\"user_code\":\"$(echo "$device" | json user_code)\",\"user\":\"$1\"}"
  curl -sf -X POST "http://127.0.0.1:$port/api/auth/device/token/" \
    -H 'Content-Type: application/json' \
    -d "{\"device_code\":\"$(echo "$device" | json device_code)\"}" | json management_key
}
keys=()
for a in $(seq 1 "$accounts"); do keys+=("$(login "hang$a@example.com")"); done
healthy_key=$(login healthy@example.com)

python3 - "$port" "$events" "$hooks" "$healthy_key" "${keys[@]}" <<'PY'
import http.server, json, socket, sys, threading, time, urllib.request

port, events, hooks, healthy_key, keys = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5:]
api = "http://127.0.0.1:%s" % port

def call(method, path, key, body=None):
    req = urllib.request.Request(api + path, method=method, data=json.dumps(body or {}).encode(),
                                 headers={"Authorization": "Bearer " + key,
                                          "Content-Type": "application/json"})
    with urllib.request.urlopen(req) as r:
        return json.load(r)

# Accepts and never answers: the connections are kept open, never read.
hang = socket.socket()
hang.bind(("127.0.0.1", 0))
hang.listen(1024)
held = []
def accept():
    while True:
        held.append(hang.accept()[0])
threading.Thread(target=accept, daemon=True).start()

arrived = {}  # contact email -> when the healthy receiver had it
cond = threading.Condition()
class Healthy(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        at = time.monotonic()
        self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()
        with cond:
            arrived.setdefault(json.loads(body)["object"]["email"], at)
            cond.notify_all()
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Healthy)
threading.Thread(target=server.serve_forever, daemon=True).start()

never = "http://127.0.0.1:%d/never" % hang.getsockname()[1]
for key in keys:
    for _ in range(hooks):
        call("POST", "/api/webhooks/", key, {"url": never, "event_types": ["identity.created"]})
    call("POST", "/api/identities/", key, {"name": "Hang"})
ident = call("POST", "/api/identities/", healthy_key, {"name": "Healthy"})["uuid"]
call("POST", "/api/webhooks/", healthy_key,
     {"url": "http://127.0.0.1:%d/hook" % server.server_address[1],
      "event_types": ["contact.created"]})
# The hanging attempts are under way before the healthy events come.
deadline = time.monotonic() + 30
while len(held) < min(4, len(keys) * hooks) and time.monotonic() < deadline:
    time.sleep(0.02)
hanging_before = len(held)

latencies = []
for i in range(events):
    email = "fair%d@example.com" % i
    call("POST", "/api/contacts/?identity=" + ident, healthy_key, {"email": email})
    committed = time.monotonic()
    with cond:
        if not cond.wait_for(lambda: email in arrived, timeout=120):
            print("event %d: not delivered within 120 s" % i)
            sys.exit(1)
    latencies.append(arrived[email] - committed)
    time.sleep(0.2)  # events apart, each measured on its own
latencies.sort()
q = lambda f: latencies[min(len(latencies) - 1, int(f * len(latencies)))] * 1000
print("hanging: %d accounts x %d webhooks; connections to the hanging receiver: %d before, %d after"
      % (len(keys), hooks, hanging_before, len(held)))
print("healthy delivery, from the POST's 201 to the receiver, over %d events: p50 %.1f ms  max %.1f ms"
      % (len(latencies), q(0.5), q(1.0)))
PY
threads=$(ls "/proc/$pid/task" | wc -l)
echo "svcd threads at the end: $threads"
