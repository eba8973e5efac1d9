#!/usr/bin/env bash
# persistence-bench.sh - the persistence issue's two benchmarks, Latch beside redis-server 7 in the
# same run, each server fresh, on loopback, in a temporary directory removed at exit.
#   scripts/persistence-bench.sh                              # both parts, DATA_MB=1024
#   PARTS=bgsave DATA_MB=256 scripts/persistence-bench.sh
#   PARTS=aof RUNS=5 SECS=5 scripts/persistence-bench.sh
#   LATCH_BIN=target/release/latch-server PARTS=aof ...       # use this binary, do not build
#
# Part "bgsave": peak memory of a BGSAVE while clients overwrite.
#   Per server: start it (--save "" --appendonly no), fill KEYS = DATA_MB MiB / VALSIZE keys
#   "key:%012d" (the names redis-benchmark -r uses) with incompressible VALSIZE-byte values (a
#   pipelined python filler; DBSIZE must then be exactly KEYS), wait SETTLE s, take the baseline:
#   "dataset MB" = the server's RSS after the fill (INFO used_memory beside it). Then 4 clients
#   (redis-benchmark -c OVERWRITERS -t set -r KEYS -d VALSIZE) overwrite random existing keys with
#   same-size values without pause; after WARM s the "before" window runs PRE s; then BGSAVE, and
#   every SAMPLE_MS ms the memory is sampled until INFO persistence shows rdb_bgsave_in_progress:0
#   (the "during" window, "BGSAVE s" long); then the overwriters stop.
#   What "peak MB" counts: the physical memory the server holds, once per page:
#     the server process's VmRSS + the Private_Clean + Private_Dirty (smaps_rollup) of each of its
#     child processes.
#   Plain RSS would double-count the pages a fork()ed child shares copy-on-write with its parent;
#   a child's private pages are those the parent has rewritten since the fork (the COW copies, kept
#   by the child alone) plus the child's own allocations, which is also what Redis reports as COW.
#   For redis-server that is parent + rdb child; Latch snapshots in-process without fork, so it is
#   simply its VmRSS. The peak is the highest sample during the save, raised to the process's
#   VmHWM (reset after the fill through /proc/PID/clear_refs) when that is higher, so a spike
#   between samples of the server process itself is not missed; a child's spike can be.
#   "peak/dataset" is the issue's figure (target for Latch: <= 1.1; Redis's beside it). "RSS
#   before BGSAVE" shows what the overwrites alone did to RSS. SET/s are INFO commandstats
#   cmdstat_set calls per second in each window (the serving throughput under the save against
#   normal); a probe client GETs a random key every ~2 ms and its latencies are split by window.
#   Redis's own "rdb_last_cow_size" is shown as a cross-check of the child's private memory.
#
# Part "aof": SET throughput by appendfsync, at 1 and 50 clients.
#   Per mode (none = --appendonly no; always, everysec, no = --appendonly yes --appendfsync X) both
#   servers start fresh in their own directories; redis-benchmark -t set -c C -n N -r 100000
#   -d AOF_VALSIZE runs against Latch and Redis alternately (the order flips every round), RUNS
#   rounds. N is fixed by N=..., or else a short calibration run on each server sets N so the
#   faster one runs about SECS s. Printed: median requests/s, Latch/Redis, the spread between rounds
#   ((max - min) / median), and each mode's throughput as a fraction of the same server's "none"
#   (everysec/none is the issue's cost of the usual setting). appendfsync always is only
#   meaningful on a real disk: the work directory's filesystem is printed; tmpfs makes fsync free.
#
# Environment (all optional):
#   PARTS="bgsave aof"   LATCH_PORT=7121  REDIS_PORT=7122  LATCH_BIN=path (skips the build)
#   bgsave: DATA_MB=1024 VALSIZE=1024 OVERWRITERS=4 WARM=1 PRE=3 SETTLE=2 SAMPLE_MS=10
#           SAVE_LIMIT=900 (s, bound on one BGSAVE)  FILL_LIMIT=900 (s, bound on one fill)
#           RDBCOMPRESSION=yes (both servers; the fill's values are incompressible anyway)
#   aof:    RUNS=3 SECS=3 N=(calibrated) AOF_MODES="none always everysec no" AOF_CLIENTS="1 50"
#           AOF_VALSIZE=3 (redis-benchmark's default) TIMEOUT=120 (s, bound on one run)
# Client, servers and sampler share the machine (nproc is printed): compare the two servers, not
# absolute figures. Exit status: 2 for a missing tool or bad setting, 1 when a measurement fails.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v redis-server >/dev/null || { echo "persistence-bench: redis-server not installed (apt-get install redis-server)" >&2; exit 2; }
for t in redis-cli redis-benchmark python3 timeout; do
  command -v "$t" >/dev/null || { echo "persistence-bench: $t is required" >&2; exit 2; }
