#!/usr/bin/env bash
# Writes: ACCOUNTS accounts (32), each with a management key (a device login) and an identity;
# wrk -c64 -t2 posts POST /api/contacts/?identity=... for SECONDS (10), round-robin over the
# accounts, each request a new email. Prints writes/s, p50/p99 and failures (any answer but 2xx)
# for each target:
#   sqlite   one svcd on its embedded database;
#   mariadb  one svcd on a private MariaDB (tools/mariadb.sh; SVC_TEST_MYSQL_URL's server when it
#            is set), with the database commands per write counted in the server's general log
#            (every command line of svcd's connections during the timed run, divided by the writes
#            wrk counted), the commands of ONE request measured alone, and sysbench oltp_insert
#            (64 threads, SECONDS) on the same server for comparison;
#   cluster  three svcd, one per node of a three-node Galera cluster (tools/galera.sh, when the
#            tree has it), one wrk -c22 against each, summed.
#   benchmarks/load_writes.sh [BUILD_DIR] [ACCOUNTS] [SECONDS] [TARGETS]   (sqlite,mariadb,cluster)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
accounts=${2:-32}
secs=${3:-10}
targets=${4:-sqlite,mariadb,cluster}
alone=${ALONE:-20}  # requests measured one at a time
# MOST_COMMANDS=N: fail when a write under load costs more than N database commands (MariaDB's
# general log, the background pollers included).
base=$(mktemp -d /tmp/svc-writes.XXXXXX)
pids=()
started_mariadb=
started_galera=
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
  [ -n "$started_mariadb" ] && svc_mariadb_stop
  [ -n "$started_galera" ] && svc_galera_stop
  rm -rf "$base"
}
trap cleanup EXIT
source "$root/benchmarks/bench_lib.sh"
source "$root/benchmarks/writes_lib.sh"
# Every account's device login comes from this address: more than the default 30 a minute.
svcd_args=(--set plugins.enabled=auth,identities,contacts --set auth.rate.device_per_minute=100000)

stop_svcd() {  # the benchmark's svcd, one target's done: its CPU is the next target's
  kill "$1" 2>/dev/null && wait "$1" 2>/dev/null
  return 0
}

run_sqlite() {
  work=$base/sqlite && mkdir -p "$work"
  bench_start_svcd "${svcd_args[@]}"
  pids+=("$pid")
  writes_setup "$port" "$admin" "$token" "$accounts" "$work/creds.lua"
  local before
  before=$(cpu_ticks "$pid")
  writes_wrk "$port" 64 "$work/creds.lua" sqlite >"$work/wrk.out"
  writes_report sqlite "$work/wrk.out"
  cpu_per_write svcd "$pid" "$before" "$(sed -n 's/^WRK writes=\([0-9]*\).*/\1/p' "$work/wrk.out")"
  stop_svcd "$pid"
}

