# Shared by the load scripts (sourced): start svcd on free ports in $work and sign in.
# Needs: $build (the build directory) and $work (a temporary directory). Sets pid, port, admin,
# token; bench_login sets key (a management key from a real device login).
json() { python3 -c "import json,sys; print(json.load(sys.stdin)[\"$1\"])"; }

bench_start_svcd() {  # bench_start_svcd [svcd args...]
  # A restart's log starts empty before the wait below reads it: truncated by the child, the file
  # could still show the last run's ready line to a fast reader, and then its port read as empty.
  rm -f "$work/svcd.log"
  # No DNS server off this machine: inbound mail's checks say temperror at once (a caller may
  # name its own with --set email.dns.server=...).
  "$build/bin/svcd" --port 0 --data-dir "$work/data" --set admin.listen=127.0.0.1:0 --set email.smtp.listen=127.0.0.1:0 \
    --set email.dns.server=127.0.0.1:9 "$@" \
    >"$work/svcd.log" 2>&1 &
  pid=$!
  # The whole line, not its first words: a line can be read while it is being written.
  local ready='svcd ready: api https?://[^:]*:[0-9]+ admin (http://[^:]*:[0-9]+|disabled) plugins'
  until grep -Eq "$ready" "$work/svcd.log" 2>/dev/null; do
    kill -0 "$pid" 2>/dev/null || { cat "$work/svcd.log" >&2; exit 1; }
    sleep 0.02
  done
  port=$(sed -n 's/.*svcd ready: api http:\/\/[^:]*:\([0-9]*\).*/\1/p' "$work/svcd.log")
  admin=$(sed -n 's/.*admin http:\/\/[^:]*:\([0-9]*\).*/\1/p' "$work/svcd.log")
  token=$(cat "$work/data/admin.token")
}

bench_get() {  # bench_get URL: the body of an authenticated GET (with $key), or exit saying why not
  local reply
  reply=$(curl -s -w '\n%{http_code}' "$1" -H "Authorization: Bearer $key")
  if [ "${reply##*$'\n'}" != 200 ]; then
    echo "GET $1 answered ${reply##*$'\n'}: ${reply%$'\n'*}" >&2
    tail -n 20 "$work/svcd.log" >&2
    exit 1
  fi
  echo "${reply%$'\n'*}"
}

bench_op() {  # bench_op PATH JSON: an operator call
  curl -sf -X POST "http://127.0.0.1:$admin$1" -H "Authorization: Bearer $token" \
    -H 'Content-Type: application/json' -d "$2" >/dev/null
}

bench_login() {
  bench_op /admin/auth/users/ '{"email":"bench@example.com","password":"correct horse"}'
  local device
  device=$(curl -sf -X POST "http://127.0.0.1:$port/api/auth/device/")
  bench_op /admin/auth/device/approve/ \
    "{\"user_code\":\"$(echo "$device" | json user_code)\",\"user\":\"bench@example.com\"}"
  key=$(curl -sf -X POST "http://127.0.0.1:$port/api/auth/device/token/" \
    -H 'Content-Type: application/json' \
    -d "{\"device_code\":\"$(echo "$device" | json device_code)\"}" | json management_key)
}
