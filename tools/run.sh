#!/usr/bin/env bash
# The first command: set up a fresh Debian 12 machine (as root, installing what is missing), build,
# and run svcd on the embedded SQLite default at http://127.0.0.1:8080. Extra arguments go to svcd.
set -euo pipefail
SVC_ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$SVC_ROOT/tools/deps.sh"
svc_install_packages "${SVC_BUILD_PACKAGES[@]}"
svc_build "$SVC_ROOT/build" -DSVC_BUILD_TESTS=OFF -DSVC_BUILD_BENCHMARKS=OFF
echo "svcd: http://127.0.0.1:8080 (operator token: $SVC_ROOT/build/var/lib/svc/admin.token)"
exec "$SVC_ROOT/build/bin/svcd" "$@"
