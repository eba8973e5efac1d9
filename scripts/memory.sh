#!/usr/bin/env bash
# Measures memory per key: loads the same N keys (16-byte values; optionally with a TTL) into latch-server
# and redis-server started side by side, and prints RSS growth per key for both.
#   scripts/memory.sh            # N=1000000
#   N=200000 TTL=60000 scripts/memory.sh
#   SETTLE=15 scripts/memory.sh  # seconds to wait after loading before reading RSS (default 1); jemalloc
#                                # (both servers) returns freed pages to the OS over ~10 s
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-1000000}
TTL=${TTL:-}
SETTLE=${SETTLE:-1}
LATCH_PORT=${LATCH_PORT:-7103}
REDIS_PORT=${REDIS_PORT:-7104}
command -v redis-server >/dev/null || { echo "redis-server not installed" >&2; exit 2; }
cargo build --release --bin latch-server >&2
target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
"$target/release/latch-server" --port "$LATCH_PORT" --bind 127.0.0.1 --save '' --loglevel warning &
LPID=$!
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no --loglevel warning &
RPID=$!
trap 'kill $LPID $RPID 2>/dev/null; wait 2>/dev/null' EXIT
for p in "$LATCH_PORT" "$REDIS_PORT"; do
  for _ in $(seq 50); do redis-cli -p "$p" ping >/dev/null 2>&1 && break; sleep 0.1; done
done
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
payload=$(mktemp)
python3 - "$N" "$TTL" >"$payload" <<'PY'
import sys
n = int(sys.argv[1]); ttl = sys.argv[2]
out = sys.stdout
for i in range(n):
    k = b"key:%012d" % i
    v = b"v%015d" % i
    if ttl:
        t = ttl.encode()
        out.buffer.write(b"*5\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n$2\r\nPX\r\n$%d\r\n%s\r\n" % (len(k), k, len(v), v, len(t), t))
    else:
        out.buffer.write(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, len(v), v))
PY
printf "%-8s %12s %12s %10s\n" server keys rss_growth_mb bytes/key
for t in "latch:$LATCH_PORT:$LPID" "redis:$REDIS_PORT:$RPID"; do
  IFS=: read -r name port pid <<<"$t"
  before=$(rss_kb "$pid")
  redis-cli -p "$port" --pipe <"$payload" >/dev/null
  sleep "$SETTLE"
  after=$(rss_kb "$pid")
  keys=$(redis-cli -p "$port" dbsize)
  awk -v n="$name" -v k="$keys" -v b="$before" -v a="$after" 'BEGIN { printf "%-8s %12d %12.1f %10.1f\n", n, k, (a-b)/1024, (a-b)*1024/k }'
done
rm -f "$payload"
