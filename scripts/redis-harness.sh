#!/usr/bin/env bash
# redis-harness.sh - run units of Redis's own Tcl test suite in its NORMAL mode, where the suite
# starts and stops its own servers (tests/assets/default.conf plus each test's options, restarts,
# crafted RDB/AOF files, replicas), with SERVER_BIN standing in for src/redis-server. This reaches
# tests that external mode (scripts/redis-suite.sh) cannot: DEBUG RELOAD, SAVE, restarts, the
# integration/ units.
#
# usage: scripts/redis-harness.sh REDIS_SRC SERVER_BIN [unit ...] [-- extra runtest args ...]
#   REDIS_SRC   a clone or extract of https://github.com/redis/redis at tag 7.0.15 (see
#               scripts/redis-suite.sh); this repository ships no Redis code
#   SERVER_BIN  the server to test, e.g. target/release/latch-server
#   unit        e.g. unit/type/incr (the default), unit/dump, integration/rdb
#   e.g. scripts/redis-harness.sh /tmp/redis-src target/release/latch-server unit/type/incr
#        REF_BIN=/usr/bin/redis-server scripts/redis-harness.sh /tmp/redis-src \
#            target/release/latch-server unit/type/incr unit/expire
#
# For each binary a work tree is made under HARNESS_DIR: a copy of tests/ and runtest, with
# src/redis-server linked to the binary and src/redis-cli, redis-benchmark, redis-check-aof and
# redis-check-rdb linked to the system's tools (Debian: redis-tools, redis-server). Each unit
# runs there as `./runtest --single UNIT --clients 1 --timeout STALL [extra args]`; the servers the
# suite starts listen on 127.0.0.1 (tests/assets/default.conf), on ports from 21111 up.
#
# What the suite expects of SERVER_BIN (redis-server does all of it): started as
# `SERVER_BIN file.conf`, it accepts redis.conf syntax and the options the tests write; its log
# shows " PID: <pid>" (with always-show-logo yes) and "Ready to accept connections"; it logs
# "Failed listening on port" when the port is taken; it has the DEBUG subcommands the tests call.
#
# Counting, per unit: "[ok]" lines pass, "[err]" lines fail; a unit that aborts, stalls, is killed
# at UNIT_TIMEOUT or ends without its summary is marked ABORTED and counts one more failure.
#
# Environment:
#   REF_BIN       also run every unit with this binary (e.g. /usr/bin/redis-server) and print
#                 its counts beside: what "all of Redis's passes" is for that unit
#   HARNESS_DIR   work trees and logs (default /tmp/latch-redis-harness)
#   STALL         runtest --timeout, seconds without progress (default 120)
#   UNIT_TIMEOUT  hard wall-clock limit per unit and binary, seconds (default 900)
#   VERBOSE=1     also print the names of SERVER_BIN's failing tests
# Output: one line per unit; last line "<passed> passed, <failed> failed" for SERVER_BIN.
# Exit status: 0 if nothing failed, 1 if something did, 2 on a usage or setup error.
set -u

