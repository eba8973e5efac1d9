#!/bin/sh
# Four (LOOPS) concurrent shell loops, each running ITER times
#   latch-cli lock NAME -- sh -c 'read n < FILE; sleep 0.01; echo $((n+1)) > FILE'
# must leave exactly LOOPS*ITER in FILE: the lock serialises the read-modify-write.
#
# Environment: LATCH_CLI (default: latch-cli in PATH), PORT (default 6379),
# LATCH_SERVER (if set, that binary is started on 127.0.0.1:PORT and stopped at the end),
# LOOPS (4), ITER (25).
# Exit status: 0 if the count is exact, 1 otherwise.
set -u
CLI=${LATCH_CLI:-latch-cli}
PORT=${PORT:-6379}
LOOPS=${LOOPS:-4}
ITER=${ITER:-25}
DIR=$(mktemp -d)
FILE=$DIR/counter
echo 0 > "$FILE"
SERVER_PID=
if [ -n "${LATCH_SERVER:-}" ]; then
    "$LATCH_SERVER" --bind 127.0.0.1 --port "$PORT" > "$DIR/server.log" 2>&1 &
    SERVER_PID=$!
    i=0
    until "$CLI" -p "$PORT" PING > /dev/null 2>&1; do
        i=$((i + 1))
        if [ $i -gt 200 ]; then echo "server did not start on port $PORT" >&2; kill $SERVER_PID; exit 1; fi
        sleep 0.05
    done
fi
pids=
n=0
while [ $n -lt "$LOOPS" ]; do
    (
        j=0
        while [ $j -lt "$ITER" ]; do
            "$CLI" -p "$PORT" lock "loops:$$" --ttl 2000 --wait 60000 -- \
                sh -c 'read n < "$1"; sleep 0.01; echo $((n + 1)) > "$1"' sh "$FILE" || exit 1
            j=$((j + 1))
        done
    ) &
    pids="$pids $!"
    n=$((n + 1))
done
failed=0
for p in $pids; do
    wait "$p" || failed=1
done
got=$(cat "$FILE")
want=$((LOOPS * ITER))
[ -n "$SERVER_PID" ] && kill "$SERVER_PID" && wait "$SERVER_PID" 2>/dev/null
rm -rf "$DIR"
echo "lock-loops: $LOOPS loops x $ITER: counter $got, expected $want"
[ "$failed" = 0 ] && [ "$got" = "$want" ]
