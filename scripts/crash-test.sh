#!/usr/bin/env bash
# Crash test of the append-only file: no acknowledged write is lost when the server is killed.
#
# Builds latch-server (release) and starts it on 127.0.0.1:PORT in a fresh temporary directory with
#   --appendonly yes --appendfsync always --save ""
# N writer clients each write keys of their own and remember only what was acknowledged:
#   SET w<i>:<seq> <unique value>, INCR w<i>:ctr (the acknowledged value), RPUSH w<i>:list <seq>.
# After a random 20-400 ms the server gets SIGKILL, is restarted on the same directory, and once it
# answers PING with INFO's loading:0, every acknowledged write of every round so far is checked: each
# key holds its value, each counter is at least its last acknowledged value (at most the writes in
# flight above it), each list holds every acknowledged element in order (a write in flight when the
# server died may or may not be there). This repeats ROUNDS times.
#   scripts/crash-test.sh                       # 8 writers, 100 rounds
#   N=16 ROUNDS=300 scripts/crash-test.sh
#   DISK_FULL=1 ROUNDS=30 scripts/crash-test.sh
# Environment: N (8), ROUNDS (100), PORT (7130), SEED (random; printed, replays the kill delays),
# APPENDFSYNC (always; `everysec` and `no` must lose nothing either: their replies wait for the
# write, only the fsync is deferred; a build that replied before writing, cd3c4af, lost thousands
# of writes with them, which is how the check was shown to catch losses), SERVER_BIN (a
# server binary to test instead of building latch-server; redis-server takes the same options, for
# comparison), DISK_FULL (0). With DISK_FULL=1 the directory is a tmpfs of TMPFS_MB (128) MB
# (mounting needs root or passwordless sudo) that a filler file fills up to FREE_KB (64) KB free:
# the first half of the rounds run on that full disk; in the first round of the second half the
# filler is deleted under the writers, and the rest show whether the server recovered. What the
# writes got on the full disk (errors, no reply, aof_last_write_status, the server exiting) is
# printed; acknowledged writes must survive in both halves.
# SIGKILL kills the process, not the machine: what reached the kernel survives it even unsynced, so
# this checks that nothing is acknowledged before it is written, not the fsync itself.
# Exit status: 0 if nothing acknowledged was lost; 1 on a loss, or if the server did not restart;
# 2 if the test cannot run here (DISK_FULL=1 without the right to mount a tmpfs, port taken).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-8}
ROUNDS=${ROUNDS:-100}
PORT=${PORT:-7130}
SEED=${SEED:-$RANDOM$RANDOM}
DISK_FULL=${DISK_FULL:-0}
APPENDFSYNC=${APPENDFSYNC:-always}
TMPFS_MB=${TMPFS_MB:-128}
FREE_KB=${FREE_KB:-64}

SUDO=
if [ "$DISK_FULL" = 1 ]; then
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
      SUDO="sudo -n"
    else
      echo "DISK_FULL=1 needs root or passwordless sudo to mount a tmpfs; not run" >&2
      exit 2
    fi
  fi
fi

if [ -n "${SERVER_BIN:-}" ]; then
  LATCH=$SERVER_BIN
else
  cargo build --release --bin latch-server >&2
  target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
  LATCH="$target/release/latch-server"
fi

tmp=$(mktemp -d)
mkdir "$tmp/data"
cleanup() {
  # Only the server this script started: its pid file (in our dir) names it and it runs our binary
  # (its command line is its title by then, as redis-server's is).
  if [ -s "$tmp/server.pid" ]; then
    pid=$(cat "$tmp/server.pid")
    if [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$(readlink -f "$LATCH")" ]; then
      kill -9 "$pid" 2>/dev/null || true
    fi
  fi
  if mountpoint -q "$tmp/data" 2>/dev/null; then
    $SUDO umount "$tmp/data" || $SUDO umount -l "$tmp/data" || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
if [ "$DISK_FULL" = 1 ]; then
  if ! $SUDO mount -t tmpfs -o "size=${TMPFS_MB}m" tmpfs "$tmp/data"; then
    echo "DISK_FULL=1: mounting a tmpfs failed (no CAP_SYS_ADMIN here?); not run" >&2
    exit 2
  fi
  [ -z "$SUDO" ] || $SUDO chown "$(id -u):$(id -g)" "$tmp/data"
fi

echo "crash test: N=$N ROUNDS=$ROUNDS SEED=$SEED APPENDFSYNC=$APPENDFSYNC DISK_FULL=$DISK_FULL dir=$tmp/data" >&2
python3 - "$LATCH" "$tmp" "$PORT" "$N" "$ROUNDS" "$SEED" "$DISK_FULL" "$FREE_KB" "$APPENDFSYNC" <<'EOF'
import collections, os, random, signal, socket, subprocess, sys, threading, time

latch, tmp, port, n, rounds, seed, disk_full, free_kb, appendfsync = sys.argv[1:]
port, n, rounds, seed, disk_full, free_kb = int(port), int(n), int(rounds), int(seed), disk_full == "1", int(free_kb)
data, log_path, pidfile = os.path.join(tmp, "data"), os.path.join(tmp, "server.log"), os.path.join(tmp, "server.pid")
filler = os.path.join(data, "filler")
rng = random.Random(seed)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))


