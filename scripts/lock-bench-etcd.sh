#!/usr/bin/env bash
# lock-bench-etcd.sh - lock cycles (acquire + release at once) on a 3-node Latch consensus group
# against a 3-node etcd 3.4 cluster, both started by this script on 127.0.0.1 (each member with a
# temp directory of its own) and measured in the same run. Workloads run interleaved (Latch, etcd,
# Latch, etcd ...) for ROUNDS rounds; prints per run and the medians: cycles/s, p50/p99 cycle
# latency, and the ratios Latch / etcd. Clients always talk to the leader (found through
# INFO consensus, resp. /v3/maintenance/status; Latch's -MOVED is followed if it moves).
#
# usage: scripts/lock-bench-etcd.sh
#
# Systems (client: crates/lockbench, one thread for all clients of a run, the same code for both
# servers; CLIENT=python runs scripts/lib/lockbench.py instead, one asyncio loop, which takes about
# three times the CPU and on 2 cores limited the rate it measured):
#   latch-lock   LOCK key owner TTL_MS  +  UNLOCK key owner
#   latch-wait   LOCK key owner TTL_MS WAIT ms  +  UNLOCK key owner (the lock call waits in the
#                group's replicated FIFO queue while the lock is held)
#   latch-setnx  SET key token NX PX TTL_MS  +  EVALSHA <if get == token then del> 1 key token
#                (a build whose consensus mode does not replicate scripts reports it as skipped)
#   latch-delifeq  SET key token NX PX TTL_MS  +  DELIFEQ key token (the same, without Lua)
#   etcd-txn     through the v3 HTTP/JSON gateway: txn [create_revision(key) == 0] put key token
#                with the client's lease  +  txn [value(key) == token] delete key. This is the shape
#                of etcd's concurrency.Mutex (its session lease, granted once per client before the
#                timed part with a TTL longer than the run, so no keep-alives are needed).
#   etcd-lock    /v3/lock/lock {name, lease}  +  /v3/lock/unlock {key} (etcd's lock service; its
#                lock call waits in etcd's queue while the lock is held)
# Workloads:
#   distinct:1   1 client                    distinct:50   50 clients, each on its own key
#   contend:50   50 clients on one key; cycles/s = successful handoffs/s. latch-lock, latch-setnx,
#                latch-delifeq and etcd-txn do not wait: a refused acquire sleeps
#                uniform(0, 2*RETRY_MS) ms and tries again. latch-wait and etcd-lock block in the
#                server's queue instead.
#                The latency of a contended cycle runs from the first attempt to the release.
#
# Environment (all optional):
#   LATCH_BIN       a prebuilt latch-server (default: cargo build --release --bin latch-server,
#                   which honours CARGO_TARGET_DIR; e.g. CARGO_TARGET_DIR=/work/target-etcd)
#   CLIENT=rust     the load generator: rust (crates/lockbench) or python (scripts/lib/lockbench.py)
#   LOCKBENCH_BIN   a prebuilt lockbench (default: cargo build --release -p lockbench)
#   ETCD=etcd       the etcd binary (Debian: apt-get install -y etcd-server etcd-client)
#   DURATION=10     seconds per run (1..120)          MAX=200000  cycles per run at most
#   ROUNDS=2        interleaved rounds (1..10)        TTL_MS=10000  Latch lock TTL
#   RETRY_MS=5      mean sleep after a refused acquire (contend workload)
#   SYSTEMS="latch-lock latch-wait latch-setnx latch-delifeq etcd-txn etcd-lock"
#   WORKLOADS="distinct:1 distinct:50 contend:50"
#   RAW=FILE        keep the per-run JSON lines (default: only printed)
set -u
cd "$(dirname "$0")/.." || exit 2
ROOT=$(pwd)
NAME=lock-bench-etcd
usage() { awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0" >&2; exit 2; }
[ $# -eq 0 ] || usage

DURATION=${DURATION:-10}; MAX=${MAX:-200000}; ROUNDS=${ROUNDS:-2}; TTL_MS=${TTL_MS:-10000}
RETRY_MS=${RETRY_MS:-5}; ETCD=${ETCD:-etcd}; RAW=${RAW:-}
SYSTEMS=${SYSTEMS:-latch-lock latch-wait latch-setnx latch-delifeq etcd-txn etcd-lock}
WORKLOADS=${WORKLOADS:-distinct:1 distinct:50 contend:50}
case $DURATION in ''|*[!0-9]*) usage ;; esac
case $ROUNDS in ''|*[!0-9]*) usage ;; esac
case $MAX in ''|*[!0-9]*) usage ;; esac
[ "$DURATION" -ge 1 ] && [ "$DURATION" -le 120 ] && [ "$ROUNDS" -ge 1 ] && [ "$ROUNDS" -le 10 ] \
  && [ "$MAX" -ge 1 ] || usage
for w in $WORKLOADS; do
  case $w in distinct:[1-9]*|contend:[1-9]*) ;; *) echo "$NAME: bad workload $w" >&2; exit 2 ;; esac
done
command -v python3 >/dev/null || { echo "$NAME: needs python3" >&2; exit 2; }
command -v "$ETCD" >/dev/null || { echo "$NAME: no $ETCD; apt-get install -y etcd-server etcd-client" >&2; exit 2; }
PY="python3 $ROOT/scripts/lib/lockbench.py"
CLIENT=${CLIENT:-rust}
case $CLIENT in
  python) RUN="$PY run" ;;
  rust)
    if [ -z "${LOCKBENCH_BIN:-}" ]; then
      cargo build --release -p lockbench >&2 || exit 1
      LOCKBENCH_BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release/lockbench
    fi
    [ -x "$LOCKBENCH_BIN" ] || { echo "$NAME: $LOCKBENCH_BIN is not executable" >&2; exit 2; }
    RUN="$LOCKBENCH_BIN run" ;;
  *) echo "$NAME: CLIENT is rust or python" >&2; exit 2 ;;
