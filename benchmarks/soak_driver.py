#!/usr/bin/env python3
"""Mixed-traffic soak driver for benchmarks/soak.sh (Python 3 standard library only).

Drives one svcd on 127.0.0.1, all operation kinds at once at steady rates, for MINUTES minutes:

  login      device login: POST /api/auth/device/, operator approve, POST .../token/ (200 + key)
  whoami     GET /api/health/whoami/ with a management key from one of those logins
  identity   POST /api/identities/ (201, with an inbox)
  smtp_in    one SMTP session to svcd's listener delivering one message to an identity's address
  send       POST /api/email-messages/compose/?identity=... to an outside address (201, queued)
  lp_approve long-poll {"device_code", "wait": true} on a code the operator approves 1-8 s later
  lp_expire  the same on a code nobody approves: answers expired_token when the code expires
  sse        GET /api/events/stream/ held open by a few clients for the whole run

and checks what must follow: every SSE client sees identity.created, email.received (by
Message-ID), email.sent, key.created for each login, and email.updated with status "sent" once the
relay (Postfix smtp-sink) took the message ("relay"). The latency table has, for sse and relay,
the delay from the operation's answer to the event; for lp_approve the delay from the approval
to the held answer; for lp_expire the delay past the code's expiry.

An error is any unexpected status or answer, an exception, a dropped stream, or an event that
never arrives (or arrives more than EVENT_DEADLINE seconds late). Exits 1 on any error or when
svcd's RSS at the end exceeds its RSS after warm-up (30 s in) by more than 10 %.
"""
import argparse
import collections
import email.message
import email.policy
import email.utils
import http.client
import json
import os
import random
import smtplib
import socket
import sys
import threading
import time

EVENT_DEADLINE = 60.0  # seconds an expected event may take
HOST = "127.0.0.1"  # the driver talks to nothing else

p = argparse.ArgumentParser()
p.add_argument("--port", type=int, required=True)
p.add_argument("--admin", type=int, required=True)
p.add_argument("--admin-token", required=True)
p.add_argument("--smtp", type=int, required=True)
p.add_argument("--pid", type=int, required=True)
p.add_argument("--data-dir", required=True, help="svcd's data.dir (the database's size is reported)")
p.add_argument("--key", required=True, help="a management key (from bench_login)")
p.add_argument("--user", required=True, help="the local user who approves device logins")
p.add_argument("--domain", required=True)
p.add_argument("--minutes", type=float, default=10)
p.add_argument("--expires", type=int, required=True, help="auth.device.expires_seconds")
p.add_argument("--streams", type=int, default=3)
p.add_argument("--max-rss-growth", type=float, default=10,
               help="percent of RSS growth from the warm-up to the end that fails the run")
# Operations a second.
p.add_argument("--rate-login", type=float, default=0.5)
p.add_argument("--rate-whoami", type=float, default=50)
p.add_argument("--rate-identity", type=float, default=0.5)
p.add_argument("--rate-smtp", type=float, default=3)
p.add_argument("--rate-send", type=float, default=1.5)
p.add_argument("--rate-longpoll", type=float, default=0.5)
args = p.parse_args()

DURATION = args.minutes * 60.0
WARMUP = min(30.0, DURATION / 2)
OPS = ["login", "whoami", "identity", "smtp_in", "send", "lp_approve", "lp_expire", "sse", "relay"]
RUN = "%x" % random.getrandbits(32)


def log(msg):
    print(msg, flush=True)


