#!/usr/bin/env bash
# cluster-clients.sh - cluster-aware clients of the Redis ecosystem run a lock loop against a
# Latch consensus group (3 nodes on 127.0.0.1) through kill -9 of the leader: redis-py's
# RedisCluster (scripts/lib/cluster_lock_loop.py) and ioredis's Cluster
# (scripts/lib/cluster_lock_loop.js): SET NX PX, INCR, owner-checked release.
# The `redis` crate's cluster client is covered by `cargo test -p server --test consensus`.
#
# usage: scripts/cluster-clients.sh [LATCH_BINARY] [SECONDS] [KILLS]
#        (defaults: target/release/latch-server, built if missing; 60 s; 3 kills)
# Environment: CLIENTS ("redis-py ioredis"); IOREDIS_DIR, a directory whose node_modules holds
# ioredis (default: a temp directory where `npm install ioredis@5` puts it, removed after).
# Needs python3 with redis-py (pip install redis) for both (it drives the group), node and npm for
# ioredis. Exit status: 0 when, for every client, no error reached the application beyond one
# retry and the counter holds every acknowledged increment.
set -u
cd "$(dirname "$0")/.." || exit 2
BIN=${1:-target/release/latch-server}
SECS=${2:-60}
KILLS=${3:-3}
[ -x "$BIN" ] || cargo build --release -q -p server || exit 2
python3 -c 'import redis.cluster' 2>/dev/null || { echo "cluster-clients: needs redis-py (pip install redis)" >&2; exit 2; }
status=0
for c in ${CLIENTS:-redis-py ioredis}; do
  case $c in
    redis-py) python3 scripts/lib/cluster_lock_loop.py "$BIN" "$SECS" "$KILLS" redis-py || status=1 ;;
    ioredis)
      command -v node >/dev/null && command -v npm >/dev/null || { echo "cluster-clients: ioredis needs node and npm" >&2; status=1; continue; }
      dir=${IOREDIS_DIR:-}
      made=
      if [ -z "$dir" ]; then
        dir=$(mktemp -d "${TMPDIR:-/tmp}/cluster-clients-ioredis.XXXXXX") || exit 2
        made=$dir
        npm install --prefix "$dir" --no-audit --no-fund --silent ioredis@5 >&2 || { rm -rf "$made"; status=1; continue; }
      fi
      NODE_PATH="$dir/node_modules" python3 scripts/lib/cluster_lock_loop.py "$BIN" "$SECS" "$KILLS" ioredis || status=1
      [ -z "$made" ] || rm -rf "$made"
      ;;
    *) echo "cluster-clients: unknown client $c" >&2; status=1 ;;
  esac
done
exit $status