class Err(str):
    pass


def enc(*a):
    a = [x if isinstance(x, bytes) else str(x).encode() for x in a]
    return b"*%d\r\n" % len(a) + b"".join(b"$%d\r\n%s\r\n" % (len(x), x) for x in a)


class Conn:
    def __init__(self, timeout=10.0):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.f = self.s.makefile("rb")

    def reply(self):
        line = self.f.readline()
        if not line.endswith(b"\r\n"):
            raise ConnectionError("connection closed")
        t, rest = line[:1], line[1:-2]
        if t == b"+":
            return rest.decode()
        if t == b"-":
            return Err(rest.decode())
        if t == b":":
            return int(rest)
        if t == b"$":
            k = int(rest)
            if k < 0:
                return None
            d = self.f.read(k + 2)
            if len(d) != k + 2:
                raise ConnectionError("connection closed")
            return d[:-2]
        if t == b"*":
            k = int(rest)
            return None if k < 0 else [self.reply() for _ in range(k)]
        raise ConnectionError("unexpected reply %r" % line)

    def call(self, *a):
        self.s.sendall(enc(*a))
        return self.reply()

    def pipeline(self, cmds):
        self.s.sendall(b"".join(enc(*c) for c in cmds))
        return [self.reply() for _ in cmds]

    def close(self):
        try:
            self.s.close()
        except OSError:
            pass


class Writer:
    """One client's keys and what the server acknowledged of them, across every round."""

    def __init__(self, i):
        self.i, self.seq = i, 0
        self.rng = random.Random(seed * 1000 + i)  # the values' random part; `rng` times the kills
        self.sets, self.sets_maybe = {}, {}  # key -> value: acknowledged / sent, not acknowledged
        self.ctr, self.ctr_base, self.ctr_pending = 0, 0, 0  # last acknowledged, last seen, in flight
        self.list, self.list_maybe, self.list_landed = [], set(), set()
        self.acks = self.round_acks = 0
        self.acked = collections.Counter()  # by command
        self.errors = collections.Counter()
        self.odd = []

    def run(self, stop):
        self.round_acks = 0
        try:
            c = Conn(timeout=5.0)
        except OSError as e:
            self.errors["connect: %s" % e] += 1
            return
        try:
            while not stop.is_set():
                self.seq += 1
                s, op = self.seq, self.seq % 3
                if op == 0:
                    key, val = "w%d:%d" % (self.i, s), "%d:%d:%08x" % (self.i, s, self.rng.getrandbits(32))
                    self.sets_maybe[key] = val
                    r = c.call("SET", key, val)
                    ok = r == "OK" and not isinstance(r, Err)
                    if ok:
                        del self.sets_maybe[key]
                        self.sets[key] = val
                elif op == 1:
                    self.ctr_pending += 1
                    r = c.call("INCR", "w%d:ctr" % self.i)
                    ok = isinstance(r, int)
                    if ok:
                        if r <= self.ctr:
                            self.odd.append("INCR w%d:ctr went back: %d after %d" % (self.i, r, self.ctr))
                        self.ctr = self.ctr_base = r
                        self.ctr_pending = 0
                else:
                    self.list_maybe.add(s)
                    r = c.call("RPUSH", "w%d:list" % self.i, s)
                    ok = isinstance(r, int)
                    if ok:
                        self.list_maybe.discard(s)
                        self.list.append(s)
                if ok:
                    self.acked[("SET", "INCR", "RPUSH")[op]] += 1
                    self.acks += 1
                    self.round_acks += 1
                else:
                    self.errors["reply: %s" % str(r)[:90]] += 1
        except socket.timeout:
            self.errors["no reply within 5 s"] += 1
        except (OSError, ValueError):
            pass  # the server died under us: the write in flight stays unacknowledged
        finally:
            c.close()

    def verify(self, c):
        """Checks everything acknowledged so far against the restarted server; returns (lost, oddities).
        A lost write is forgotten once reported, so that each counts once."""
        lost, odd = [], self.odd
        self.odd = []
        keys = list(self.sets)
        for at in range(0, len(keys), 1000):
            chunk = keys[at:at + 1000]
            got = c.call("MGET", *chunk)
            for k, v in zip(chunk, got):
                if v is None or v.decode() != self.sets[k]:
                    lost.append("SET %s %s -> %r" % (k, self.sets.pop(k), v))
        self.sets_maybe.clear()  # present or not, they were never acknowledged
        v = c.call("GET", "w%d:ctr" % self.i)
        actual = int(v) if v is not None else 0
        if actual < self.ctr:
            lost += ["INCR w%d:ctr: %d acknowledged, %d after restart" % (self.i, self.ctr, actual)] * (self.ctr - actual)
            self.ctr = actual
        elif actual > self.ctr_base + self.ctr_pending:
            odd.append("w%d:ctr is %d, more than %d + %d in flight" % (self.i, actual, self.ctr_base, self.ctr_pending))
        self.ctr_base, self.ctr_pending = max(actual, self.ctr), 0
        got = [int(x) for x in c.call("LRANGE", "w%d:list" % self.i, 0, -1)]
        have = set(got)
        for e in self.list:
            if e not in have:
                lost.append("RPUSH w%d:list %d" % (self.i, e))
        self.list = [e for e in self.list if e in have]
        if got != sorted(have):
            odd.append("w%d:list out of order" % self.i)
        self.list_landed |= self.list_maybe & have
        extra = have - set(self.list) - self.list_landed
        if extra:
            odd.append("w%d:list has elements never sent: %s" % (self.i, sorted(extra)[:5]))
        self.list_maybe.clear()
        return lost, odd


