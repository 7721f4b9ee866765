#!/usr/bin/env bash
# The second command: set up (as root, installing what is missing), build, and run every test:
# unit tests, the integration suites on SQLite and on a private MariaDB server, and the SDK's
# out-of-tree example. `--sanitize` does the same in an ASan+UBSan build (build-asan/).
set -euo pipefail
SVC_ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$SVC_ROOT/tools/deps.sh"
source "$SVC_ROOT/tools/mariadb.sh"

build_dir="$SVC_ROOT/build"
cmake_args=()
if [ "${1:-}" = "--sanitize" ]; then
  build_dir="$SVC_ROOT/build-asan"
  cmake_args=(-DSVC_SANITIZE=ON -DSVC_BUILD_BENCHMARKS=OFF)
  export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
fi

svc_install_packages "${SVC_BUILD_PACKAGES[@]}" "${SVC_TEST_PACKAGES[@]}"
svc_install_node
svc_build "$build_dir" "${cmake_args[@]}"

# The libFuzzer targets in their own clang build (build-fuzz/): seeds, then 20,000 mutations each
# from a fixed seed, so a run explores the same inputs on any machine (a time budget would not).
SVC_FUZZ_SEED=1 bash "$SVC_ROOT/tools/fuzz.sh" --runs 20000 60

trap svc_mariadb_stop EXIT
svc_mariadb_start
export SVC_TEST_REQUIRE_MYSQL=1
cd "$build_dir"
ctest --output-on-failure -j 2 --timeout 900
