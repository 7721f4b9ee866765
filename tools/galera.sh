#!/usr/bin/env bash
# Starts a private three-node MariaDB Galera cluster on 127.0.0.1 for the cluster suite, and stops
# it. Sourced by test.sh like mariadb.sh: svc_galera_start exports SVC_TEST_GALERA_URLS (three
# mysql:// URLs separated by spaces, one per node); svc_galera_stop ends it. The suite kills and
# restarts nodes with svc_galera_node_kill/stop/start N (N = 1..3), or through the command line:
#   bash tools/galera.sh kill|stop|start N   (reads SVC_GALERA_DIR from the environment)
# Nodes run as the `mysql` user: the rsync state transfer writes the joiner's data directory as
# the user the server runs as. Settings are light (the test machine has two cores).

# A free TCP port P on loopback whose P+1 is free too (Galera's IST), below the ephemeral range:
# a restarted node binds its ports again, after thousands of client connections took ports from
# that range (an IST port taken so made a rejoining node abort).
svc_galera_free_port() {
  python3 -c '
import random, socket
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
while True:
    p = random.randrange(10000, low - 2)
    a, b = socket.socket(), socket.socket()
    try:
        a.bind(("127.0.0.1", p)); b.bind(("127.0.0.1", p + 1)); print(p); break
    except OSError:
        pass
    finally:
        a.close(); b.close()'
}

# The node's server, in the background; its pid in $SVC_GALERA_DIR/nodeN/pid.
svc_galera_node_launch() {  # N [extra mariadbd options...]
  local n=$1
  shift
  local dir="$SVC_GALERA_DIR/node$n"
  # shellcheck disable=SC1091
  source "$dir/ports"
  # The server runs as mysql; these must stay writable for it after a restart.
  chown -R mysql:mysql "$dir"
  mariadbd --no-defaults --datadir="$dir/data" --user=mysql --bind-address=127.0.0.1 \
    --port="$port" --socket="$dir/mysql.sock" --pid-file="$dir/mariadb.pid" --skip-name-resolve \
    --innodb-buffer-pool-size=32M --innodb-log-file-size=16M --innodb-flush-log-at-trx-commit=2 \
    --max-connections=1000 --performance-schema=OFF --skip-log-bin \
    --wsrep-on=ON --wsrep-provider=/usr/lib/galera/libgalera_smm.so \
    --wsrep-cluster-name=svc-test --wsrep-cluster-address="gcomm://$SVC_GALERA_PEERS" \
    --wsrep-node-name="node$n" --wsrep-node-address="127.0.0.1:$gcomm" \
    --wsrep-provider-options="base_port=$gcomm;gcache.size=32M;gmcast.listen_addr=tcp://127.0.0.1:$gcomm;ist.recv_addr=127.0.0.1:$((gcomm + 1));evs.suspect_timeout=PT3S;evs.inactive_timeout=PT6S;evs.install_timeout=PT6S" \
    --wsrep-sst-method=rsync --wsrep-sst-receive-address="127.0.0.1:$sst" \
    --wsrep-slave-threads=2 --binlog-format=ROW --innodb-autoinc-lock-mode=2 \
    --default-storage-engine=InnoDB "$@" >>"$dir/server.log" 2>&1 &
  echo $! >"$dir/pid"
}

svc_galera_node_client() {  # N [mariadb options...]
  local n=$1
  shift
  mariadb --no-defaults --socket="$SVC_GALERA_DIR/node$n/mysql.sock" -uroot "$@"
}

# Waits until node N is synced with the cluster (up to 120 s).
svc_galera_node_wait() {  # N
  local n=$1 state
  for _ in $(seq 1 600); do
    state=$(svc_galera_node_client "$n" -N -e "SHOW STATUS LIKE 'wsrep_local_state_comment'" \
      2>/dev/null | cut -f2 || true)  # not up yet (and not an exit under set -e)
    [ "$state" = "Synced" ] && return 0
    if ! kill -0 "$(cat "$SVC_GALERA_DIR/node$n/pid")" 2>/dev/null; then
      echo "galera node $n exited:" >&2
      tail -n 30 "$SVC_GALERA_DIR/node$n/server.log" >&2
      return 1
    fi
    sleep 0.2
  done
  echo "galera node $n not synced after 120 s" >&2
  tail -n 30 "$SVC_GALERA_DIR/node$n/server.log" >&2
  return 1
}