class Server:
    def __init__(self):
        self.p = None

    def start(self):
        log = open(log_path, "ab")
        self.p = subprocess.Popen(
            [latch, "--dir", data, "--appendonly", "yes", "--appendfsync", appendfsync, "--save", "",
             "--port", str(port), "--bind", "127.0.0.1"],
            stdout=log, stderr=subprocess.STDOUT, cwd=tmp)
        log.close()
        with open(pidfile, "w") as f:
            f.write(str(self.p.pid))
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.p.poll() is not None:
                return "exited with status %s" % self.p.returncode
            try:
                c = Conn(timeout=2.0)
                try:
                    if c.call("PING") == "PONG":
                        if "process_id:%d\r" % self.p.pid not in c.call("INFO", "server").decode():
                            return "another process answers on port %d" % port
                        if "\nloading:0\r" in c.call("INFO", "persistence").decode():
                            return None
                finally:
                    c.close()
            except (OSError, ValueError):
                pass
            time.sleep(0.01)
        return "did not answer PING with loading:0 within 30 s"

    def kill(self):
        if self.p is not None and self.p.poll() is None:
            os.kill(self.p.pid, signal.SIGKILL)
            self.p.wait()


def free_bytes():
    st = os.statvfs(data)
    return st.f_bavail * st.f_frsize


def fill_disk():
    with open(filler, "wb") as f:
        block = b"\0" * 65536
        while free_bytes() > free_kb * 1024 + len(block):
            f.write(block)
            f.flush()
        while free_bytes() > free_kb * 1024 + 4096:
            f.write(block[:4096])
            f.flush()


def aof_status():
    try:
        c = Conn(timeout=1.0)
        try:
            info = c.call("INFO", "persistence").decode()
        finally:
            c.close()
        return next((l.split(":", 1)[1] for l in info.split("\r\n") if l.startswith("aof_last_write_status:")), "?")
    except (OSError, ValueError):
        return "no answer"


def log_tail(k=15):
    try:
        with open(log_path, "rb") as f:
            return b"".join(f.readlines()[-k:]).decode(errors="replace")
    except OSError:
        return ""


def fail_restart(srv, why, rnd):
    print("round %d: the server did not restart: %s\n--- server log (tail) ---\n%s" % (rnd, why, log_tail()), file=sys.stderr)
    srv.kill()
    sys.exit(1)


