"""A lock loop through a cluster-aware client (redis-py's RedisCluster, or ioredis's Cluster run
from cluster_lock_loop.js) against a Latch consensus group, across kill -9 of the leader (used by
scripts/cluster-clients.sh).

usage: python3 cluster_lock_loop.py LATCH_BINARY [SECONDS] [KILLS] [redis-py|ioredis]

Starts three latch-server nodes on 127.0.0.1 (free ports, a temp directory each), then runs one
application loop for SECONDS: take the lock with SET key token NX PX, increment a counter, release
with the owner-checked compare-and-delete script. Every KILL_EVERY seconds the leader is killed
with SIGKILL (only the processes this script started) and restarted from its directory. The
application retries an operation once when the client library raises; an error on the retry
counts as one that reached the application. Prints one line:

  <client>: cycles=... kills=... retried=... errors_reaching_app=... counter=... ok|FAIL

With ioredis the loop runs in node (NODE_PATH must find ioredis) while this script kills the
leader on the same schedule, and reads the counter through redis-py at the end. ioredis sends a
command again after its connection closed (its default; LOOP_RESEND=0 turns it off), so an INCR
applied just before a kill may be applied twice: the group has no client request ids to tell a
resend from a new command. For it the counter's upper bound is reported, not checked.

and exits 0 when no error reached the application and the counter is between the increments
known applied and those possibly applied (an increment retried after an error may have been
applied by both attempts).
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid

import redis
from redis.cluster import ClusterNode, RedisCluster

RELEASE = "if redis.call('get',KEYS[1]) == ARGV[1] then return redis.call('del',KEYS[1]) else return 0 end"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Group:
    def __init__(self, binary):
        self.binary = binary
        self.base = tempfile.mkdtemp(prefix="latch-cluster-clients-")
        self.ids = [1, 2, 3]
        self.ports = {i: free_port() for i in self.ids}
        self.raft = {i: free_port() for i in self.ids}
        self.peers = ",".join(f"{i}=127.0.0.1:{self.raft[i]}" for i in self.ids)
        self.procs = {}
        for i in self.ids:
            os.mkdir(os.path.join(self.base, str(i)))
            self.start(i)

    def start(self, i):
        d = os.path.join(self.base, str(i))
        self.procs[i] = subprocess.Popen(
            [self.binary, "--bind", "127.0.0.1", "--port", str(self.ports[i]), "--save", "",
             "--raft-id", str(i), "--raft-port", str(self.raft[i]), "--raft-peers", self.peers, "--dir", d],
            cwd=d, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                redis.Redis(port=self.ports[i], socket_timeout=1).ping()
                return
            except redis.RedisError:
                time.sleep(0.05)
        raise SystemExit(f"node {i} did not start")

    def leader(self, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            for i, p in self.procs.items():
                if p.poll() is not None:
                    continue
                try:
                    info = redis.Redis(port=self.ports[i], socket_timeout=1).info("consensus")
                except redis.RedisError:
                    continue
                if info.get("consensus_role") == "leader":
                    return i
            time.sleep(0.05)
        raise SystemExit("no leader")

    def kill(self, i):
        self.procs[i].send_signal(signal.SIGKILL)
        self.procs[i].wait()

    def stop(self):
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
                p.wait()
        shutil.rmtree(self.base, ignore_errors=True)


def kill_leader(g):
    leader = g.leader()
    g.kill(leader)
    time.sleep(1)
    g.start(leader)


def report(client, cycles, kills, retried, errors, low, high, counter, resends=False):
    """`resends`: the client library itself sends a command again after its connection closed,
    unseen by the application, so an increment may be applied twice without a retry counted:
    the counter's upper bound is then not checked, and what passes it is reported."""
    ok = errors == 0 and low <= counter and (resends or counter <= high)
    extra = f" applied_twice_by_client_resends={max(0, counter - high)}" if resends else ""
    print(f"{client}: cycles={cycles} kills={kills} retried={retried} errors_reaching_app={errors} "
          f"counter={counter} (between {low} and {high}){extra} {'ok' if ok else 'FAIL'}")
    return 0 if ok else 1


def run_ioredis(g, seconds, kill_every):
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cluster_lock_loop.js")
    loop = subprocess.Popen(["node", script, str(seconds)] + [str(g.ports[i]) for i in g.ids],
                            stdout=subprocess.PIPE, text=True)
    kills = 0
    start = time.time()
    while time.time() - start < seconds - kill_every / 2 and loop.poll() is None:
        time.sleep(min(kill_every, max(0.0, start + (kills + 1) * kill_every - time.time())))
        if time.time() - start < seconds - kill_every / 2 and loop.poll() is None:
            kill_leader(g)
            kills += 1
    try:
        out, _ = loop.communicate(timeout=seconds + 60)
    except subprocess.TimeoutExpired:
        loop.kill()
        raise SystemExit("the ioredis loop did not finish")
    if loop.returncode != 0 or not out.strip():
        raise SystemExit(f"the ioredis loop failed ({loop.returncode})")
    r = json.loads(out.strip().splitlines()[-1])
    counter = int(redis.Redis(port=g.ports[g.leader()], socket_timeout=3).get("counter") or 0)
    resends = os.environ.get("LOOP_RESEND", "1") != "0"
    return report(r["client"], r["cycles"], kills, r["retried"], r["errors"], r["low"], r["high"], counter, resends)


def main():
    binary = os.path.abspath(sys.argv[1])
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 30
    kill_every = seconds / (int(sys.argv[3]) + 1) if len(sys.argv) > 3 else seconds / 4
    client = sys.argv[4] if len(sys.argv) > 4 else "redis-py"
    g = Group(binary)
    try:
        g.leader()
        if client == "ioredis":
            return run_ioredis(g, seconds, kill_every)
        rc = RedisCluster(startup_nodes=[ClusterNode("127.0.0.1", g.ports[i]) for i in g.ids],
                          socket_timeout=3, socket_connect_timeout=1)
        release = rc.register_script(RELEASE)
        retried = errors = cycles = kills = low = high = 0

        def op(fn):
            """The application's policy: one retry when the client library raises."""
            nonlocal retried, errors
            try:
                return fn(), True
            except redis.RedisError:
                retried += 1
            try:
                return fn(), False
            except redis.RedisError as e:
                errors += 1
                print(f"error reaching the application: {e!r}", file=sys.stderr)
                return None, False

        start = time.time()
        next_kill = start + kill_every
        while time.time() - start < seconds:
            if time.time() >= next_kill:
                kill_leader(g)
                kills += 1
                next_kill = time.time() + kill_every
            token = uuid.uuid4().hex
            got, _ = op(lambda: rc.set("lock:item", token, nx=True, px=5000))
            if not got:
                time.sleep(0.01)
                continue
            v, first = op(lambda: rc.incr("counter"))
            # A retried increment may have been applied by its first attempt too.
            low += v is not None
            high += 1 if first else 2
            op(lambda: release(keys=["lock:item"], args=[token]))
            cycles += 1
        counter = int(op(lambda: rc.get("counter"))[0] or 0)
        return report(f"redis-py {redis.__version__} RedisCluster", cycles, kills, retried, errors, low, high,
                      counter)
    finally:
        g.stop()


if __name__ == "__main__":
    sys.exit(main())
