#!/usr/bin/env python3
"""The clients of benchmarks/load_failover.sh: accounts with identities, then CLIENTS threads
writing contacts through the load balancer while one svcd and then one database node are killed;
every request's outcome is recorded, and every acknowledged contact is looked for afterwards
through each surviving svcd. Exit 1 when one is missing."""
import argparse
import collections
import http.client
import json
import os
import subprocess
import threading
import time

p = argparse.ArgumentParser()
p.add_argument("--root", required=True)
p.add_argument("--lb", type=int, required=True)
p.add_argument("--api", type=int, nargs=3, required=True)
p.add_argument("--admin", type=int, nargs=3, required=True)
p.add_argument("--token", nargs=3, required=True)
p.add_argument("--kill-svcd", type=int, required=True)  # the pid of svcd 1
p.add_argument("--kill-node", type=int, required=True)  # a database node of another machine
p.add_argument("--seconds", type=float, default=60)
p.add_argument("--clients", type=int, default=16)
p.add_argument("--accounts", type=int, default=16)
args = p.parse_args()


def call(port, method, path, body=None, key=None, conn=None):
    c = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = "Bearer " + key
    c.request(method, path, json.dumps(body) if body is not None else None, headers)
    r = c.getresponse()
    data = r.read()
    if conn is None:
        c.close()
    return r.status, data, r.getheader("X-Svc-Server", "?")


def ok(status, data, what):
    if status // 100 != 2:
        raise SystemExit(f"{what} answered {status}: {data[:300]!r}")
    return json.loads(data)


def account(i):
    """A user signed in by the device flow, with one identity, made through svcd i % 3."""
    n = i % 3
    api, admin, token = args.api[n], args.admin[n], args.token[n]
    email = f"failover{i}@example.com"
    ok(*call(admin, "POST", "/admin/auth/users/", {"email": email, "password": "correct horse"},
             token)[:2], "user")
    d = ok(*call(api, "POST", "/api/auth/device/")[:2], "device")
    ok(*call(admin, "POST", "/admin/auth/device/approve/",
             {"user_code": d["user_code"], "user": email}, token)[:2], "approve")
    key = ok(*call(api, "POST", "/api/auth/device/token/", {"device_code": d["device_code"]})[:2],
             "token")["management_key"]
    ident = ok(*call(api, "POST", "/api/identities/", {"name": "agent"}, key)[:2], "identity")
    return key, ident["uuid"]


accounts = [account(i) for i in range(args.accounts)]
outcomes = []  # (seconds since start, status or 0, server, note)
acked = collections.defaultdict(set)  # identity -> contact uuids acknowledged
lock = threading.Lock()
start = time.monotonic()
deadline = start + args.seconds
marks = {}


def client(n):
    key, ident = accounts[n % len(accounts)]
    conn, seq = None, 0
    while time.monotonic() < deadline:
        seq += 1
        body = {"email": f"c{n}-{seq}@example.com"}
        t = time.monotonic() - start
        try:
            conn = conn or http.client.HTTPConnection("127.0.0.1", args.lb, timeout=60)
            status, data, server = call(args.lb, "POST", f"/api/contacts/?identity={ident}",
                                        body, key, conn)
            note = ""
            if status == 201:
                with lock:
                    acked[ident].add(json.loads(data)["uuid"])
            else:
                note = data[:160].decode(errors="replace")
        except (OSError, http.client.HTTPException) as e:
            status, server, note = 0, "?", type(e).__name__ + ": " + str(e)[:100]
            conn.close()
            conn = None
        with lock:
            outcomes.append((t, status, server, note))


def killer():
    time.sleep(args.seconds / 3)
    os.kill(args.kill_svcd, 9)
    marks["svcd 1 killed"] = time.monotonic() - start
    time.sleep(max(0.0, start + 2 * args.seconds / 3 - time.monotonic()))
    subprocess.run(["bash", args.root + "/tools/galera.sh", "kill", str(args.kill_node)],
                   check=True)
    marks[f"database node {args.kill_node} killed"] = time.monotonic() - start


threads = [threading.Thread(target=client, args=(n,)) for n in range(args.clients)]
threads.append(threading.Thread(target=killer))
for t in threads:
    t.start()
for t in threads:
    t.join()

writes = len(outcomes)
failed = [o for o in outcomes if not 200 <= o[1] < 300]
print(f"writes {writes} ({writes / args.seconds:.0f}/s), failed {len(failed)} "
      f"({100.0 * len(failed) / max(writes, 1):.2f} %; target <= 0.5 %), "
      f"acknowledged {sum(len(s) for s in acked.values())}")
for what, at in sorted(marks.items(), key=lambda m: m[1]):
    print(f"  {what} at {at:.1f} s")
by_kind = collections.Counter((o[1], o[2], o[3][:90]) for o in failed)
for (status, server, note), count in by_kind.most_common(12):
    print(f"  {count} x {status or 'no answer'} via {server}: {note}")
if failed:
    print("  failures at (s): " + " ".join(f"{o[0]:.1f}" for o in failed[:40]))

# The killed node rejoins; its svcd must become ready again before it is read through.
subprocess.run(["bash", args.root + "/tools/galera.sh", "start", str(args.kill_node)], check=True)
survivors = [n for n in range(3) if n != 0]
for n in survivors:
    for _ in range(600):
        try:
            if call(args.api[n], "GET", "/api/health/")[0] == 200:
                break
        except OSError:
            pass
        time.sleep(0.1)

lost = 0
for n in survivors:
    missing = duplicates = 0
    for key, ident in accounts:
        seen, emails, offset = set(), collections.Counter(), 0
        conn = http.client.HTTPConnection("127.0.0.1", args.api[n], timeout=60)
        while True:
            page = ok(*call(args.api[n], "GET",
                            f"/api/contacts/?identity={ident}&limit=200&offset={offset}", None,
                            key, conn)[:2], f"svcd {n + 1} list")
            for c in page["results"]:
                seen.add(c["uuid"])
                emails[c.get("email")] += 1
            offset += 200
            if not page.get("next"):
                break
        conn.close()
        missing += len(acked[ident] - seen)
        duplicates += sum(v - 1 for v in emails.values() if v > 1)
    print(f"svcd {n + 1}: {missing} acknowledged contacts missing, {duplicates} stored twice")
    lost += missing
raise SystemExit(1 if lost else 0)