done
PARTS=${PARTS:-bgsave aof}
LATCH_PORT=${LATCH_PORT:-7121}; REDIS_PORT=${REDIS_PORT:-7122}
DATA_MB=${DATA_MB:-1024}; VALSIZE=${VALSIZE:-1024}; OVERWRITERS=${OVERWRITERS:-4}
WARM=${WARM:-1}; PRE=${PRE:-3}; SETTLE=${SETTLE:-2}; SAMPLE_MS=${SAMPLE_MS:-10}
SAVE_LIMIT=${SAVE_LIMIT:-900}; FILL_LIMIT=${FILL_LIMIT:-900}; RDBCOMPRESSION=${RDBCOMPRESSION:-yes}
RUNS=${RUNS:-3}; SECS=${SECS:-3}; N=${N:-}; TIMEOUT=${TIMEOUT:-120}
AOF_MODES=${AOF_MODES:-none always everysec no}; AOF_CLIENTS=${AOF_CLIENTS:-1 50}; AOF_VALSIZE=${AOF_VALSIZE:-3}

for v in LATCH_PORT REDIS_PORT DATA_MB VALSIZE OVERWRITERS PRE SETTLE SAMPLE_MS SAVE_LIMIT FILL_LIMIT RUNS SECS TIMEOUT AOF_VALSIZE; do
  if ! [[ ${!v} =~ ^[0-9]+$ ]] || [ "${!v}" -lt 1 ]; then echo "persistence-bench: $v must be a positive integer" >&2; exit 2; fi
done
[[ $WARM =~ ^[0-9]+$ ]] || { echo "persistence-bench: WARM must be a whole number of seconds" >&2; exit 2; }
[ -z "$N" ] || [[ $N =~ ^[1-9][0-9]*$ ]] || { echo "persistence-bench: N must be a positive integer" >&2; exit 2; }
[ "$LATCH_PORT" != "$REDIS_PORT" ] || { echo "persistence-bench: LATCH_PORT and REDIS_PORT must differ" >&2; exit 2; }
[ "$RUNS" -le 50 ] || { echo "persistence-bench: RUNS is at most 50" >&2; exit 2; }
case $RDBCOMPRESSION in yes|no) ;; *) echo "persistence-bench: RDBCOMPRESSION is yes or no" >&2; exit 2 ;; esac
for p in $PARTS; do
  case $p in bgsave|aof) ;; *) echo "persistence-bench: unknown part '$p' (known: bgsave aof)" >&2; exit 2 ;; esac
done
for m in $AOF_MODES; do
  case $m in none|always|everysec|no) ;; *) echo "persistence-bench: unknown AOF mode '$m' (known: none always everysec no)" >&2; exit 2 ;; esac
done
for c in $AOF_CLIENTS; do
  [[ $c =~ ^[1-9][0-9]*$ ]] || { echo "persistence-bench: AOF_CLIENTS holds positive integers" >&2; exit 2; }
done
want() { [[ " $PARTS " == *" $1 "* ]]; }
for p in "$LATCH_PORT" "$REDIS_PORT"; do
  if redis-cli -p "$p" ping >/dev/null 2>&1; then echo "persistence-bench: something already answers on port $p" >&2; exit 2; fi
done

if [ -n "${LATCH_BIN:-}" ]; then
  LATCH=$LATCH_BIN
else
  cargo build --release --bin latch-server >&2
  target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
  LATCH="$target/release/latch-server"
