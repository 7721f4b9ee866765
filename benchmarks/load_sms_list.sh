#!/usr/bin/env bash
# The SMS list under a big history: seed N messages (default 1,000,000, in conversations with 97
# other numbers) for one identity on the embedded SQLite database, then time
# GET /api/messages/?created_after=...&limit=50 with wrk (one connection, so the figure is the
# request's own latency), with the cursor where a polling agent's is (200 before the newest) and
# at the middle (half a million newer: the count stops at sms.messages.exact_count), and the
# first page without a cursor. Run it for 10,000 and for 1,000,000 and compare the medians.
#   benchmarks/load_sms_list.sh [BUILD_DIR] [MESSAGES] [SECONDS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
count=${2:-1000000}
secs=${3:-5}
work=$(mktemp -d /tmp/svc-smslist.XXXXXX)
cleanup() {
  [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
source "$root/benchmarks/bench_lib.sh"
bench_start_svcd --set plugins.enabled=auth,identities,sms
bench_login
identity=$(curl -sf -X POST "http://127.0.0.1:$port/api/identities/" -H "Authorization: Bearer $key" \
  -H 'Content-Type: application/json' -d '{"name":"Bench","provision_phone":true}')
uuid=$(echo "$identity" | json uuid)
phone=$(echo "$identity" | python3 -c 'import json,sys; print(json.load(sys.stdin)["phone"]["id"])')
number=$(echo "$identity" | python3 -c 'import json,sys; print(json.load(sys.stdin)["phone"]["number"])')
account=$(curl -sf "http://127.0.0.1:$port/api/health/whoami/" -H "Authorization: Bearer $key" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["account"]["id"])')
kill "$pid" && wait "$pid" 2>/dev/null || true
pid=

# One message every 10 ms from a day ago on, two in three incoming; ids from the row number.
start_us=$(( ($(date +%s) - 86400) * 1000000 ))
echo "seeding $count messages..."
sqlite3 "$work/data/svc.db" <<SQL
PRAGMA journal_mode=WAL;
PRAGMA synchronous=OFF;
BEGIN;
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < $count - 1)
INSERT INTO sms_messages (id, account_id, identity_uuid, phone_id, other_number, direction,
  from_number, to_number, body, segments, encoding, status, error_code, error_message,
  carrier_ref, extracted_code, is_read, created_us, updated_us)
SELECT printf('%08x-0000-4000-8000-%012x', i, i), '$account', '$uuid', '$phone',
  printf('+1415555%04d', i % 97), CASE WHEN i % 3 = 0 THEN 'outgoing' ELSE 'incoming' END,
  CASE WHEN i % 3 = 0 THEN '$number' ELSE printf('+1415555%04d', i % 97) END,
  CASE WHEN i % 3 = 0 THEN printf('+1415555%04d', i % 97) ELSE '$number' END,
  'Your code is ' || (100000 + i % 900000), 1, 'GSM-7',
  CASE WHEN i % 3 = 0 THEN 'delivered' ELSE 'received' END, '', '', 'seed:' || i,
  CAST(100000 + i % 900000 AS TEXT), i % 3 = 0, $start_us + i * 10000, $start_us + i * 10000
FROM n;
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 96)
INSERT INTO sms_conversations (id, account_id, identity_uuid, phone_id, other_number, preview,
  message_count, unread_count, latest_us)
SELECT '$phone' || '_' || printf('+1415555%04d', i), '$account', '$uuid', '$phone',
  printf('+1415555%04d', i), 'Your code is', $count / 97, $count / 150, $start_us + ($count - 97 + i) * 10000
FROM n;
COMMIT;
ANALYZE;
SQL

bench_start_svcd --set plugins.enabled=auth,identities,sms
iso() { python3 -c "import datetime,sys; print(datetime.datetime.fromtimestamp(int(sys.argv[1])/1e6, datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%S.%fZ'))" "$1"; }
measure() {  # measure LABEL QUERY
  local url="http://127.0.0.1:$port/api/messages/?identity=$uuid&limit=50$2"
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
measure "cursor 200 before newest" "&created_after=$(iso $((start_us + (count - 200) * 10000 - 1)))"
measure "cursor at the middle" "&created_after=$(iso $((start_us + (count / 2) * 10000 - 1)))"
measure "newest page, no cursor" ""

