#!/usr/bin/env bash
# Peak server memory of large replies and of a client that never reads, Latch beside redis-server.
#
# Builds latch-server (release), starts it and a redis-server on loopback, and for each case fills
# the data, samples the server's RSS every 5 ms while the case runs, and prints how far RSS rose
# above its level before the case (MB) for both, with the ratio Latch/Redis. Each case runs on
# fresh servers, so one case's allocations do not hide the next one's.
#   scripts/peak-rss.sh                 # every case
#   CASES="unread srandmember" N=500000 scripts/peak-rss.sh
# Cases: unread (a client pipelines GETs of a 10 MB value for 4 s and never reads), srandmember,
# hrandfield, zrandmember (count -N on a 1-element key), keys, lrange, smembers, hgetall, zrange,
# sort, sunion (N elements each), lcs (two N/100-byte strings).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v redis-server >/dev/null || { echo "redis-server not installed (apt-get install redis-server)" >&2; exit 2; }
LATCH_PORT=${LATCH_PORT:-7111}
REDIS_PORT=${REDIS_PORT:-7112}
N=${N:-1000000}
CASES=${CASES:-unread srandmember hrandfield zrandmember keys lrange smembers hgetall zrange sort sunion lcs}
cargo build --release --bin latch-server >&2
target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
LATCH="$target/release/latch-server"

LPID= RPID=
stop() { kill $LPID $RPID 2>/dev/null || true; wait $LPID $RPID 2>/dev/null || true; }
trap stop EXIT
printf '%-12s %10s %10s %8s\n' case latch_MB redis_MB ratio
for c in $CASES; do
  "$LATCH" --port "$LATCH_PORT" --bind 127.0.0.1 --save '' --loglevel warning >/dev/null & LPID=$!
  redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no --loglevel warning >/dev/null & RPID=$!
  for p in "$LATCH_PORT" "$REDIS_PORT"; do
    for _ in $(seq 100); do redis-cli -p "$p" ping >/dev/null 2>&1 && break; sleep 0.05; done
  done
  python3 - "$c" "$N" "$LATCH_PORT" "$LPID" "$REDIS_PORT" "$RPID" <<'EOF'
import socket, sys, threading, time

case, n = sys.argv[1], int(sys.argv[2])
servers = [(int(sys.argv[3]), int(sys.argv[4])), (int(sys.argv[5]), int(sys.argv[6]))]

def enc(*a):
    a = [x if isinstance(x, bytes) else str(x).encode() for x in a]
    return b"*%d\r\n" % len(a) + b"".join(b"$%d\r\n%s\r\n" % (len(x), x) for x in a)

def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0

class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.f = self.s.makefile("rb")
    def reply(self):
        # Reads one reply, discarding it; returns nothing (bounded memory on the client side).
        line = self.f.readline()
        t = line[:1]
        if t == b"$":
            k = int(line[1:])
            if k >= 0:
                left = k + 2
                while left:
                    left -= len(self.f.read(min(left, 1 << 20)))
        elif t == b"*":
            for _ in range(max(int(line[1:]), 0)):
                self.reply()
        elif t == b"-":
            raise RuntimeError(line)
    def call(self, *a):
        self.s.sendall(enc(*a))
        self.reply()

FILL = {
    "srandmember": ("sadd", "k", "m"), "hrandfield": ("hset", "k", "f", "v"), "zrandmember": ("zadd", "k", 1, "m"),
}
LOOP = "for i = 1, tonumber(ARGV[1]) do redis.call(ARGV[2], KEYS[1], %s) end"

def fill(c):
    if case in FILL:
        c.call(*FILL[case])
    elif case == "keys":
        c.call("eval", "for i = 1, tonumber(ARGV[1]) do redis.call('set', 'key:' .. i, i) end", 0, n)
    elif case in ("lrange", "sort"):
        c.call("eval", LOOP % "i", 1, "k", n, "rpush")
    elif case == "smembers":
        c.call("eval", LOOP % "i", 1, "k", n, "sadd")
    elif case == "sunion":
        c.call("eval", LOOP % "i", 1, "a", n // 2, "sadd")
        c.call("eval", LOOP % "-i", 1, "b", n // 2, "sadd")
    elif case == "hgetall":
        c.call("eval", LOOP % "i, i", 1, "k", n, "hset")
    elif case == "zrange":
        c.call("eval", LOOP % "i, i", 1, "k", n, "zadd")
    elif case == "lcs":
        c.call("set", "a", b"ab" * (n // 200))
        c.call("set", "b", b"ba" * (n // 200))
    elif case == "unread":
        c.call("set", "big", b"x" * (10 << 20))

def run(c, port):
    if case == "unread":
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect(("127.0.0.1", port))
        s.setblocking(False)
        req = enc("get", "big") * 100
        sent, t = 0, time.time()
        while time.time() - t < 4:
            try:
                sent += s.send(req[sent % len(req):])
            except BlockingIOError:
                time.sleep(0.02)
        s.close()
        return
    cmd = {
        "srandmember": ("srandmember", "k", -n), "hrandfield": ("hrandfield", "k", -n),
        "zrandmember": ("zrandmember", "k", -n), "keys": ("keys", "*"), "lrange": ("lrange", "k", 0, -1),
        "smembers": ("smembers", "k"), "hgetall": ("hgetall", "k"), "zrange": ("zrange", "k", 0, -1, "withscores"),
        "sort": ("sort", "k"), "sunion": ("sunion", "a", "b"), "lcs": ("lcs", "a", "b"),
    }[case]
    c.call(*cmd)

out = []
for port, pid in servers:
    c = Conn(port)
    fill(c)
    time.sleep(0.3)
    base = rss_mb(pid)
    peak = [base]
    done = threading.Event()
    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], rss_mb(pid))
            time.sleep(0.005)
    th = threading.Thread(target=sample)
    th.start()
    run(c, port)
    time.sleep(0.2)
    done.set()
    th.join()
    out.append(peak[0] - base)
ratio = out[0] / out[1] if out[1] > 0.5 else float("nan")
print(f"{case:<12} {out[0]:10.1f} {out[1]:10.1f} {ratio:8.2f}")
EOF
  stop
done
