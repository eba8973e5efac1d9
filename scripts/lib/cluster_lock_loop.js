// A lock loop through ioredis's Cluster against a Latch consensus group (run by
// scripts/lib/cluster_lock_loop.py, which starts the group and kills its leader meanwhile).
//
// usage: node cluster_lock_loop.js SECONDS PORT [PORT ...]
//
// For SECONDS: take the lock with SET key token NX PX, increment a counter, release with the
// owner-checked compare-and-delete script. The application retries an operation once when the
// client library rejects it; an error on the retry reaches the application. Prints one JSON line:
// {"client", "cycles", "retried", "errors", "low", "high"} (low/high: increments known applied /
// possibly applied, as the Python loop counts them).
"use strict";
const crypto = require("crypto");
const Redis = require("ioredis");

const RELEASE = "if redis.call('get',KEYS[1]) == ARGV[1] then return redis.call('del',KEYS[1]) else return 0 end";

async function main() {
  const [secs, ...ports] = process.argv.slice(2);
  const cluster = new Redis.Cluster(
    ports.map((p) => ({ host: "127.0.0.1", port: Number(p) })),
    // ioredis's defaults but for timeouts. By default it sends a command again after its
    // connection closed (retryDelayOnFailover): an INCR applied just before the leader died is
    // then applied twice, which the application cannot see (LOOP_RESEND=0 turns that off).
    {
      redisOptions: { connectTimeout: 1000, commandTimeout: 3000 },
      slotsRefreshTimeout: 1000,
      retryDelayOnFailover: process.env.LOOP_RESEND === "0" ? 0 : 100,
    },
  );
  cluster.defineCommand("release", { numberOfKeys: 1, lua: RELEASE });
  let retried = 0, errors = 0, cycles = 0, low = 0, high = 0;
  // The application's policy: one retry when the client library rejects.
  async function op(fn) {
    try {
      return [await fn(), true];
    } catch (e) {
      retried += 1;
    }
    try {
      return [await fn(), false];
    } catch (e) {
      errors += 1;
      console.error(`error reaching the application: ${e}`);
      return [null, false];
    }
  }
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const deadline = Date.now() + Number(secs) * 1000;
  while (Date.now() < deadline) {
    const token = crypto.randomBytes(16).toString("hex");
    const [got] = await op(() => cluster.set("lock:item", token, "PX", 5000, "NX"));
    if (got !== "OK") {
      await sleep(10);
      continue;
    }
    const [v, first] = await op(() => cluster.incr("counter"));
    // A retried increment may have been applied by its first attempt too.
    low += v !== null ? 1 : 0;
    high += first ? 1 : 2;
    await op(() => cluster.release("lock:item", token));
    cycles += 1;
  }
  const version = require("ioredis/package.json").version;
  console.log(JSON.stringify({ client: `ioredis ${version} Cluster`, cycles, retried, errors, low, high }));
  cluster.disconnect();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
