#!/usr/bin/env bash
# bench-compare.sh - run the same redis-benchmark workloads against two running servers, A and
# B, interleaved (A, B, A, B ... for ROUNDS rounds), and print for each workload the median
# requests/s of A and of B, the ratio A/B and the spread between rounds; then the geometric mean
# of the ratios. Client and servers share the machine: compare ratios, not absolute figures.
#
# usage: scripts/bench-compare.sh A_HOST:PORT B_HOST:PORT
#   e.g. scripts/bench-compare.sh 127.0.0.1:6379 127.0.0.1:6380
#        N=20000 ROUNDS=5 WORKLOADS="SET GET SETNX" scripts/bench-compare.sh 127.0.0.1:7101 127.0.0.1:7102
# Hosts must be loopback (127.x.x.x, localhost or ::1).
#
# Workloads (one redis-benchmark run each, -r random keys; redis-benchmark stops a run at the
# first error reply, so a command the target refuses makes that workload n/a for it):
#   SET GET INCR LPUSH LPOP MSET   redis-benchmark's own tests (-t name)
#   SETNX                          SETNX key:__rand_int__ v
#   SET_NX_PX                      SET lock:__rand_int__ tok NX PX 30000 (lock acquire)
#   EVALSHA_RELEASE                EVALSHA of the compare-and-delete release script, right after
#                                  SET_NX_PX, so it finds the locks held
#
# Environment (all optional):
#   N=100000      requests per redis-benchmark run
#   C=50          parallel connections (-c)      P=1       pipeline depth (-P)
#   R=100000      random keyspace (-r)           ROUNDS=3  interleaved rounds (1..50)
#   WORKLOADS     a subset of the list above, space-separated (default: all)
#   TIMEOUT=120   wall-clock limit per redis-benchmark run, seconds
#   DB=0          database the runs use (redis-benchmark --dbnum, redis-cli -n)
#   FLUSH=1       FLUSHDB database DB before each group of workloads and at the end, so every
#                 round starts from the same state. The script refuses to start when DB holds
#                 keys on a target; FLUSH=force empties it anyway, FLUSH=0 never flushes.
#   RAW=FILE      also save the per-run rows (target round workload rps p50_ms)
#   TLS="--tls --cacert CA [--cert C --key K]"  connect over TLS: these options go to every
#                 redis-cli and redis-benchmark call (scripts/tls-bench.sh sets them)
# Last line: "ratio geomean A/B: <x> (over <n> workloads)".
set -u

usage() { awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0" >&2; exit 2; }
[ $# -eq 2 ] || usage

N=${N:-100000}; C=${C:-50}; P=${P:-1}; R=${R:-100000}; ROUNDS=${ROUNDS:-3}
TIMEOUT=${TIMEOUT:-120}; DB=${DB:-0}; FLUSH=${FLUSH:-1}; RAW=${RAW:-}
read -r -a TLS_ARGS <<<"${TLS:-}"
ALL="SET GET INCR LPUSH LPOP MSET SETNX SET_NX_PX EVALSHA_RELEASE"
WORKLOADS=${WORKLOADS:-$ALL}
for v in N C P R ROUNDS TIMEOUT; do
  if ! [[ ${!v} =~ ^[0-9]+$ ]] || [ "${!v}" -lt 1 ]; then echo "bench-compare: $v must be a positive integer" >&2; exit 2; fi
done
[ "$ROUNDS" -le 50 ] || { echo "bench-compare: ROUNDS is at most 50" >&2; exit 2; }
[[ $DB =~ ^[0-9]+$ ]] || { echo "bench-compare: DB must be a database number" >&2; exit 2; }
case $FLUSH in 0|1|force) ;; *) echo "bench-compare: FLUSH is 0, 1 or force" >&2; exit 2 ;; esac
for w in $WORKLOADS; do
  [[ " $ALL " == *" $w "* ]] || { echo "bench-compare: unknown workload '$w' (known: $ALL)" >&2; exit 2; }
done
for t in redis-benchmark redis-cli timeout awk; do
  command -v "$t" >/dev/null || { echo "bench-compare: $t is required (apt-get install -y redis-tools)" >&2; exit 2; }
done

