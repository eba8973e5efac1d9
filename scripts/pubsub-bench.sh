#!/usr/bin/env bash
# pubsub-bench.sh - pub/sub fan-out, Latch beside redis-server in one interleaved run.
#
# Starts latch-server twice (default workers, and --io-threads 2) and /usr/bin/redis-server (or
# REDIS=path) on spare 127.0.0.1 ports, then, for RUNS rounds, for each subscriber count in SUBS and
# each mode in MODES, runs the pubsub-bench load generator (crates/pubsub-bench) once against each
# server, rotating which server goes first. One run: S subscribers SUBSCRIBE to one channel
# (mode "channel") or PSUBSCRIBE to a pattern matching it (mode "pattern"); one publisher sends
# DELIVERIES/S PUBLISHes of a PAYLOAD-byte message, pipelined in batches of BATCH, staying at most
# a bounded window ahead of the slowest subscriber (so no server queues more than ~1 MiB per
# subscriber, 64 MiB in all). Measured per run:
#   rate     messages delivered per second: counted by the subscribers, all of them summed, from the
#            first message any of them read to the last one
#   cpu/msg  the server's utime + stime (/proc/PID/stat, before the first PUBLISH and after the last
#            delivery) divided by the deliveries, in ns. /proc counts in ticks of 10 ms: keep a run
#            above ~1 s of server CPU (DELIVERIES) for this to be meaningful.
# Prints, per workload, the medians over the runs for Latch, Redis and Latch with 2 workers, and
# the ratios Latch/Redis (rate: above 1 is faster; cpu/msg: below 1 is cheaper).
# The load generator shares the machine's cores with the server: compare ratios, not absolutes.
#
# usage: scripts/pubsub-bench.sh [LATCH_SERVER_BINARY]
#   Without a path, builds latch-server and pubsub-bench (cargo build --release) and uses them.
#   e.g. scripts/pubsub-bench.sh
#        RUNS=5 SUBS="1 1000" MODES=pattern scripts/pubsub-bench.sh target/release/latch-server
#
# Environment (all optional):
#   RUNS=3               interleaved rounds (1..20)
#   SUBS="1 100 1000"    subscriber counts
#   MODES="channel pattern"
#   DELIVERIES=6000000   deliveries per run (messages published = DELIVERIES / subscribers)
#   PAYLOAD=64           message bytes            BATCH=100   PUBLISHes per pipelined write
#   IO2=1                also run Latch with --io-threads 2 (0: leave that row out)
#   TIMEOUT=120          wall-clock limit per run, seconds (a run over it is reported and left out)
#   REDIS=/usr/bin/redis-server                   BENCH=path to a built pubsub-bench
#   RAW=FILE             also save the per-run rows (server run subs mode rate cpu_ns_per_msg)
set -u
cd "$(dirname "$0")/.." || exit 2

usage() { awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0" >&2; exit 2; }
[ $# -le 1 ] || usage
case ${1:-} in -h|--help) usage ;; esac

RUNS=${RUNS:-3}; SUBS=${SUBS:-1 100 1000}; MODES=${MODES:-channel pattern}
DELIVERIES=${DELIVERIES:-6000000}; PAYLOAD=${PAYLOAD:-64}; BATCH=${BATCH:-100}; IO2=${IO2:-1}
TIMEOUT=${TIMEOUT:-120}; REDIS=${REDIS:-/usr/bin/redis-server}; RAW=${RAW:-}
for v in RUNS DELIVERIES PAYLOAD BATCH TIMEOUT; do
  if ! [[ ${!v} =~ ^[0-9]+$ ]] || [ "${!v}" -lt 1 ]; then echo "pubsub-bench: $v must be a positive integer" >&2; exit 2; fi
done
[ "$RUNS" -le 20 ] || { echo "pubsub-bench: RUNS is at most 20" >&2; exit 2; }
for s in $SUBS; do
  [[ $s =~ ^[0-9]+$ && $s -ge 1 && $s -le 5000 ]] || { echo "pubsub-bench: subscriber count '$s' is not in 1..5000" >&2; exit 2; }
done
for m in $MODES; do
  case $m in channel|pattern) ;; *) echo "pubsub-bench: unknown mode '$m' (channel, pattern)" >&2; exit 2 ;; esac
done
for t in redis-cli timeout awk getconf; do
  command -v "$t" >/dev/null || { echo "pubsub-bench: $t is required (apt-get install -y redis-tools)" >&2; exit 2; }
done
[ -x "$REDIS" ] || { echo "pubsub-bench: $REDIS not found (apt-get install -y redis-server, or REDIS=path)" >&2; exit 2; }

target=${CARGO_TARGET_DIR:-}
if [ -z "$target" ]; then
  target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])') || exit 2