fi
[ -x "$LATCH" ] || { echo "persistence-bench: no latch-server binary at $LATCH" >&2; exit 2; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/persistence-bench.XXXXXX") || exit 2
PIDS=()
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if want bgsave; then
  avail_mb=$(awk '/^MemAvailable:/ { print int($2 / 1024) }' /proc/meminfo)
  need_mb=$((DATA_MB * 3))
  [ "$avail_mb" -ge "$need_mb" ] ||
    { echo "persistence-bench: DATA_MB=$DATA_MB needs about $need_mb MB free, $avail_mb MB available" >&2; exit 2; }
  disk_mb=$(df -Pm "$WORK" | awk 'NR == 2 { print $4 }')
  [ "$disk_mb" -ge $((DATA_MB * 2)) ] ||
    { echo "persistence-bench: $WORK has $disk_mb MB free, the RDB file needs about $((DATA_MB * 2))" >&2; exit 2; }
fi

SPID=
start_server() { # KIND PORT DIR server-options... -> SPID
  local kind=$1 port=$2 dir=$3; shift 3
  mkdir -p "$dir"
  case $kind in
    latch) "$LATCH" --port "$port" --bind 127.0.0.1 --dir "$dir" --loglevel warning "$@" >"$dir.log" 2>&1 & ;;
    redis) redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --loglevel warning "$@" >"$dir.log" 2>&1 & ;;
  esac
  SPID=$!; PIDS+=("$SPID")
  for _ in $(seq 200); do
    [ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ] && return 0
    kill -0 "$SPID" 2>/dev/null || break
    sleep 0.05
  done
  echo "persistence-bench: $kind did not start on port $port; its log:" >&2; tail -n 20 "$dir.log" >&2; exit 1
}
stop_server() { # PID: SIGTERM, up to 20 s, then SIGKILL
  local pid=$1 p keep=()
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  for p in "${PIDS[@]}"; do [ "$p" = "$pid" ] || keep+=("$p"); done
  PIDS=("${keep[@]+"${keep[@]}"}")
}

echo "# persistence-bench: $(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg), $(awk '/^MemTotal:/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)," \
  "THP $(sed 's/.*\[\(.*\)\].*/\1/' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo '?')," \
  "work dir on $(df -PT "$WORK" | awk 'NR == 2 { print $2 }'), $(redis-server --version | cut -d' ' -f1-3)"

# ---------------------------------------------------------------------------------------------
cat >"$WORK/bgsave.py" <<'EOF'
import json, os, random, socket, subprocess, sys, threading, time

(name, port, pid, rdb, keys, valsize, writers, warm, pre, settle, sample_ms,
 save_limit, fill_limit) = sys.argv[1:]
port, pid, keys, valsize, writers = int(port), int(pid), int(keys), int(valsize), int(writers)
warm, pre, settle = float(warm), float(pre), float(settle)
sample_s, save_limit, fill_limit = int(sample_ms) / 1000, float(save_limit), float(fill_limit)
MB = 1 << 20

def die(msg):
    print(f"persistence-bench: {name}: {msg}", file=sys.stderr)
    sys.exit(1)

def enc(*a):
    a = [x if isinstance(x, bytes) else str(x).encode() for x in a]
    return b"*%d\r\n" % len(a) + b"".join(b"$%d\r\n%s\r\n" % (len(x), x) for x in a)

class Conn:
    def __init__(self, timeout=120):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.f = self.s.makefile("rb")
    def reply(self):
        line = self.f.readline()
        if not line:
            die("connection closed")
        t, rest = line[:1], line[1:-2]
        if t == b"$":
            k = int(rest)
            return None if k < 0 else self.f.read(k + 2)[:-2]
        if t == b"*":
            return [self.reply() for _ in range(max(int(rest), 0))]
        if t == b"-":
            die(f"error reply: {rest.decode(errors='replace')}")
        return int(rest) if t == b":" else rest
    def call(self, *a):
        self.s.sendall(enc(*a))
        return self.reply()
    def info(self, section):
        out = {}
        for line in self.call("info", section).decode().splitlines():
            if ":" in line and not line.startswith("#"):
                k, v = line.split(":", 1)
                out[k] = v
        return out

def set_calls(c):
    v = c.info("commandstats").get("cmdstat_set", "calls=0")
    return int(v.split(",")[0].split("=")[1])

def status_kb(p, field):
    try:
        with open(f"/proc/{p}/status") as f:
            for line in f:
                if line.startswith(field):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0

def children(p):
    out = []
    try:
        for t in os.listdir(f"/proc/{p}/task"):
            with open(f"/proc/{p}/task/{t}/children") as f:
                out += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return out

def private_kb(p):
    n = 0
    try:
        with open(f"/proc/{p}/smaps_rollup") as f:
            for line in f:
                if line.startswith(("Private_Clean:", "Private_Dirty:")):
                    n += int(line.split()[1])
    except OSError:
        pass
    return n

def memory():
    # (server VmRSS, children's private pages), in KiB
    return status_kb(pid, "VmRSS:"), sum(private_kb(ch) for ch in children(pid))

c = Conn()
if c.call("dbsize") != 0:
    die("the server is not empty")

