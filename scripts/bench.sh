#!/usr/bin/env bash
# Builds latch-server (release), starts it and a redis-server side by side on loopback, and runs
# scripts/bench-compare.sh against both in one interleaved run. Extra environment (N, P, C,
# WORKLOADS, ROUNDS...) is passed through to bench-compare.sh; BENCH_COMPARE=path runs another
# comparison script with the same two arguments instead.
#   scripts/bench.sh                     # defaults
#   P=16 WORKLOADS="SET GET" scripts/bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH=${BENCH_COMPARE:-scripts/bench-compare.sh}
[ -x "$BENCH" ] || { echo "bench-compare script not found at $BENCH" >&2; exit 2; }
command -v redis-server >/dev/null || { echo "redis-server not installed (apt-get install redis-server redis-tools)" >&2; exit 2; }
LATCH_PORT=${LATCH_PORT:-7101}
REDIS_PORT=${REDIS_PORT:-7102}
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
"$BENCH" "127.0.0.1:$LATCH_PORT" "127.0.0.1:$REDIS_PORT"
