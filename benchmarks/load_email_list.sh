#!/usr/bin/env bash
# The message list under a big mailbox: seed N messages (default 1,000,000, in threads of ten)
# into one identity's inbox on the embedded SQLite database, then time
# GET /api/email-messages/?created_after=...&limit=50 with wrk (one connection, so the figure
# is the request's own latency). Run it for 10,000 and for 1,000,000 and compare the medians.
#   benchmarks/load_email_list.sh [BUILD_DIR] [MESSAGES] [SECONDS]
# The cursor is where a polling agent's is: 200 messages before the newest. A second run puts it
# at the middle of the mailbox: half a million newer messages, of which the list counts at most
# email.messages.exact_count (10,000) and says count_is_exact=False.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
count=${2:-1000000}
secs=${3:-5}
work=$(mktemp -d /tmp/svc-list.XXXXXX)
cleanup() {
  [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
source "$root/benchmarks/bench_lib.sh"
bench_start_svcd
bench_login
identity=$(curl -sf -X POST "http://127.0.0.1:$port/api/identities/" -H "Authorization: Bearer $key" \
  -H 'Content-Type: application/json' -d '{"name":"Bench","email_identifier":"bench"}')
uuid=$(echo "$identity" | json uuid)
inbox=$(echo "$identity" | python3 -c 'import json,sys; print(json.load(sys.stdin)["email"]["id"])')
account=$(curl -sf "http://127.0.0.1:$port/api/health/whoami/" -H "Authorization: Bearer $key" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["account"]["id"])')
kill "$pid" && wait "$pid" 2>/dev/null || true
pid=

# One message every 10 ms from a day ago on; ids made of the row number keep them unique.
start_us=$(( ($(date +%s) - 86400) * 1000000 ))
echo "seeding $count messages..."
sqlite3 "$work/data/svc.db" <<SQL
PRAGMA journal_mode=WAL;
PRAGMA synchronous=OFF;
BEGIN;
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < $count - 1)
INSERT INTO email_messages (id, account_id, identity_uuid, inbox_id, thread_id, direction,
  from_email, to_json, cc_json, bcc_json, reply_to_json, references_json, subject, content, html,
  message_id, message_key, in_reply_to, status, is_read, created_us, updated_us)
SELECT printf('%08x-0000-4000-8000-%012x', i, i), '$account', '$uuid', '$inbox',
  printf('%08x-0000-4000-9000-%012x', i / 10, i / 10), 'incoming', 'sender' || (i % 97) || '@example.com',
  '["bench@agents.test"]', '[]', '[]', '[]', '[]', 'Subject number ' || (i / 10),
  'Body of message ' || i, '', printf('<%d@example.com>', i), lower(hex(randomblob(32))), '', '',
  i % 3 = 0, $start_us + i * 10000, $start_us + i * 10000
FROM n;
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ($count + 9) / 10 - 1)
INSERT INTO email_threads (id, account_id, identity_uuid, inbox_id, subject, preview,
  message_count, unread_count, attachment_names, participants, latest_us, created_us)
SELECT printf('%08x-0000-4000-9000-%012x', i, i), '$account', '$uuid', '$inbox',
  'Subject number ' || i, 'Body', 10, 7, '[]', '[]', $start_us + (i * 10 + 9) * 10000,
  $start_us + i * 100000
FROM n;
COMMIT;
ANALYZE;
SQL

bench_start_svcd
iso() { python3 -c "import datetime,sys; print(datetime.datetime.fromtimestamp(int(sys.argv[1])/1e6, datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%S.%fZ'))" "$1"; }
measure() {  # measure LABEL CURSOR_US
  local url="http://127.0.0.1:$port/api/email-messages/?identity=$uuid&created_after=$(iso "$2")&limit=50"
  local got
  got=$(bench_get "$url" |
    python3 -c 'import json,sys; b=json.load(sys.stdin); print("%s exact=%s" % (b["count"], b["count_is_exact"]))')
  local out
  out=$(wrk -t1 -c1 -d"${secs}s" --latency -H "Authorization: Bearer $key" "$url")
  printf "%-28s count=%-16s p50 %s  p99 %s  (%s req/s)\n" "$1" "$got" \
    "$(echo "$out" | awk '$1 == "50%" {print $2}')" "$(echo "$out" | awk '$1 == "99%" {print $2}')" \
    "$(echo "$out" | awk '/Requests\/sec/ {print $2}')"
}
echo "messages: $count"
measure "cursor 200 before newest" $((start_us + (count - 200) * 10000 - 1))
measure "cursor at the middle" $((start_us + (count / 2) * 10000 - 1))