# Fill: key:%012d (redis-benchmark -r's names), incompressible values, pipelined in batches.
block = os.urandom(MB + valsize)
t0 = time.time()
batch = 1000
for start in range(0, keys, batch):
    if time.time() - t0 > fill_limit:
        die(f"fill took over {fill_limit:.0f} s")
    end = min(start + batch, keys)
    buf = []
    for i in range(start, end):
        off = (i * 7919) % MB
        k = b"key:%012d" % i
        buf.append(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, valsize, block[off:off + valsize]))
    c.s.sendall(b"".join(buf))
    for _ in range(end - start):
        c.reply()
fill_s = time.time() - t0
if c.call("dbsize") != keys:
    die("DBSIZE is not KEYS after the fill")
time.sleep(settle)
base_rss, base_child = memory()
used = int(c.info("memory")["used_memory"])
hwm_reset = True
try:
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5")
except OSError:
    hwm_reset = False

samples = []            # (time, server rss KiB, children private KiB)
stop = threading.Event()
def sampler():
    while not stop.is_set():
        r, ch = memory()
        samples.append((time.time(), r, ch))
        time.sleep(sample_s)

lat = []                # (time sent, seconds)
def prober():
    p = Conn(timeout=save_limit)
    rnd = random.Random(1)
    while not stop.is_set():
        k = b"key:%012d" % rnd.randrange(keys)
        t = time.perf_counter(); w = time.time()
        p.call("get", k)
        lat.append((w, time.perf_counter() - t))
        time.sleep(0.002)

bench = subprocess.Popen(
    ["timeout", "-k", "5", str(int(warm + pre + save_limit + 60)), "redis-benchmark", "-p", str(port),
     "-c", str(writers), "-n", "2000000000", "-r", str(keys), "-d", str(valsize), "-t", "set", "-q"],
    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
threads = [threading.Thread(target=sampler), threading.Thread(target=prober)]
try:
    for th in threads:
        th.start()
    time.sleep(warm)
    t_pre, n_pre = time.time(), set_calls(c)
    time.sleep(pre)
    rss_before = memory()[0]
    t_save, n_save = time.time(), set_calls(c)
    if bench.poll() is not None:
        die("the overwriting redis-benchmark stopped early")
    if c.call("bgsave") not in (b"Background saving started",):
        die("BGSAVE was not started")
    t_reply = time.time()
    while True:
        if c.info("persistence").get("rdb_bgsave_in_progress") == "0":
            break
        if time.time() - t_save > save_limit:
            die(f"BGSAVE still running after {save_limit:.0f} s")
        time.sleep(0.02)
    t_end, n_end = time.time(), set_calls(c)
    time.sleep(0.2)
finally:
    stop.set()
    bench.terminate()
    try:
        bench.wait(10)
    except subprocess.TimeoutExpired:
        bench.kill()
    for th in threads:
        th.join(save_limit)
persist = c.info("persistence")
if persist.get("rdb_last_bgsave_status") != "ok":
    die("rdb_last_bgsave_status is not ok")
hwm = status_kb(pid, "VmHWM:") if hwm_reset else 0

during = [s for s in samples if t_save <= s[0] <= t_end + 0.2]
peak = max(during, key=lambda s: s[1] + s[2]) if during else (t_end, 0, 0)
peak_kb, self_kb, child_kb = peak[1] + peak[2], peak[1], peak[2]
if hwm > peak_kb:
    peak_kb, self_kb, child_kb = hwm, hwm, 0

def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] * 1000 if xs else float("nan")
lb = [d for w, d in lat if t_pre <= w < t_save]
ld = [d for w, d in lat if t_save <= w <= t_end]
cow = persist.get("rdb_last_cow_size")
json.dump({
    "keys": keys, "fill_s": fill_s, "used_mb": used / MB, "dataset_mb": base_rss / 1024,
    "rss_before_mb": rss_before / 1024, "peak_mb": peak_kb / 1024, "peak_self_mb": self_kb / 1024,
    "peak_child_mb": child_kb / 1024, "samples": len(during), "hwm_reset": hwm_reset,
    "save_s": t_end - t_save, "bgsave_reply_ms": (t_reply - t_save) * 1000,
    "rdb_mb": os.path.getsize(rdb) / MB if os.path.exists(rdb) else float("nan"),
    "sets_before": (n_save - n_pre) / (t_save - t_pre), "sets_during": (n_end - n_save) / (t_end - t_save),
    "p50_before": pct(lb, 0.5), "p99_before": pct(lb, 0.99), "max_before": pct(lb, 1.0),
    "p50_during": pct(ld, 0.5), "p99_during": pct(ld, 0.99), "max_during": pct(ld, 1.0),
    "probes_during": len(ld), "cow_mb": int(cow) / MB if cow is not None else None,
}, sys.stdout)
EOF

