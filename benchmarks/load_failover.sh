#!/usr/bin/env bash
# Failover as clients see it: three svcd, one per node of a three-node MariaDB Galera cluster
# (tools/galera.sh), behind HAProxy with the shipped etc/haproxy/svc.cfg (only its addresses and
# logging changed); 16 clients write contacts through HAProxy for SECONDS while one svcd is
# killed (-9) after a third of the time and another machine's database node after two thirds.
# Prints the writes, the failures the clients saw (non-2xx or a broken connection) and their
# share (target: at most 0.5 %), then checks that every acknowledged contact is readable through
# every surviving svcd once the killed node is back. Exits 1 when an acknowledged write is lost.
#   benchmarks/load_failover.sh [BUILD_DIR] [SECONDS]   (env: CLIENTS=16 ACCOUNTS=16)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
seconds=${2:-60}
command -v haproxy >/dev/null || { echo "haproxy is missing (tools/deps.sh installs it)" >&2; exit 1; }

work=$(mktemp -d /tmp/svc-failover.XXXXXX)
pids=()
# shellcheck source=../tools/galera.sh
source "$root/tools/galera.sh"
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  svc_galera_stop
  if [ -n "${KEEP:-}" ]; then echo "logs kept in $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

svc_galera_start
read -r -a urls <<<"$SVC_TEST_GALERA_URLS"
svc_galera_node_client 1 -e "CREATE DATABASE svc CHARACTER SET utf8mb4"

ready='svcd ready: api http://[^:]*:[0-9]+ admin http://[^:]*:[0-9]+ plugins'
start_svcd() {  # N: svcd N on node N, its own data directory; sets svcd_pid[N], api[N], adm[N]
  local n=$1 log="$work/svcd$1.log"
  "$build/bin/svcd" --port 0 --data-dir "$work/data$n" --set "db.url=${urls[n - 1]}/svc" \
    --set plugins.enabled=auth,identities,contacts,vault --set admin.listen=127.0.0.1:0 \
    >"$log" 2>&1 &
  svcd_pid[n]=$!
  pids+=("$!")
  until grep -Eq "$ready" "$log" 2>/dev/null; do
    kill -0 "${svcd_pid[n]}" 2>/dev/null || { cat "$log" >&2; exit 1; }
    sleep 0.05
  done
  api[n]=$(sed -nE 's/.*svcd ready: api http:\/\/[^:]*:([0-9]+).*/\1/p' "$log")
  adm[n]=$(sed -nE 's/.* admin http:\/\/[^:]*:([0-9]+).*/\1/p' "$log")
}
declare -a svcd_pid api adm
# The first svcd makes the vault's key file; the others get a copy, as operators deploy it.
start_svcd 1
for n in 2 3; do
  install -D -m 600 "$work/data1/vault/master.key" "$work/data$n/vault/master.key"
  start_svcd "$n"
done

# The shipped configuration on loopback ports, logging to a file, naming the answering svcd.
lb=$(svc_galera_free_port)
sed -E -e "s|^( *bind) :80$|\1 127.0.0.1:$lb|" -e '/^ *bind :443/d' \
  -e "s|^( *log) /dev/log local0|\1 stdout format raw local0|" \
  -e "s|^( *server svc([123])) 10\.0\.0\.[123]:8080|\1 127.0.0.1:@\2@|" \
  -e 's|^( *option forwardfor)$|\1\n    http-response set-header X-Svc-Server %[srv_name]|' \
  "$root/etc/haproxy/svc.cfg" |
  sed -e "s/@1@/${api[1]}/" -e "s/@2@/${api[2]}/" -e "s/@3@/${api[3]}/" >"$work/haproxy.cfg"
haproxy -db -f "$work/haproxy.cfg" >"$work/haproxy.log" 2>&1 &
pids+=("$!")
for i in $(seq 1 100); do
  curl -sf "http://127.0.0.1:$lb/api/health/" >/dev/null && break
  [ "$i" = 100 ] && { cat "$work/haproxy.log" >&2; exit 1; }
  sleep 0.1
done

echo "svcd on ${api[*]} (nodes 1-3), haproxy on $lb; $seconds s, ${CLIENTS:-16} clients"
status=0
SVC_GALERA_DIR=$SVC_GALERA_DIR python3 "$root/benchmarks/failover_driver.py" \
  --root "$root" --lb "$lb" --api "${api[@]}" --admin "${adm[@]}" \
  --token "$(cat "$work/data1/admin.token")" "$(cat "$work/data2/admin.token")" \
  "$(cat "$work/data3/admin.token")" --kill-svcd "${svcd_pid[1]}" --kill-node 3 \
  --seconds "$seconds" --clients "${CLIENTS:-16}" --accounts "${ACCOUNTS:-16}" || status=$?
if [ "$status" != 0 ]; then
  KEEP=1
  grep -hE ' (failed|503)' "$work"/svcd*.log | tail -n 20 >&2 || true
fi
exit "$status"
