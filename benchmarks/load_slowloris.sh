#!/usr/bin/env bash
# Slow clients against svcd: wrk on GET /api/health/ alone, then again while 1,000 slowloris
# connections (from eight loopback addresses, half sending a header line every 2 s and half a
# byte every 2 s, reconnecting whenever svcd cuts them at the head deadline) stay open.
# Prints both rates and p99s and how many slow connections were open and cut.
#   benchmarks/load_slowloris.sh [BUILD_DIR] [SECONDS] [SLOW_CONNECTIONS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
secs=${2:-10}
slow=${3:-1000}
work=$(mktemp -d /tmp/svc-slowloris.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  kill "${pid:-}" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
source "$root/benchmarks/bench_lib.sh"
ulimit -n "$(ulimit -Hn)"
bench_start_svcd
pids+=("$pid")

run_wrk() {  # -> "rate p99"
  local out
  out=$(wrk -t2 -c50 -d"${secs}s" --latency "http://127.0.0.1:$port/api/health/")
  echo "$(echo "$out" | awk '/Requests\/sec/ {print $2}') $(echo "$out" | awk '$1=="99%" {print $2}')"
}

read -r idle_rate idle_p99 < <(run_wrk)

python3 - "$port" "$slow" >"$work/slow.log" 2>&1 <<'PY' &
import socket, sys, time
port, count = int(sys.argv[1]), int(sys.argv[2])
def connect(i):
    s = socket.socket()
    s.bind(("127.0.0.%d" % (2 + i % 8), 0))
    s.connect(("127.0.0.1", port))
    s.setblocking(False)
    s.send(b"GET /api/health/ HTTP/1.1\r\nHost: x\r\n" if i % 2 else b"G")
    return s
socks = [connect(i) for i in range(count)]
print("open", len(socks), flush=True)
cut, rounds = 0, 0
while True:
    time.sleep(2)
    rounds += 1
    for i, s in enumerate(socks):
        try:
            s.send(b"X-Slow-%d: 1\r\n" % rounds if i % 2 else b"E")
            if s.recv(4096, socket.MSG_PEEK):
                raise ConnectionError("answered")
        except BlockingIOError:
            pass
        except OSError:
            cut += 1
            s.close()
            socks[i] = connect(i)
    print("cut", cut, flush=True)
PY
slowpid=$!
pids+=($slowpid)
until grep -q open "$work/slow.log"; do
  kill -0 "$slowpid" 2>/dev/null || { cat "$work/slow.log" >&2; exit 1; }
  sleep 0.1
done
sleep 1
read -r slow_rate slow_p99 < <(run_wrk)
open_now=$(ls /proc/"$pid"/fd | wc -l)

echo "svcd GET /api/health/ alone:             $idle_rate req/s   p99 $idle_p99"
echo "with $slow slowloris connections open: $slow_rate req/s   p99 $slow_p99"
awk -v a="$slow_rate" -v b="$idle_rate" 'BEGIN {printf "rate with/without:                      %.3f\n", a/b}'
echo "svcd descriptors open during the run:    $open_now; slow connections cut and reopened: $(tail -1 "$work/slow.log" | awk '{print $2}')"
