# shellcheck shell=bash
# Sourced by scripts/pubsub-bench.sh, scripts/types-bench.sh, scripts/lock-bench-etcd.sh and
# scripts/build-pgo.sh:
# servers started side by side on loopback, each in a directory of its own under $WORK, killed
# (only those, and what the caller adds to PIDS) and $WORK removed at
# exit. The caller sets NAME (for messages) and WORK (a directory it made) before sourcing.
#
# start TAG BINARY [args...]: on a spare port (one nothing answers on; picked again if the server
# cannot listen there), nothing persisted, waiting until the server on it reports our child's
# process id; then PORT[TAG] and PID[TAG] are set.
PIDS=()
declare -A PORT PID
# (Each step may fail, a server having exited or been waited for already: under the caller's
# `set -e` that must not turn a successful run's exit status into a failure.)
servers_cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap servers_cleanup EXIT
trap 'exit 130' INT TERM

# random_port [SPAN]: a port P such that P .. P+SPAN-1 (SPAN 1 by default) are all below the
# kernel's ephemeral range, from 10000 up: a port inside that range can be taken between the check
# and the listen by the local end of any outgoing connection (a raft peer dialing another, a
# client), which made a group's member fail with "Address already in use".
random_port() {
  local span=${1:-1} low
  low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
  echo $((10000 + RANDOM % (low - 10000 - span)))
}

# port_free PORT: true if nothing answers on 127.0.0.1:PORT.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# free_ports N: prints the first of N consecutive ports nothing answers on (from random_port N;
# 20 tries), or says so on stderr and fails.
free_ports() {
  local n=$1 base i ok
  for _ in $(seq 20); do
    base=$(random_port "$n"); ok=1
    for i in $(seq 0 $((n - 1))); do port_free $((base + i)) || { ok=0; break; }; done
    [ $ok = 1 ] && { echo "$base"; return 0; }
  done
  echo "$NAME: no $n free ports found" >&2
  return 1
}

start() {
  local tag=$1 bin=$2 port pid i; shift 2
  for _ in $(seq 10); do
    port=$(random_port)
    port_free "$port" || continue
    mkdir -p "$WORK/$tag"
    (cd "$WORK/$tag" && exec "$bin" --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
       --loglevel warning "$@" >"$WORK/$tag.log" 2>&1) &
    pid=$!
    PIDS+=("$pid")
    for i in $(seq 100); do
      kill -0 "$pid" 2>/dev/null || break
      if timeout 2 redis-cli -p "$port" INFO server 2>/dev/null | grep -q "^process_id:$pid"$'\r'; then
        PORT[$tag]=$port; PID[$tag]=$pid; return 0
      fi
      sleep 0.1
    done
    kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  done
  echo "$NAME: could not start $tag ($bin); log:" >&2; cat "$WORK/$tag.log" >&2; exit 1
}
