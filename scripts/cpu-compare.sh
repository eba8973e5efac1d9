#!/usr/bin/env bash
# cpu-compare.sh - server CPU for the same fixed redis-benchmark work against two running servers,
# A and B, alternated (A, B, A, B ... for ROUNDS rounds): the CPU time each server process spent
# (utime + stime from /proc/PID/stat, in clock ticks) per run, the medians, and the ratio A/B of
# the medians, per workload, then the geometric mean of the ratios. With 2 cores the benchmark
# client saturates before the server, so requests per second hide differences that server CPU
# per request shows.
#
# usage: scripts/cpu-compare.sh A_PORT A_PID B_PORT B_PID
#   e.g. scripts/cpu-compare.sh 7101 "$(pgrep -f ':7101')" 7102 "$(pgrep -f ':7102')"
# The servers listen on 127.0.0.1.
#
# Workloads (issue 30's set by default):
#   SET GET INCR MSET LPUSH LPOP   redis-benchmark's own tests (-t name)
#   GET_HIT                        GET of present keys (the round first writes them with SET
#                                  -r R, not counted; redis-benchmark's GET alone reads keys that
#                                  the FLUSHALL before each run removed)
#   SETNX                          SETNX key:__rand_int__ v
#   SET_NX_PX                      SET lock:__rand_int__ tok NX PX 30000 (lock acquire)
#   EVALSHA_RELEASE                EVALSHA of the compare-and-delete release script on held locks
#                                  (each round first takes them with SET_NX_PX, not counted)
#   HSET_OBJ / HGET_OBJ            small objects: HSET obj:N of 3 fields / HGET of one of them
#                                  (HGET_OBJ's round first writes them with HSET_OBJ, not counted)
#   ZADD_SMALL / SADD_SMALL        ZADD / SADD of a random member into a random key of R (N/R
#                                  members each on average: small sets)
#
# Environment (all optional):
#   WORKLOADS="SET GET INCR MSET SETNX SET_NX_PX"
#   N=300000   requests per run       C=50   connections      P=16   pipeline depth
#   R=100000   random keyspace        ROUNDS=3
# Per workload: "<name> ticks A <a> B <b> ratio <a/b>"; last line: "geomean cpu ratio A/B: <x>".
set -u

[ $# -eq 4 ] || { awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0" >&2; exit 2; }
A_PORT=$1 A_PID=$2 B_PORT=$3 B_PID=$4
WORKLOADS=${WORKLOADS:-SET GET INCR MSET SETNX SET_NX_PX}
N=${N:-300000}; C=${C:-50}; P=${P:-16}; R=${R:-100000}; ROUNDS=${ROUNDS:-3}
RELEASE='if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end'

ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
bench() { # port args...
    local port=$1
    shift
    timeout 300 redis-benchmark -h 127.0.0.1 -p "$port" -n "$N" -c "$C" -P "$P" -r "$R" -q "$@" >/dev/null
}
workload_args() { # workload port -> redis-benchmark arguments on stdout (one per line)
    case $1 in
        SET | GET | INCR | MSET | LPUSH | LPOP) printf '%s\n' -t "${1,,}" ;;
        GET_HIT) printf '%s\n' -t get ;;
        SETNX) printf '%s\n' setnx 'key:__rand_int__' v ;;
        SET_NX_PX) printf '%s\n' set 'lock:__rand_int__' tok NX PX 30000 ;;
        EVALSHA_RELEASE)
            local sha
            sha=$(timeout 5 redis-cli -h 127.0.0.1 -p "$2" SCRIPT LOAD "$RELEASE")
            printf '%s\n' evalsha "$sha" 1 'lock:__rand_int__' tok ;;
        HSET_OBJ) printf '%s\n' hset 'obj:__rand_int__' name alice age 42 city paris ;;
        HGET_OBJ) printf '%s\n' hget 'obj:__rand_int__' age ;;
        ZADD_SMALL) printf '%s\n' zadd 'rank:__rand_int__' __rand_int__ 'm:__rand_int__' ;;
        SADD_SMALL) printf '%s\n' sadd 'tags:__rand_int__' 'm:__rand_int__' ;;
        *) echo "unknown workload $1" >&2; return 1 ;;
    esac
}
run() { # workload port pid -> ticks spent by pid while the workload ran
    local w=$1 port=$2 pid=$3 before after args
    timeout 10 redis-cli -h 127.0.0.1 -p "$port" FLUSHALL >/dev/null
    mapfile -t args < <(workload_args "$w" "$port")
    if [ "$w" = EVALSHA_RELEASE ]; then bench "$port" set 'lock:__rand_int__' tok NX PX 30000; fi
    if [ "$w" = GET_HIT ]; then bench "$port" -t set; fi
    if [ "$w" = HGET_OBJ ]; then bench "$port" hset 'obj:__rand_int__' name alice age 42 city paris; fi
    before=$(ticks "$pid")
    bench "$port" "${args[@]}"
    after=$(ticks "$pid")
    echo $((after - before))
}
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

ratios=()
for w in $WORKLOADS; do
    a=() b=()
    for ((i = 1; i <= ROUNDS; i++)); do
        a+=("$(run "$w" "$A_PORT" "$A_PID")")
        b+=("$(run "$w" "$B_PORT" "$B_PID")")
    done
    ma=$(printf '%s\n' "${a[@]}" | median)
    mb=$(printf '%s\n' "${b[@]}" | median)
    r=$(awk -v a="$ma" -v b="$mb" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }')
    ratios+=("$r")
    echo "$w ticks A ${a[*]} B ${b[*]} median A $ma B $mb ratio $r"
done
printf '%s\n' "${ratios[@]}" | awk '$1 > 0 { s += log($1); n++ } END { if (n) printf "geomean cpu ratio A/B: %.3f\n", exp(s / n) }'
