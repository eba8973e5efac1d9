#!/usr/bin/env python3
"""Lock-cycle load generator for scripts/lock-bench-etcd.sh (Python 3 standard library only).

One asyncio event loop drives every client of a run, so Latch and etcd see the same client code:
a RESP client for Latch, a minimal keep-alive HTTP/1.1 client for etcd's v3 JSON gateway.

  lockbench.py latch-leader PORT PORT PORT      print the leader's client port (waits <= 30 s)
  lockbench.py etcd-leader URL URL URL          print the leader's client URL (waits <= 30 s)
  lockbench.py run SYSTEM ADDR WORKLOAD ...     one timed run; prints one JSON line
  lockbench.py report FILE                      table of medians and Latch/etcd ratios

SYSTEM (the lock cycle: acquire, then release at once):
  latch-lock   LOCK key owner ttl-ms (fencing token) ; UNLOCK key owner (1)
  latch-wait   LOCK key owner ttl-ms WAIT ms (waits in the group's replicated FIFO queue) ; UNLOCK
  latch-setnx  SET key token NX PX ttl-ms (OK) ; EVALSHA <compare-and-delete> 1 key token (1)
  latch-delifeq  SET key token NX PX ttl-ms (OK) ; DELIFEQ key token (1)
  etcd-txn     txn [create_revision(key) == 0] put key token lease=L ; txn [value(key) == token]
               delete key   (etcd's own Mutex shape: a session lease granted once per client)
  etcd-lock    /v3/lock/lock name lease=L (blocks server-side until granted) ; /v3/lock/unlock key
WORKLOAD:
  distinct:N   N clients, each on a key of its own
  contend:N    N clients on one key; a refused acquire sleeps uniform(0, 2*RETRY_MS) and retries
               (etcd-lock and latch-wait instead wait in the server's queue: their lock call blocks)
Every loop is bounded by the run's deadline (--duration), by --max cycles in total and by
--max-attempts acquire attempts in total; a watchdog closes the connections GRACE s after the
deadline (a request still pending then ends the client), and the whole run is cut off
REQ_TIMEOUT s later.
"""
import asyncio
import base64
import hashlib
import json
import os
import random
import statistics
import sys
import time

RELEASE = "if redis.call('get',KEYS[1]) == ARGV[1] then return redis.call('del',KEYS[1]) else return 0 end"
REQ_TIMEOUT = 10.0  # connecting, and setup requests
GRACE = 2.0  # seconds after the deadline before pending requests are cut off


class ReplyError(Exception):
    pass


# ---------------------------------------------------------------- RESP (Latch)
class Resp:
    def __init__(self, host, port):
        self.host, self.port = host, port
        self.r = self.w = None
        self.downs = 0  # -CLUSTERDOWN replies (an election under way), each retried
        self.retried = False  # the last command was sent again after -CLUSTERDOWN

    async def connect(self):
        if self.w:
            self.w.close()
        self.r, self.w = await asyncio.wait_for(asyncio.open_connection(self.host, self.port), REQ_TIMEOUT)

    async def _read(self):
        line = await self.r.readline()
        if not line:
            raise ConnectionError("connection closed")
        t, rest = line[:1], line[1:-2]
        if t == b"+":
            return rest.decode()
        if t == b"-":
            return ReplyError(rest.decode())
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = await self.r.readexactly(n + 2)
            return data[:-2].decode(errors="replace")
        if t == b"*":
            n = int(rest)
            if n < 0:
                return None
            return [await self._read() for _ in range(n)]
        if t == b"_":
            return None
        raise ConnectionError(f"unexpected reply {line!r}")

    async def cmd(self, *args):
        """Sends a command; follows -MOVED to the leader (at most 5 times), and during an election
        (-CLUSTERDOWN) sends it again every 50 ms for up to 10 s, as the lock crate does."""
        self.retried = False
        moved = down = 0
        while moved < 5 and down < 200:
            out = [b"*%d\r\n" % len(args)]
            for a in args:
                a = str(a).encode()
                out.append(b"$%d\r\n%s\r\n" % (len(a), a))
            self.w.write(b"".join(out))
            reply = await self._read()
            if isinstance(reply, ReplyError) and str(reply).startswith("MOVED "):
                host, port = str(reply).split()[2].rsplit(":", 1)
                if host not in ("127.0.0.1", "localhost"):
                    raise ReplyError(f"refusing non-loopback redirect {reply}")
                self.host, self.port = "127.0.0.1", int(port)
                await self.connect()
                moved += 1
                continue
            if isinstance(reply, ReplyError) and str(reply).startswith(("CLUSTERDOWN", "TRYAGAIN")):
                self.downs += 1
                self.retried = True
                down += 1
                await asyncio.sleep(0.05)
                continue
            if isinstance(reply, ReplyError):
                raise reply
            return reply
        raise ReplyError(f"too many redirects or no leader for 10 s: {args[0]}")

    def close(self):
        if self.w:
            self.w.close()


