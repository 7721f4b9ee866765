#!/usr/bin/env bash
# Contact search at scale: seed N contacts (default 100,000) for one identity on the embedded
# SQLite database, with their search grams computed as the plugin does (contact_search.h: FNV-1a
# of the account and each trigram of the case-folded fields), then time
# GET /api/contacts/search/?q=... with wrk (one connection, so the figure is the request's own
# latency) for a rare name, a common surname, an exact address, a number's digits, a two-letter
# query (the scan path) and a query most contacts match (`example`). The target is a p50 under
# 10 ms at 100,000 contacts per identity. Before timing, each query's count is checked against a
# plain scan of the table, so the seeded grams are the plugin's own.
#   benchmarks/load_contacts_search.sh [BUILD_DIR] [CONTACTS] [SECONDS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
count=${2:-100000}
secs=${3:-5}
work=$(mktemp -d /tmp/svc-contacts.XXXXXX)
cleanup() {
  [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
source "$root/benchmarks/bench_lib.sh"
plugins=auth,identities,contacts
bench_start_svcd --set plugins.enabled=$plugins
bench_login
uuid=$(curl -sf -X POST "http://127.0.0.1:$port/api/identities/" -H "Authorization: Bearer $key" \
  -H 'Content-Type: application/json' -d '{"name":"Bench"}' | json uuid)
account=$(curl -sf "http://127.0.0.1:$port/api/health/whoami/" -H "Authorization: Bearer $key" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["account"]["id"])')
kill "$pid" && wait "$pid" 2>/dev/null || true
pid=

echo "seeding $count contacts..."
python3 - "$work/data/svc.db" "$account" "$uuid" "$count" <<'PY'
import random, sqlite3, sys, time
db, account, identity, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
rng = random.Random(17)
syllables = ["an", "bel", "cor", "dra", "el", "fin", "gar", "hol", "is", "jo", "ka", "lin", "mar",
             "nor", "os", "pel", "quin", "ros", "sta", "tor", "ul", "vin", "wes", "xan", "yor", "zel"]
def word(n):
    return "".join(rng.choice(syllables) for _ in range(n)).capitalize()
firsts = [word(rng.randint(1, 2)) for _ in range(400)]
lasts = [word(rng.randint(2, 3)) for _ in range(3000)]
domains = ["example.com", "example.org", "mail.example.net", "corp.example"]

MASK = (1 << 64) - 1
def fnv(h, data):
    for b in data:
        h = ((h ^ b) * 1099511628211) & MASK
    return h
prefix = fnv(14695981039346656037, account.encode() + b"\x1f")
def grams(text):
    keys = set()
    for line in text.split("\n"):
        for k in range(len(line) - 2):
            keys.add(fnv(prefix, line[k:k + 3].encode()) & 0x7FFFFFFFFFFFFFFF)
    return keys

con = sqlite3.connect(db)
con.execute("PRAGMA journal_mode=WAL")
con.execute("PRAGMA synchronous=OFF")
start = (int(time.time()) - 86400) * 1000000
rows, gram_rows = [], []
for i in range(count):
    cid = "%08x-0000-4000-8000-%012x" % (i, i)
    first, last = rng.choice(firsts), rng.choice(lasts)
    email = "%s.%s%d@%s" % (first.lower(), last.lower(), i, rng.choice(domains))
    name = "%s %s" % (first, last)
    nick = first[:4] if i % 3 == 0 else ""
    phone = "+1415%07d" % (i * 7919 % 10**7) if i % 2 == 0 else ""  # unique
    text = "\n".join(f.lower() for f in (email, name, nick, phone) if f)
    at = start + i * 1000
    rows.append((cid, account, identity, email, email.lower(), phone, phone or "-" + cid, name,
                 nick, text, at, at))
    gram_rows.extend((k, cid) for k in grams(text))
    if len(rows) == 10000 or i == count - 1:
        con.executemany("INSERT INTO contacts (id, account_id, identity_uuid, email, email_key, "
                        "phone_number, phone_key, display_name, nickname, search_text, created_us, "
                        "updated_us) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        con.executemany("INSERT OR IGNORE INTO contact_grams (gram_key, contact_id) VALUES (?, ?)",
                        gram_rows)
        rows, gram_rows = [], []
con.commit()
con.execute("ANALYZE")
con.close()
PY
echo "grams: $(sqlite3 "$work/data/svc.db" 'SELECT COUNT(*) FROM contact_grams')," \
  "database: $(du -h "$work/data/svc.db" | cut -f1)"

bench_start_svcd --set plugins.enabled=$plugins
# A contact that exists, for the exact-address and rare-name queries.
sample=$(sqlite3 "$work/data/svc.db" "SELECT email || '|' || display_name FROM contacts ORDER BY created_us LIMIT 1 OFFSET $((count * 3 / 10))")
address=${sample%%|*}
surname=${sample##* }
measure() {  # measure LABEL Q
  local q=$2 url got expected out
  url="http://127.0.0.1:$port/api/contacts/search/?identity=$uuid&limit=50&q=$(python3 -c 'import sys,urllib.parse; print(urllib.parse.quote(sys.argv[1]))' "$q")"
  curl -sS "$url" -H "Authorization: Bearer $key" >"$work/answer.json"
  got=$(python3 -c 'import json,sys; b=json.load(sys.stdin); print("%s%s" % (b["count"], "" if b["count_is_exact"] else "+"))' \
    <"$work/answer.json") || { echo "search '$q' answered:" >&2; cat "$work/answer.json" >&2; exit 1; }
  expected=$(sqlite3 "$work/data/svc.db" "SELECT COUNT(*) FROM contacts WHERE instr(search_text, lower('$q')) > 0")
  case "$got" in
    *+) [ "$expected" -ge "${got%+}" ] ;;
    *) [ "$got" = "$expected" ] ;;
  esac || { echo "search '$q' counted $got, the table holds $expected" >&2; exit 1; }
  out=$(wrk -t1 -c1 -d"${secs}s" --latency -H "Authorization: Bearer $key" "$url")
  printf "%-26s %-30s count=%-7s p50 %-8s p99 %-8s (%s req/s)\n" "$1" "q=$q" "$got" \
    "$(echo "$out" | awk '$1 == "50%" {print $2}')" "$(echo "$out" | awk '$1 == "99%" {print $2}')" \
    "$(echo "$out" | awk '/Requests\/sec/ {print $2}')"
}
echo "contacts: $count in one identity"
measure "exact address" "$address"
measure "surname" "$surname"
measure "surname, other case" "$(echo "$surname" | tr '[:lower:]' '[:upper:]')"
measure "first name + surname" "$(echo "$sample" | cut -d'|' -f2)"
measure "digits of a number" "555"
measure "part of a number" "4151234"
measure "two letters (scan)" "zq"
measure "common (most match)" "example"