fi
if [ $# -eq 1 ]; then
  LATCH=$1
  [ -x "$LATCH" ] || { echo "pubsub-bench: $LATCH is not an executable" >&2; exit 2; }
  [[ $LATCH == /* ]] || LATCH=$PWD/$LATCH
  [ -n "${BENCH:-}" ] || { cargo build --release -p pubsub-bench >&2 || exit 2; }
else
  cargo build --release -p server -p pubsub-bench >&2 || exit 2
  LATCH=$target/release/latch-server
fi
BENCH=${BENCH:-$target/release/pubsub-bench}
[ -x "$BENCH" ] || { echo "pubsub-bench: load generator $BENCH not found" >&2; exit 2; }
# Absolute, but not through symlinks: Debian's redis-server is one to redis-check-rdb, which
# behaves by the name it is started under.
[[ $REDIS == /* ]] || REDIS=$PWD/$REDIS
CLK_TCK=$(getconf CLK_TCK)
# 1,000 subscribers, a publisher and the control connection, on both ends.
ulimit -n 4096 2>/dev/null || [ "$(ulimit -n)" -ge 4096 ] ||
  echo "pubsub-bench: warning: open files limit is $(ulimit -n); large SUBS may fail" >&2

WORK=$(mktemp -d "${TMPDIR:-/tmp}/pubsub-bench.XXXXXX") || exit 2
RES=$WORK/rows.tsv; : >"$RES"
NAME=pubsub-bench
# shellcheck source=scripts/lib/servers.sh
. scripts/lib/servers.sh

cli() { timeout 10 redis-cli -h 127.0.0.1 -p "${PORT[$1]}" "${@:2}" 2>&1; }

TAGS="latch redis"
start latch "$LATCH"
start redis "$REDIS"
if [ "$IO2" = 1 ]; then start latch_io2 "$LATCH" --io-threads 2; TAGS="latch redis latch_io2"; fi

# quiet TAG: waits (at most 20 s) until the last run's subscribers are gone from the server.
quiet() {
  local i n
  for i in $(seq 200); do
    n=$(cli "$1" PUBSUB NUMSUB bench.channel | tail -1)$(cli "$1" PUBSUB NUMPAT)
    [ "$n" = 00 ] && return 0
    sleep 0.1
  done
  echo "warn: $1 still has subscribers ($n)" >&2
}

run() { # TAG ROUND SUBS MODE -> appends "tag round subs mode rate cpu_ns"
  local tag=$1 round=$2 subs=$3 mode=$4 out rc=0 rate cpu
  quiet "$tag"
  out=$(timeout -k 5 $((TIMEOUT + 10)) "$BENCH" --port "${PORT[$tag]}" --subscribers "$subs" --mode "$mode" \
        --messages $((DELIVERIES / subs)) --payload "$PAYLOAD" --batch "$BATCH" \
        --server-pid "${PID[$tag]}" --clk-tck "$CLK_TCK" --timeout "$TIMEOUT" 2>&1) || rc=$?
  if [ $rc -ne 0 ]; then
    echo "warn: $tag round $round subs=$subs $mode failed (rc=$rc): ${out:0:300}" >&2
    return 0
  fi
  rate=$(sed -n 's/.* rate=\([0-9.]*\).*/\1/p' <<<"$out")
  cpu=$(sed -n 's/.* cpu_ns_per_msg=\([0-9.]*\).*/\1/p' <<<"$out")
  echo "  $tag round $round: $out" >&2
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$tag" "$round" "$subs" "$mode" "$rate" "$cpu" >>"$RES"
}

echo "# pubsub-bench RUNS=$RUNS SUBS='$SUBS' MODES='$MODES' DELIVERIES=$DELIVERIES PAYLOAD=$PAYLOAD BATCH=$BATCH" \
     "($(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg); latch=$LATCH $("$LATCH" --version 2>/dev/null | head -1);" \
     "redis=$("$REDIS" --version | awk '{print $3}'))"
read -r -a order <<<"$TAGS"
for round in $(seq "$RUNS"); do
  for subs in $SUBS; do
    for mode in $MODES; do
      echo "round $round/$RUNS: subs=$subs $mode" >&2
      # Rotate the order each round, so that no server always runs right after another.
      n=${#order[@]}
      for i in $(seq 0 $((n - 1))); do run "${order[$(((i + round + subs) % n))]}" "$round" "$subs" "$mode"; done
    done
  done
done
[ -z "$RAW" ] || cp "$RES" "$RAW"

awk -F'\t' -v subs="$SUBS" -v modes="$MODES" -v tags="$TAGS" '
  function median(s,   a, n, i, j, t) {
    n = split(s, a, " ")
    for (i = 2; i <= n; i++) { t = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  function ratio(a, b) { return (a > 0 && b > 0) ? sprintf("%.2f", a / b) : "n/a" }
  function show(x, f) { return x > 0 ? sprintf(f, x) : "n/a" }
  { k = $1 SUBSEP $3 SUBSEP $4; rate[k] = rate[k] " " $5; cpu[k] = cpu[k] " " $6 }
  END {
    io2 = index(tags, "latch_io2") > 0
    printf "%-6s %-8s | %11s %11s %6s | %8s %8s %6s", "subs", "mode", "latch/s", "redis/s", "L/R", "L_ns/msg", "R_ns/msg", "L/R"
    if (io2) printf " | %11s %6s %9s %6s", "latch2w/s", "L2/R", "L2_ns/msg", "L2/R"
    printf "\n"
    ns = split(subs, S, " "); nm = split(modes, M, " ")
    for (i = 1; i <= ns; i++) for (j = 1; j <= nm; j++) {
      for (t = 1; t <= 3; t++) { r[t] = 0; c[t] = 0 }
      split("latch redis latch_io2", T, " ")
      for (t = 1; t <= 3; t++) {
        k = T[t] SUBSEP S[i] SUBSEP M[j]
        if (k in rate) { r[t] = median(rate[k]); c[t] = median(cpu[k]) }
      }
      printf "%-6s %-8s | %11s %11s %6s | %8s %8s %6s", S[i], M[j], show(r[1], "%.0f"), show(r[2], "%.0f"), ratio(r[1], r[2]),
        show(c[1], "%.1f"), show(c[2], "%.1f"), ratio(c[1], c[2])
      if (io2) printf " | %11s %6s %9s %6s", show(r[3], "%.0f"), ratio(r[3], r[2]), show(c[3], "%.1f"), ratio(c[3], c[2])
      printf "\n"
    }
  }' "$RES"
