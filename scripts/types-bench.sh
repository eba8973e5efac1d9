#!/usr/bin/env bash
# types-bench.sh - streams, HyperLogLog and geo: Latch against redis-server, started side by side
# on loopback by this script, in the same run. Workloads run interleaved (latch, redis, latch,
# redis ...) for ROUNDS rounds; for each the median requests (or entries) per second, the median
# server CPU per request (utime + stime from /proc/PID/stat around the run: with 2 cores the client
# saturates first, so CPU per request tells more than the rate), and the ratios Latch / Redis.
#
# usage: scripts/types-bench.sh [LATCH_BINARY]     (default: builds and uses target/release)
#
# Workloads:
#   XADD_P1, XADD_P16     redis-benchmark: XADD bench:s * f <rand> (-P 1, -P 16)
#   XREADGROUP_1G         stream-bench: 1 group, 1 consumer drains a stream of ENTRIES entries with
#                         XREADGROUP COUNT 100 + XACK (per entry)
#   XREADGROUP_10G        the same with 10 groups of 1 consumer (10 × ENTRIES deliveries)
#   PFADD, PFCOUNT        PFADD bench:hll <rand>, then PFCOUNT bench:hll (dense by then)
#   GEOADD                GEOADD bench:geo 13.<rand> 38.<rand> m:<rand>
#   GEOSEARCH             GEOSEARCH in a set of 100000 points spread over the globe: BYRADIUS
#                         200 km ASC COUNT 10 (about 25 points inside)
# Then memory: MEM_ENTRIES (1000000) XADD of a 2-field entry into one stream (the same IDs and
# values in both, through redis-cli --pipe), and each server's RSS growth and used_memory growth;
# ratio Latch / Redis (target: at most 1.0).
#
# Environment (all optional):
#   N=200000        requests per redis-benchmark run     C=50  connections (-c)
#   ENTRIES=200000  stream length for the XREADGROUP runs
#   ROUNDS=3        interleaved rounds (1..20)            TIMEOUT=180  seconds per run
#   MEM_ENTRIES=1000000                                   REDIS=/usr/bin/redis-server
#   WORKLOADS       a subset of the list above (default: all)
#   RAW=FILE        also save the per-run rows (server round workload rate cpu_ns)
set -u
cd "$(dirname "$0")/.." || exit 2

usage() { awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0" >&2; exit 2; }
[ $# -le 1 ] || usage
case ${1:-} in -h|--help) usage ;; esac

N=${N:-200000}; C=${C:-50}; ENTRIES=${ENTRIES:-200000}; ROUNDS=${ROUNDS:-3}; TIMEOUT=${TIMEOUT:-180}
MEM_ENTRIES=${MEM_ENTRIES:-1000000}; REDIS=${REDIS:-/usr/bin/redis-server}; RAW=${RAW:-}
ALL="XADD_P1 XADD_P16 XREADGROUP_1G XREADGROUP_10G PFADD PFCOUNT GEOADD GEOSEARCH"
WORKLOADS=${WORKLOADS:-$ALL}
for v in N C ENTRIES ROUNDS TIMEOUT MEM_ENTRIES; do
  if ! [[ ${!v} =~ ^[0-9]+$ ]] || [ "${!v}" -lt 1 ]; then echo "types-bench: $v must be a positive integer" >&2; exit 2; fi
done
[ "$ROUNDS" -le 20 ] || { echo "types-bench: ROUNDS is at most 20" >&2; exit 2; }
[ "$N" -le 10000000 ] && [ "$ENTRIES" -le 10000000 ] && [ "$MEM_ENTRIES" -le 20000000 ] ||
  { echo "types-bench: N and ENTRIES are at most 10000000, MEM_ENTRIES 20000000" >&2; exit 2; }
for w in $WORKLOADS; do
  [[ " $ALL " == *" $w "* ]] || { echo "types-bench: unknown workload '$w' (known: $ALL)" >&2; exit 2; }
done
for t in redis-cli redis-benchmark timeout awk getconf python3; do
  command -v "$t" >/dev/null || { echo "types-bench: $t is required (apt-get install -y redis-tools python3)" >&2; exit 2; }
done
[ -x "$REDIS" ] || { echo "types-bench: $REDIS not found (apt-get install -y redis-server, or REDIS=path)" >&2; exit 2; }

target=${CARGO_TARGET_DIR:-}
if [ -z "$target" ]; then
  target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])') || exit 2
