#!/usr/bin/env bash
# The second command: set up (as root, installing what is missing), build, and run every test:
# unit tests, the integration suites on SQLite and on a private MariaDB server, the cluster suite
# on a three-node Galera cluster, and the SDK's out-of-tree example. `--sanitize` does the same
# in an ASan+UBSan build (build-asan/).
set -euo pipefail
SVC_ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$SVC_ROOT/tools/deps.sh"
source "$SVC_ROOT/tools/mariadb.sh"
source "$SVC_ROOT/tools/galera.sh"

build_dir="$SVC_ROOT/build"
cmake_args=()
if [ "${1:-}" = "--sanitize" ]; then
  build_dir="$SVC_ROOT/build-asan"
  cmake_args=(-DSVC_SANITIZE=ON -DSVC_BUILD_BENCHMARKS=OFF)
  export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
fi

# Each step says what it cost, so a slow one is seen (the note of issue 37 has the figures).
step_start=$(date +%s)
step() {
  local now
  now=$(date +%s)
  echo "== ${1}: $((now - step_start)) s"
  step_start=$now
}

svc_install_packages "${SVC_BUILD_PACKAGES[@]}" "${SVC_TEST_PACKAGES[@]}"
svc_install_node
step "packages"
svc_build "$build_dir" "${cmake_args[@]}"
step "build"

# The libFuzzer targets in their own clang build (build-fuzz/): seeds, then 20,000 mutations each
# from a fixed seed, so a run explores the same inputs on any machine (a time budget would not).
SVC_FUZZ_SEED=1 bash "$SVC_ROOT/tools/fuzz.sh" --runs 20000 60
step "fuzzing (build and runs)"

trap 'svc_galera_stop; svc_mariadb_stop' EXIT
svc_mariadb_start
# The cluster suite's three-node Galera cluster (galera.* tests; about 20 s to start).
svc_galera_start
step "databases"
export SVC_TEST_REQUIRE_MYSQL=1
cd "$build_dir"
# Each GoogleTest case is a test of its own; most of an integration test's time is spent waiting
# on svcd (sockets, timers, fsync), so more run at once than there are cores. ctest remembers
# each test's cost and starts the long ones first the next time.
ctest --output-on-failure -j "${SVC_TEST_JOBS:-4}" --timeout 900
step "tests"