esac

if [ -z "${LATCH_BIN:-}" ]; then
  cargo build --release --bin latch-server >&2 || exit 1
  LATCH_BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release/latch-server
fi
[ -x "$LATCH_BIN" ] || { echo "$NAME: $LATCH_BIN is not executable" >&2; exit 2; }

# Only what we start and make: the PIDs in PIDS, this directory (scripts/lib/servers.sh's cleanup).
WORK=$(mktemp -d "${TMPDIR:-/tmp}/lock-bench-etcd.XXXXXX") || exit 1
# shellcheck source=lib/servers.sh
. "$ROOT/scripts/lib/servers.sh"

# 12 ports nothing answers on: 3 Latch client + 3 raft, 3 etcd client + 3 etcd peer.
base=$(free_ports 12) || exit 1
mapfile -t P < <(seq "$base" $((base + 11)))
LP=("${P[@]:0:3}"); RP=("${P[@]:3:3}"); EC=("${P[@]:6:3}"); EP=("${P[@]:9:3}")

LPIDS=(); EPIDS=()
PEERS="1=127.0.0.1:${RP[0]},2=127.0.0.1:${RP[1]},3=127.0.0.1:${RP[2]}"
for i in 1 2 3; do
  d=$WORK/latch$i; mkdir -p "$d"
  (cd "$d" && exec "$LATCH_BIN" --bind 127.0.0.1 --port "${LP[i-1]}" --save '' --appendonly no \
     --loglevel warning --raft-id "$i" --raft-port "${RP[i-1]}" --raft-peers "$PEERS" --dir "$d" \
     >"$WORK/latch$i.log" 2>&1) &
  PIDS+=($!); LPIDS+=($!)
done
CLUSTER="n1=http://127.0.0.1:${EP[0]},n2=http://127.0.0.1:${EP[1]},n3=http://127.0.0.1:${EP[2]}"
for i in 1 2 3; do
  d=$WORK/etcd$i; mkdir -p "$d"
  "$ETCD" --name "n$i" --data-dir "$d" \
    --listen-client-urls "http://127.0.0.1:${EC[i-1]}" --advertise-client-urls "http://127.0.0.1:${EC[i-1]}" \
    --listen-peer-urls "http://127.0.0.1:${EP[i-1]}" --initial-advertise-peer-urls "http://127.0.0.1:${EP[i-1]}" \
    --initial-cluster "$CLUSTER" --initial-cluster-state new --initial-cluster-token "lb-$$" \
    --logger zap --log-level warn >"$WORK/etcd$i.log" 2>&1 &
  PIDS+=($!); EPIDS+=($!)
done

fail() {
  echo "$NAME: $*" >&2
  for f in "$WORK"/*.log; do echo "== $f" >&2; tail -5 "$f" >&2; done
  exit 1
}
LLEAD=$(timeout 40 $PY latch-leader "${LP[@]}") || fail "no Latch leader"
ELEAD=$(timeout 40 $PY etcd-leader "http://127.0.0.1:${EC[0]}" "http://127.0.0.1:${EC[1]}" "http://127.0.0.1:${EC[2]}") \
  || fail "no etcd leader"
echo "# $(date -u '+%F %T') $(nproc) cores; Latch $("$LATCH_BIN" --version 2>&1 | head -1)"
echo "# $("$ETCD" --version | head -1); Latch leader 127.0.0.1:$LLEAD, etcd leader $ELEAD"
echo "# DURATION=$DURATION s, MAX=$MAX, ROUNDS=$ROUNDS, TTL_MS=$TTL_MS, RETRY_MS=$RETRY_MS, CLIENT=$CLIENT"

# CPU time (user + system, clock ticks of 1/100 s) of the given PIDs together.
ticks() { local t=0 p; for p in "$@"; do t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat"))); done; echo "$t"; }
OUT=$WORK/runs.jsonl
for r in $(seq "$ROUNDS"); do
  for w in $WORKLOADS; do
    for s in $SYSTEMS; do
      case $s in
        latch-*) addr=127.0.0.1:$LLEAD; servers=("${LPIDS[@]}") ;;
        etcd-*) addr=$ELEAD; servers=("${EPIDS[@]}") ;;
        *) fail "unknown system $s" ;;
      esac
      t0=$(ticks "${servers[@]}")
      line=$(timeout $((DURATION + 90)) $RUN "$s" "$addr" "$w" --duration "$DURATION" --max "$MAX" \
               --ttl-ms "$TTL_MS" --retry-ms "$RETRY_MS" --label "round$r") || fail "run $s $w failed"
      # The three servers' CPU over the run (setup and the grace period included), per cycle.
      line=$(printf '%s' "$line" | python3 -c 'import json, sys
r = json.loads(sys.stdin.read()); ticks = int(sys.argv[1])
r["server_cpu_ms"] = ticks * 10
if ticks == 0 and r.get("cycles"):
    # Seen a few times on a loaded machine (cause not found): not a figure to average.
    r["server_cpu_note"] = "the servers read no CPU time over the run; not counted"
elif r.get("cycles"):
    r["server_us_per_cycle"] = round(ticks * 10000 / r["cycles"], 1)
print(json.dumps(r))' $(($(ticks "${servers[@]}") - t0)))
      echo "$line" | tee -a "$OUT"
    done
  done
done
[ -z "$RAW" ] || cp "$OUT" "$RAW"
echo
$PY report "$OUT"
