#!/usr/bin/env bash
# Runs the browser and protocol tests (node's test runner) against a build directory.
# Usage: run.sh BUILD_DIR. SVC_TEST_DB=sqlite|mariadb picks the database; for mariadb the server
# of tools/mariadb.sh (SVC_TEST_MYSQL_URL) is used, and without one the run is skipped (77)
# unless SVC_TEST_REQUIRE_MYSQL=1.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export SVC_BUILD_DIR=${1:?build directory}
if [ "${SVC_TEST_DB:-sqlite}" = mariadb ] && [ -z "${SVC_TEST_MYSQL_URL:-}" ]; then
  [ "${SVC_TEST_REQUIRE_MYSQL:-0}" = 1 ] && { echo "SVC_TEST_MYSQL_URL is not set" >&2; exit 1; }
  echo "no MariaDB server (SVC_TEST_MYSQL_URL); skipped"; exit 77
fi
if [ ! -d "$here/node_modules/playwright-core" ]; then
  echo "tests/browser/node_modules is missing: run tools/test.sh (it runs npm ci)" >&2
  exit 1
fi
cd "$here"
# oidc-provider's development warnings go to the console; they are expected here.
exec node --test --test-concurrency=1 --test-reporter=spec ./*.test.mjs
