#!/usr/bin/env bash
# cpu-compare.sh - server CPU for the same fixed redis-benchmark work against two running servers,
# A and B, alternated (A, B, A, B ... for ROUNDS rounds): the CPU time each server process spent
# (utime + stime from /proc/PID/stat, in clock ticks) per run, the medians, and the ratio A/B of
# the medians. With 2 cores the benchmark client saturates before the server, so requests per
# second hide differences that server CPU per request shows.
#
# usage: scripts/cpu-compare.sh A_PORT A_PID B_PORT B_PID
#   e.g. scripts/cpu-compare.sh 7101 "$(pgrep -f 'port 7101')" 7102 "$(pgrep -f 'port 7102')"
# The servers listen on 127.0.0.1.
#
# Environment (all optional):
#   TESTS=set,get,incr,lpush,lpop   redis-benchmark -t list
#   N=300000   requests per test      C=50   connections      P=16   pipeline depth
#   R=100000   random keyspace        ROUNDS=4
# Last line: "cpu ratio A/B (medians): <x>".
set -u

[ $# -eq 4 ] || { awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0" >&2; exit 2; }
A_PORT=$1 A_PID=$2 B_PORT=$3 B_PID=$4
TESTS=${TESTS:-set,get,incr,lpush,lpop}; N=${N:-300000}; C=${C:-50}; P=${P:-16}; R=${R:-100000}
ROUNDS=${ROUNDS:-4}

ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

run() { # port pid -> ticks spent by pid while the benchmark ran
    local before after
    redis-cli -h 127.0.0.1 -p "$1" FLUSHALL >/dev/null
    before=$(ticks "$2")
    timeout 300 redis-benchmark -h 127.0.0.1 -p "$1" -t "$TESTS" -n "$N" -c "$C" -P "$P" -r "$R" -q >/dev/null
    after=$(ticks "$2")
    echo $((after - before))
}

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

a=() b=()
for ((i = 1; i <= ROUNDS; i++)); do
    a+=("$(run "$A_PORT" "$A_PID")")
    b+=("$(run "$B_PORT" "$B_PID")")
    echo "round $i: A ${a[-1]} ticks, B ${b[-1]} ticks"
done
ma=$(printf '%s\n' "${a[@]}" | median)
mb=$(printf '%s\n' "${b[@]}" | median)
echo "median ticks: A $ma, B $mb"
awk -v a="$ma" -v b="$mb" 'BEGIN { printf "cpu ratio A/B (medians): %.3f\n", a / b }'
