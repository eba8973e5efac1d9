#!/usr/bin/env bash
# sentinel-suite.sh - run Redis's own Sentinel test suite (tests/sentinel, runtest-sentinel) with
# SERVER_BIN as every data node and a stock Redis as the sentinels: what "a stock redis-sentinel
# monitors Latch and fails it over" means, checked by Redis's tests.
#
# usage: scripts/sentinel-suite.sh REDIS_SRC SERVER_BIN [-- extra run.tcl args ...]
#   REDIS_SRC   a clone or extract of https://github.com/redis/redis at tag 7.0.15 (see
#               scripts/redis-suite.sh); this repository ships no Redis code
#   SERVER_BIN  the data nodes' server, e.g. target/release/latch-server
#   e.g. REF_BIN=/usr/bin/redis-server scripts/sentinel-suite.sh /tmp/redis-src \
#            target/release/latch-server
#        scripts/sentinel-suite.sh /tmp/redis-src target/release/latch-server -- --single 00-base
#
# A work tree is made per binary under SENTINEL_DIR: a copy of tests/ and runtest-sentinel, with
# src/redis-server linked to the binary and src/redis-sentinel linked to the stock Redis binary
# (Redis runs as a sentinel when it is started under that name). The suite starts 5 sentinels
# and 5 data nodes on 127.0.0.1, ports from 20000 and 30000 up (tests/instances.tcl).
#
# Environment:
#   REF_BIN        also run the suite with this binary as the data nodes (e.g. /usr/bin/redis-server)
#                  and print its counts beside: what "all of Redis's passes" is
#   SENTINEL_BIN   the stock binary run as redis-sentinel (default: redis-server from PATH)
#   SENTINEL_DIR   work trees and logs (default /tmp/latch-sentinel-suite)
#   SUITE_TIMEOUT  wall-clock limit per run, seconds (default 1800)
# Output: one line per binary, "passed N failed M" (a test that fails makes the suite jump to the
# next unit, so the tests it skipped are in neither count); the failing tests follow.
# Exit status: 0 if SERVER_BIN's run failed nothing, 1 if it did, 2 on a usage or setup error.
set -u

usage() { awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0" >&2; exit 2; }
[ $# -ge 2 ] || usage
SRC=$1; BIN=$2; shift 2
EXTRA=()
if [ $# -gt 0 ]; then
  [ "$1" = "--" ] || usage
  shift; EXTRA=("$@")
fi
DIR=${SENTINEL_DIR:-/tmp/latch-sentinel-suite}
SUITE_TIMEOUT=${SUITE_TIMEOUT:-1800}
REF_BIN=${REF_BIN:-}
SENTINEL_BIN=${SENTINEL_BIN:-$(command -v redis-server || true)}

if [ ! -f "$SRC/tests/sentinel/run.tcl" ] || [ ! -f "$SRC/runtest-sentinel" ]; then
  echo "sentinel-suite: no Redis Sentinel suite at '$SRC' (it needs runtest-sentinel and tests/sentinel)" >&2
  exit 2
fi
command -v tclsh8.6 >/dev/null || command -v tclsh8.7 >/dev/null || command -v tclsh8.5 >/dev/null ||
  { echo "sentinel-suite: tclsh 8.5+ is required (apt-get install -y tcl)" >&2; exit 2; }
[ -n "$SENTINEL_BIN" ] || { echo "sentinel-suite: no redis-server to run as the sentinels (apt-get install -y redis-server)" >&2; exit 2; }
command -v redis-cli >/dev/null || { echo "sentinel-suite: redis-cli is required" >&2; exit 2; }
abspath() { (cd "$(dirname "$1")" 2>/dev/null && echo "$(pwd)/$(basename "$1")"); }
BIN=$(abspath "$BIN" || echo "$BIN")
SENTINEL_BIN=$(abspath "$SENTINEL_BIN")
for b in "$BIN" ${REF_BIN:+"$REF_BIN"}; do
  [ -x "$b" ] || { echo "sentinel-suite: '$b' is not an executable" >&2; exit 2; }
done
[ -n "$REF_BIN" ] && REF_BIN=$(abspath "$REF_BIN")

# shellcheck source-path=SCRIPTDIR source=lib/workdir.sh
. "$(dirname "$0")/lib/workdir.sh"
prepare_workdir sentinel-suite "$SRC" "$DIR" SENTINEL_DIR

make_tree() { # NAME SERVER -> prints the path of a fresh work tree
  local t="$DIR/$1"
  rm -rf "$t"; mkdir -p "$t/src" || exit 2
  cp -r "$SRC/tests" "$SRC/runtest-sentinel" "$t/" || exit 2
  ln -s "$2" "$t/src/redis-server"
  ln -s "$SENTINEL_BIN" "$t/src/redis-sentinel"
  ln -s "$(command -v redis-cli)" "$t/src/redis-cli"
  echo "$t"
}

run_suite() { # TREE LOG -> prints "passed failed"
  (cd "$1" && TERM=dumb timeout -k 10 "$SUITE_TIMEOUT" ./runtest-sentinel ${EXTRA[@]+"${EXTRA[@]}"} >"$2" 2>&1)
  sed -i 's/\x1b\[[0-9;]*m//g' "$2"
  local ok err
  # Each test prints "<time>> <name>: OK", or a line with "FAILED:" (tests/instances.tcl).
  ok=$(grep -c ': OK$' "$2"); err=$(grep -c 'FAILED:' "$2")
  echo "$ok $err"
}

LOGDIR="$DIR/logs/$(date +%Y%m%d-%H%M%S)"
mkdir -p "$LOGDIR" || exit 2
echo "# Redis Sentinel suite from $SRC; data nodes $BIN${REF_BIN:+ (reference: $REF_BIN)}; sentinels $SENTINEL_BIN; logs in $LOGDIR"
T=$(make_tree server "$BIN") || exit 2
read -r ok err < <(run_suite "$T" "$LOGDIR/server.log")
echo "server: passed $ok failed $err"
grep -B1 'FAILED:' "$LOGDIR/server.log" | head -40 | sed 's/^/    /'
if [ -n "$REF_BIN" ]; then
  R=$(make_tree reference "$REF_BIN") || exit 2
  read -r rok rerr < <(run_suite "$R" "$LOGDIR/reference.log")
  echo "reference: passed $rok failed $rerr"
  grep -B1 'FAILED:' "$LOGDIR/reference.log" | head -40 | sed 's/^/    /'
fi
[ "$err" -eq 0 ]
