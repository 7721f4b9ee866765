#!/usr/bin/env bash
# The third-party path end to end: install the SDK to a temporary prefix, build sdk/examples/hello
# out of tree against it with find_package(SvcSdk), have the installed svcd load it, and ask it;
# then check that its own declared event type, hello.greeted, is what ?types= selects, and that
# its own metric is on /metrics; and that svcctl, unchanged, gains its `hello` commands from the
# plugin's library.
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
# The plugin author's guide and changelog beside the SDK, and the man pages, the configuration's
# made from the keys the installed plugins declare.
test -f "$work/prefix/share/doc/svc-sdk/README.md"
test -f "$work/prefix/share/doc/svc-sdk/CHANGELOG.md"
test -f "$work/prefix/share/man/man8/svcd.8"
test -f "$work/prefix/share/man/man1/svcctl.1"
grep -q 'email.smtp.listen' "$work/prefix/share/man/man5/svcd.properties.5"

# Against a sanitized svcd (tools/test.sh --sanitize), the plugin and its test are built the same
# way: the test links the kit, which carries the sanitizers' runtime.
sanitize=()
if grep -q '^SVC_SANITIZE:BOOL=ON' "$build/CMakeCache.txt"; then
  flags=-fsanitize=address,undefined
  sanitize=(-DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags"
    -DCMAKE_MODULE_LINKER_FLAGS="$flags")
fi
cmake -S "$src/sdk/examples/hello" -B "$work/hello" -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo "${sanitize[@]}" >/dev/null
cmake --build "$work/hello" >/dev/null
# Its unit test, written with the installed test kit, built and run out of tree too.
test -x "$work/hello/hello_test" || { echo "hello_test was not built" >&2; exit 1; }
SVC_BUNDLED_PLUGIN_DIR="$work/prefix/lib/svc/plugins" "$work/hello/hello_test" --gtest_brief=1
cp "$work/hello/svc_plugin_hello.so" "$work/prefix/lib/svc/plugins/"

# With the bundled auth plugin beside it, so a key can read the event stream, and identities and
# the dashboard, to which hello adds its parts.
"$work/prefix/bin/svcd" --port 0 --data-dir "$work/data" --set admin.listen=127.0.0.1:0 \
  --set plugins.enabled=auth,identities,dashboard,hello --set hello.greeting=Howdy >"$work/svcd.log" 2>&1 &
pid=$!
port=""
for _ in $(seq 1 1200); do  # 60 s at most: a loaded machine may take long to start it
  port=$(sed -n 's/.*svcd ready: api http:\/\/[^:]*:\([0-9]*\).*/\1/p' "$work/svcd.log")
  [ -n "$port" ] && break
  sleep 0.05
done
[ -n "$port" ] || { cat "$work/svcd.log"; exit 1; }
admin=$(sed -n 's/.*svcd ready: .* admin http:\/\/[^:]*:\([0-9]*\).*/\1/p' "$work/svcd.log")
token=$(head -n1 "$work/data/admin.token")
answer=$(curl -sf "http://127.0.0.1:$port/api/hello/?name=agent")
echo "$answer"
[ "$answer" = '{"message":"Howdy, agent!"}' ] || { echo "unexpected answer" >&2; exit 1; }
curl -sf "http://127.0.0.1:$port/api/health/" | grep -q '"name":"hello"'

# The plugin reads its own keys and shared ones, never the operator's or the database's secrets.
sees=$(sed -n 's/.*hello configured; it sees //p' "$work/svcd.log")
for key in hello.greeting public.base_url data.dir; do
  grep -qw "$key" <<<"$sees" || { echo "hello does not see $key: $sees" >&2; exit 1; }
done
for key in admin.token db.url auth.rate.token_per_minute plugins.dir; do
  if grep -qw "$key" <<<"$sees"; then echo "hello sees $key: $sees" >&2; exit 1; fi
done

# hello declares its own event type, hello.greeted, and publishes it: ?types= selects it.
op() { curl -sf -X POST -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
  "http://127.0.0.1:$admin$1" -d "$2"; }
api() { curl -s -X POST -H 'Content-Type: application/json' "http://127.0.0.1:$port$1" "${@:2}"; }
op /admin/auth/users/ '{"email":"writer@example.com","password":"correct horse"}' >/dev/null
device=$(api /api/auth/device/)
op /admin/auth/device/approve/ "{\"user_code\":\"$(jq -r .user_code <<<"$device")\",\
\"user\":\"writer@example.com\"}" >/dev/null
key=$(api /api/auth/device/token/ -d "{\"device_code\":\"$(jq -r .device_code <<<"$device")\"}" |
  jq -r .management_key)
