#!/usr/bin/env bash
# Soak: one svcd on SQLite under mixed traffic at a moderate steady rate for MINUTES minutes:
# device logins (started, approved through the operator API, token polled), key checks
# (whoami), identity creates, SMTP sessions delivering to identities' inboxes, sends through a
# local relay (Postfix's smtp-sink), SSE streams held open and checked for every event the
# traffic causes, and device-token long-polls approved 1-8 s later or left to expire. The driver
# (benchmarks/soak_driver.py, Python standard library, 127.0.0.1 only) prints a line a minute and
# at the end errors and counts per operation, p99 latency per operation per minute, and svcd's
# RSS after a 30 s warm-up and at the end. Exits non-zero on any error, on RSS growth over 10 %,
# or if svcd died. Rates: SOAK_RATES="--rate-whoami 20 ..." passes driver flags (see --help);
# SOAK_SVCD_ARGS="--set server.threads=8" passes svcd flags.
# MINUTES may be a fraction; SOAK_EXPIRES (default 20) is auth.device.expires_seconds, and
# SOAK_RATES="--max-rss-growth P" changes the 10 % bound (a run of seconds has no steady state).
#   benchmarks/soak.sh [BUILD_DIR] [MINUTES]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
minutes=${2:-10}
# Device codes nobody approves expire, and their long-polls answer, after this.
expires=${SOAK_EXPIRES:-20}
work=$(mktemp -d /tmp/svc-soak.XXXXXX)
cleanup() {
  [ -n "${sink:-}" ] && kill "$sink" 2>/dev/null
  [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
source "$root/benchmarks/bench_lib.sh"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
sink_port=$(free_port)
user=$([ "$(id -u)" = 0 ] && echo "-u nobody" || echo "")
smtp-sink $user 127.0.0.1:"$sink_port" 64 &
sink=$!

# Device logins, polls and long-polls all come from 127.0.0.1: the per-address limits are off.
# Sending stays limited (email.send.per_hour 60): sends are spread over every identity made.
bench_start_svcd ${SOAK_SVCD_ARGS:-} --set email.domains=soak.test \
  --set auth.rate.device_per_minute=0 --set auth.rate.token_per_minute=0 \
  --set auth.rate.failed_auth_per_minute=0 --set auth.device.expires_seconds=$expires \
  --set email.relay.host=127.0.0.1 --set email.relay.port="$sink_port" \
  --set email.relay.starttls=false
bench_login
smtp=$(sed -n 's/.*SMTP listener on port \([0-9]*\).*/\1/p' "$work/svcd.log")
echo "svcd pid $pid: api $port, admin $admin, smtp $smtp; relay smtp-sink on $sink_port"

status=0
# shellcheck disable=SC2086
timeout "$(awk -v m="$minutes" 'BEGIN {print int(m * 60 + 420)}')" python3 "$root/benchmarks/soak_driver.py" --port "$port" \
  --admin "$admin" --admin-token "$token" --smtp "$smtp" --pid "$pid" --data-dir "$work/data" --key "$key" \
  --user bench@example.com --domain soak.test --minutes "$minutes" --expires $expires \
  ${SOAK_RATES:-} || status=$?

if ! kill -0 "$pid" 2>/dev/null; then
  echo "svcd died during the soak; the end of its log:"
  tail -n 40 "$work/svcd.log"
  pid=
  exit 1
fi
# Anything svcd logged above information level (the log has a level word on each line).
levels='^[^ ]+ (Warning|Error|Critical|Fatal) '
echo "svcd log: $(wc -l <"$work/svcd.log") lines, $(grep -Ec "$levels" "$work/svcd.log" || true) at warning level or above"
grep -E "$levels" "$work/svcd.log" | head -n 20 || true
exit "$status"