parse() { # TARGET NAME -> sets NAME_HOST, NAME_PORT; loopback only
  local host=${1%:*} port=${1##*:}
  [[ $1 == *:* && $port =~ ^[0-9]+$ ]] || { echo "bench-compare: '$1' is not HOST:PORT" >&2; exit 2; }
  [[ $host =~ ^127\.[0-9]+\.[0-9]+\.[0-9]+$ || $host == localhost || $host == ::1 ]] ||
    { echo "bench-compare: '$host' is not a loopback address; this script only measures local servers" >&2; exit 2; }
  printf -v "$2_HOST" '%s' "$host"; printf -v "$2_PORT" '%s' "$port"
}
A_HOST=; A_PORT=; B_HOST=; B_PORT=
parse "$1" A; parse "$2" B

WORK=$(mktemp -d "${TMPDIR:-/tmp}/bench-compare.XXXXXX") || exit 2
trap 'rm -rf "$WORK"' EXIT
RES=$WORK/rows.tsv; : >"$RES"
RELEASE="if redis.call('get',KEYS[1])==ARGV[1] then return redis.call('del',KEYS[1]) else return 0 end"

cli() { # HOST PORT args... -> the reply, as redis-cli prints it; "(error) ..." on failure
  local h=$1 p=$2; shift 2
  timeout 10 redis-cli ${TLS_ARGS[@]+"${TLS_ARGS[@]}"} --no-raw -h "$h" -p "$p" -n "$DB" "$@" 2>&1 || echo "(error) redis-cli rc=$?"
}
is_err() { [[ $1 == "(error)"* || $1 == *"Could not connect"* ]]; }

declare -A OK SHA   # OK[tag,workload] = 1 if the target accepts the workload's command
probe() { # TAG HOST PORT WORKLOAD command... : send the command once, record whether it is accepted
  local tag=$1 h=$2 p=$3 w=$4 out; shift 4
  out=$(cli "$h" "$p" "$@")
  if is_err "$out"; then OK[$tag,$w]=0; echo "note: $tag: $* -> $out; $w is n/a" >&2; else OK[$tag,$w]=1; fi
}
preflight() { # TAG HOST PORT
  local tag=$1 h=$2 p=$3 out keys k="bench-compare:probe"
  out=$(cli "$h" "$p" PING)
  [[ $out == *PONG* ]] || { echo "bench-compare: $tag ($h:$p) does not answer PING: $out" >&2; exit 1; }
  keys=$(cli "$h" "$p" DBSIZE | tr -dc '0-9')
  if [ "$FLUSH" = 1 ] && [ "${keys:-0}" != 0 ]; then
    echo "bench-compare: database $DB of $tag ($h:$p) holds $keys keys; FLUSH=force to empty it, or DB=another" >&2; exit 1
  fi
  probe "$tag" "$h" "$p" SET SET "$k" v
  probe "$tag" "$h" "$p" GET GET "$k"
  probe "$tag" "$h" "$p" INCR INCR "$k:n"
  probe "$tag" "$h" "$p" LPUSH LPUSH "$k:l" v
  probe "$tag" "$h" "$p" LPOP LPOP "$k:l"
  probe "$tag" "$h" "$p" MSET MSET "$k:a" v "$k:b" v
  probe "$tag" "$h" "$p" SETNX SETNX "$k:nx" v
  probe "$tag" "$h" "$p" SET_NX_PX SET "$k:lock" tok NX PX 30000
  out=$(cli "$h" "$p" SCRIPT LOAD "$RELEASE" | tr -d '"')
  if [[ $out =~ ^[0-9a-f]{40}$ ]]; then
    SHA[$tag]=$out; probe "$tag" "$h" "$p" EVALSHA_RELEASE EVALSHA "$out" 1 "$k:lock" tok
  else
    OK[$tag,EVALSHA_RELEASE]=0; echo "note: $tag: SCRIPT LOAD -> $out; EVALSHA_RELEASE is n/a" >&2
  fi
  cli "$h" "$p" DEL "$k" "$k:n" "$k:l" "$k:a" "$k:b" "$k:nx" "$k:lock" >/dev/null
}
want() { [[ " $WORKLOADS " == *" $2 "* ]] && [ "${OK[$1,$2]:-0}" = 1 ]; }
flush() { [ "$FLUSH" = 0 ] || cli "$1" "$2" FLUSHDB >/dev/null; }

bench() { # TAG ROUND HOST PORT WORKLOAD redis-benchmark args... -> appends "tag round workload rps p50"
  local tag=$1 round=$2 h=$3 p=$4 w=$5 out rc=0; shift 5
  out=$(timeout -k 5 "$TIMEOUT" redis-benchmark ${TLS_ARGS[@]+"${TLS_ARGS[@]}"} -h "$h" -p "$p" --dbnum "$DB" -c "$C" -n "$N" -P "$P" \
        -r "$R" --csv "$@" 2>"$WORK/err") || rc=$?
  if [ $rc -ne 0 ]; then
    echo "warn: $tag round $round: $w failed (rc=$rc$([ $rc = 124 ] && echo ", over ${TIMEOUT}s")): $(head -c 200 "$WORK/err")" >&2
    return 0
  fi
  # --csv: "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms",...
  awk -F'","' -v tag="$tag" -v r="$round" -v w="$w" 'NR > 1 {
      rps = $2; p50 = $5; gsub(/"/, "", rps); gsub(/"/, "", p50)
      printf "%s\t%s\t%s\t%s\t%s\n", tag, r, w, rps, p50 }' <<<"$out" >>"$RES"
}