if want bgsave; then
  KEYS=$((DATA_MB * 1048576 / VALSIZE))
  echo "# bgsave: DATA_MB=$DATA_MB VALSIZE=$VALSIZE KEYS=$KEYS, $OVERWRITERS overwriters (redis-benchmark -t set)," \
    "before window ${PRE}s, sampled every ${SAMPLE_MS} ms, rdbcompression $RDBCOMPRESSION"
  for srv in latch redis; do
    port=$LATCH_PORT; [ "$srv" = latch ] || port=$REDIS_PORT
    dir=$WORK/$srv-bgsave
    start_server "$srv" "$port" "$dir" --save '' --appendonly no --rdbcompression "$RDBCOMPRESSION"
    echo "bgsave: $srv: fill, overwrite, BGSAVE" >&2
    python3 "$WORK/bgsave.py" "$srv" "$port" "$SPID" "$dir/dump.rdb" "$KEYS" "$VALSIZE" "$OVERWRITERS" \
      "$WARM" "$PRE" "$SETTLE" "$SAMPLE_MS" "$SAVE_LIMIT" "$FILL_LIMIT" >"$WORK/bgsave-$srv.json" || exit 1
    stop_server "$SPID"
    rm -rf "$dir"
  done
  python3 - "$WORK/bgsave-latch.json" "$WORK/bgsave-redis.json" <<'EOF'
import json, sys
L, R = (json.load(open(p)) for p in sys.argv[1:3])
def f(v, d=1):
    return "n/a" if v is None or v != v else f"{v:,.{d}f}"
rows = [
    ("keys", "keys", 0), ("fill s", "fill_s", 1), ("used_memory MB (after fill)", "used_mb", 1),
    ("dataset MB (RSS after fill)", "dataset_mb", 1), ("RSS before BGSAVE MB", "rss_before_mb", 1),
    ("peak MB during BGSAVE", "peak_mb", 1), ("  server process RSS MB", "peak_self_mb", 1),
    ("  + fork child private MB", "peak_child_mb", 1), ("peak / dataset", None, 3),
    ("BGSAVE s", "save_s", 2), ("BGSAVE reply ms", "bgsave_reply_ms", 1), ("RDB file MB", "rdb_mb", 1),
    ("SET/s before save", "sets_before", 0), ("SET/s during save", "sets_during", 0),
    ("during / before", None, 3), ("probe GET p50 ms before", "p50_before", 2),
    ("probe GET p99 ms before", "p99_before", 2), ("probe GET max ms before", "max_before", 1),
    ("probe GET p50 ms during", "p50_during", 2), ("probe GET p99 ms during", "p99_during", 2),
    ("probe GET max ms during", "max_during", 1), ("probes during", "probes_during", 0),
    ("memory samples during", "samples", 0), ("rdb_last_cow_size MB (INFO)", "cow_mb", 1),
]
print(f"{'':31} {'latch':>12} {'redis':>12}")
for label, key, d in rows:
    if label == "peak / dataset":
        a, b = (x["peak_mb"] / x["dataset_mb"] for x in (L, R))
        print(f"{label:31} {f(a, d):>12} {f(b, d):>12}   (target: latch <= 1.1)")
    elif label == "during / before":
        a, b = (x["sets_during"] / x["sets_before"] if x["sets_before"] else None for x in (L, R))
        print(f"{label:31} {f(a, d):>12} {f(b, d):>12}")
    else:
        print(f"{label:31} {f(L.get(key), d):>12} {f(R.get(key), d):>12}")
for n, x in (("latch", L), ("redis", R)):
    if not x["hwm_reset"]:
        print(f"note: {n}: VmHWM could not be reset; the peak is from samples only")
EOF
fi

