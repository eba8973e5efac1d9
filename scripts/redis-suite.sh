#!/usr/bin/env bash
# redis-suite.sh - run units of Redis's own Tcl test suite in EXTERNAL mode against a server that
# is already listening on 127.0.0.1:PORT (Latch, or a redis-server for comparison).
#
# usage: scripts/redis-suite.sh REDIS_SRC PORT [unit ...] [-- extra runtest args ...]
#   REDIS_SRC  a clone or extract of https://github.com/redis/redis at tag 7.0.15 (it needs
#              ./runtest and tests/); this repository ships no Redis code:
#                git clone --depth 1 --branch 7.0.15 https://github.com/redis/redis /tmp/redis-src
#   PORT       port of the running server, always on 127.0.0.1
#   unit       e.g. unit/type/incr (default: the units listed in DEFAULT_UNITS below)
#   e.g. scripts/redis-suite.sh /tmp/redis-src 6379 unit/type/incr unit/expire
#        scripts/redis-suite.sh /tmp/redis-src 6379 unit/type/list -- --only '/^LPOS'
#
# Each unit runs as
#   ./runtest --host 127.0.0.1 --port PORT --single UNIT --durable --timeout STALL
#             --ignore-encoding --ignore-digest --tags "-needs:debug -needs:repl ..."
# (in 7.0.15 `--host` is what selects external mode). The excluded tags are the tests that
# need DEBUG, replication, SAVE, CONFIG of maxmemory/resetstat, RESET, PFDEBUG, LATENCY or a
# server process on this machine; --ignore-encoding / --ignore-digest skip the checks of Redis's
# internal encodings and of DEBUG DIGEST. A genuine redis-server 7.0.15 passes all of what is
# left; for unit/type/incr that is 23 tests.
#
# tests/ and runtest are copied into a work directory, so the source tree stays clean (the suite
# writes tests/tmp). The server's CONFIG values that tests are known to leave changed are read
# before the first unit and put back after each one (best effort).
#
# Counting, per unit: every "[ok]" line is a pass, every "[err]" line a failure; a unit that
# aborts (an "[exception]"), stalls ("[TIMEOUT]"), is killed at UNIT_TIMEOUT or exits without
# its summary adds one more failure. Tests skipped by tag are not counted.
#
# Environment:
#   LATCH_SUITE_DIR  work directory (default /tmp/latch-redis-suite); logs go to its logs/
#   STALL            runtest --timeout: seconds without progress before it gives up (default 120)
#   UNIT_TIMEOUT     hard wall-clock limit per unit, seconds (default 900)
#   VERBOSE=1        also print the name of each failing test
# Output: one line per unit, then the last line "<passed> passed, <failed> failed".
# Exit status: 0 if nothing failed, 1 if something did, 2 on a usage or setup error.
set -u