svc_galera_start() {
  local started
  started=$(date +%s.%N)
  local shm_kib
  shm_kib=$(df --output=avail -k /dev/shm 2>/dev/null | tail -n 1 | tr -d ' ' || true)
  if [ "${shm_kib:-0}" -ge 2097152 ]; then
    SVC_GALERA_DIR=$(mktemp -d /dev/shm/svc-galera.XXXXXX)
  else
    SVC_GALERA_DIR=$(mktemp -d /tmp/svc-galera.XXXXXX)
  fi
  chmod 755 "$SVC_GALERA_DIR"
  export SVC_GALERA_DIR
  local n peers="" urls=""
  for n in 1 2 3; do
    mkdir -p "$SVC_GALERA_DIR/node$n"
    {
      echo "port=$(svc_galera_free_port)"
      echo "gcomm=$(svc_galera_free_port)"
      echo "sst=$(svc_galera_free_port)"
    } >"$SVC_GALERA_DIR/node$n/ports"
    # shellcheck disable=SC1091
    source "$SVC_GALERA_DIR/node$n/ports"
    peers="${peers:+$peers,}127.0.0.1:$gcomm"
    urls="${urls:+$urls }mysql://svc:svc-test-pass@127.0.0.1:$port"
  done
  export SVC_GALERA_PEERS=$peers
  # Only the first node is installed; the others receive its data by state transfer.
  chown -R mysql:mysql "$SVC_GALERA_DIR"
  mariadb-install-db --no-defaults --datadir="$SVC_GALERA_DIR/node1/data" --user=mysql \
    --auth-root-authentication-method=socket --skip-test-db >"$SVC_GALERA_DIR/install.log" 2>&1 ||
    { cat "$SVC_GALERA_DIR/install.log" >&2; return 1; }
  svc_galera_node_launch 1 --wsrep-new-cluster
  svc_galera_node_wait 1 || return 1
  svc_galera_node_client 1 -e "
    CREATE USER 'svc'@'127.0.0.1' IDENTIFIED BY 'svc-test-pass';
    GRANT ALL PRIVILEGES ON *.* TO 'svc'@'127.0.0.1';" || return 1
  # Joining one at a time: two joiners at once would queue for the same donor anyway.
  for n in 2 3; do
    mkdir -p "$SVC_GALERA_DIR/node$n/data"
    svc_galera_node_launch "$n"
    svc_galera_node_wait "$n" || return 1
  done
  export SVC_TEST_GALERA_URLS=$urls
  echo "galera: $SVC_TEST_GALERA_URLS (data $SVC_GALERA_DIR," \
    "started in $(python3 -c "print(round($(date +%s.%N) - $started, 1))") s)"
}

svc_galera_node_kill() {  # N: as a crash (SIGKILL)
  local pid
  pid=$(cat "$SVC_GALERA_DIR/node$1/pid" 2>/dev/null) || return 0
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  # A killed server's own child (an SST script) may outlive it.
  while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
}

svc_galera_node_stop() {  # N: a clean shutdown
  local pid
  pid=$(cat "$SVC_GALERA_DIR/node$1/pid" 2>/dev/null) || return 0
  kill "$pid" 2>/dev/null || true
  while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
}

svc_galera_node_start() {  # N: rejoins the running cluster (IST, or SST after a crash) and waits
  svc_galera_node_launch "$1"
  svc_galera_node_wait "$1"
}

svc_galera_stop() {
  [ -n "${SVC_GALERA_DIR:-}" ] || return 0
  local n
  for n in 3 2 1; do svc_galera_node_stop "$n"; done
  rm -rf "$SVC_GALERA_DIR"
  unset SVC_TEST_GALERA_URLS
}

# Run as a command (the cluster suite restarts nodes this way): galera.sh kill|stop|start N.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  : "${SVC_GALERA_DIR:?set by svc_galera_start}"
  if [ -z "${SVC_GALERA_PEERS:-}" ]; then  # from the nodes' port files
    SVC_GALERA_PEERS=$(for n in 1 2 3; do (source "$SVC_GALERA_DIR/node$n/ports" && echo "127.0.0.1:$gcomm"); done | paste -sd,)
  fi
  case "${1:-}" in
    kill) svc_galera_node_kill "$2" ;;
    stop) svc_galera_node_stop "$2" ;;
    start) svc_galera_node_start "$2" ;;
    *)
      echo "usage: galera.sh kill|stop|start N" >&2
      exit 2
      ;;
  esac
fi
