#!/usr/bin/env bash
# tls-bench.sh - TLS SET/GET throughput of Latch against redis-server, in one interleaved run:
# makes a throwaway CA and server/client certificates (openssl), starts both servers with TLS
# only (port 0, tls-port, tls-auth-clients yes) on 127.0.0.1, runs scripts/bench-compare.sh
# with redis-benchmark --tls at -P 1 and at -P 16, prints its tables (medians, A/B ratios;
# A = Latch, B = Redis), and stops the servers it started.
#
# usage: scripts/tls-bench.sh [LATCH_BIN [REDIS_BIN]]
#   LATCH_BIN  default target/release/latch-server (build: cargo build --release -p server)
#   REDIS_BIN  default /usr/bin/redis-server (Debian's 7.0.15 is built with TLS)
# Environment: N (default 100000), C (50), ROUNDS (3), PIPELINES ("1 16"), WORKLOADS ("SET GET"),
# LATCH_PORT (7411), REDIS_PORT (7412); the rest goes to bench-compare.sh as it is.
set -u
usage() { awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0" >&2; exit 2; }
case ${1:-} in -h|--help) usage ;; esac
HERE=$(cd "$(dirname "$0")" && pwd)
LATCH=${1:-$HERE/../target/release/latch-server}
REDIS=${2:-/usr/bin/redis-server}
LATCH_PORT=${LATCH_PORT:-7411}; REDIS_PORT=${REDIS_PORT:-7412}
PIPELINES=${PIPELINES:-1 16}
export N=${N:-100000} C=${C:-50} ROUNDS=${ROUNDS:-3} WORKLOADS=${WORKLOADS:-SET GET}
for t in openssl redis-benchmark redis-cli; do
  command -v "$t" >/dev/null || { echo "tls-bench: $t is required" >&2; exit 2; }
done
[ -x "$LATCH" ] || { echo "tls-bench: no latch-server at $LATCH" >&2; exit 2; }
[ -x "$REDIS" ] || { echo "tls-bench: no redis-server at $REDIS" >&2; exit 2; }
# Absolute paths (the servers run in directories of their own), symlinks kept: Debian's
# redis-server is a link to redis-check-rdb that dispatches on its name.
absolute() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
LATCH=$(absolute "$LATCH"); REDIS=$(absolute "$REDIS")

WORK=$(mktemp -d "${TMPDIR:-/tmp}/tls-bench.XXXXXX") || exit 2
PIDS=()
cleanup() { for p in ${PIDS[@]+"${PIDS[@]}"}; do kill "$p" 2>/dev/null; done; rm -rf "$WORK"; }
trap cleanup EXIT

# A CA, a server certificate for 127.0.0.1/localhost and a client certificate (EC P-256).
(
  cd "$WORK" || exit 1
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=tls-bench-ca \
    -keyout ca.key -out ca.crt
  for who in server client; do
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$who" -keyout $who.key -out $who.csr
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=%s\n' \
      "$([ $who = server ] && echo serverAuth || echo clientAuth)" >$who.ext
    openssl x509 -req -in $who.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile $who.ext -out $who.crt
  done
) >"$WORK/openssl.log" 2>&1 || { echo "tls-bench: certificate generation failed:" >&2; cat "$WORK/openssl.log" >&2; exit 1; }

start() { # BIN PORT DIR
  mkdir -p "$3"
  (cd "$3" && exec "$1" --bind 127.0.0.1 --port 0 --tls-port "$2" --save '' --appendonly no \
     --tls-cert-file "$WORK/server.crt" --tls-key-file "$WORK/server.key" --tls-ca-cert-file "$WORK/ca.crt" \
     >"$3/log" 2>&1) &
  PIDS+=($!)
}
start "$LATCH" "$LATCH_PORT" "$WORK/latch"
start "$REDIS" "$REDIS_PORT" "$WORK/redis"
export TLS="--tls --cacert $WORK/ca.crt --cert $WORK/client.crt --key $WORK/client.key"
for port in "$LATCH_PORT" "$REDIS_PORT"; do
  for _ in $(seq 50); do
    # shellcheck disable=SC2086
    redis-cli $TLS -p "$port" PING 2>/dev/null | grep -q PONG && break
    sleep 0.1
  done
done
echo "# tls-bench: A = Latch ($LATCH), B = Redis ($REDIS), TLS with client certificates"
for p in $PIPELINES; do
  echo "## -P $p"
  P=$p "$HERE/bench-compare.sh" "127.0.0.1:$LATCH_PORT" "127.0.0.1:$REDIS_PORT"
done