run_mariadb() {
  if [ -z "${SVC_TEST_MYSQL_URL:-}" ]; then
    source "$root/tools/mariadb.sh"
    svc_mariadb_start >/dev/null
    started_mariadb=1
  fi
  local server=$SVC_TEST_MYSQL_URL db
  db=bench_writes_$$_$RANDOM
  sql "$server" "CREATE DATABASE $db"
  work=$base/mariadb && mkdir -p "$work"
  bench_start_svcd "${svcd_args[@]}" --set "db.url=$server/$db"
  pids+=("$pid")
  writes_setup "$port" "$admin" "$token" "$accounts" "$work/creds.lua"
  # A second's warm-up: the pool's connections are open, their statements seen once.
  writes_wrk "$port" 64 "$work/creds.lua" warm 1 >/dev/null
  general_log_on "$server" "$work/general.log"
  local before server_before writes
  before=$(cpu_ticks "$pid")
  server_before=$(cpu_ticks "${SVC_MARIADB_PID:-0}")
  writes_wrk "$port" 64 "$work/creds.lua" mariadb >"$work/wrk.out"
  general_log_off "$server"
  writes_report mariadb "$work/wrk.out"
  writes=$(sed -n 's/^WRK writes=\([0-9]*\).*/\1/p' "$work/wrk.out")
  cpu_per_write svcd "$pid" "$before" "$writes"
  # The server's CPU is known when this script started it (a shared one serves others too).
  [ -n "$started_mariadb" ] && cpu_per_write mariadbd "$SVC_MARIADB_PID" "$server_before" "$writes"
  general_log_count "$server" "$db" "$work/general.log" "$writes" "${TOP:-0}" "" "${MOST_COMMANDS:-}"
  # Requests alone (one at a time), less a window as long without requests (the background
  # pollers): what one request costs, by statement.
  general_log_on "$server" "$work/idle.log"
  sleep "$(python3 -c "print(max(2, $alone / 20 + 1))")"
  general_log_off "$server"
  general_log_on "$server" "$work/alone.log"
  writes_one "$port" "$work/creds.lua" "$alone"
  general_log_off "$server"
  echo "mariadb: POST /api/contacts/ alone ($alone, one at a time, less an idle window), per request:"
  general_log_count "$server" "$db" "$work/alone.log" "$alone" 20 "$work/idle.log"
  stop_svcd "$pid"
  sql "$server" "DROP DATABASE $db"
  local sysbench_tps
  sysbench_tps=$(writes_sysbench "$server" "$secs")
  if [ "$sysbench_tps" = 0 ]; then
    echo "mariadb: no sysbench (tools/deps.sh installs it)"
    return 0
  fi
  echo "mariadb: sysbench oltp_insert --threads=64: $sysbench_tps transactions/s"
  python3 -c "import sys; print('mariadb: svcd/sysbench = %.3f' % (float(sys.argv[1]) / float(sys.argv[2])))" \
    "$(sed -n 's/^WRK .* rate=\([0-9.]*\).*/\1/p' "$work/wrk.out")" "$sysbench_tps"
}

run_cluster() {
  if [ ! -f "$root/tools/galera.sh" ]; then
    echo "cluster: skipped (tools/galera.sh is not in this tree)"
    return 0
  fi
  source "$root/tools/galera.sh"
  svc_galera_start >/dev/null
  started_galera=1
  local urls db i
  read -r -a urls <<<"$SVC_TEST_GALERA_URLS"
  db=bench_writes_$$_$RANDOM
  sql "${urls[0]}" "CREATE DATABASE $db"
  local ports=()
  for i in 0 1 2; do
    work=$base/cluster$i && mkdir -p "$work"
    bench_start_svcd "${svcd_args[@]}" --set "db.url=${urls[$i]}/$db"
    pids+=("$pid")
    ports+=("$port")
    [ "$i" = 0 ] && { a0=$admin; t0=$token; }
  done
  # The accounts made through the first svcd: the database is shared.
  writes_setup "${ports[0]}" "$a0" "$t0" "$accounts" "$base/cluster.lua"
  local outs=()
  for i in 0 1 2; do
    writes_wrk "${ports[$i]}" 22 "$base/cluster.lua" "cluster$i" >"$base/cluster$i.wrk" &
    outs+=($!)
  done
  wait "${outs[@]}"
  for i in 0 1 2; do writes_report "cluster svcd $i" "$base/cluster$i.wrk" || true; done
  cat "$base"/cluster?.wrk | python3 -c '
import re, sys
w = f = 0; rate = 0.0
for line in sys.stdin:
    m = re.match(r"WRK writes=(\d+) failures=(\d+) rate=([\d.]+)", line)
    if m:
        w += int(m.group(1)); f += int(m.group(2)); rate += float(m.group(3))
print("cluster: %.0f writes/s (three svcd together), %d writes, %d failures" % (rate, w, f))
sys.exit(1 if f else 0)'
}

IFS=, read -r -a wanted <<<"$targets"
for t in "${wanted[@]}"; do
  case "$t" in
    sqlite) run_sqlite ;;
    mariadb) run_mariadb ;;
    cluster) run_cluster ;;
    *) echo "load_writes.sh: no target '$t' (sqlite, mariadb, cluster)" >&2 && exit 2 ;;
  esac
done
