# shellcheck shell=bash
# Shared by load_writes.sh (sourced): accounts with keys and identities, the wrk run posting
# contacts, and the MariaDB side (SQL, the general log's command count, sysbench).

sql() {  # sql mysql://user:pass@host:port[/db] STATEMENT: prints the rows, tab-separated
  python3 - "$1" "$2" <<'PY'
import subprocess, sys, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
args = ["mariadb", "--no-defaults", "-N", "-B", "-h", u.hostname, "-P", str(u.port or 3306),
        "-u", urllib.parse.unquote(u.username), "-p" + urllib.parse.unquote(u.password or "")]
if u.path.strip("/"):
    args.append(u.path.strip("/"))
sys.exit(subprocess.run(args + ["-e", sys.argv[2]]).returncode)
PY
}

# writes_setup PORT ADMIN_PORT TOKEN N LUA: N accounts made at once (device logins approved by the
# operator), each with an identity; LUA gets their keys and identities for wrk, LUA.txt one
# "key identity" a line.
writes_setup() {
  python3 - "$@" <<'PY'
import concurrent.futures, json, sys, urllib.request
port, admin, token, n, out = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
def post(url, body=None, key=None):
    h = {"Content-Type": "application/json"}
    if key:
        h["Authorization"] = "Bearer " + key
    req = urllib.request.Request(url, method="POST", data=json.dumps(body or {}).encode(), headers=h)
    with urllib.request.urlopen(req) as r:
        return json.load(r) if r.status != 204 else {}
api, op = "http://127.0.0.1:%s" % port, "http://127.0.0.1:%s" % admin
def account(i):
    email = "writer%d@example.com" % i
    post(op + "/admin/auth/users/", {"email": email, "password": "correct horse"}, token)
    device = post(api + "/api/auth/device/")
    post(op + "/admin/auth/device/approve/", {"user_code": device["user_code"], "user": email}, token)
    key = post(api + "/api/auth/device/token/", {"device_code": device["device_code"]})["management_key"]
    return key, post(api + "/api/identities/", {"name": "Writer %d" % i}, key)["uuid"]
with concurrent.futures.ThreadPoolExecutor(8) as pool:
    creds = list(pool.map(account, range(n)))
with open(out, "w") as f:
    f.write("creds = {\n%s}\n" % "".join('  {"%s", "%s"},\n' % c for c in creds))
with open(out + ".txt", "w") as f:
    f.write("".join("%s %s\n" % c for c in creds))
PY
}