usage() { awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0" >&2; exit 2; }
[ $# -ge 2 ] || usage
SRC=$1; PORT=$2; shift 2
if ! [[ $PORT =~ ^[0-9]+$ ]] || [ "$PORT" -lt 1 ] || [ "$PORT" -gt 65535 ]; then
  echo "redis-suite: bad port '$PORT'" >&2; exit 2
fi
HOST=127.0.0.1   # loopback only, by design

DEFAULT_UNITS=(unit/type/string unit/type/incr unit/expire unit/keyspace unit/multi
  unit/scripting unit/info-command unit/other unit/protocol unit/auth
  unit/type/list unit/type/hash unit/type/set unit/type/zset unit/pubsub)
UNITS=(); EXTRA=()
while [ $# -gt 0 ]; do
  if [ "$1" = "--" ]; then shift; EXTRA=("$@"); break; fi
  UNITS+=("$1"); shift
done
[ ${#UNITS[@]} -gt 0 ] || UNITS=("${DEFAULT_UNITS[@]}")

DIR=${LATCH_SUITE_DIR:-/tmp/latch-redis-suite}
STALL=${STALL:-120}
UNIT_TIMEOUT=${UNIT_TIMEOUT:-900}
VERBOSE=${VERBOSE:-0}
for v in STALL UNIT_TIMEOUT; do
  if ! [[ ${!v} =~ ^[0-9]+$ ]] || [ "${!v}" -lt 1 ]; then echo "redis-suite: $v must be a positive integer" >&2; exit 2; fi
done

if [ ! -f "$SRC/tests/test_helper.tcl" ] || [ ! -f "$SRC/runtest" ]; then
  echo "redis-suite: no Redis test suite at '$SRC' (it needs runtest and tests/); get it with" >&2
  echo "  git clone --depth 1 --branch 7.0.15 https://github.com/redis/redis $SRC" >&2
  exit 2
fi
TCLSH=$(command -v tclsh8.6 || command -v tclsh8.7 || command -v tclsh8.5 || true)
[ -n "$TCLSH" ] || { echo "redis-suite: tclsh 8.5+ is required (apt-get install -y tcl)" >&2; exit 2; }

# ---- the work directory: a copy of tests/ and runtest, marked as ours ----
# shellcheck source-path=SCRIPTDIR source=lib/workdir.sh
. "$(dirname "$0")/lib/workdir.sh"
prepare_workdir redis-suite "$SRC" "$DIR" LATCH_SUITE_DIR
rm -rf "$DIR/tests" "$DIR/runtest"
cp -r "$SRC/tests" "$SRC/runtest" "$DIR/" || exit 2
rm -rf "$DIR/tests/tmp"; mkdir -p "$DIR/tests/tmp"
LOGDIR="$DIR/logs/$PORT-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$LOGDIR" || exit 2

# ---- ping / snapshot / restore CONFIG through the suite's own Tcl client ----
tcl_client() { # ping | snapshot FILE | restore FILE
  (cd "$DIR" && timeout -k 5 30 "$TCLSH" /dev/stdin "$HOST" "$PORT" "$1" "${2:-}" <<'EOF'
source tests/support/redis.tcl
lassign $argv host port mode file
if {[catch {set r [redis $host $port]} e]} { puts stderr "cannot connect: $e"; exit 1 }
if {$mode eq "ping"} {
  if {[catch {$r ping} e]} { puts stderr "PING failed: $e"; exit 1 }
  exit 0
}
set params {proto-max-bulk-len client-query-buffer-limit set-max-intset-entries lua-time-limit
  busy-reply-threshold notify-keyspace-events maxmemory maxmemory-policy appendonly save
  requirepass list-max-ziplist-size list-compress-depth hash-max-ziplist-entries
  hash-max-ziplist-value zset-max-ziplist-entries zset-max-ziplist-value}
if {$mode eq "snapshot"} {
  set fh [open $file w]
  foreach p $params {
    if {![catch {$r config get $p} v] && [llength $v] == 2} { puts $fh [list $p [lindex $v 1]] }
  }
  close $fh
} else {
  set fh [open $file r]
  foreach line [split [read $fh] "\n"] {
    if {[llength $line] != 2} continue
    lassign $line p v
    catch { if {[lindex [$r config get $p] 1] ne $v} { $r config set $p $v } }
  }
  close $fh
}
EOF
  )
}

if ! tcl_client ping 2>"$LOGDIR/ping.err"; then
  echo "redis-suite: nothing answers PING on $HOST:$PORT: $(cat "$LOGDIR/ping.err")" >&2; exit 2
fi
SNAP="$LOGDIR/config.snapshot"
tcl_client snapshot "$SNAP" 2>/dev/null

TAGS="-needs:debug -needs:repl -needs:save -needs:config-maxmemory -needs:config-resetstat"
TAGS="$TAGS -needs:reset -needs:pfdebug -needs:latency -needs:local-process"
FLAGS=(--host "$HOST" --port "$PORT" --durable --timeout "$STALL" --ignore-encoding --ignore-digest --tags "$TAGS")
echo "# Redis test suite from $SRC (external mode) against $HOST:$PORT; logs in $LOGDIR"

PASSED=0; FAILED=0
for u in "${UNITS[@]}"; do
  u=${u#tests/}; u=${u%.tcl}
  if [ ! -f "$DIR/tests/$u.tcl" ]; then echo "$u: not found in $SRC/tests"; continue; fi
  log="$LOGDIR/${u//\//_}.log"
  start=$SECONDS
  (cd "$DIR" && TERM=dumb timeout -k 10 "$UNIT_TIMEOUT" ./runtest --single "$u" "${FLAGS[@]}" \
     ${EXTRA[@]+"${EXTRA[@]}"} >"$log" 2>&1)
  rc=$?
  sed -i 's/\x1b\[[0-9;]*m//g' "$log"   # no colours with TERM=dumb, but be sure
  ok=$(grep -c '^\[ok\]' "$log"); err=$(grep -c '^\[err\]' "$log")
  failed=$err; note=""
  if grep -q '^\[exception\]' "$log"; then
    failed=$((failed + 1)); note=" ABORTED: $(grep -m1 -A1 '^\[exception\]' "$log" | tail -1 | cut -c1-150)"
  elif grep -q '^\[TIMEOUT\]' "$log"; then
    failed=$((failed + 1)); note=" STALLED: $(grep -m1 -A1 '^\[TIMEOUT\]' "$log" | tail -1 | cut -c1-150)"
  elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    failed=$((failed + 1)); note=" KILLED after ${UNIT_TIMEOUT}s"
  elif ! grep -q 'All tests passed\|tests failed' "$log"; then
    failed=$((failed + 1)); note=" runtest exited (rc=$rc) without its summary, see the log"
  fi
  echo "$u: passed $ok failed $failed ($((SECONDS - start))s)$note"
  [ "$VERBOSE" = 1 ] && grep '^\[err\]' "$log" | sed 's/^/    /'
  PASSED=$((PASSED + ok)); FAILED=$((FAILED + failed))
  [ -s "$SNAP" ] && tcl_client restore "$SNAP" 2>/dev/null
done
echo "$PASSED passed, $FAILED failed"
[ $FAILED -eq 0 ]
