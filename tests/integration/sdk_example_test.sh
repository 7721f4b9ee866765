#!/usr/bin/env bash
# The third-party path end to end: install the SDK to a temporary prefix, build sdk/examples/hello
# out of tree against it with find_package(SvcSdk), have the installed svcd load it, and ask it.
set -euo pipefail
src=$1
build=$2
work=$(mktemp -d /tmp/svc-sdk-test.XXXXXX)
cleanup() {
  [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

cmake --install "$build" --prefix "$work/prefix" >/dev/null
test -f "$work/prefix/lib/cmake/SvcSdk/SvcSdkConfig.cmake"
test -f "$work/prefix/include/svc/sdk/plugin.h"
test -x "$work/prefix/bin/svcd"
test -x "$work/prefix/bin/svcctl"
test -f "$work/prefix/etc/svc/svcd.properties"
test -f "$work/prefix/lib/systemd/system/svcd.service"

cmake -S "$src/sdk/examples/hello" -B "$work/hello" -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$work/hello" >/dev/null
cp "$work/hello/svc_plugin_hello.so" "$work/prefix/lib/svc/plugins/"

"$work/prefix/bin/svcd" --port 0 --data-dir "$work/data" --set admin.listen= \
  --set plugins.enabled=hello --set hello.greeting=Howdy >"$work/svcd.log" 2>&1 &
pid=$!
port=""
for _ in $(seq 1 200); do
  port=$(sed -n 's/.*svcd ready: api http:\/\/[^:]*:\([0-9]*\).*/\1/p' "$work/svcd.log")
  [ -n "$port" ] && break
  sleep 0.05
done
[ -n "$port" ] || { cat "$work/svcd.log"; exit 1; }
answer=$(curl -sf "http://127.0.0.1:$port/api/hello/?name=agent")
echo "$answer"
[ "$answer" = '{"message":"Howdy, agent!"}' ] || { echo "unexpected answer" >&2; exit 1; }
curl -sf "http://127.0.0.1:$port/api/health/" | grep -q '"name":"hello"'
echo "1 passed, 0 failed"