# ---------------------------------------------------------------------------------------------
# Bookkeeping


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.t0 = time.monotonic()
        self.lat = collections.defaultdict(list)  # (op, minute) -> [seconds]
        self.count = collections.Counter()
        self.errors = collections.Counter()
        self.samples = collections.defaultdict(list)  # op -> first error messages
        self.retries = 0  # requests resent after a reused keep-alive connection was closed

    def minute(self, t):
        return max(0, int((t - self.t0) // 60))

    def ok(self, op, t_start, seconds):
        with self.lock:
            self.count[op] += 1
            self.lat[(op, self.minute(t_start))].append(max(0.0, seconds))

    def error(self, op, why):
        with self.lock:
            self.count[op] += 1
            self.errors[op] += 1
            if len(self.samples[op]) < 8:
                self.samples[op].append("%.1fs %s" % (time.monotonic() - self.t0, why))
        log("ERROR %s: %s" % (op, why))


stats = Stats()
stop = threading.Event()


class Http:
    """One keep-alive connection. A request on a reused connection that the server had closed is
    sent once more on a new one (counted in stats.retries); anything else is the caller's."""

    def __init__(self, port, timeout=30):
        self.port, self.timeout, self.conn = port, timeout, None

    def close(self):
        if self.conn:
            self.conn.close()
        self.conn = None

    def request(self, method, path, body=None, headers=None):
        h = {"Host": "127.0.0.1"}
        h.update(headers or {})
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
        for attempt in (0, 1):
            fresh = self.conn is None
            if fresh:
                self.conn = http.client.HTTPConnection(HOST, self.port, timeout=self.timeout)
            try:
                self.conn.request(method, path, body=data, headers=h)
                r = self.conn.getresponse()
                raw = r.read()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                self.close()
                if fresh or attempt:
                    raise
                with stats.lock:
                    stats.retries += 1
                continue
            except Exception:
                self.close()
                raise
            if (r.getheader("Connection") or "").lower() == "close":
                self.close()
            try:
                doc = json.loads(raw) if raw else None
            except ValueError:
                doc = None
            return r.status, doc, raw


def auth(key):
    return {"Authorization": "Bearer " + key}


def expect_status(what, status, raw, want):
    if status != want:
        raise RuntimeError("%s answered %d (want %d): %s" % (what, status, want, raw[:200]))


class Pool:
    """Things made during the run (management keys, identities), picked at random."""

    def __init__(self, limit):
        self.items, self.lock, self.limit = [], threading.Lock(), limit

    def add(self, x):
        with self.lock:
            self.items.append(x)
            if len(self.items) > self.limit:
                self.items.pop(0)

    def pick(self):
        with self.lock:
            return random.choice(self.items)

    def __len__(self):
        return len(self.items)


keys = Pool(50)
keys.add(args.key)
identities = Pool(100000)  # (uuid, address)

# ---------------------------------------------------------------------------------------------
# Event expectations: (type, key) -> (op that caused it, monotonic time of its answer)


class Expectations:
    def __init__(self):
        self.lock = threading.Lock()
        self.want = {}

    def add(self, op, k, t_done):
        with self.lock:
            self.want[k] = (op, t_done)


expected = Expectations()


class SseClient(threading.Thread):
    def __init__(self, n):
        super().__init__(daemon=True, name="sse%d" % n)
        self.n = n
        self.seen = {}  # event key -> monotonic time first seen
        self.last_id = None
        self.events = 0
        self.pings = 0
        self.open = threading.Event()
        self.lock = threading.Lock()

    def event_key(self, etype, obj):
        if etype == "identity.created":
            return ("identity.created", obj.get("uuid"))
        if etype == "email.received":
            return ("email.received", (obj.get("message_id") or "").strip("<>"))
        if etype == "email.sent":
            return ("email.sent", obj.get("id"))
        if etype == "email.updated" and obj.get("direction") == "outgoing":
            if obj.get("status") == "sent":
                return ("email.relayed", obj.get("id"))
            if obj.get("status") == "failed":
                stats.error("relay", "message %s failed at the relay" % obj.get("id"))
        if etype == "key.created":
            return ("key.created", obj.get("prefix"))
        return None

    def dispatch(self, eid, etype, data):
        now = time.monotonic()
        if eid is None or etype is None or data is None:
            stats.error("sse", "stream %d: incomplete event id=%r event=%r" % (self.n, eid, etype))
            return
        if self.last_id is not None and int(eid) <= int(self.last_id):
            stats.error("sse", "stream %d: id %s after %s" % (self.n, eid, self.last_id))
        self.last_id = eid
        self.events += 1
        try:
            doc = json.loads(data)
        except ValueError:
            stats.error("sse", "stream %d: data is not JSON: %r" % (self.n, data[:100]))
            return
        if doc.get("type") != etype:
            stats.error("sse", "stream %d: event %s carries type %s" % (self.n, etype, doc.get("type")))
        k = self.event_key(etype, doc.get("object") or {})
        if k:
            with self.lock:
                self.seen.setdefault(k, now)

    def run(self):
        while not stop.is_set():
            conn = http.client.HTTPConnection(HOST, args.port, timeout=40)  # pings every 15 s
            try:
                h = {"Host": "127.0.0.1", "Accept": "text/event-stream"}
                h.update(auth(args.key))
                if self.last_id is not None:
                    h["Last-Event-ID"] = self.last_id
                conn.request("GET", "/api/events/stream/", headers=h)
                r = conn.getresponse()
                if r.status != 200:
                    raise RuntimeError("answered %d: %s" % (r.status, r.read()[:200]))
                eid = etype = data = None
                while not stop.is_set():
                    line = r.readline()
                    if not line:
                        raise RuntimeError("the server ended the stream")
                    line = line.decode().rstrip("\r\n")
                    if line == "":
                        if data is not None or etype is not None:
                            self.dispatch(eid, etype, data)
                        eid = etype = data = None
                    elif line.startswith(":"):
                        self.pings += 1
                    elif line.startswith("retry:"):
                        self.open.set()
                    elif line.startswith("id:"):
                        eid = line[3:].strip()
                    elif line.startswith("event:"):
                        etype = line[6:].strip()
                    elif line.startswith("data:"):
                        data = line[5:].lstrip() if data is None else data + "\n" + line[5:].lstrip()
            except Exception as e:  # a dropped stream is an error; resume from the last id
                if not stop.is_set():
                    stats.error("sse", "stream %d dropped: %r (resuming)" % (self.n, e))
                    time.sleep(1)
            finally:
                conn.close()


# ---------------------------------------------------------------------------------------------
# Operations


def device_start(c):
    s, doc, raw = c.request("POST", "/api/auth/device/")
    expect_status("device start", s, raw, 200)
    return doc


def approve(admin, user_code):
    s, doc, raw = admin.request("POST", "/admin/auth/device/approve/",
                                {"user_code": user_code, "user": args.user}, auth(args.admin_token))
    expect_status("approve", s, raw, 200)


def got_key(what, s, doc, raw):
    expect_status(what, s, raw, 200)
    k = (doc or {}).get("management_key", "")
    if not k.startswith("svc_mgmt_") or not doc.get("access"):
        raise RuntimeError("%s: no management key or access token: %s" % (what, raw[:200]))
    return k


class Op:
    """Runs fn every 1/rate seconds from the start until the end of the run (a slow call delays
    the next; none are made up for)."""

    def __init__(self, name, rate, fn):
        self.name, self.rate, self.fn = name, rate, fn
        self.c = Http(args.port)
        self.admin = Http(args.admin)

    def loop(self, t_end):
        if self.rate <= 0:
            return
        period = 1.0 / self.rate
        nxt = time.monotonic() + random.random() * period
        limit = int(self.rate * DURATION) + 2  # bounded in count as well as in time
        for _ in range(limit):
            nxt = max(nxt, time.monotonic())
            if nxt >= t_end or stop.is_set():
                break
            time.sleep(max(0.0, nxt - time.monotonic()))
            t = time.monotonic()
            try:
                if self.fn(self) is not False:
                    stats.ok(self.name, t, time.monotonic() - t)
            except Exception as e:
                stats.error(self.name, repr(e)[:300])
            nxt += period


def op_login(o):
    d = device_start(o.c)
    approve(o.admin, d["user_code"])
    s, doc, raw = o.c.request("POST", "/api/auth/device/token/", {"device_code": d["device_code"]})
    k = got_key("token", s, doc, raw)
    expected.add("login", ("key.created", k[:len("svc_mgmt_") + 4]), time.monotonic())
    s, who, raw = o.c.request("GET", "/api/health/whoami/", headers=auth(k))
    expect_status("whoami with the new key", s, raw, 200)
    keys.add(k)


def op_whoami(o):
    s, doc, raw = o.c.request("GET", "/api/health/whoami/", headers=auth(keys.pick()))
    expect_status("whoami", s, raw, 200)
    if doc.get("kind") != "management" or not (doc.get("account") or {}).get("id"):
        raise RuntimeError("whoami: %s" % raw[:200])


ident_n = [0]


def create_identity(c):
    ident_n[0] += 1
    body = {"name": "soak %s %d" % (RUN, ident_n[0])}
    if ident_n[0] % 5 == 0:
        body["email_identifier"] = "soak-%s-%d" % (RUN, ident_n[0])
    s, doc, raw = c.request("POST", "/api/identities/", body, auth(keys.pick()))
    expect_status("create identity", s, raw, 201)
    addr = ((doc or {}).get("email") or {}).get("address", "")
    if not doc.get("uuid") or not addr.endswith("@" + args.domain):
        raise RuntimeError("identity without uuid or inbox: %s" % raw[:200])
    if "email_identifier" in body and addr != body["email_identifier"] + "@" + args.domain:
        raise RuntimeError("identity has address %s, not %s" % (addr, body["email_identifier"]))
    expected.add("identity", ("identity.created", doc["uuid"]), time.monotonic())
    identities.add((doc["uuid"], addr))


def op_identity(o):
    create_identity(o.c)


smtp_n = [0]


def op_smtp(o):
    smtp_n[0] += 1
    n = smtp_n[0]
    _, rcpt = identities.pick()
    mid = "soak-%s-%d@sender.example" % (RUN, n)
    m = email.message.EmailMessage()
    m["From"] = "Sender %d <sender%d@sender.example>" % (n % 17, n % 17)
    m["To"] = rcpt
    m["Subject"] = "soak message %d" % n
    m["Message-ID"] = "<%s>" % mid
    m["Date"] = email.utils.formatdate()
    m.set_content(("Line %d of a soak message, with some text to file. " % n) * random.randint(5, 60))
    if n % 5 == 0:
        m.add_attachment(os.urandom(random.randint(200, 20000)), maintype="application",
                         subtype="octet-stream", filename="blob-%d.bin" % n)
    with smtplib.SMTP(HOST, args.smtp, local_hostname="soak.client", timeout=30) as s:
        refused = s.send_message(m)
        if refused:
            raise RuntimeError("refused: %r" % refused)
    expected.add("smtp_in", ("email.received", mid), time.monotonic())


send_n = [0]


def op_send(o):
    send_n[0] += 1
    uuid, _ = identities.pick()
    body = {"to_email": "peer%d@outside.example" % (send_n[0] % 50),
            "subject": "soak send %d" % send_n[0],
            "content": "Hello from the soak, message %d.\n" % send_n[0] * random.randint(1, 20)}
    s, doc, raw = o.c.request("POST", "/api/email-messages/compose/?identity=" + uuid, body,
                              auth(keys.pick()))
    expect_status("compose", s, raw, 201)
    if doc.get("status") != "queued" or doc.get("direction") != "outgoing":
        raise RuntimeError("compose: %s" % raw[:200])
    t = time.monotonic()
    expected.add("send", ("email.sent", doc["id"]), t)
    expected.add("relay", ("email.relayed", doc["id"]), t)


lp_n = [0]
lp_threads = []


def longpoll(code, approve_after, t_started):
    """Holds POST .../token/ {"wait": true}; approve_after None: nobody approves, it expires."""
    op = "lp_approve" if approve_after is not None else "lp_expire"
    c = Http(args.port, timeout=args.expires + 60)
    t_approved = [None]

    def approver():
        time.sleep(approve_after)
        t_approved[0] = time.monotonic()
        try:
            approve(Http(args.admin), code["user_code"])
        except Exception as e:
            stats.error(op, "approve: %r" % e)

    try:
        if approve_after is not None:
            threading.Thread(target=approver, daemon=True).start()
        s, doc, raw = c.request("POST", "/api/auth/device/token/",
                                {"device_code": code["device_code"], "wait": True})
        t = time.monotonic()
        if approve_after is not None:
            k = got_key("held token", s, doc, raw)
            if t_approved[0] is None:
                raise RuntimeError("held token answered before the approval")
            expected.add(op, ("key.created", k[:len("svc_mgmt_") + 4]), t)
            stats.ok(op, t_approved[0], t - t_approved[0])
        else:
            expiry = t_started + code["expires_in"]
            if s != 400 or (doc or {}).get("error") != "expired_token":
                raise RuntimeError("held token for an unapproved code answered %d after %.1f s "
                                   "(expiry %+.1f s): %s" % (s, t - t_started, t - expiry, raw[:200]))
            if t < expiry - 1:
                raise RuntimeError("expired_token %.1f s before the code's expiry" % (expiry - t))
            stats.ok(op, t_started, t - expiry)
    except Exception as e:
        stats.error(op, repr(e)[:300])
    finally:
        c.close()


def op_longpoll(o):
    lp_n[0] += 1
    t = time.monotonic()
    code = device_start(o.c)
    if code.get("expires_in") != args.expires:
        raise RuntimeError("expires_in %r, not %d" % (code.get("expires_in"), args.expires))
    after = None if lp_n[0] % 4 == 0 else random.uniform(1, 8)
    th = threading.Thread(target=longpoll, args=(code, after, t), daemon=True)
    th.start()
    lp_threads.append(th)
    return False  # counted when the held answer comes


# ---------------------------------------------------------------------------------------------
# svcd's process


def rss_kib():
    with open("/proc/%d/status" % args.pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def memory():
    """'RSS x MiB (anon a, file f), database d MiB': file-backed RSS is mostly the memory-mapped
    database (PRAGMA mmap_size), so it follows the database's size; anon includes SQLite's page
    caches (PRAGMA cache_size, per pooled session)."""
    v = {}
    with open("/proc/%d/status" % args.pid) as f:
        for line in f:
            k, _, rest = line.partition(":")
            if k in ("VmRSS", "RssAnon", "RssFile", "RssShmem"):
                v[k] = int(rest.split()[0]) / 1024
    db = sum(os.path.getsize(os.path.join(args.data_dir, n)) for n in ("svc.db", "svc.db-wal")
             if os.path.exists(os.path.join(args.data_dir, n))) / 2**20
    return "RSS %.1f MiB (anon %.1f, file %.1f, shmem %.1f), database %.1f MiB" % (
        v.get("VmRSS", 0), v.get("RssAnon", 0), v.get("RssFile", 0), v.get("RssShmem", 0), db)


def cpu_ticks():
    with open("/proc/%d/stat" % args.pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def percentile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else None


def main():
    deadline = threading.Timer(DURATION + 300, lambda: (log("driver: hard time limit"), os._exit(3)))
    deadline.daemon = True
    deadline.start()

    streams = [SseClient(i) for i in range(args.streams)]
    for s in streams:
        s.start()
    for s in streams:
        if not s.open.wait(10):
            log("driver: stream %d did not open" % s.n)
            return 2
    # Seed (with the streams open, so their events are expected too): identities to deliver to
    # and send from before the clock starts.
    seed = Http(args.port)
    for _ in range(20):
        create_identity(seed)

    stats.t0 = time.monotonic()
    t_end = stats.t0 + DURATION
    ops = [Op("login", args.rate_login, op_login), Op("whoami", args.rate_whoami, op_whoami),
           Op("identity", args.rate_identity, op_identity), Op("smtp_in", args.rate_smtp, op_smtp),
           Op("send", args.rate_send, op_send), Op("longpoll", args.rate_longpoll, op_longpoll)]
    threads = [threading.Thread(target=o.loop, args=(t_end,), daemon=True) for o in ops]
    for th in threads:
        th.start()
    log("driver: traffic for %.1f min: login %.2f/s, whoami %.1f/s, identity %.2f/s, smtp_in %.1f/s, "
        "send %.1f/s, long-poll %.2f/s (1 in 4 left to expire after %d s), %d SSE streams"
        % (args.minutes, args.rate_login, args.rate_whoami, args.rate_identity, args.rate_smtp,
           args.rate_send, args.rate_longpoll, args.expires, args.streams))

    hz = os.sysconf("SC_CLK_TCK")
    rss_samples = []
    rss_start = None
    last_ticks, last_t = cpu_ticks(), time.monotonic()
    last_drv, last_t_drv = sum(os.times()[:2]), time.monotonic()
    warm_done = False
    minute = 1
    while time.monotonic() < t_end:
        now = time.monotonic()
        if not warm_done and now >= stats.t0 + WARMUP:
            rss_start = rss_kib()
            warm_done = True
            mem_start = memory()
            log("driver: after %.0f s warm-up: svcd %s" % (WARMUP, mem_start))
        if now >= stats.t0 + 60 * minute:
            ticks = cpu_ticks()
            cpu = (ticks - last_ticks) / hz / (now - last_t) * 100
            last_ticks, last_t = ticks, now
            rss = rss_kib()
            rss_samples.append(rss)
            with stats.lock:
                counts = " ".join("%s=%d" % (op, stats.count[op]) for op in OPS[:7])
                errs = sum(stats.errors.values())
            t_drv = sum(os.times()[:2])
            log("minute %2d: %s | errors %d | svcd CPU %.0f%% of a core (driver %.0f%%), %s"
                % (minute, counts, errs, cpu, (t_drv - last_drv) / (now - last_t_drv) * 100,
                   memory()))
            last_drv, last_t_drv = t_drv, now
            minute += 1
        time.sleep(0.2)
    rss_end = rss_kib()
    mem_end = memory()
    if len(rss_samples) < minute:
        rss_samples.append(rss_end)
    if rss_start is None:
        rss_start, mem_start = rss_end, mem_end
    ticks = cpu_ticks()
    if time.monotonic() - last_t > 5:
        log("end:       svcd CPU %.0f%% of a core over the last %.0f s"
            % ((ticks - last_ticks) / hz / (time.monotonic() - last_t) * 100, time.monotonic() - last_t))
    for th in threads:
        th.join(60)
    # Held long-polls end by approval or expiry; events get EVENT_DEADLINE to arrive.
    for th in lp_threads:
        th.join(max(0.1, t_end + args.expires + 30 - time.monotonic()))

    def missing():
        out = []
        with expected.lock:
            want = dict(expected.want)
        for s in streams:
            with s.lock:
                seen = dict(s.seen)
            for k, (op, t) in want.items():
                if k not in seen:
                    out.append((s, k, op, t))
        return out

    drain_until = time.monotonic() + EVENT_DEADLINE
    while missing() and time.monotonic() < drain_until:
        time.sleep(0.5)
    stop.set()

    # Event delivery: every stream must see every expected event within EVENT_DEADLINE.
    with expected.lock:
        want = dict(expected.want)
    for s in streams:
        with s.lock:
            seen = dict(s.seen)
        for k, (op, t) in sorted(want.items(), key=lambda kv: kv[1][1]):
            cat = "relay" if k[0] == "email.relayed" else "sse"
            if k not in seen:
                stats.error(cat, "stream %d never saw %s %s (from %s at %.1f s)"
                            % (s.n, k[0], k[1], op, t - stats.t0))
            elif seen[k] - t > EVENT_DEADLINE:
                stats.error(cat, "stream %d saw %s %s %.1f s after it happened"
                            % (s.n, k[0], k[1], seen[k] - t))
            elif cat == "relay" and s.n != 0:
                continue  # relay delay is counted once, on stream 0
            else:
                stats.ok(cat, t, seen[k] - t)

    # Report.
    log("")
    log("operations and errors (target: 0 errors)")
    log("  %-11s %8s %7s" % ("op", "count", "errors"))
    for op in OPS:
        log("  %-11s %8d %7d" % (op, stats.count[op], stats.errors[op]))
    log("  (sse: events expected x %d streams; relay: messages marked sent by the relay)" % len(streams))
    log("  SSE streams: %s events each; keep-alive resends: %d"
        % ("/".join(str(s.events) for s in streams), stats.retries))
    for op in OPS:
        for line in stats.samples[op]:
            log("  error %s: %s" % (op, line))
    minutes = sorted({m for (_, m) in stats.lat})
    log("")
    log("p99 latency, ms, by minute (lp_approve: approval to answer; lp_expire: past expiry;")
    log("sse/relay: answer to event; a row past the last minute holds long-polls and events that")
    log("answered after the traffic stopped)")
    log("  min " + "".join("%11s" % op for op in OPS))
    for m in minutes:
        row = []
        for op in OPS:
            v = percentile(stats.lat.get((op, m), []), 0.99)
            row.append("%11s" % ("-" if v is None else "%.1f" % (v * 1000)))
        log("  %3d " % (m + 1) + "".join(row))
    growth = (rss_end - rss_start) / rss_start * 100 if rss_start else 0.0
    log("")
    log("svcd RSS: %.1f MiB after warm-up, %.1f MiB at the end (%+.1f %%, target within %g %%); "
        "per minute: %s MiB" % (rss_start / 1024, rss_end / 1024, growth, args.max_rss_growth,
                                " ".join("%.1f" % (r / 1024) for r in rss_samples)))
    log("  after warm-up: %s" % mem_start)
    log("  at the end:    %s" % mem_end)
    total = sum(stats.errors.values())
    log("errors: %d" % total)
    return 1 if total or growth > args.max_rss_growth else 0


if __name__ == "__main__":
    sys.exit(main())