[ -n "$key" ] && [ "$key" != null ] || { echo "no management key" >&2; exit 1; }
# hello's part of identities: a member, a create field; nothing outside hello's folder knows it.
made=$(api /api/identities/ -H "Authorization: Bearer $key" -d '{"name":"Ada","hello_greeting":"Ahoy"}')
[ "$(jq -r .hello.greeting <<<"$made")" = Ahoy ] || { echo "identity: $made" >&2; exit 1; }
[ "$(jq -r .email <<<"$made")" = null ] || { echo "identity without email: $made" >&2; exit 1; }
# Its action, which no route of the identities plugin names: served by the generic
# /api/identities/{uuid}/{action}/, whose description names the actions the enabled plugins declare.
acted=$(api "/api/identities/$(jq -r .uuid <<<"$made")/greet/" -H "Authorization: Bearer $key")
[ "$(jq -r .message <<<"$acted")" = 'Ahoy, Ada!' ] || { echo "greet action: $acted" >&2; exit 1; }
actions=$(curl -s "http://127.0.0.1:$port/api/schema/" |
  jq -r .components.schemas.IdentityActionInput.description)
grep -q 'declare: greet\.' <<<"$actions" || { echo "described actions: $actions" >&2; exit 1; }
# hello's dashboard page exists (a signed-out visitor is sent to sign in); an unknown one does not.
page=$(curl -s -o /dev/null -w '%{http_code} %{redirect_url}' "http://127.0.0.1:$port/dashboard/hello")
grep -Eq '^30[23] .*/dashboard/login' <<<"$page" || { echo "dashboard/hello: $page" >&2; exit 1; }
none=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/dashboard/hellox")
[ "$none" = 404 ] || { echo "dashboard/hellox: $none" >&2; exit 1; }
greeted=$(api /api/hello/greetings/ -H "Authorization: Bearer $key" -d '{"name":"agent"}')
[ "$greeted" = '{"message":"Howdy, agent!"}' ] || { echo "greeting: $greeted" >&2; exit 1; }
# The stream (which never ends) read for 3 s, or longer on a slow machine until `$2` is in it.
stream() {
  local out=""
  for t in 3 10 30; do
    out=$(curl -sN --max-time "$t" -H "Authorization: Bearer $key" \
      "http://127.0.0.1:$port/api/events/stream/?last_event_id=0$1" || true)
    grep -q "$2" <<<"$out" && break
  done
  printf '%s\n' "$out"
}
all=$(stream "" '^event: key.created')
filtered=$(stream "&types=hello.greeted" '"message":"Howdy, agent!"')
grep -q '^event: key.created' <<<"$all" || { echo "unfiltered: $all" >&2; exit 1; }
grep -q '^event: hello.greeted' <<<"$filtered" || { echo "filtered: $filtered" >&2; exit 1; }
grep -q '"message":"Howdy, agent!"' <<<"$filtered" || { echo "filtered: $filtered" >&2; exit 1; }
if grep -q '^event: key.created' <<<"$filtered"; then
  echo "types=hello.greeted let key.created through: $filtered" >&2
  exit 1
fi
# A type no loaded plugin declares is refused, by name.
refused=$(curl -s -w '\n%{http_code}' -H "Authorization: Bearer $key" \
  "http://127.0.0.1:$port/api/events/stream/?types=hello.greeted,note.created")
[ "$(tail -n1 <<<"$refused")" = 400 ] || { echo "undeclared type: $refused" >&2; exit 1; }
grep -q "unknown event type 'note.created'" <<<"$refused" || { echo "$refused" >&2; exit 1; }
# hello's own metric is on the operator's /metrics.
metrics=$(curl -sf -H "Authorization: Bearer $token" "http://127.0.0.1:$admin/metrics")
grep -qx 'svc_hello_greetings_total 1' <<<"$metrics" || { echo "$metrics" >&2; exit 1; }

# svcctl finds hello's commands in the plugin's own library (SVC_CLI_COMMANDS in its cli.cpp).
svcctl=("$work/prefix/bin/svcctl" --plugins-dir "$work/hello" --url "http://127.0.0.1:$port"
  --key "$key")
help=$("${svcctl[@]}" --help)
grep -q '^commands of plugin hello:' <<<"$help" || { echo "svcctl --help: $help" >&2; exit 1; }
help=$("${svcctl[@]}" hello --help)
grep -Eq '^  greet +greet NAME' <<<"$help" || { echo "svcctl hello --help: $help" >&2; exit 1; }
said=$("${svcctl[@]}" hello greet cli)
[ "$said" = 'Howdy, cli!' ] || { echo "svcctl hello greet: $said" >&2; exit 1; }
said=$("${svcctl[@]}" --json hello greet json)
[ "$(jq -r .message <<<"$said")" = 'Howdy, json!' ] || { echo "--json: $said" >&2; exit 1; }
# The installed svcctl looks where the installed svcd does, which holds hello too.
help=$("$work/prefix/bin/svcctl" hello --help)
grep -q '^  greet ' <<<"$help" || { echo "default plugins dir: $help" >&2; exit 1; }
echo "7 passed, 0 failed"
