#!/usr/bin/env bash
# cluster-clients.sh - a cluster-aware client of the Redis ecosystem runs a lock loop against a
# Latch consensus group (3 nodes on 127.0.0.1) through kill -9 of the leader: redis-py's
# RedisCluster (scripts/lib/cluster_lock_loop.py: SET NX PX, INCR, owner-checked release).
# The `redis` crate's cluster client is covered by `cargo test -p server --test consensus`.
#
# usage: scripts/cluster-clients.sh [LATCH_BINARY] [SECONDS] [KILLS]
#        (defaults: target/release/latch-server, built if missing; 60 s; 3 kills)
# Needs python3 with redis-py (pip install redis). Exit status: 0 when no error reached the
# application beyond one retry and the counter holds every acknowledged increment.
set -u
cd "$(dirname "$0")/.." || exit 2
BIN=${1:-target/release/latch-server}
SECS=${2:-60}
KILLS=${3:-3}
[ -x "$BIN" ] || cargo build --release -q -p server || exit 2
python3 -c 'import redis.cluster' 2>/dev/null || { echo "cluster-clients: needs redis-py (pip install redis)" >&2; exit 2; }
exec python3 scripts/lib/cluster_lock_loop.py "$BIN" "$SECS" "$KILLS"