writers = [Writer(i) for i in range(n)]
srv = Server()
try:
    try:
        Conn(timeout=0.5).close()
        print("port %d is taken by another process; set PORT" % port, file=sys.stderr)
        sys.exit(2)
    except OSError:
        pass
    why = srv.start()
    if why:
        fail_restart(srv, why, 0)
    phases = [("normal", rounds)]
    if disk_full:
        fill_disk()
        print("disk filled: %d KB free on the tmpfs" % (free_bytes() // 1024), file=sys.stderr)
        phases = [("disk full", rounds // 2), ("space freed", rounds - rounds // 2)]
    t0, rnd, total_lost, oddities = time.time(), 0, [], []
    for phase, count in phases:
        stats, statuses, exits = collections.Counter(), collections.Counter(), collections.Counter()
        errors_before = [collections.Counter(w.errors) for w in writers]
        for k in range(count):
            rnd += 1
            stop = threading.Event()
            threads = [threading.Thread(target=w.run, args=(stop,)) for w in writers]
            for th in threads:
                th.start()
            if phase == "space freed" and k == 0:
                # The disk is still full while the writers start; space comes back under them, and the
                # running server must take writes again (and keep them) without a restart.
                time.sleep(rng.uniform(0.05, 0.2))
                before = aof_status()
                os.remove(filler)
                time.sleep(0.05)
                try:
                    c = Conn(timeout=5.0)
                    r = c.call("SET", "probe", "after-free")
                    c.close()
                except (OSError, ValueError) as e:
                    r = "no reply (%s)" % e
                print("round %d: filler deleted under the writers (%d KB free): aof_last_write_status %s before, "
                      "then SET -> %r, aof_last_write_status %s" % (rnd, free_bytes() // 1024, before, r, aof_status()),
                      file=sys.stderr)
            time.sleep(rng.uniform(0.02, 0.4))
            if disk_full:
                statuses[aof_status()] += 1
            if srv.p.poll() is not None:
                stats["exited"] += 1
                exits[log_tail(1).strip().split(" ", 5)[-1][:120]] += 1
            srv.kill()
            stop.set()
            for th in threads:
                th.join(10)
                if th.is_alive():
                    print("round %d: a writer did not stop" % rnd, file=sys.stderr)
                    sys.exit(1)
            why = srv.start()
            if why:
                fail_restart(srv, why, rnd)
            c = Conn()
            lost, odd = [], []
            for w in writers:
                l, o = w.verify(c)
                lost += l
                odd += o
            c.close()
            acks = sum(w.round_acks for w in writers)
            stats["acks"] += acks
            stats["lost"] += len(lost)
            if lost:
                print("round %d: LOST %d acknowledged writes, e.g. %s" % (rnd, len(lost), lost[:3]), file=sys.stderr)
            if odd:
                print("round %d: %s" % (rnd, odd[:3]), file=sys.stderr)
            total_lost += lost
            oddities += odd
            if rnd % 10 == 0:
                print("round %d/%d: %d acknowledged this round, %d in all, %d lost so far"
                      % (rnd, rounds, acks, sum(w.acks for w in writers), len(total_lost)), file=sys.stderr)
        errs = collections.Counter()
        for w, b in zip(writers, errors_before):
            errs.update(w.errors - b)
        if stats["exited"]:
            print("[%s] the server exited by itself before the kill in %d rounds, its last log line: %s"
                  % (phase, stats["exited"], dict(exits)))
        if disk_full:
            print("[%s] %d rounds, %d writes acknowledged, %d of them lost; aof_last_write_status before each kill: %s; "
                  "not acknowledged: %s; %d KB free at the end" % (phase, count, stats["acks"], stats["lost"], dict(statuses),
                                                                  dict(errs.most_common(4)) or "none", free_bytes() // 1024))
        elif errs:
            print("[%s] not acknowledged: %s" % (phase, dict(errs.most_common(4))))
    acked = collections.Counter()
    for w in writers:
        acked.update(w.acked)
    print("rounds %d, writers %d, acknowledged writes %d (SET %d, INCR %d, RPUSH %d), lost %d, oddities %d, %.1f s"
          % (rnd, n, sum(acked.values()), acked["SET"], acked["INCR"], acked["RPUSH"], len(total_lost), len(oddities),
             time.time() - t0))
    if total_lost or oddities:
        for l in (total_lost + oddities)[:20]:
            print("  " + l)
        sys.exit(1)
finally:
    srv.kill()
EOF