# writes_wrk PORT CONNECTIONS LUA TAG [SECONDS]: wrk posting contacts round-robin over the
# accounts; prints wrk's output and a line "WRK writes=N failures=F rate=R p50_ms=.. p99_ms=..".
writes_wrk() {
  local script=$base/post_$4.lua
  cat "$3" - >"$script" <<LUA
local tag = "$4"
-- Globals, not locals: setup() sets "me" in each thread, done() reads each thread's "failures".
threads, n, failures, me = {}, 0, 0, 0
function setup(thread)
  thread:set("me", #threads)
  table.insert(threads, thread)
end
function request()
  n = n + 1
  local c = creds[(n + me * 7) % #creds + 1]
  local body = '{"email":"w-' .. tag .. '-' .. me .. '-' .. n .. '@example.com"}'
  return wrk.format("POST", "/api/contacts/?identity=" .. c[2],
    {["Authorization"] = "Bearer " .. c[1], ["Content-Type"] = "application/json"}, body)
end
function response(status, headers, body)
  if status < 200 or status > 299 then failures = failures + 1 end
end
function done(summary, latency, requests)
  local f = summary.errors.connect + summary.errors.read + summary.errors.write +
    summary.errors.timeout
  for _, t in ipairs(threads) do f = f + t:get("failures") end
  local ok = summary.requests - f
  io.write(string.format("WRK writes=%d failures=%d rate=%.1f p50_ms=%.1f p99_ms=%.1f\n", ok, f,
    ok / (summary.duration / 1e6), latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
LUA
  wrk -c"$2" -t2 -d"${5:-$secs}" --latency -s "$script" "http://127.0.0.1:$1"
}

cpu_ticks() {  # cpu_ticks PID: the user and system CPU the process has used, in clock ticks
  awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0
}

# cpu_per_write NAME PID TICKS_BEFORE WRITES: the process's CPU per write since TICKS_BEFORE
cpu_per_write() {
  python3 -c "import sys, os; t = (int(sys.argv[3]) - int(sys.argv[2])) / os.sysconf('SC_CLK_TCK')
print('  %s: %.2f ms CPU per write (%.1f s)' % (sys.argv[1], 1000 * t / max(int(sys.argv[4]), 1), t))" \
    "$1" "$3" "$(cpu_ticks "$2")" "$4"
}

writes_report() {  # writes_report NAME WRK_OUTPUT
  sed -n 's/^WRK writes=\([0-9]*\) failures=\([0-9]*\) rate=\([0-9.]*\) p50_ms=\([0-9.]*\) p99_ms=\([0-9.]*\)/\3 \1 \2 \4 \5/p' "$2" |
    while read -r rate writes failures p50 p99; do
      echo "$1: $rate writes/s ($writes in ${secs} s), p50 $p50 ms, p99 $p99 ms, failures $failures"
    done
  if ! grep -q '^WRK ' "$2"; then
    cat "$2" >&2
    return 1
  fi
  # A write that failed fails the benchmark (and its smoke test).
  if ! grep -q '^WRK writes=[0-9]* failures=0 ' "$2"; then
    echo "$1: some writes failed" >&2
    return 1
  fi
}

# writes_one PORT LUA N: N POSTs one after the other (50 ms apart) with the first account, each
# answering 201, in a window of max(2, N/20 + 1) seconds.
writes_one() {
  python3 - "$1" "$2.txt" "$3" <<'PY'
import http.client, json, sys, time
port, creds, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
key, identity = open(creds).readline().split()
start = time.monotonic()
for i in range(n):
    c = http.client.HTTPConnection("127.0.0.1", port)
    c.request("POST", "/api/contacts/?identity=" + identity, json.dumps({"email": "alone%d@example.com" % i}),
              {"Authorization": "Bearer " + key, "Content-Type": "application/json"})
    r = c.getresponse()
    if r.status != 201:
        sys.exit("a POST alone answered %d: %s" % (r.status, r.read()))
    c.close()
    time.sleep(max(0, start + (i + 1) * 0.05 - time.monotonic()))
time.sleep(max(0, start + max(2, n / 20 + 1) - time.monotonic()))
PY
}

general_log_on() {  # general_log_on SERVER FILE
  sql "$1" "SET GLOBAL log_output = 'FILE'; SET GLOBAL general_log_file = '$2'; SET GLOBAL general_log = 1"
}
general_log_off() { sql "$1" "SET GLOBAL general_log = 0; FLUSH GENERAL LOGS"; }

# general_log_count SERVER DB FILE WRITES TOP [IDLE_FILE [MOST]]: the commands svcd's connections
# (those on DB: open now, or connected during the log) sent, per write; TOP > 0 also lists the
# most frequent texts (values as ?). IDLE_FILE: a log of a window as long without requests, whose
# commands (the background pollers') are taken off FILE's, text by text. MOST: fails when there
# were more per write.
general_log_count() {
  local ids
  ids=$(sql "$1" "SELECT GROUP_CONCAT(ID) FROM information_schema.PROCESSLIST WHERE DB = '$2'")
  python3 - "$2" "$3" "$4" "$5" "$ids" "${6:-}" "${7:-}" <<'PY'
import collections, re, sys
db, path, writes, top, ids, idle, most = (sys.argv[1], sys.argv[2], int(sys.argv[3]),
                                          int(sys.argv[4]), sys.argv[5], sys.argv[6], sys.argv[7])
ours = set(ids.split(",")) if ids and ids != "NULL" else set()
commands = ("Query|Prepare|Execute|Close stmt|Reset stmt|Connect|Quit|Init DB|Ping|Fetch|"
            "Long Data|Set option|Change user|Reset connection|Field List|Statistics")
line_re = re.compile(r"^(?:\d{6}\s+\d{1,2}:\d\d:\d\d)?\s+(\d+) (%s)\t?(.*)$" % commands)
def commands(path):
    seen = []
    for line in open(path, errors="replace"):
        m = line_re.match(line.rstrip("\n"))
        if not m:
            continue
        thread, command, text = m.groups()
        if command == "Connect" and re.search(r" on %s\b" % re.escape(db), text):
            ours.add(thread)
        seen.append((thread, command, " ".join(text.split())))
    return seen
def texts(seen):
    # Values as ?: an Execute's text has them in; the statement is what counts.
    plain = lambda t: re.sub(r"'(?:[^'\\]|\\.)*'|\b\d+\b", "?", t)[:100]
    return collections.Counter((c, plain(t)) for th, c, t in seen if th in ours)
mine = texts(commands(path))
if idle:
    mine.subtract(texts(commands(idle)))
    mine = +mine  # what only the idle window had is noise, not negative requests
total = sum(mine.values())
by_command = collections.Counter()
for (c, _), n in mine.items():
    by_command[c] += n
print("  %d commands for %d writes: %.1f per write (%s)" % (
    total, writes, total / max(writes, 1), ", ".join("%s %d" % kv for kv in by_command.most_common())))
for (c, t), n in mine.most_common(top):
    print("  %6.1f  %-10s %s" % (n / max(writes, 1), c, t))
if most and total / max(writes, 1) > float(most):
    sys.exit("  more than %s commands per write" % most)
PY
}

# writes_sysbench SERVER SECONDS: oltp_insert with 64 threads in a schema of its own; prints the
# transactions per second.
writes_sysbench() {
  local schema=bench_sysbench_$$ args
  if ! command -v sysbench >/dev/null; then
    echo 0
    return 0
  fi
  sql "$1" "CREATE DATABASE $schema"
  read -r -a args < <(python3 - "$1" "$schema" <<'PY'
import sys, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
print("--db-driver=mysql --mysql-host=%s --mysql-port=%d --mysql-user=%s --mysql-password=%s "
      "--mysql-db=%s --tables=1 --table-size=10000" % (u.hostname, u.port or 3306,
      urllib.parse.unquote(u.username), urllib.parse.unquote(u.password or ""), sys.argv[2]))
PY
  )
  sysbench oltp_insert "${args[@]}" prepare >/dev/null
  sysbench oltp_insert "${args[@]}" --threads=64 --time="$2" run |
    sed -n 's/.*transactions: *[0-9]* *(\([0-9.]*\) per sec.).*/\1/p'
  sql "$1" "DROP DATABASE $schema"
}
