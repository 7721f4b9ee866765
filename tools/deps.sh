#!/usr/bin/env bash
# Installs what building, running and testing svc needs on Debian 12, only what is missing.
# Sourced by run.sh and test.sh; idempotent.
set -euo pipefail

SVC_BUILD_PACKAGES=(build-essential cmake ccache pkg-config git libpoco-dev libboost-dev
  libboost-filesystem-dev libssl-dev libsodium-dev libsqlite3-dev sqlite3 libmariadb-dev
  libspf2-dev libopendkim-dev libopendmarc-dev publicsuffix)
# libnet-ssleay-perl and libio-socket-ssl-perl: swaks's STARTTLS (only Recommends, which we skip).
# clang and libfuzzer-14-dev: the libFuzzer targets (tools/fuzz.sh).
# galera-4, rsync and iproute2 (ss, which the rsync state transfer uses): the cluster suite's
# three-node MariaDB Galera cluster (tools/galera.sh).
# haproxy: benchmarks/load_failover.sh, in front of three svcd with etc/haproxy/svc.cfg.
# sysbench: the database's own write rate beside svcd's (benchmarks/load_writes.sh).
SVC_TEST_PACKAGES=(googletest libgtest-dev libbenchmark-dev mariadb-server mariadb-client galera-4
  rsync iproute2 wrk procps
  curl jq python3 openssl chromium qrencode swaks dnsmasq-base postfix python3-dkim
  libnet-ssleay-perl libio-socket-ssl-perl clang libfuzzer-14-dev sysbench haproxy)

svc_install_packages() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" != 0 ]; then
      echo "missing packages: ${missing[*]} (run as root to install them)" >&2
      return 1
    fi
    echo "installing: ${missing[*]}"
    apt-get update -qq
    # Debian's mariadb-server tries to start a service; a container has none to start.
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" \
      >/dev/null
  fi
}

# Node and npm for the browser tests, the Twilio stand-in and examples/e2e-node (which a test runs), from Debian unless the machine already has them (a newer
# Node from elsewhere is kept: installing Debian's npm would replace it). Then the tests' own
# packages, exactly as package-lock.json pins them.
svc_install_node() {
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    svc_install_packages nodejs npm
  fi
  local dir
  for dir in "$SVC_ROOT/tests/browser" "$SVC_ROOT/tests/twilio" "$SVC_ROOT/examples/e2e-node"; do
    if [ ! -f "$dir/node_modules/.package-lock.json" ] ||
      [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
      (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
    fi
  done
}

svc_build() {  # svc_build BUILD_DIR [cmake args...]
  local dir=$1
  shift
  cmake -S "$SVC_ROOT" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
  cmake --build "$dir" -j "${SVC_JOBS:-2}"
}
