#!/usr/bin/env bash
# Measures memory per key: loads the same N keys into latch-server and redis-server started side by
# side, and prints RSS growth per key for both and their ratio.
#   scripts/memory.sh            # N=1000000 strings: key:%012d with 16-byte values
#   N=200000 TTL=60000 scripts/memory.sh
#   PREFIX=counter: scripts/memory.sh     # string keys PREFIX%012d (default key:)
#   TYPE=hash N=200000 scripts/memory.sh   # also: set (5 strings), intset (5 integers), zset (5 members)
#                                          # hash: fields field0..4 with 10-byte values
#   SETTLE=15 scripts/memory.sh  # seconds to wait after loading before reading RSS (default 1); jemalloc
#                                # (both servers) returns freed pages to the OS over ~10 s
#   LATCH_BIN=/path/to/latch-server scripts/memory.sh  # a prebuilt binary (another build to compare),
#                                                      # instead of building this tree's
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-1000000}
TTL=${TTL:-}
TYPE=${TYPE:-string}
PREFIX=${PREFIX:-key:}
SETTLE=${SETTLE:-1}
LATCH_PORT=${LATCH_PORT:-7103}
REDIS_PORT=${REDIS_PORT:-7104}
command -v redis-server >/dev/null || { echo "redis-server not installed" >&2; exit 2; }
if [ -z "${LATCH_BIN:-}" ]; then
  cargo build --release --bin latch-server >&2
  target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
  LATCH_BIN="$target/release/latch-server"
fi
"$LATCH_BIN" --port "$LATCH_PORT" --bind 127.0.0.1 --save '' --loglevel warning &
LPID=$!
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no --loglevel warning &
RPID=$!
trap 'kill $LPID $RPID 2>/dev/null; wait 2>/dev/null' EXIT
for p in "$LATCH_PORT" "$REDIS_PORT"; do
  for _ in $(seq 50); do redis-cli -p "$p" ping >/dev/null 2>&1 && break; sleep 0.1; done
done
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
payload=$(mktemp)
python3 - "$N" "$TTL" "$TYPE" "$PREFIX" >"$payload" <<'PY'
import sys
n = int(sys.argv[1]); ttl = sys.argv[2]; kind = sys.argv[3]; prefix = sys.argv[4].encode()
out = sys.stdout
def cmd(parts):
    out.buffer.write(b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts))
aggregates = {
    "hash": lambda i: [b"HSET", b"hash:%012d" % i] + [x for j in range(5) for x in (b"field%d" % j, b"v%09d" % i)],
    "set": lambda i: [b"SADD", b"set:%012d" % i] + [b"member:%d" % j for j in range(5)],
    "intset": lambda i: [b"SADD", b"iset:%012d" % i] + [b"%d" % (1000 + j) for j in range(5)],
    "zset": lambda i: [b"ZADD", b"zset:%012d" % i] + [x for j in range(5) for x in (b"%d" % j, b"member:%d" % j)],
}
if kind != "string":
    if kind not in aggregates:
        sys.exit("TYPE is one of string, hash, set, intset, zset")
    for i in range(n):
        cmd(aggregates[kind](i))
    sys.exit(0)
for i in range(n):
    k = prefix + b"%012d" % i
    v = b"v%015d" % i
    if ttl:
        t = ttl.encode()
        out.buffer.write(b"*5\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n$2\r\nPX\r\n$%d\r\n%s\r\n" % (len(k), k, len(v), v, len(t), t))
    else:
        out.buffer.write(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, len(v), v))
PY
printf "%-8s %12s %12s %10s\n" server keys rss_growth_mb bytes/key
per_key=()
for t in "latch:$LATCH_PORT:$LPID" "redis:$REDIS_PORT:$RPID"; do
  IFS=: read -r name port pid <<<"$t"
  before=$(rss_kb "$pid")
  redis-cli -p "$port" --pipe <"$payload" >/dev/null
  sleep "$SETTLE"
  after=$(rss_kb "$pid")
  keys=$(redis-cli -p "$port" dbsize)
  awk -v n="$name" -v k="$keys" -v b="$before" -v a="$after" 'BEGIN { printf "%-8s %12d %12.1f %10.1f\n", n, k, (a-b)/1024, (a-b)*1024/k }'
  per_key+=("$(awk -v k="$keys" -v b="$before" -v a="$after" 'BEGIN { print (a-b)*1024/k }')")
done
awk -v l="${per_key[0]}" -v r="${per_key[1]}" -v t="$TYPE" 'BEGIN { printf "%s: latch/redis bytes per key %.2f\n", t, l / r }'
rm -f "$payload"