usage() { awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0" >&2; exit 2; }
[ $# -ge 2 ] || usage
SRC=$1; BIN=$2; shift 2
UNITS=(); EXTRA=()
while [ $# -gt 0 ]; do
  if [ "$1" = "--" ]; then shift; EXTRA=("$@"); break; fi
  UNITS+=("$1"); shift
done
[ ${#UNITS[@]} -gt 0 ] || UNITS=(unit/type/incr)

DIR=${HARNESS_DIR:-/tmp/latch-redis-harness}
STALL=${STALL:-120}
UNIT_TIMEOUT=${UNIT_TIMEOUT:-900}
VERBOSE=${VERBOSE:-0}
REF_BIN=${REF_BIN:-}
for v in STALL UNIT_TIMEOUT; do
  if ! [[ ${!v} =~ ^[0-9]+$ ]] || [ "${!v}" -lt 1 ]; then echo "redis-harness: $v must be a positive integer" >&2; exit 2; fi
done

if [ ! -f "$SRC/tests/test_helper.tcl" ] || [ ! -f "$SRC/runtest" ]; then
  echo "redis-harness: no Redis test suite at '$SRC' (it needs runtest and tests/); get it with" >&2
  echo "  git clone --depth 1 --branch 7.0.15 https://github.com/redis/redis $SRC" >&2
  exit 2
fi
command -v tclsh8.6 >/dev/null || command -v tclsh8.7 >/dev/null || command -v tclsh8.5 >/dev/null ||
  { echo "redis-harness: tclsh 8.5+ is required (apt-get install -y tcl)" >&2; exit 2; }
TOOLS=(redis-cli redis-benchmark redis-check-aof redis-check-rdb)
for t in "${TOOLS[@]}"; do
  command -v "$t" >/dev/null || { echo "redis-harness: $t is required (apt-get install -y redis-tools redis-server)" >&2; exit 2; }
done
abspath() { (cd "$(dirname "$1")" 2>/dev/null && echo "$(pwd)/$(basename "$1")"); }
# absolute, but not resolved: Debian's /usr/bin/redis-server is a link to redis-check-rdb
BIN=$(abspath "$BIN" || echo "$BIN")
if [ ! -f "$BIN" ] || [ ! -x "$BIN" ]; then echo "redis-harness: '$BIN' is not an executable" >&2; exit 2; fi
if [ -n "$REF_BIN" ]; then
  REF_BIN=$(abspath "$REF_BIN" || echo "$REF_BIN")
  if [ ! -f "$REF_BIN" ] || [ ! -x "$REF_BIN" ]; then
    echo "redis-harness: REF_BIN '$REF_BIN' is not an executable" >&2; exit 2
  fi
fi

# shellcheck source-path=SCRIPTDIR source=lib/workdir.sh
. "$(dirname "$0")/lib/workdir.sh"
prepare_workdir redis-harness "$SRC" "$DIR" HARNESS_DIR

make_tree() { # NAME SERVER -> prints the path of a fresh work tree whose src/redis-server is SERVER
  local t="$DIR/$1" x
  rm -rf "$t"; mkdir -p "$t/src" || exit 2
  cp -r "$SRC/tests" "$SRC/runtest" "$t/" || exit 2
  rm -rf "$t/tests/tmp"; mkdir -p "$t/tests/tmp"
  ln -s "$2" "$t/src/redis-server"
  for x in "${TOOLS[@]}"; do ln -s "$(command -v "$x")" "$t/src/$x"; done
  echo "$t"
}

run_unit() { # TREE UNIT LOG -> prints "passed failed aborted(0|1)"
  (cd "$1" && TERM=dumb timeout -k 10 "$UNIT_TIMEOUT" ./runtest --single "$2" --clients 1 \
     --timeout "$STALL" ${EXTRA[@]+"${EXTRA[@]}"} >"$3" 2>&1)
  local rc=$? ok err ab=0
  sed -i 's/\x1b\[[0-9;]*m//g' "$3"
  ok=$(grep -c '^\[ok\]' "$3"); err=$(grep -c '^\[err\]' "$3")
  if grep -q '^\[exception\]\|^\[TIMEOUT\]' "$3" || [ $rc -eq 124 ] || [ $rc -eq 137 ] ||
     ! grep -q 'All tests passed\|tests failed' "$3"; then ab=1; fi
  echo "$ok $err $ab"
}

LOGDIR="$DIR/logs/$(date +%Y%m%d-%H%M%S)"
mkdir -p "$LOGDIR" || exit 2
T=$(make_tree server "$BIN") || exit 2
R=""
if [ -n "$REF_BIN" ]; then R=$(make_tree reference "$REF_BIN") || exit 2; fi
echo "# Redis test suite from $SRC (normal mode); server $BIN${REF_BIN:+; reference $REF_BIN}; logs in $LOGDIR"

PASSED=0; FAILED=0
for u in "${UNITS[@]}"; do
  u=${u#tests/}; u=${u%.tcl}
  if [ ! -f "$SRC/tests/$u.tcl" ]; then echo "$u: not found in $SRC/tests"; continue; fi
  log="$LOGDIR/${u//\//_}"
  read -r ok err ab < <(run_unit "$T" "$u" "$log.log")
  line="$u: passed $ok failed $err"
  [ "$ab" = 1 ] && line="$line ABORTED ($(grep -m1 -A1 '^\[exception\]\|^\[TIMEOUT\]' "$log.log" | tail -1 | cut -c1-120))"
  if [ -n "$R" ]; then
    read -r rok rerr rab < <(run_unit "$R" "$u" "$log.reference.log")
    line="$line | reference: passed $rok failed $rerr"
    [ "$rab" = 1 ] && line="$line ABORTED"
  fi
  echo "$line"
  [ "$VERBOSE" = 1 ] && grep '^\[err\]' "$log.log" | sed 's/^/    /'
  PASSED=$((PASSED + ok)); FAILED=$((FAILED + err + ab))
done
echo "$PASSED passed, $FAILED failed"
[ $FAILED -eq 0 ]
