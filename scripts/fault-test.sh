#!/usr/bin/env bash
# fault-test.sh - the consensus mode's fault-injection run (crates/server/tests/faults.rs) for as
# long as asked, on 3 and on 5 nodes: clients lock, increment a counter through FENCED and
# release, and a producer and two consumers run a queue (RPUSH, BLPOP), while a nemesis kills
# (SIGKILL) and pauses (SIGSTOP past the lock's TTL) leaders and followers, partitions the group
# through a proxy on every link between nodes (isolated leader, isolated follower,
# majority/minority, bridge) and jumps the nodes' wall clocks (libfaketime: apt-get install
# faketime). Everything listens on 127.0.0.1; the test kills only the nodes it
# started. The history is checked after each run (see the test's header); each run prints a line
#   faults: nodes=N secs=S ops=... grants=... increments_acked=... ... pushes_acked=... queue_lost=...
#           faults=[...] violations=V
#
# usage: scripts/fault-test.sh [SECONDS_PER_RUN]      (default 900: 15 minutes on 3 nodes, then
#                                                     15 on 5)
# Environment: NODES ("3 5"), SEED (1), SNAPSHOT_EVERY (the nodes' raft-snapshot-every, 300),
# CARGO_TARGET_DIR as for cargo.
# Exit status: 0 if every run ended with no violation, 1 otherwise.
set -u
cd "$(dirname "$0")/.." || exit 2
SECS=${1:-900}
NODES=${NODES:-3 5}
SEED=${SEED:-1}
SNAPSHOT_EVERY=${SNAPSHOT_EVERY:-300}
[[ $SECS =~ ^[0-9]+$ ]] && [ "$SECS" -ge 10 ] && [ "$SECS" -le 86400 ] || { echo "fault-test: SECONDS_PER_RUN is 10..86400" >&2; exit 2; }
[ -e /usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1 ] || echo "fault-test: libfaketime missing: no clock jumps (apt-get install faketime)" >&2
cargo test --release -p server --test faults --no-run -q 2>/dev/null || cargo test --release -p server --test faults --no-run || exit 2
status=0
for n in $NODES; do
  out=$(LATCH_FAULT_SECS=$SECS LATCH_FAULT_NODES=$n LATCH_FAULT_SEED=$SEED LATCH_FAULT_SNAPSHOT_EVERY=$SNAPSHOT_EVERY \
    cargo test --release -q -p server --test faults locks_and_fenced_counters -- --nocapture 2>&1)
  rc=$?
  grep -E "^faults:|violation:" <<<"$out"
  if [ $rc -ne 0 ]; then
    status=1
    # The whole output (a node that did not start puts its log in the panic message).
    log=$(mktemp /tmp/fault-test-$n-nodes.XXXXXX.log)
    printf '%s\n' "$out" >"$log"
    grep -q "^faults:" <<<"$out" || grep -m1 -A12 "panicked" <<<"$out"
    echo "fault-test: the run's whole output is in $log"
  fi
done
exit $status
