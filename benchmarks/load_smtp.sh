#!/usr/bin/env bash
# SMTP ingest: CLIENTS concurrent SMTP clients for SECONDS at svcd's listener (every message
# parsed and durably stored before its 250) and, in the same run, at Postfix's smtp-sink (which
# accepts and discards); prints both rates, their ratio, and checks that svcd stored every
# message it acknowledged.
#   benchmarks/load_smtp.sh [BUILD_DIR] [CLIENTS] [SECONDS] [BODY_BYTES]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
clients=${2:-16}
secs=${3:-10}
body=${4:-2000}
work=$(mktemp -d /tmp/svc-smtp.XXXXXX)
cleanup() {
  [ -n "${sink:-}" ] && kill "$sink" 2>/dev/null
  [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
source "$root/benchmarks/bench_lib.sh"
bench_start_svcd --set email.domains=bench.test --set email.smtp.max_connections=256
bench_login
identity=$(curl -sf -X POST "http://127.0.0.1:$port/api/identities/" -H "Authorization: Bearer $key" \
  -H 'Content-Type: application/json' -d '{"name":"Sink","email_identifier":"sink"}' | json uuid)
smtp=$(sed -n 's/.*SMTP listener on port \([0-9]*\).*/\1/p' "$work/svcd.log")
sink_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
user=$([ "$(id -u)" = 0 ] && echo "-u nobody" || echo "")
smtp-sink $user 127.0.0.1:"$sink_port" 256 &
sink=$!
sleep 0.3

echo "svcd:      $("$build/bin/svc_bench_smtp" "$smtp" "$clients" "$secs" sink@bench.test "$body" | tee "$work/svcd.out")"
echo "smtp-sink: $("$build/bin/svc_bench_smtp" "$sink_port" "$clients" "$secs" sink@bench.test "$body" | tee "$work/sink.out")"
a=$(awk '{print $7}' "$work/svcd.out")
b=$(awk '{print $7}' "$work/sink.out")
awk -v a="$a" -v b="$b" 'BEGIN {printf "ratio svcd/smtp-sink: %.3f (target >= 0.5)\n", a/b}'
# Acknowledged mail is in svcd's spool; it is filed into the database behind the burst.
acked=$(awk '{print $1}' "$work/svcd.out")
waited=0
while :; do
  stored=$(curl -sf "http://127.0.0.1:$port/api/email-messages/?identity=$identity&limit=1" \
    -H "Authorization: Bearer $key" | json count)
  [ "$stored" -ge "$acked" ] || [ "$waited" -ge 600 ] && break
  sleep 1
  waited=$((waited + 1))
done
echo "acknowledged $acked, stored $stored ($waited s after the burst to file the backlog)"