fi
if [ $# -eq 1 ]; then
  LATCH=$1
  [ -x "$LATCH" ] || { echo "types-bench: $LATCH is not an executable" >&2; exit 2; }
  [[ $LATCH == /* ]] || LATCH=$PWD/$LATCH
  cargo build --release -p stream-bench >&2 || exit 2
else
  cargo build --release -p server -p stream-bench >&2 || exit 2
  LATCH=$target/release/latch-server
fi
BENCH=$target/release/stream-bench
[[ $REDIS == /* ]] || REDIS=$PWD/$REDIS
CLK_TCK=$(getconf CLK_TCK)

WORK=$(mktemp -d "${TMPDIR:-/tmp}/types-bench.XXXXXX") || exit 2
RES=$WORK/rows.tsv; : >"$RES"
NAME=types-bench
# shellcheck source=scripts/lib/servers.sh
. scripts/lib/servers.sh

cli() { timeout 60 redis-cli -h 127.0.0.1 -p "${PORT[$1]}" "${@:2}" 2>&1; }

cpu_ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }
rss_kb() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }
used_memory() { cli "$1" INFO memory | awk -F: '/^used_memory:/ { print $2 + 0 }'; }

row() { # TAG ROUND WORKLOAD RATE REQUESTS TICKS
  awk -v t="$1" -v r="$2" -v w="$3" -v rate="$4" -v n="$5" -v ticks="$6" -v hz="$CLK_TCK" \
    'BEGIN { printf "%s\t%s\t%s\t%.0f\t%.0f\n", t, r, w, rate, ticks / hz * 1e9 / n }' >>"$RES"
}

bench() { # TAG ROUND WORKLOAD PIPELINE command...: one redis-benchmark run
  local tag=$1 round=$2 w=$3 p=$4 out rc=0 t0 t1 rps; shift 4
  t0=$(cpu_ticks "${PID[$tag]}")
  out=$(timeout -k 5 "$TIMEOUT" redis-benchmark -h 127.0.0.1 -p "${PORT[$tag]}" -c "$C" -n "$N" -P "$p" \
        -r 1000000 --csv "$@" 2>"$WORK/err") || rc=$?
  t1=$(cpu_ticks "${PID[$tag]}")
  if [ $rc -ne 0 ]; then echo "warn: $tag round $round: $w failed (rc=$rc): $(head -c 200 "$WORK/err")" >&2; return 0; fi
  rps=$(awk -F'","' 'NR == 2 { gsub(/"/, "", $2); print $2 }' <<<"$out")
  [ -n "$rps" ] || { echo "warn: $tag round $round: $w gave no figure" >&2; return 0; }
  row "$tag" "$round" "$w" "$rps" "$N" $((t1 - t0))
}

fill_stream() { # TAG KEY COUNT: XADD COUNT entries (pipelined by redis-benchmark)
  cli "$1" DEL "$2" >/dev/null
  timeout -k 5 "$TIMEOUT" redis-benchmark -h 127.0.0.1 -p "${PORT[$1]}" -c 50 -n "$3" -P 16 -r 1000000 -q \
    XADD "$2" '*' job __rand_int__ >/dev/null 2>&1
  local len; len=$(cli "$1" XLEN "$2")
  [ "$len" = "$3" ] || { echo "types-bench: $1: $2 holds $len entries, not $3" >&2; exit 1; }
}

want() { [[ " $WORKLOADS " == *" $1 "* ]]; }

# 100000 points spread over the globe (a fixed seed: both servers get the same set).
python3 - >"$WORK/geo.resp" <<'PY'
import random, sys
r = random.Random(7)
out = sys.stdout.buffer
for i in range(100000):
    lon, lat, m = b"%.6f" % r.uniform(-180, 180), b"%.6f" % r.uniform(-85, 85), b"p:%d" % i
    out.write(b"*5\r\n$6\r\nGEOADD\r\n$9\r\nbench:pts\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(lon), lon, len(lat), lat, len(m), m))
PY

run_round() { # TAG ROUND
  local tag=$1 r=$2 t0 t1
  cli "$tag" FLUSHALL >/dev/null
  if want XADD_P1; then bench "$tag" "$r" XADD_P1 1 XADD bench:s '*' f __rand_int__; fi
  if want XADD_P16; then bench "$tag" "$r" XADD_P16 16 XADD bench:s '*' f __rand_int__; fi
  cli "$tag" DEL bench:s >/dev/null
  for g in 1 10; do
    if want "XREADGROUP_${g}G"; then
      fill_stream "$tag" bench:q "$ENTRIES"
      local out
      t0=$(cpu_ticks "${PID[$tag]}")
      if out=$("$BENCH" --port "${PORT[$tag]}" --key bench:q --groups "$g" --count 100 --timeout "$TIMEOUT" 2>&1); then
        t1=$(cpu_ticks "${PID[$tag]}")
        row "$tag" "$r" "XREADGROUP_${g}G" "$(sed -n 's/.* rate=\([0-9]*\).*/\1/p' <<<"$out")" \
          "$(sed -n 's/^delivered=\([0-9]*\).*/\1/p' <<<"$out")" $((t1 - t0))
      else
        echo "warn: $tag round $r: XREADGROUP_${g}G failed: $out" >&2
      fi
    fi
  done
  cli "$tag" DEL bench:q >/dev/null
  if want PFADD; then bench "$tag" "$r" PFADD 1 PFADD bench:hll __rand_int__; fi
  if want PFCOUNT; then bench "$tag" "$r" PFCOUNT 1 PFCOUNT bench:hll; fi
  if want GEOADD; then bench "$tag" "$r" GEOADD 1 GEOADD bench:geo 13.__rand_int__ 38.__rand_int__ m:__rand_int__; fi
  if want GEOSEARCH; then
    timeout 60 redis-cli -p "${PORT[$tag]}" --pipe <"$WORK/geo.resp" >/dev/null 2>&1
    bench "$tag" "$r" GEOSEARCH 1 GEOSEARCH bench:pts FROMLONLAT 13.361389 38.115556 BYRADIUS 200 km ASC COUNT 10
  fi
  cli "$tag" FLUSHALL >/dev/null
}

start latch "$LATCH"
start redis "$REDIS"
echo "# latch $LATCH (pid ${PID[latch]}), redis $REDIS (pid ${PID[redis]}); N=$N C=$C ENTRIES=$ENTRIES ROUNDS=$ROUNDS"
for r in $(seq "$ROUNDS"); do
  for tag in latch redis; do run_round "$tag" "$r"; done
done

printf "%-16s %12s %12s %7s %13s %13s %7s\n" workload latch_rps redis_rps ratio latch_cpu_ns redis_cpu_ns ratio
for w in $WORKLOADS; do
  awk -F'\t' -v w="$w" '
    function median(a, n,   i, j, t) {
      for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
      return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    $3 == w { if ($1 == "latch") { lr[++nl] = $4; lc[nl] = $5 } else { rr[++nr] = $4; rc[nr] = $5 } }
    END {
      if (!nl || !nr) { printf "%-16s %12s\n", w, "n/a"; exit }
      a = median(lr, nl); b = median(rr, nr); c = median(lc, nl); d = median(rc, nr)
      printf "%-16s %12.0f %12.0f %7.2f %13.0f %13.0f %7.2f\n", w, a, b, a / b, c, d, (d ? c / d : 0)
    }' "$RES"
done

# Memory: one stream of MEM_ENTRIES entries of two fields, the same bytes in both servers: explicit
# IDs (8 entries per millisecond) rather than `*`, whose deltas would depend on each server's speed.
python3 - "$MEM_ENTRIES" >"$WORK/mem.resp" <<'PY'
import sys
n = int(sys.argv[1]); out = sys.stdout.buffer
for i in range(n):
    id_ = b"%d-%d" % (1700000000000 + i // 8, i % 8)
    job = b"%d" % (i * 7919 % 1000003)
    out.write(b"*7\r\n$4\r\nXADD\r\n$9\r\nbench:mem\r\n$%d\r\n%s\r\n$3\r\njob\r\n$%d\r\n%s\r\n$5\r\nstate\r\n$6\r\nqueued\r\n"
              % (len(id_), id_, len(job), job))
PY
declare -A RSS USED
for tag in latch redis; do
  cli "$tag" FLUSHALL >/dev/null
  sleep 1
  rss0=$(rss_kb "${PID[$tag]}"); used0=$(used_memory "$tag")
  timeout -k 5 "$TIMEOUT" redis-cli -h 127.0.0.1 -p "${PORT[$tag]}" --pipe <"$WORK/mem.resp" >/dev/null 2>&1
  len=$(cli "$tag" XLEN bench:mem)
  [ "$len" = "$MEM_ENTRIES" ] || { echo "types-bench: $tag: the stream holds $len entries, not $MEM_ENTRIES" >&2; exit 1; }
  sleep 1
  RSS[$tag]=$(( $(rss_kb "${PID[$tag]}") - rss0 )); USED[$tag]=$(( $(used_memory "$tag") - used0 ))
done
printf "\n%-28s %14s %14s %7s\n" "memory, $MEM_ENTRIES entries" latch redis ratio
awk -v a="${RSS[latch]}" -v b="${RSS[redis]}" -v n="$MEM_ENTRIES" \
  'BEGIN { printf "%-28s %14.1f %14.1f %7.2f\n", "RSS growth, bytes/entry", a * 1024 / n, b * 1024 / n, a / b }'
awk -v a="${USED[latch]}" -v b="${USED[redis]}" -v n="$MEM_ENTRIES" \
  'BEGIN { printf "%-28s %14.1f %14.1f %7.2f\n", "used_memory growth, B/entry", a / n, b / n, a / b }'
[ -z "$RAW" ] || cp "$RES" "$RAW"
