#!/usr/bin/env bash
# failover-test.sh - writes acknowledged by WAIT survive kill -9 of the primary and a stock
# redis-sentinel's promotion, and fencing tokens keep growing across every failover.
#
# Three data nodes (one primary, two replicas) and three stock sentinels (quorum 2), all on
# 127.0.0.1. Each round, on the primary the sentinels name:
#   - WRITES keys are SET, each followed by WAIT 1 <ms>; those WAIT confirmed are remembered;
#   - a native lock is granted (LOCK) and WAITed for; its fencing token is remembered;
#   - the primary is killed with SIGKILL; the round waits for the sentinels to name another
#     primary, then restarts the killed node empty (the sentinels turn it into a replica);
#   - on the new primary: every remembered key of every round must be there, and a new LOCK's
#     token must be above every token granted before.
# Prints one line per round and a summary; exit status 0 only if nothing was lost.
#
# usage: scripts/failover-test.sh [SERVER_BIN] [SENTINEL_BIN]
#   defaults: target/release/latch-server; redis-server from PATH (run with --sentinel)
# Environment: ROUNDS=20 WRITES=50 PORT=7500 (data nodes PORT..PORT+2, sentinels PORT+100..+102)
# Only the processes it started are killed; its directory is temporary.
set -u

BIN=${1:-target/release/latch-server}
SENTINEL=${2:-$(command -v redis-server)}
ROUNDS=${ROUNDS:-20}; WRITES=${WRITES:-50}; PORT=${PORT:-7500}
for b in "$BIN" "$SENTINEL"; do [ -x "$b" ] || { echo "failover-test: '$b' is not an executable" >&2; exit 2; }; done
command -v redis-cli >/dev/null || { echo "failover-test: redis-cli is required" >&2; exit 2; }
BIN=$(cd "$(dirname "$BIN")" && echo "$(pwd)/$(basename "$BIN")")

WORK=$(mktemp -d /tmp/failover-test.XXXXXX)
declare -A NODE_PID
SENTINEL_PIDS=()
cleanup() {
  for p in "${NODE_PID[@]}" "${SENTINEL_PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

cli() { timeout 5 redis-cli -h 127.0.0.1 -p "$@"; }

start_node() { # PORT [replicaof-port]
  local port=$1 dir="$WORK/node$1"
  rm -rf "$dir"; mkdir -p "$dir"
  {
    echo "port $port"; echo "bind 127.0.0.1"; echo "dir $dir"; echo 'save ""'
    echo "repl-diskless-sync-delay 0"
    [ -n "${2:-}" ] && echo "replicaof 127.0.0.1 $2"
  } >"$dir/node.conf"
  "$BIN" "$dir/node.conf" >"$dir/log" 2>&1 &
  NODE_PID[$port]=$!
  for _ in $(seq 100); do cli "$port" PING >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "failover-test: node $port did not start" >&2; exit 2
}

start_sentinel() { # PORT
  local port=$1 dir="$WORK/sentinel$1"
  mkdir -p "$dir"
  cat >"$dir/sentinel.conf" <<EOF
port $port
bind 127.0.0.1
dir $dir
sentinel monitor mymaster 127.0.0.1 $PORT 2
sentinel down-after-milliseconds mymaster 1000
sentinel failover-timeout mymaster 10000
sentinel parallel-syncs mymaster 2
EOF
  "$SENTINEL" "$dir/sentinel.conf" --sentinel >"$dir/log" 2>&1 &
  SENTINEL_PIDS+=($!)
}

primary() { cli $((PORT + 100)) SENTINEL get-master-addr-by-name mymaster 2>/dev/null | sed -n 2p; }

start_node "$PORT"
start_node $((PORT + 1)) "$PORT"
start_node $((PORT + 2)) "$PORT"
for i in 0 1 2; do start_sentinel $((PORT + 100 + i)); done
for _ in $(seq 200); do
  [ "$(cli "$PORT" INFO replication | grep -c 'state=online')" = 2 ] && break; sleep 0.1
done
sleep 3 # the sentinels discover the replicas and each other

LOST=0; FENCE_BAD=0; CONFIRMED=0; MAX_TOKEN=0
KEEP="$WORK/confirmed"; : >"$KEEP"
for ((round = 1; round <= ROUNDS; round++)); do
  P=$(primary)
  [ -n "$P" ] || { echo "round $round: the sentinels name no primary" >&2; exit 1; }
  n=0
  for ((k = 0; k < WRITES; k++)); do
    key="r$round:k$k"
    out=$(printf 'SET %s v%d\r\nWAIT 1 1000\r\n' "$key" "$k" | cli "$P" 2>/dev/null | tail -1)
    if [ "${out:-0}" -ge 1 ] 2>/dev/null; then echo "$key" >>"$KEEP"; n=$((n + 1)); fi
  done
  token=$(printf 'LOCK job%d owner 60000\r\nWAIT 1 1000\r\n' "$round" | cli "$P" 2>/dev/null | head -1)
  if [ "$token" -le "$MAX_TOKEN" ] 2>/dev/null; then
    echo "round $round: LOCK on $P gave token $token, not above $MAX_TOKEN"; FENCE_BAD=$((FENCE_BAD + 1))
  fi
  [ "$token" -gt "$MAX_TOKEN" ] 2>/dev/null && MAX_TOKEN=$token
  CONFIRMED=$((CONFIRMED + n))
  # kill -9 the primary, wait for another one.
  kill -9 "${NODE_PID[$P]}" 2>/dev/null; wait "${NODE_PID[$P]}" 2>/dev/null
  NEW=""
  for _ in $(seq 600); do
    NEW=$(primary)
    if [ -n "$NEW" ] && [ "$NEW" != "$P" ] && cli "$NEW" ROLE 2>/dev/null | head -1 | grep -q master; then break; fi
    NEW=""; sleep 0.1
  done
  [ -n "$NEW" ] || { echo "round $round: no failover within 60 s" >&2; exit 1; }
  # The old primary comes back empty; the sentinels make it a replica of the new one.
  start_node "$P"
  # Every confirmed write of every round is on the new primary.
  missing=0
  while read -r key; do
    [ "$(cli "$NEW" EXISTS "$key")" = 1 ] || missing=$((missing + 1))
  done <"$KEEP"
  LOST=$((LOST + missing))
  next=$(cli "$NEW" LOCK "probe$round" owner 1000)
  if ! [ "$next" -gt "$MAX_TOKEN" ] 2>/dev/null; then
    echo "round $round: the new primary's token $next is not above $MAX_TOKEN"; FENCE_BAD=$((FENCE_BAD + 1))
  fi
  [ "$next" -gt "$MAX_TOKEN" ] 2>/dev/null && MAX_TOKEN=$next
  echo "round $round: primary $P -> $NEW; $n/$WRITES writes confirmed by WAIT; missing so far: $missing; token $token -> $next"
  # Both replicas online again before the next kill.
  for _ in $(seq 300); do
    [ "$(cli "$NEW" INFO replication | grep -c 'state=online')" = 2 ] && break; sleep 0.1
  done
done
echo "rounds: $ROUNDS; writes confirmed by WAIT: $CONFIRMED; lost: $LOST; fencing violations: $FENCE_BAD"
[ "$LOST" = 0 ] && [ "$FENCE_BAD" = 0 ]
