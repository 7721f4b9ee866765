#!/usr/bin/env bash
# SMS sending through the loopback provider: N messages (default 10,000) from one identity to
# another of this server (each stored twice: sent and received, with both conversations), posted
# by wrk over 8 connections on the embedded SQLite database. Reports messages per second and the
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

threads=2
cat >"$work/send.lua" <<LUA
wrk.method = "POST"
wrk.headers["Authorization"] = "Bearer $key"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"to_number":"$b_number","body":"Your verification code is 482913. It expires in 10 minutes."}'
local per_thread = math.ceil($count / $threads)
local done = 0
function response(status, headers, body)
  done = done + 1
  if status ~= 201 then io.stderr:write("status " .. status .. ": " .. body .. "\n") end
  if done >= per_thread then wrk.thread:stop() end
end
LUA
out=$(wrk -t$threads -c8 -d600s --latency -s "$work/send.lua" \
  "http://127.0.0.1:$port/api/messages/send/?identity=$a")
echo "$out" | grep -E "Requests/sec|Latency|50%|90%|99%" | sed 's/^ *//'
received=$(curl -sf "http://127.0.0.1:$port/api/messages/?direction=incoming&limit=1" \
  -H "Authorization: Bearer $key" | json count)
echo "sent $count (wrk may send a few more: each connection finishes its request), received $received"
