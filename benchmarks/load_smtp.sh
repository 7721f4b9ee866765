#!/usr/bin/env bash
# SMTP ingest: CLIENTS concurrent SMTP clients at svcd's listener (every message parsed and
# durably stored before its 250) and at Postfix's smtp-sink (which accepts and discards), in
# ROUNDS alternating rounds of SECONDS each: a VM's CPU steal drifts over a minute, and rounds
# taken in turn see the same drift. Before each smtp-sink round svcd has filed everything it
# acknowledged, so its background filing never runs during smtp-sink's rounds. Prints each round,
# both totals, their ratio, and checks that svcd stored every message it acknowledged.
#
# AUTH=on (the default) checks every message as a real one is: a dnsmasq on loopback serves
# bench.example's SPF (this address), DKIM key and DMARC (p=reject) records, and each message is
# DKIM-signed (dkimpy, once: its Message-ID is left out of the signature), so SPF, DKIM and DMARC
# all pass; the records are cached by their TTL, as in production. SPF's aligned pass decides
# DMARC, so the signature is verified when the message is filed. AUTH=dkim: the same, but SPF
# does not list this address, so DKIM decides whether p=reject refuses the message and is
# verified before its 250. AUTH=off sets email.inbound.verify=false: the same path without the
# checks.
#   benchmarks/load_smtp.sh [BUILD_DIR] [CLIENTS] [SECONDS] [BODY_BYTES] [ROUNDS] [AUTH]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
clients=${2:-16}
secs=${3:-5}
body=${4:-2000}
rounds=${5:-3}
auth=${6:-on}
work=$(mktemp -d /tmp/svc-smtp.XXXXXX)
cleanup() {
  [ -n "${sink:-}" ] && kill "$sink" 2>/dev/null
  [ -n "${dns:-}" ] && kill "$dns" 2>/dev/null
  [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
source "$root/benchmarks/bench_lib.sh"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
message=()
checks=(--set email.inbound.verify=false)
if [ "$auth" != off ]; then
  spf="v=spf1 ip4:127.0.0.1 -all"
  [ "$auth" = dkim ] && spf="v=spf1 ip4:192.0.2.1 -all"
  openssl genrsa -out "$work/dkim.pem" 2048 2>/dev/null
  pub=$(openssl rsa -in "$work/dkim.pem" -pubout -outform DER 2>/dev/null | base64 -w0)
  # The same message the load client builds, signed once over From, To, Subject and the body.
  /usr/bin/python3 - "$work/dkim.pem" "$body" >"$work/message.eml" <<'PY'
import dkim, sys
key, size = open(sys.argv[1], 'rb').read(), int(sys.argv[2])
m = (b"From: Load <load@bench.example>\r\nTo: <sink@bench.test>\r\nSubject: load test\r\n"
     b"Message-ID: <MSGID@bench.example>\r\n\r\n")
while len(m) < size:
    m += b"The quick brown fox jumps over the lazy dog, again and again and again.\r\n"
sig = dkim.sign(m, b"s1", b"bench.example", key, canonicalize=(b"relaxed", b"relaxed"),
                include_headers=[b"from", b"to", b"subject"])
sys.stdout.buffer.write(sig.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n") + m)
PY
  dns_port=$(free_port)
  # A 2048-bit key's record is longer than one TXT string (255): dnsmasq takes it in pieces.
  dkim_txt="v=DKIM1; k=rsa; p=$pub"
  pieces=$(python3 -c 'import sys; t=sys.argv[1]; print(",".join(t[i:i+250] for i in range(0,len(t),250)))' "$dkim_txt")
  dnsmasq --keep-in-foreground --no-resolv --no-hosts --bind-interfaces --listen-address=127.0.0.1 \
    --port="$dns_port" --user=root --pid-file= --local=/bench.example/ --local-ttl=3600 \
    "--txt-record=bench.example,$spf" \
    "--txt-record=_dmarc.bench.example,v=DMARC1; p=reject" \
    "--txt-record=s1._domainkey.bench.example,$pieces" >"$work/dnsmasq.log" 2>&1 &
  dns=$!
  # Ready when it answers a question about its zone.
  python3 - "$dns_port" <<'PY' || { cat "$work/dnsmasq.log" >&2; exit 1; }
import socket, struct, sys, time
query = struct.pack(">HHHHHH", 1, 0x0100, 1, 0, 0, 0) + b"\x05bench\x07example\x00" + struct.pack(">HH", 16, 1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(0.2)
for _ in range(100):
    try:
        s.sendto(query, ("127.0.0.1", int(sys.argv[1])))
        s.recv(512)
        sys.exit(0)
    except OSError:
        time.sleep(0.1)
sys.exit(1)
PY
  message=("$work/message.eml")
  checks=(--set email.dns.server=127.0.0.1:"$dns_port")
fi
# Filing is awaited by the list's count, so it must stay exact past the default cap.
bench_start_svcd --set email.domains=bench.test --set email.smtp.max_connections=256 \
  --set email.messages.exact_count=1000000000 "${checks[@]}"
bench_login
identity=$(curl -sf -X POST "http://127.0.0.1:$port/api/identities/" -H "Authorization: Bearer $key" \
  -H 'Content-Type: application/json' -d '{"name":"Sink","email_identifier":"sink"}' | json uuid)
smtp=$(sed -n 's/.*SMTP listener on port \([0-9]*\).*/\1/p' "$work/svcd.log")
sink_port=$(free_port)
user=$([ "$(id -u)" = 0 ] && echo "-u nobody" || echo "")
smtp-sink $user 127.0.0.1:"$sink_port" 256 &
sink=$!
# Ready when it answers (and the DNS server, when there is one, when it answers a question).
for _ in $(seq 100); do
  (exec 3<>"/dev/tcp/127.0.0.1/$sink_port") 2>/dev/null && break
  kill -0 "$sink" || exit 1
  sleep 0.1
done

# Messages svcd holds (acknowledged ones are filed behind the burst, at most 600 s).
stored() {
  curl -sf "http://127.0.0.1:$port/api/email-messages/?identity=$identity&limit=1" \
    -H "Authorization: Bearer $key" | json count
}
wait_filed() {  # wait_filed N: until svcd has filed N messages; prints the seconds it waited
  local waited=0
  while [ "$(stored)" -lt "$1" ] && [ "$waited" -lt 600 ]; do
    sleep 1
    waited=$((waited + 1))
  done
  echo "$waited"
}
steal() { awk '/^cpu /{print $9 + 0}' /proc/stat; }
# CPU ticks (user + system) a process has used: the server's cost of a round, which the VM's
# speed swings move less than its rate.
# Fields after the command name, which is in parentheses and may hold spaces: utime, stime.
ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }
run_round() {  # run_round NAME PORT SERVER_PID: one round; prints its line and adds to NAME's totals
  local s0 s1 c0 c1 out us
  s0=$(steal)
  c0=$(ticks "$3")
  out=$("$build/bin/svc_bench_smtp" "$2" "$clients" "$secs" sink@bench.test "$body" "${message[@]}")
  c1=$(ticks "$3")
  s1=$(steal)
  us=$(awk -v t=$((c1 - c0)) -v n="${out%% *}" -v hz="$(getconf CLK_TCK)" \
    'BEGIN {printf "%.0f", (n > 0 ? t * 1e6 / hz / n : 0)}')
  # CPU steal over the round: stolen jiffies of all cores, as a share of their time.
  printf "round %d %-10s %s, server CPU %d us/msg, steal %d%%\n" "$round" "$1:" "$out" "$us" \
    $(((s1 - s0) * 100 / ($(getconf CLK_TCK) * secs * $(nproc))))
  echo "$out" >>"$work/$1.out"
  echo "${out%% *} $((c1 - c0))" >>"$work/$1.cpu"
}
acked=0
whole0=$(ticks "$pid")  # svcd's CPU over every round and the filing after it
for round in $(seq 1 "$rounds"); do
  run_round smtp-sink "$sink_port" "$sink"
  run_round svcd "$smtp" "$pid"
  acked=$(awk '{n += $1} END {print n}' "$work/svcd.out")
  waited=$(wait_filed "$acked")
done
whole1=$(ticks "$pid")
total() { awk '{n += $1; t += $4} END {printf "%d messages in %.1f s = %.0f msg/s", n, t, n / t}' "$work/$1.out"; }
echo "svcd:      $(total svcd)"
echo "smtp-sink: $(total smtp-sink)"
a=$(total svcd | awk '{print $7}')
b=$(total smtp-sink | awk '{print $7}')
awk -v a="$a" -v b="$b" 'BEGIN {printf "ratio svcd/smtp-sink: %.3f (target >= 0.5)\n", a/b}'
cpu() {
  awk -v hz="$(getconf CLK_TCK)" '{n += $1; t += $2} END {printf "%.0f", (n > 0 ? t * 1e6 / hz / n : 0)}' \
    "$work/$1.cpu"
}
# During the rounds svcd acknowledges (filing waits for the lull); the whole adds its filing.
whole=$(awk -v t=$((whole1 - whole0)) -v n="$acked" -v hz="$(getconf CLK_TCK)" \
  'BEGIN {printf "%.0f", (n > 0 ? t * 1e6 / hz / n : 0)}')
echo "server CPU per message in the rounds: svcd $(cpu svcd) us (with its filing $whole us)," \
  "smtp-sink $(cpu smtp-sink) us"
echo "acknowledged $acked, stored $(stored) (the last round's backlog filed $waited s after it)"
if [ "$(stored)" -lt "$acked" ]; then
  echo "FAILED: svcd acknowledged $acked messages and stored $(stored)" >&2
  exit 1
fi
if [ "$auth" != off ]; then  # every message was judged, and judged pass
  verdicts=$(curl -sf "http://127.0.0.1:$port/api/email-messages/?identity=$identity&authenticated=true&limit=1" \
    -H "Authorization: Bearer $key" | json count)
  echo "authentication $auth: $verdicts of them have verdict pass"
  if [ "$verdicts" -ne "$(stored)" ]; then
    echo "FAILED: $(($(stored) - verdicts)) stored messages did not pass authentication" >&2
    exit 1
  fi
fi
