#!/usr/bin/env bash
# repl-bench.sh - replication, Latch against redis-server in the same run, on 127.0.0.1:
#   1. full sync of a large dataset (DEBUG POPULATE) to a new replica while a write load runs:
#      seconds until the replica's master_link_status is up, and the primary's peak RSS during
#      the sync (for Redis, the primary plus its fork child, sampled together), beside the RSS of
#      the dataset before the sync;
#   2. write throughput (redis-benchmark SET, pipelined) with 0, 1 and 2 replicas attached;
#   3. WAIT 1 0 after each write: the mean time of SET + WAIT over one connection.
#
# usage: scripts/repl-bench.sh [LATCH_BIN] [REDIS_BIN]
#   defaults: target/release/latch-server and redis-server from PATH
# Environment: KEYS=1000000 VALUE=1024 (about 1.1 GiB of values), N=400000 SETs per throughput
#   run, P=16 pipeline, WAITS=2000 SET+WAIT pairs, PORT=7400 (ports PORT..PORT+5).
# Every server it starts is killed at the end (only those); their directories are temporary.
set -u

LATCH=${1:-target/release/latch-server}
REDIS=${2:-$(command -v redis-server)}
KEYS=${KEYS:-1000000}; VALUE=${VALUE:-1024}; N=${N:-400000}; P=${P:-16}; WAITS=${WAITS:-2000}
PORT=${PORT:-7400}
for b in "$LATCH" "$REDIS"; do [ -x "$b" ] || { echo "repl-bench: '$b' is not an executable" >&2; exit 2; }; done
for t in redis-cli redis-benchmark; do command -v $t >/dev/null || { echo "repl-bench: $t is required" >&2; exit 2; }; done

WORK=$(mktemp -d /tmp/repl-bench.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT

cli() { redis-cli -h 127.0.0.1 -p "$@"; }

start() { # BIN PORT NAME [args...] -> pid
  local bin=$1 port=$2 name=$3; shift 3
  mkdir -p "$WORK/$name"
  "$bin" --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$WORK/$name" \
    --enable-debug-command yes --repl-diskless-sync-delay 0 "$@" >"$WORK/$name.log" 2>&1 &
  local pid=$!
  PIDS+=("$pid")
  for _ in $(seq 100); do cli "$port" PING >/dev/null 2>&1 && break; sleep 0.1; done
  echo "$pid"
}

rss_kb() { # PID -> RSS of the process and its children (a fork), in KiB
  local total=0 p
  for p in "$1" $(pgrep -P "$1"); do
    total=$((total + $(awk '/^VmRSS/ { print $2 }' "/proc/$p/status" 2>/dev/null || echo 0)))
  done
  echo "$total"
}

link_up() { cli "$1" INFO replication 2>/dev/null | grep -q '^master_link_status:up'; }

bench() { # BIN NAME BASEPORT
  local bin=$1 name=$2 base=$3 p r1 r2 load t0 t1 peak rss before
  p=$(start "$bin" "$base" "$name-primary")
  cli "$base" DEBUG POPULATE "$KEYS" key "$VALUE" >/dev/null
  before=$(rss_kb "$p")
  # A write load while the replica syncs (bounded: at most 60 s).
  timeout 60 redis-benchmark -h 127.0.0.1 -p "$base" -t set -n 100000000 -r 100000 -d 64 -c 10 -P 4 -q \
    >/dev/null 2>&1 &
  load=$!
  r1=$(start "$bin" $((base + 1)) "$name-replica1")
  t0=$(date +%s.%N); peak=$before
  cli $((base + 1)) REPLICAOF 127.0.0.1 "$base" >/dev/null
  for _ in $(seq 3000); do
    rss=$(rss_kb "$p"); [ "$rss" -gt "$peak" ] && peak=$rss
    link_up $((base + 1)) && break
    sleep 0.1
  done
  t1=$(date +%s.%N)
  kill "$load" 2>/dev/null; wait "$load" 2>/dev/null
  printf '%s full sync: %.1f s to link up; primary RSS %d MiB before, peak %d MiB (%.2fx)\n' "$name" \
    "$(echo "$t1 - $t0" | bc)" $((before / 1024)) $((peak / 1024)) "$(echo "$peak / $before" | bc -l)"
  cli "$base" FLUSHALL >/dev/null; sleep 1
  # Throughput with 0, 1, 2 replicas (the first replica is attached; a second one joins).
  kill -9 "$r1" 2>/dev/null
  for reps in 0 1 2; do
    if [ "$reps" = 1 ]; then r1=$(start "$bin" $((base + 1)) "$name-replica1b" --replicaof 127.0.0.1 "$base"); fi
    if [ "$reps" = 2 ]; then r2=$(start "$bin" $((base + 2)) "$name-replica2" --replicaof 127.0.0.1 "$base"); fi
    for _ in $(seq 100); do
      [ "$(cli "$base" INFO replication | grep -c 'state=online')" -ge "$reps" ] && break; sleep 0.1
    done
    local rps
    rps=$(timeout 120 redis-benchmark -h 127.0.0.1 -p "$base" -t set -n "$N" -r 100000 -c 50 -P "$P" -q 2>/dev/null |
      awk '/SET/ { for (i = 1; i <= NF; i++) if ($i ~ /requests/) print $(i - 1) }' | tail -1)
    echo "$name throughput, $reps replica(s): $rps SET/s"
  done
  # SET + WAIT 1 0, one connection.
  t0=$(date +%s.%N)
  for ((i = 0; i < WAITS; i++)); do printf 'SET w %d\r\nWAIT 1 0\r\n' "$i"; done | cli "$base" >/dev/null
  t1=$(date +%s.%N)
  printf '%s SET + WAIT 1 0: %.1f us per pair (%d pairs)\n' "$name" "$(echo "($t1 - $t0) * 1000000 / $WAITS" | bc -l)" "$WAITS"
  for x in "$p" "$r1" "${r2:-}"; do [ -n "$x" ] && kill -9 "$x" 2>/dev/null; done
  wait 2>/dev/null
}

echo "# repl-bench: KEYS=$KEYS VALUE=$VALUE N=$N P=$P; latch=$LATCH redis=$REDIS"
bench "$LATCH" latch "$PORT"
bench "$REDIS" redis $((PORT + 3))