# ---------------------------------------------------------------- HTTP/JSON (etcd)
class Http:
    def __init__(self, url):
        hostport = url.split("://", 1)[1].rstrip("/")
        self.host, port = hostport.rsplit(":", 1)
        self.port = int(port)
        self.r = self.w = None

    async def connect(self):
        if self.w:
            self.w.close()
        self.r, self.w = await asyncio.wait_for(asyncio.open_connection(self.host, self.port), REQ_TIMEOUT)

    async def _response(self):
        status = await self.r.readline()
        if not status:
            raise ConnectionError("connection closed")
        code = int(status.split()[1])
        length, chunked = None, False
        while True:
            h = await self.r.readline()
            if h in (b"\r\n", b""):
                break
            k, _, v = h.decode().partition(":")
            k = k.strip().lower()
            if k == "content-length":
                length = int(v)
            elif k == "transfer-encoding" and "chunked" in v.lower():
                chunked = True
        if chunked:
            body = b""
            for _ in range(1000):
                n = int((await self.r.readline()).split(b";")[0], 16)
                if n == 0:
                    await self.r.readline()
                    break
                body += await self.r.readexactly(n)
                await self.r.readline()
        else:
            body = await self.r.readexactly(length or 0)
        return code, body

    async def post(self, path, obj):
        body = json.dumps(obj).encode()
        head = (f"POST {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode()
        self.w.write(head + body)
        code, data = await self._response()
        reply = json.loads(data or b"{}")
        if code != 200:
            raise ReplyError(f"HTTP {code} {path}: {reply}")
        return reply

    def close(self):
        if self.w:
            self.w.close()


def b64(s):
    return base64.b64encode(s.encode()).decode()


# ---------------------------------------------------------------- one client per system
class LatchLock:
    def __init__(self, addr, cid, ttl):
        host, port = addr.rsplit(":", 1)
        self.c, self.owner, self.ttl = Resp(host, int(port)), f"owner-{cid}-{os.getpid()}", ttl

    async def setup(self):
        await self.c.connect()

    async def acquire(self, key, n):
        return isinstance(await self.c.cmd("LOCK", key, self.owner, self.ttl), int)

    async def release(self, key, n):
        if await self.c.cmd("UNLOCK", key, self.owner) != 1 and not self.c.retried:
            raise ReplyError("UNLOCK did not release")


class LatchWait(LatchLock):
    async def acquire(self, key, n):
        # Blocks in the group's queue until granted; nil only if the wait (longer than any run)
        # ran out.
        return isinstance(await self.c.cmd("LOCK", key, self.owner, self.ttl, "WAIT", 600000), int)


class LatchSetnx:
    def __init__(self, addr, cid, ttl):
        host, port = addr.rsplit(":", 1)
        self.c, self.cid, self.ttl = Resp(host, int(port)), cid, ttl

    async def setup(self):
        await self.c.connect()
        try:
            self.sha = await self.c.cmd("SCRIPT", "LOAD", RELEASE)
        except ReplyError:
            # A build whose consensus mode refuses SCRIPT LOAD: EVAL caches the script as well
            # (and fails here too if the build does not replicate scripts at all).
            await self.c.cmd("EVAL", RELEASE, 1, f"lb/absent/{self.cid}", "x")
            self.sha = hashlib.sha1(RELEASE.encode()).hexdigest()

    def token(self, n):
        return f"tok-{self.cid}-{n}"

    async def acquire(self, key, n):
        if await self.c.cmd("SET", key, self.token(n), "NX", "PX", self.ttl) == "OK":
            return True
        # sent again after -CLUSTERDOWN: the first one may have applied
        return self.c.retried and await self.c.cmd("GET", key) == self.token(n)

    async def release(self, key, n):
        if await self.c.cmd("EVALSHA", self.sha, 1, key, self.token(n)) != 1 and not self.c.retried:
            raise ReplyError("EVALSHA release did not delete")


class LatchDelifeq(LatchSetnx):
    async def setup(self):
        await self.c.connect()

    async def release(self, key, n):
        if await self.c.cmd("DELIFEQ", key, self.token(n)) != 1 and not self.c.retried:
            raise ReplyError("DELIFEQ did not delete")


class EtcdTxn:
    def __init__(self, url, cid, ttl):
        self.c, self.cid, self.lease_ttl = Http(url), cid, ttl

    async def setup(self):
        await self.c.connect()
        self.lease = (await self.c.post("/v3/lease/grant", {"TTL": self.lease_ttl}))["ID"]

    def token(self, n):
        return b64(f"tok-{self.cid}-{n}")

    async def acquire(self, key, n):
        k = b64(key)
        r = await self.c.post("/v3/kv/txn", {
            "compare": [{"key": k, "target": "CREATE", "result": "EQUAL", "create_revision": "0"}],
            "success": [{"request_put": {"key": k, "value": self.token(n), "lease": self.lease}}],
        })
        return bool(r.get("succeeded"))

    async def release(self, key, n):
        k = b64(key)
        r = await self.c.post("/v3/kv/txn", {
            "compare": [{"key": k, "target": "VALUE", "result": "EQUAL", "value": self.token(n)}],
            "success": [{"request_delete_range": {"key": k}}],
        })
        if not r.get("succeeded"):
            raise ReplyError("etcd release: not the holder")


class EtcdLock:
    def __init__(self, url, cid, ttl):
        self.c, self.lease_ttl = Http(url), ttl

    async def setup(self):
        await self.c.connect()
        self.lease = (await self.c.post("/v3/lease/grant", {"TTL": self.lease_ttl}))["ID"]

    async def acquire(self, key, n):
        r = await self.c.post("/v3/lock/lock", {"name": b64(key), "lease": self.lease})
        self.held = r["key"]
        return True

    async def release(self, key, n):
        await self.c.post("/v3/lock/unlock", {"key": self.held})


SYSTEMS = {"latch-lock": LatchLock, "latch-wait": LatchWait, "latch-setnx": LatchSetnx, "latch-delifeq": LatchDelifeq, "etcd-txn": EtcdTxn, "etcd-lock": EtcdLock}


# ---------------------------------------------------------------- a run
async def run(a):
    kind, n = a.workload.split(":")
    n = int(n)
    contend = kind == "contend"
    tag = f"lb/{a.system}/{os.getpid()}/{int(time.time() * 1000)}"
    ttl = a.ttl_ms if a.system.startswith("latch") else max(60, int(a.duration * 3) + 30)
    clients = [SYSTEMS[a.system](a.addr, i, ttl) for i in range(n)]
    try:
        await asyncio.wait_for(asyncio.gather(*(c.setup() for c in clients)), 30)
    except ReplyError as e:  # e.g. a build whose consensus mode does not replicate scripts
        for c in clients:
            c.c.close()
        return {"system": a.system, "workload": a.workload, "error": str(e), "label": a.label}
    lat, state = [], {"done": 0, "attempts": 0, "refused": 0}
    rng = random.Random(1)
    start = time.perf_counter()
    deadline = start + a.duration
    cpu0 = time.process_time()

    def more():
        return (time.perf_counter() < deadline and state["done"] < a.max
                and state["attempts"] < a.max_attempts)

    async def cycles(i, c):
        key = f"{tag}/one" if contend else f"{tag}/c{i}"
        seq = 0  # this client's cycle number: part of its token
        while more():
            seq += 1
            t0 = time.perf_counter()
            got = False
            while more():
                state["attempts"] += 1
                got = await c.acquire(key, seq)
                if got:
                    break
                state["refused"] += 1
                await asyncio.sleep(rng.uniform(0, 2 * a.retry_ms / 1000))
            if not got:
                break
            await c.release(key, seq)
            t1 = time.perf_counter()
            if t1 <= deadline:
                state["done"] += 1
                lat.append(t1 - t0)

    async def client(i, c):
        try:
            await cycles(i, c)
        except (ConnectionError, asyncio.IncompleteReadError):
            if time.perf_counter() < deadline + GRACE:
                raise
            # closed by the watchdog, e.g. while waiting in etcd's lock queue at the end

    async def watchdog():
        # No per-request timers (they would cost the client more CPU than the parsing): requests
        # still pending GRACE s after the deadline have their connection closed.
        await asyncio.sleep(deadline + GRACE - time.perf_counter())
        for c in clients:
            c.c.w.transport.abort()

    dog = asyncio.create_task(watchdog())
    try:
        await asyncio.wait_for(asyncio.gather(*(client(i, c) for i, c in enumerate(clients))),
                               a.duration + GRACE + REQ_TIMEOUT)
    finally:
        dog.cancel()
        for c in clients:
            c.c.close()
    elapsed = min(time.perf_counter(), deadline) - start
    cpu = time.process_time() - cpu0
    lat.sort()

    def pct(p):
        return round(lat[min(len(lat) - 1, int(p * len(lat)))] * 1000, 2) if lat else None

    return {"system": a.system, "workload": a.workload, "cycles": state["done"],
            "seconds": round(elapsed, 3), "cycles_per_s": round(state["done"] / elapsed, 1),
            "p50_ms": pct(0.50), "p99_ms": pct(0.99), "attempts": state["attempts"],
            "refused": state["refused"],
            "clusterdown": sum(getattr(c.c, "downs", 0) for c in clients),
            "client_cpu_pct": round(100 * cpu / elapsed, 1), "label": a.label}


# ---------------------------------------------------------------- leaders
async def latch_leader(ports):
    for _ in range(300):
        for p in ports:
            try:
                c = Resp("127.0.0.1", int(p))
                await c.connect()
                info = await c.cmd("INFO", "consensus")
                c.close()
            except (OSError, ReplyError, asyncio.TimeoutError, ConnectionError):
                continue
            f = dict(l.split(":", 1) for l in info.splitlines() if ":" in l)
            if f.get("consensus_role") == "leader":
                return p
        await asyncio.sleep(0.1)
    raise SystemExit("no Latch leader within 30 s")


async def etcd_leader(urls):
    for _ in range(300):
        for u in urls:
            try:
                c = Http(u)
                await c.connect()
                st = await c.post("/v3/maintenance/status", {})
                c.close()
            except (OSError, ReplyError, asyncio.TimeoutError, ConnectionError, ValueError):
                continue
            if st.get("leader") and st["leader"] == st["header"]["member_id"]:
                return u
        await asyncio.sleep(0.1)
    raise SystemExit("no etcd leader within 30 s")


# ---------------------------------------------------------------- report
def report(path):
    rows = [json.loads(l) for l in open(path) if l.startswith("{")]
    for r in rows:
        if "error" in r:
            print(f"skipped: {r['system']} {r['workload']} ({r['label']}): {r['error']}")
    rows = [r for r in rows if "error" not in r]
    order, by = [], {}
    for r in rows:
        k = (r["workload"], r["system"])
        if k not in by:
            order.append(k)
        by.setdefault(k, []).append(r)
    med = {}
    print(f"{'workload':<13} {'system':<12} {'runs':>4} {'cycles/s':>9} {'p50 ms':>8} {'p99 ms':>8} "
          f"{'client cpu%':>11} {'server us/cycle':>15}   (medians; all rates: cycles/s)")
    for k in order:
        rs = by[k]
        m = {f: statistics.median([r[f] for r in rs if r.get(f) is not None] or [0])
             for f in ("cycles_per_s", "p50_ms", "p99_ms", "client_cpu_pct", "server_us_per_cycle")}
        med[k] = m
        each = " ".join(str(r["cycles_per_s"]) for r in rs)
        server = f"{m['server_us_per_cycle']:>15.0f}" if m["server_us_per_cycle"] else f"{'-':>15}"
        print(f"{k[0]:<13} {k[1]:<12} {len(rs):>4} {m['cycles_per_s']:>9.0f} {m['p50_ms']:>8.2f} "
              f"{m['p99_ms']:>8.2f} {m['client_cpu_pct']:>11.0f} {server}   [{each}]")
    for r in rows:
        if r.get("server_cpu_note"):
            print(f"note: {r['system']} {r['workload']} ({r['label']}): {r['server_cpu_note']}")
        if r.get("clusterdown"):
            print(f"note: {r['system']} {r['workload']} ({r['label']}): {r['clusterdown']} -CLUSTERDOWN "
                  "replies (a leader election during the run), each retried after 50 ms")
    print()
    print("ratios Latch / etcd (cycles/s; p50 and p99 latency etcd / Latch, and the three servers' CPU per\n"
          "cycle etcd / Latch, >1 = Latch faster or cheaper):")
    for w in dict.fromkeys(k[0] for k in order):
        for l in ("latch-lock", "latch-wait", "latch-setnx", "latch-delifeq"):
            for e in ("etcd-txn", "etcd-lock"):
                if (w, l) in med and (w, e) in med and med[(w, e)]["cycles_per_s"]:
                    a, b = med[(w, l)], med[(w, e)]
                    lat = f"{b['p50_ms'] / a['p50_ms']:.2f}x" if a["p50_ms"] else "-"
                    tail = f"{b['p99_ms'] / a['p99_ms']:.2f}x" if a["p99_ms"] else "-"
                    cpu = (f"{b['server_us_per_cycle'] / a['server_us_per_cycle']:.2f}x"
                           if a["server_us_per_cycle"] else "-")
                    print(f"  {w:<13} {l:<12} / {e:<9} {a['cycles_per_s'] / b['cycles_per_s']:6.2f}x"
                          f"   p50 {lat}   p99 {tail}   cpu {cpu}")


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    cmd = sys.argv[1]
    if cmd == "latch-leader":
        print(asyncio.run(latch_leader(sys.argv[2:])))
    elif cmd == "etcd-leader":
        print(asyncio.run(etcd_leader(sys.argv[2:])))
    elif cmd == "report":
        report(sys.argv[2])
    elif cmd == "run":
        import argparse
        p = argparse.ArgumentParser(prog="lockbench.py run")
        p.add_argument("system", choices=sorted(SYSTEMS))
        p.add_argument("addr", help="host:port (Latch) or http://host:port (etcd)")
        p.add_argument("workload", help="distinct:N or contend:N")
        p.add_argument("--duration", type=float, default=10)
        p.add_argument("--max", type=int, default=200000)
        p.add_argument("--max-attempts", type=int, default=2000000)
        p.add_argument("--ttl-ms", type=int, default=10000)
        p.add_argument("--retry-ms", type=float, default=5)
        p.add_argument("--label", default="")
        a = p.parse_args(sys.argv[2:])
        if not (0 < a.duration <= 600 and 0 < a.max <= 10**7 and 0 < a.max_attempts <= 10**8):
            raise SystemExit("duration must be in (0, 600] s, max in (0, 1e7], max-attempts in (0, 1e8]")
        host = a.addr.split("://")[-1].rsplit(":", 1)[0]
        if host not in ("127.0.0.1", "localhost"):
            raise SystemExit("loopback addresses only")
        print(json.dumps(asyncio.run(run(a))), flush=True)
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
