#!/usr/bin/env bash
# Starts a private MariaDB server on 127.0.0.1 with a temporary data directory for the tests, and
# stops it. Sourced by test.sh: svc_mariadb_start exports SVC_TEST_MYSQL_URL; svc_mariadb_stop ends it.
# Commits reach the OS at once (innodb-flush-log-at-trx-commit=2): they survive a crashed svcd or
# mariadbd, which is what tests crash, not the machine.
svc_mariadb_start() {
  # In memory where there is a tmpfs: a table's creation syncs the disk whatever the settings
  # (about 20 ms each here, 4.5 s of migrations for every svcd a test starts; 0.1 s in memory).
  # A container's /dev/shm may hold 64 MB: the server's logs need more than 100.
  local shm_kib
  shm_kib=$(df --output=avail -k /dev/shm 2>/dev/null | tail -n 1 | tr -d ' ' || true)
  if [ "${shm_kib:-0}" -ge 1048576 ]; then
    SVC_MARIADB_DIR=$(mktemp -d /dev/shm/svc-mariadb.XXXXXX)
  else
    SVC_MARIADB_DIR=$(mktemp -d /tmp/svc-mariadb.XXXXXX)
  fi
  local port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null \
    || echo $((20000 + RANDOM % 20000)))
  mariadb-install-db --no-defaults --datadir="$SVC_MARIADB_DIR/data" --user="$(id -un)" \
    --auth-root-authentication-method=socket --skip-test-db >"$SVC_MARIADB_DIR/install.log" 2>&1 ||
    { cat "$SVC_MARIADB_DIR/install.log" >&2; return 1; }
  mariadbd --no-defaults --datadir="$SVC_MARIADB_DIR/data" --user="$(id -un)" \
    --bind-address=127.0.0.1 --port="$port" --socket="$SVC_MARIADB_DIR/mysql.sock" \
    --pid-file="$SVC_MARIADB_DIR/mariadb.pid" --skip-name-resolve --innodb-buffer-pool-size=128M \
    --innodb-flush-log-at-trx-commit=2 --max-connections=2000 \
    >"$SVC_MARIADB_DIR/server.log" 2>&1 &
  SVC_MARIADB_PID=$!
  for _ in $(seq 1 100); do
    mariadb --no-defaults --socket="$SVC_MARIADB_DIR/mysql.sock" -uroot -e 'SELECT 1' >/dev/null 2>&1 && break
    sleep 0.2
  done
  mariadb --no-defaults --socket="$SVC_MARIADB_DIR/mysql.sock" -uroot -e "
    CREATE USER 'svc'@'127.0.0.1' IDENTIFIED BY 'svc-test-pass';
    GRANT ALL PRIVILEGES ON *.* TO 'svc'@'127.0.0.1';" || {
    cat "$SVC_MARIADB_DIR/server.log" >&2
    return 1
  }
  export SVC_TEST_MYSQL_URL="mysql://svc:svc-test-pass@127.0.0.1:$port"
  echo "mariadb: $SVC_TEST_MYSQL_URL (data $SVC_MARIADB_DIR)"
}

svc_mariadb_stop() {
  if [ -n "${SVC_MARIADB_PID:-}" ]; then
    kill "$SVC_MARIADB_PID" 2>/dev/null || true
    wait "$SVC_MARIADB_PID" 2>/dev/null || true
  fi
  [ -n "${SVC_MARIADB_DIR:-}" ] && rm -rf "$SVC_MARIADB_DIR"
}