# ---------------------------------------------------------------------------------------------
if want aof; then
  RES=$WORK/aof.tsv; : >"$RES"
  echo "# aof: redis-benchmark -t set -r 100000 -d $AOF_VALSIZE, RUNS=$RUNS, $([ -n "$N" ] && echo "N=$N" || echo "N calibrated to ~${SECS}s")"
  bench_rps() { # PORT CLIENTS N -> requests/s on stdout, nothing on failure
    local out rc=0
    out=$(timeout -k 5 "$TIMEOUT" redis-benchmark -p "$1" -c "$2" -n "$3" -r 100000 -d "$AOF_VALSIZE" -t set --csv 2>"$WORK/err") || rc=$?
    if [ $rc -ne 0 ]; then
      echo "warn: port $1 -c $2 -n $3 failed (rc=$rc$([ $rc = 124 ] && echo ", over ${TIMEOUT}s")): $(head -c 200 "$WORK/err")" >&2
      return 0
    fi
    awk -F'","' 'NR > 1 { gsub(/"/, "", $2); print $2 }' <<<"$out"
  }
  for mode in $AOF_MODES; do
    opts=(--save '' --appendonly no)
    [ "$mode" = none ] || opts=(--save '' --appendonly yes --appendfsync "$mode")
    start_server latch "$LATCH_PORT" "$WORK/latch-$mode" "${opts[@]}"; lpid=$SPID
    start_server redis "$REDIS_PORT" "$WORK/redis-$mode" "${opts[@]}"; rpid=$SPID
    for p in "$LATCH_PORT" "$REDIS_PORT"; do
      want_aof=0; [ "$mode" = none ] || want_aof=1
      got=$(redis-cli -p "$p" info persistence | tr -d '\r' | awk -F: '$1 == "aof_enabled" { print $2 }')
      [ "$got" = "$want_aof" ] || { echo "persistence-bench: port $p: aof_enabled is '$got' in mode $mode" >&2; exit 1; }
    done
    for c in $AOF_CLIENTS; do
      n=$N
      if [ -z "$n" ]; then   # calibrate (also the warm-up): N for ~SECS s on the faster server
        cal=$((c == 1 ? 2000 : 20000))
        a=$(bench_rps "$LATCH_PORT" "$c" "$cal"); b=$(bench_rps "$REDIS_PORT" "$c" "$cal")
        n=$(awk -v a="${a:-0}" -v b="${b:-0}" -v s="$SECS" 'BEGIN { m = a > b ? a : b; n = int(m * s); print n < 1000 ? 1000 : n }')
      fi
      for r in $(seq 1 "$RUNS"); do
        echo "aof: $mode -c $c -n $n round $r/$RUNS" >&2
        order="latch redis"; [ $((r % 2)) = 1 ] || order="redis latch"
        for srv in $order; do
          port=$LATCH_PORT; [ "$srv" = latch ] || port=$REDIS_PORT
          rps=$(bench_rps "$port" "$c" "$n")
          [ -z "$rps" ] || printf '%s\t%s\t%s\t%s\t%s\n' "$mode" "$c" "$srv" "$r" "$rps" >>"$RES"
        done
      done
    done
    stop_server "$lpid"; stop_server "$rpid"
    rm -rf "$WORK/latch-$mode" "$WORK/redis-$mode"
  done
  python3 - "$RES" "$AOF_MODES" "$AOF_CLIENTS" <<'EOF'
import statistics, sys
rows = [l.split("\t") for l in open(sys.argv[1]).read().splitlines() if l]
modes, clients = sys.argv[2].split(), sys.argv[3].split()
v = {}
for mode, c, srv, _, rps in rows:
    v.setdefault((mode, c, srv), []).append(float(rps))
med = {k: statistics.median(x) for k, x in v.items()}
def spread(k):
    x = v.get(k)
    return f"{100 * (max(x) - min(x)) / statistics.median(x):.1f}" if x else "n/a"
def f(x, fmt):
    return "n/a" if x is None else format(x, fmt)
def ratio(a, b):
    return a / b if a is not None and b else None
fmt = "{:<11} {:>7} {:>11} {:>11} {:>11} {:>7} {:>7} {:>10} {:>10}"
print(fmt.format("appendfsync", "clients", "latch_rps", "redis_rps", "latch/redis", "sprdL%", "sprdR%", "L/L_none", "R/R_none"))
for m in modes:
    for c in clients:
        a, b = med.get((m, c, "latch")), med.get((m, c, "redis"))
        an, bn = med.get(("none", c, "latch")), med.get(("none", c, "redis"))
        print(fmt.format(m, c, f(a, ",.0f"), f(b, ",.0f"), f(ratio(a, b), ".3f"), spread((m, c, "latch")),
                         spread((m, c, "redis")), f(ratio(a, an), ".3f"), f(ratio(b, bn), ".3f")))
print("(none = appendonly no; X/X_none = that mode's median as a fraction of the same server's none)")
EOF
fi
