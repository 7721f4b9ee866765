#!/usr/bin/env bash
# Load benchmark: wrk against a bare Poco HTTPServer (fixed JSON) and against svcd's
# GET /api/health/ in the same run, then the same svcd with HELD (default 1,000) held responses
# open.
# Prints both rates, their ratio, p99 latency at 50 connections, idle resident memory with all
# plugins, and start-to-ready time.
#   benchmarks/load_health.sh [BUILD_DIR] [SECONDS] [HELD]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
secs=${2:-10}
held=${3:-1000}
work=$(mktemp -d /tmp/svc-load.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
now_ms() { date +%s%3N; }

bare_port=$(free_port)
"$build/bin/svc_bare_server" "$bare_port" 64 >"$work/bare.log" 2>&1 &
pids+=($!)

t0=$(now_ms)
# Rate limits and the per-address connection limit off: the held-response measurement starts
# 1,000 device logins from one address.
"$build/bin/svcd" --port 0 --data-dir "$work/data" --set admin.listen=127.0.0.1:0 \
  --set auth.rate.device_per_minute=0 --set auth.rate.token_per_minute=0 \
  --set server.max_connections_per_address=0 --set email.smtp.listen=127.0.0.1:0 \
  >"$work/svcd.log" 2>&1 &
svcd_pid=$!
pids+=($svcd_pid)
# The whole line, not its first words: a line can be read while it is being written.
until grep -Eq 'svcd ready: api .* plugins' "$work/svcd.log" 2>/dev/null; do
  kill -0 "$svcd_pid" 2>/dev/null || { cat "$work/svcd.log" >&2; exit 1; }
  sleep 0.005
done
port=$(sed -n 's/.*svcd ready: api http:\/\/[^:]*:\([0-9]*\).*/\1/p' "$work/svcd.log")
until curl -sf "http://127.0.0.1:$port/api/health/" >/dev/null; do sleep 0.005; done
t1=$(now_ms)
ready_self=$(sed -n 's/.*svcd ready:.* in \([0-9]*\) ms.*/\1/p' "$work/svcd.log")
plugins=$(curl -s "http://127.0.0.1:$port/api/health/")
sleep 1
rss_idle=$(awk '/VmRSS/ {print $2}' /proc/$svcd_pid/status)

run_wrk() {  # url -> "rate p99_ms"
  local out
  out=$(wrk -t2 -c50 -d"${secs}s" --latency "$1")
  local rate p99
  rate=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
  p99=$(echo "$out" | awk '$1=="99%" {print $2}')
  echo "$rate $p99"
}
to_ms() {  # wrk latency like 1.23ms / 850.00us / 1.02s -> ms
  local v=$1
  case "$v" in
    *us) awk -v x="${v%us}" 'BEGIN {printf "%.3f", x/1000}' ;;
    *ms) echo "${v%ms}" ;;
    *s) awk -v x="${v%s}" 'BEGIN {printf "%.3f", x*1000}' ;;
  esac
}

read -r bare_rate bare_p99 < <(run_wrk "http://127.0.0.1:$bare_port/")
read -r svcd_rate svcd_p99 < <(run_wrk "http://127.0.0.1:$port/api/health/")

# 1,000 held responses open while the same load runs: agents long-polling device logins that
# nobody approves (POST /api/auth/device/token/ with wait: true holds up to 120 s).
python3 - "$port" "$held" >"$work/held.log" 2>&1 <<'PY' &
import json, socket, sys, time, urllib.request
port = int(sys.argv[1])
codes = []
for i in range(int(sys.argv[2])):
    req = urllib.request.Request("http://127.0.0.1:%d/api/auth/device/" % port, data=b"", method="POST")
    codes.append(json.load(urllib.request.urlopen(req))["device_code"])
socks = []
for code in codes:
    body = json.dumps({"device_code": code, "wait": True}).encode()
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"POST /api/auth/device/token/ HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    socks.append(s)
print("open", len(socks), flush=True)
time.sleep(3600)
PY
holder=$!
pids+=($holder)
held_rate="n/a"
held_p99="n/a"
if curl -s "http://127.0.0.1:$port/api/health/" | grep -q '"auth"'; then
  until grep -q open "$work/held.log"; do
    kill -0 "$holder" 2>/dev/null || { cat "$work/held.log" >&2; exit 1; }
    sleep 0.1
  done
  sleep 1
  held_open=$(curl -s -H "Authorization: Bearer $(cat "$work/data/admin.token")" \
    "http://127.0.0.1:$(sed -n 's/.*admin http:\/\/[^:]*:\([0-9]*\).*/\1/p' "$work/svcd.log")/metrics" |
    awk '/^svc_held_responses_open/ {print $2}')
  read -r held_rate held_p99 < <(run_wrk "http://127.0.0.1:$port/api/health/")
fi

echo "plugins loaded:        $plugins"
echo "bare Poco server:      $bare_rate req/s   p99 $(to_ms "$bare_p99") ms"
echo "svcd GET /api/health/: $svcd_rate req/s   p99 $(to_ms "$svcd_p99") ms"
awk -v a="$svcd_rate" -v b="$bare_rate" 'BEGIN {printf "ratio svcd/bare:       %.3f (target >= 0.8)\n", a/b}'
echo "svcd idle RSS:         $((rss_idle / 1024)) MiB (target < 40)"
echo "start to ready:        ${ready_self} ms by svcd's own clock, $((t1 - t0)) ms until the first health answer (target < 300)"
if [ "$held_rate" != "n/a" ]; then
  echo "with $held held:       $held_rate req/s   p99 $(to_ms "$held_p99") ms ($held_open held open)"
else
  echo "with $held held:       skipped (the auth plugin's device login holds them; it is not loaded)"
fi
