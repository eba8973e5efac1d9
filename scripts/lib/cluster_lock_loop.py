"""A lock loop through redis-py's RedisCluster against a Latch consensus group, across kill -9
of the leader (used by scripts/cluster-clients.sh).

usage: python3 cluster_lock_loop.py LATCH_BINARY [SECONDS] [KILLS]

Starts three latch-server nodes on 127.0.0.1 (free ports, a temp directory each), then runs one
application loop for SECONDS: take the lock with SET key token NX PX, increment a counter, release
with the owner-checked compare-and-delete script. Every KILL_EVERY seconds the leader is killed
with SIGKILL (only the processes this script started) and restarted from its directory. The
application retries an operation once when the client library raises; an error on the retry
counts as one that reached the application. Prints one line:

  redis-py RedisCluster: cycles=... kills=... retried=... errors_reaching_app=... counter=... ok|FAIL

and exits 0 when no error reached the application and the counter is between the increments
known applied and those possibly applied (an increment retried after an error may have been
applied by both attempts).
"""

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


def main():
    binary = os.path.abspath(sys.argv[1])
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 30
    kill_every = seconds / (int(sys.argv[3]) + 1) if len(sys.argv) > 3 else seconds / 4
    g = Group(binary)
    try:
        g.leader()
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
                leader = g.leader()
                g.kill(leader)
                kills += 1
                time.sleep(1)
                g.start(leader)
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
        ok = errors == 0 and low <= counter <= high
        print(f"redis-py {redis.__version__} RedisCluster: cycles={cycles} kills={kills} retried={retried} "
              f"errors_reaching_app={errors} counter={counter} (between {low} and {high}) "
              f"{'ok' if ok else 'FAIL'}")
        return 0 if ok else 1
    finally:
        g.stop()


if __name__ == "__main__":
    sys.exit(main())