run_target() { # TAG ROUND HOST PORT
  local tag=$1 round=$2 h=$3 p=$4 w
  flush "$h" "$p"   # GET reads what SET wrote, LPOP pops what LPUSH pushed: no flush between them
  for w in SET GET INCR LPUSH LPOP MSET; do
    if want "$tag" $w; then bench "$tag" "$round" "$h" "$p" $w -t "${w,,}"; fi
  done
  if want "$tag" SETNX; then flush "$h" "$p"; bench "$tag" "$round" "$h" "$p" SETNX setnx "key:__rand_int__" v; fi
  flush "$h" "$p"
  if want "$tag" SET_NX_PX; then bench "$tag" "$round" "$h" "$p" SET_NX_PX set "lock:__rand_int__" tok NX PX 30000; fi
  if want "$tag" EVALSHA_RELEASE; then
    bench "$tag" "$round" "$h" "$p" EVALSHA_RELEASE evalsha "${SHA[$tag]}" 1 "lock:__rand_int__" tok
  fi
}

preflight A "$A_HOST" "$A_PORT"
preflight B "$B_HOST" "$B_PORT"
[ "$FLUSH" = 0 ] || trap 'flush "$A_HOST" "$A_PORT"; flush "$B_HOST" "$B_PORT"; rm -rf "$WORK"' EXIT

echo "# bench-compare A=$A_HOST:$A_PORT B=$B_HOST:$B_PORT$([ -n "${TLS:-}" ] && echo " TLS") N=$N C=$C P=$P R=$R ROUNDS=$ROUNDS DB=$DB ($(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null))"
for round in $(seq 1 "$ROUNDS"); do
  echo "round $round/$ROUNDS: A" >&2; run_target A "$round" "$A_HOST" "$A_PORT"
  echo "round $round/$ROUNDS: B" >&2; run_target B "$round" "$B_HOST" "$B_PORT"
done
[ -z "$RAW" ] || cp "$RES" "$RAW"

awk -F'\t' -v order="$ALL" '
  function median(s,   a, n, i, j, t) {
    n = split(s, a, " ")
    for (i = 2; i <= n; i++) { t = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  function spread(s,   a, n, i, lo, hi, m) {   # (max - min) / median, in percent
    n = split(s, a, " "); lo = hi = a[1] + 0
    for (i = 2; i <= n; i++) { if (a[i] + 0 < lo) lo = a[i] + 0; if (a[i] + 0 > hi) hi = a[i] + 0 }
    m = median(s); return m > 0 ? 100 * (hi - lo) / m : 0
  }
  { rps[$1, $3] = rps[$1, $3] " " $4; p50[$1, $3] = p50[$1, $3] " " $5 }
  END {
    fmt = "%-16s %11s %11s %7s %8s %8s %7s %7s\n"
    printf fmt, "workload", "rps_A", "rps_B", "A/B", "p50_A", "p50_B", "sprdA%", "sprdB%"
    n = split(order, ws, " "); cnt = 0; lg = 0
    for (i = 1; i <= n; i++) {
      w = ws[i]; a = (("A", w) in rps); b = (("B", w) in rps)
      if (!a && !b) continue
      ra = a ? median(rps["A", w]) : 0; rb = b ? median(rps["B", w]) : 0
      ratio = "n/a"
      if (ra > 0 && rb > 0) { ratio = sprintf("%.3f", ra / rb); lg += log(ra / rb); cnt++ }
      printf fmt, w, a ? sprintf("%.0f", ra) : "n/a", b ? sprintf("%.0f", rb) : "n/a", ratio,
        a ? sprintf("%.3f", median(p50["A", w])) : "n/a", b ? sprintf("%.3f", median(p50["B", w])) : "n/a",
        a ? sprintf("%.1f", spread(rps["A", w])) : "n/a", b ? sprintf("%.1f", spread(rps["B", w])) : "n/a"
    }
    if (cnt > 0) printf "ratio geomean A/B: %.3f (over %d workloads)\n", exp(lg / cnt), cnt
    else print "ratio geomean A/B: n/a (no workload measured on both)"
  }' "$RES"
