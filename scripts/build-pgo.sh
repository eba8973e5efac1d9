#!/usr/bin/env bash
# build-pgo.sh - a release latch-server built with profile-guided optimization (rustc's
# -Cprofile-generate / -Cprofile-use): an instrumented build serves a training run of
# redis-benchmark on loopback, and the branch and call counts it wrote steer the inlining and the
# code layout of the final build. The plain `cargo build --release` stays the default build; this
# one is for deployments that want the CPU it saves (docs/performance.md has the figures).
#
# usage: scripts/build-pgo.sh
# Output: target/pgo/<host triple>/release/latch-server (its path is the last line printed).
#
# The training covers the server's common paths, not one benchmark: redis-benchmark's tests of
# strings, lists, sets, hashes and sorted sets and the lock commands (SETNX, SET NX PX, the
# compare-and-delete release script, LOCK/UNLOCK), keys spread over 100,000 names, at pipeline
# depths 1 and 16, on a server without persistence, on one writing an append-only file, and on
# the leader of a 3-node consensus group. Code no training reaches (replication, snapshots, ...)
# is laid out as cold: profile it into the training before relying on this build for it.
#
# Needs: the llvm-tools rustup component (`rustup component add llvm-tools`) for llvm-profdata of
# rustc's own LLVM version, redis-benchmark and redis-cli.
# Environment (optional): N=50000 requests per training test; TARGET=target/pgo.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-50000}
TARGET=${TARGET:-target/pgo}
case $TARGET in /*) ;; *) TARGET=$PWD/$TARGET ;; esac
PROFDATA=$(find "$(rustc --print sysroot)" -name llvm-profdata -type f | head -1)
[ -n "$PROFDATA" ] || { echo "build-pgo: llvm-profdata not found; run: rustup component add llvm-tools" >&2; exit 2; }
command -v redis-benchmark >/dev/null || { echo "build-pgo: redis-benchmark not found" >&2; exit 2; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/latch-pgo.XXXXXX")
NAME=build-pgo
# shellcheck source=scripts/lib/servers.sh
. scripts/lib/servers.sh

# The workspace's own flags (.cargo/config.toml) are replaced by RUSTFLAGS, so they are repeated.
# With an explicit --target, RUSTFLAGS reach the server's code and not the build scripts, which
# would otherwise write profiles of their own runs during the build.
BASE_FLAGS="--cfg tokio_unstable"
HOST=$(rustc -vV | sed -n 's/^host: //p')
echo "build-pgo: instrumented build" >&2
# The profiles' directory is fixed, so that the instrumented build is cached from run to run.
PROFILES=$TARGET-gen/profiles
RUSTFLAGS="$BASE_FLAGS -Cprofile-generate=$PROFILES" \
  cargo build --release -p server --bin latch-server --target "$HOST" --target-dir "$TARGET-gen" >&2

BIN=$TARGET-gen/$HOST/release/latch-server
rm -rf "$PROFILES"
RELEASE='if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end'
# train PORT PIPELINES...: the workloads against one server (a group's leader included).
train() {
  local port=$1 p sha; shift
  bench() { timeout 600 redis-benchmark -h 127.0.0.1 -p "$port" -n "$N" -c 50 -r 100000 -q "$@" >/dev/null; }
  sha=$(redis-cli -h 127.0.0.1 -p "$port" SCRIPT LOAD "$RELEASE")
  for p in "$@"; do
    bench -P "$p" -t set,get,incr,lpush,rpush,lpop,rpop,sadd,hset,spop,zadd,zpopmin,lrange_100,mset
    bench -P "$p" setnx 'key:__rand_int__' v
    bench -P "$p" set 'lock:__rand_int__' tok NX PX 30000
    bench -P "$p" evalsha "$sha" 1 'lock:__rand_int__' tok
    bench -P "$p" lock 'mutex:__rand_int__' tok 30000
    bench -P "$p" unlock 'mutex:__rand_int__' tok
  done
}
# stop TAG: a clean exit, which writes the profile (the runtime's exit handler); a killed server
# would write none.
stop() {
  redis-cli -h 127.0.0.1 -p "${PORT[$1]}" SHUTDOWN NOSAVE >/dev/null 2>&1 || true
  wait "${PID[$1]}" 2>/dev/null || true
}

echo "build-pgo: training a server without persistence, and one with an append-only file" >&2
start plain "$BIN"
train "${PORT[plain]}" 1 16
stop plain
start aof "$BIN" --appendonly yes --appendfsync everysec
N=$((N / 2)) train "${PORT[aof]}" 16
stop aof

echo "build-pgo: training a 3-node consensus group" >&2
base=$(free_ports 6) || exit 1
PEERS="1=127.0.0.1:$((base + 3)),2=127.0.0.1:$((base + 4)),3=127.0.0.1:$((base + 5))"
for i in 1 2 3; do
  d=$WORK/node$i; mkdir -p "$d"
  (cd "$d" && exec "$BIN" --bind 127.0.0.1 --port $((base + i - 1)) --save '' --appendonly no \
     --loglevel warning --raft-id "$i" --raft-port $((base + i + 2)) --raft-peers "$PEERS" --dir "$d" \
     >"$WORK/node$i.log" 2>&1) &
  PIDS+=($!); PID[node$i]=$!; PORT[node$i]=$((base + i - 1))
done
leader=
for _ in $(seq 300); do
  for i in 1 2 3; do
    if redis-cli -h 127.0.0.1 -p "${PORT[node$i]}" INFO consensus 2>/dev/null | grep -q '^consensus_role:leader'; then
      leader=$i; break 2
    fi
  done
  sleep 0.1
done
[ -n "$leader" ] || { echo "build-pgo: the group elected no leader" >&2; exit 1; }
N=$((N / 5)) train "${PORT[node$leader]}" 1 16
for i in 1 2 3; do stop "node$i"; done

ls "$PROFILES"/*.profraw >/dev/null 2>&1 || { echo "build-pgo: the training run wrote no profile" >&2; exit 1; }
"$PROFDATA" merge -o "$WORK/latch.profdata" "$PROFILES"/*.profraw
# Cargo does not watch the profile's contents: its path names them, so a new profile rebuilds.
USE=$TARGET-gen/latch-$(sha256sum "$WORK/latch.profdata" | cut -c1-16).profdata
cp "$WORK/latch.profdata" "$USE"

echo "build-pgo: optimized build" >&2
RUSTFLAGS="$BASE_FLAGS -Cprofile-use=$USE" \
  cargo build --release -p server --bin latch-server --target "$HOST" --target-dir "$TARGET" >&2
echo "$TARGET/$HOST/release/latch-server"
