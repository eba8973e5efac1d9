//! lock-bench: one lock, many contending clients; handoffs per second, acquire latency and FIFO
//! order, for Latch's native queue against the polling protocol on Latch and redis-server.
//!
//! Each of `--clients` clients (tokio tasks, one connection each) loops: acquire -> empty critical
//! section -> release, for `--secs` seconds per mode after a `--warmup-ms` warm-up. Every mode uses
//! the same thin client: raw RESP on a `TcpStream` (TCP_NODELAY), one request in flight per
//! connection, no driver task between the client and its socket. Modes:
//! - `native`: Latch's `LOCK key owner ttl WAIT ms` (queued in the server, granted in arrival order
//!   by the `UNLOCK` that frees it) and `UNLOCK key owner`;
//! - `polling-latch`: `SET key owner NX PX ttl`, retried at once on failure, `DELIFEQ key owner`;
//! - `polling-redis`: the same on redis-server with the Lua compare-and-delete (`EVALSHA`);
//! - `ping-latch`, `ping-redis`: one client sending `PING` in a loop (round trips/s): the ceiling
//!   for handoffs/s, since each handoff is one serialised round trip (grant out, `UNLOCK` back).
//!
//! A handoff is a grant; handoffs/s counts the grants inside the measured window. Acquire latency
//! is from the first acquire request to the grant. Order (native only), with grants ordered by their
//! fencing tokens: FIFO is the share of grants whose `LOCK` was sent after the previous grant's
//! (the client numbers requests as it sends them); RR (round-robin) the share of grants between
//! which and the same client's previous grant every other client got exactly one, which FIFO
//! implies only if every client asks again before the next release.
//!
//! It starts its own latch-server (next to this binary, or `--latch-server PATH`) and redis-server
//! (`--redis-server PATH`) on loopback ports from `--port-base` (7640), or uses running ones given by
//! `--latch URL` / `--redis URL`. Bounded: at most `--max-grants` grants per mode (default 5 M) and
//! `--secs` (default 3, at most 60) per mode. `--modes native,polling-latch,polling-redis` (the default)
//! selects.
//! `--threads N` sets the client's tokio workers (default 1, leaving the other core to the server);
//! `--latch-io-threads N` the started latch-server's `io-threads` (default 0: one per core).
//!
//! FIFO is the server's arrival order; a client that is slow to send its next `LOCK` after its
//! `UNLOCK` (its reply read after the next holder's grant, or descheduled on a busy machine)
//! arrives behind a later releaser, which shows up as a round-robin miss although the server served
//! the queue in order.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use redis::Script;
use resp::Frame;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const KEY: &str = "bench:lock";
const TTL_MS: u64 = 10_000;

mod common;
use common::{Opts, die};

/// A server this process started; killed on drop.
struct Spawned(Child);

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start(bin: &PathBuf, args: &[&str], port: u16) -> (Spawned, String) {
    let child = Command::new(bin)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| die(format!("cannot start {}: {e}", bin.display())));
    let s = Spawned(child);
    let url = format!("redis://127.0.0.1:{port}/");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let ok = redis::Client::open(url.as_str())
            .and_then(|c| c.get_connection_with_timeout(Duration::from_millis(200)))
            .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c));
        if ok.is_ok() {
            return (s, url);
        }
        if Instant::now() > deadline {
            die(format!("{} on port {port} did not start (port in use?)", bin.display()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Native,
    PollingDelifeq,
    PollingLua,
}

/// One grant: when (since the run's start), how long the acquire took, the fencing token, who.
#[derive(Clone, Copy)]
struct Grant {
    at_us: u64,
    lat_us: u64,
    token: u64,
    client: u32,
    /// Position of this acquire's first request among all clients' first acquire requests.
    asked: u64,
}

struct Outcome {
    name: String,
    handoffs_per_s: f64,
    p50_us: u64,
    p99_us: u64,
    grants: usize,
    fifo: Option<(u64, u64)>,
    /// (grants checked, grants whose request was sent after the previous grant's): native only.
    order: Option<(u64, u64)>,
}

/// The measuring client: one TCP connection speaking raw RESP, one request at a time (write the
/// request, read its reply). Every mode uses it, so the modes differ only in what they send; it
/// costs one write and one read per request and no task hops (the `redis` crate's multiplexed
/// connection adds a driver task and channels to every request).
struct Conn {
    sock: TcpStream,
    rbuf: BytesMut,
}

impl Conn {
    async fn open(addr: &str) -> Conn {
        let sock = TcpStream::connect(addr).await.unwrap_or_else(|e| die(format!("{addr}: {e}")));
        sock.set_nodelay(true).unwrap_or_else(|e| die(format!("{addr}: nodelay: {e}")));
        Conn { sock, rbuf: BytesMut::with_capacity(4096) }
    }

    /// Sends one encoded request and returns its reply.
    async fn call(&mut self, req: &[u8]) -> Frame {
        self.sock.write_all(req).await.unwrap_or_else(|e| die(format!("write: {e}")));
        loop {
            match resp::decode_reply(&mut self.rbuf) {
                Ok(Some(f)) => return f,
                Ok(None) => {}
                Err(e) => die(format!("bad reply: {e}")),
            }
            match self.sock.read_buf(&mut self.rbuf).await {
                Ok(0) => die("server closed the connection".into()),
                Ok(_) => {}
                Err(e) => die(format!("read: {e}")),
            }
        }
    }
}

/// `redis://host:port/` or `host:port` -> `host:port`.
fn addr_of(url: &str) -> String {
    url.trim_start_matches("redis://").trim_end_matches('/').to_string()
}

fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut b = BytesMut::new();
    resp::encode_request(args, &mut b);
    b.to_vec()
}

fn check(f: Frame, what: &str) -> Frame {
    if let Frame::Error(e) = &f {
        die(format!("{what}: {}", String::from_utf8_lossy(e)));
    }
    f
}

async fn client_loop(
    mode: Mode,
    addr: String,
    id: u32,
    t0: Instant,
    stop: Arc<AtomicBool>,
    budget: Arc<AtomicU64>,
    asks: Arc<AtomicU64>,
) -> Vec<Grant> {
    let mut c = Conn::open(&addr).await;
    let owner = format!("client-{id}");
    let (o, ttl) = (owner.as_bytes(), TTL_MS.to_string());
    let acquire = match mode {
        Mode::Native => encode(&[b"LOCK", KEY.as_bytes(), o, ttl.as_bytes(), b"WAIT", b"5000"]),
        _ => encode(&[b"SET", KEY.as_bytes(), o, b"NX", b"PX", ttl.as_bytes()]),
    };
    let release = match mode {
        Mode::Native => encode(&[b"UNLOCK", KEY.as_bytes(), o]),
        Mode::PollingDelifeq => encode(&[b"DELIFEQ", KEY.as_bytes(), o]),
        Mode::PollingLua => encode(&[b"EVALSHA", release_sha().as_bytes(), b"1", KEY.as_bytes(), o]),
    };
    let mut grants = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let start = Instant::now();
        let asked = asks.fetch_add(1, Ordering::Relaxed);
        let token: u64 = loop {
            match check(c.call(&acquire).await, "acquire") {
                Frame::Integer(t) if mode == Mode::Native => break t.max(0) as u64,
                Frame::Simple(_) if mode != Mode::Native => break 0,
                Frame::Null | Frame::NullArray => {}
                other => die(format!("acquire: unexpected reply {other:?}")),
            }
            if mode != Mode::Native && stop.load(Ordering::Relaxed) {
                return grants;
            }
        };
        let now = Instant::now();
        grants.push(Grant {
            at_us: (now - t0).as_micros() as u64,
            lat_us: (now - start).as_micros() as u64,
            token,
            client: id,
            asked,
        });
        if budget.fetch_sub(1, Ordering::Relaxed) <= 1 {
            stop.store(true, Ordering::Relaxed);
        }
        match check(c.call(&release).await, "release") {
            Frame::Integer(1) => {}
            other => die(format!("client {id}: release returned {other:?}: the lock was not ours")),
        }
    }
    grants
}

/// SHA1 of [`lock::RELEASE_SCRIPT`], loaded into the server by `run_mode` before the clients start.
fn release_sha() -> &'static str {
    static SHA: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    SHA.get_or_init(|| Script::new(lock::RELEASE_SCRIPT).get_hash().to_string())
}

/// The round-trip ceiling: one client sending `PING` and waiting for `PONG`, with the same client
/// as the lock modes. A handoff is one strictly serialised round trip (grant to the waiter, its
/// `UNLOCK` back), so this bounds handoffs/s from above.
fn run_ping(rt: &tokio::runtime::Runtime, name: &str, url: &str, o: &Opts) -> Outcome {
    let secs = o.num("secs", 3).clamp(1, 60);
    eprintln!("{name}: 1 client, {secs} s on {url}");
    let (addr, ping) = (addr_of(url), encode(&[b"PING"]));
    let (n, lat) = rt.block_on(async {
        let mut c = Conn::open(&addr).await;
        let (t0, mut n, mut lat) = (Instant::now(), 0u64, Vec::new());
        while t0.elapsed() < Duration::from_secs(secs) && n < 50_000_000 {
            let s = Instant::now();
            check(c.call(&ping).await, "PING");
            lat.push(s.elapsed().as_micros() as u64);
            n += 1;
        }
        (n as f64 / t0.elapsed().as_secs_f64(), lat)
    });
    let mut lat = lat;
    lat.sort_unstable();
    let pct = |p: usize| lat.get(lat.len().saturating_sub(1) * p / 100).copied().unwrap_or(0);
    Outcome {
        name: name.to_string(),
        handoffs_per_s: n,
        p50_us: pct(50),
        p99_us: pct(99),
        grants: lat.len(),
        fifo: None,
        order: None,
    }
}

fn run_mode(rt: &tokio::runtime::Runtime, name: &str, mode: Mode, url: &str, o: &Opts) -> Outcome {
    let clients = o.num("clients", 50).clamp(2, 1000) as u32;
    let secs = o.num("secs", 3).clamp(1, 60);
    let warmup = Duration::from_millis(o.num("warmup-ms", 500).min(10_000));
    let max_grants = o.num("max-grants", 5_000_000);
    eprintln!("{name}: {clients} clients, {} ms warm-up + {secs} s on {url}", warmup.as_millis());
    let mut admin =
        redis::Client::open(url).and_then(|c| c.get_connection()).unwrap_or_else(|e| die(format!("{url}: {e}")));
    let _: () = redis::cmd("DEL").arg(KEY).query(&mut admin).unwrap_or_else(|e| die(format!("DEL: {e}")));
    if mode == Mode::PollingLua {
        let sha: String = redis::cmd("SCRIPT")
            .arg("LOAD")
            .arg(lock::RELEASE_SCRIPT)
            .query(&mut admin)
            .unwrap_or_else(|e| die(format!("SCRIPT LOAD: {e}")));
        if sha != release_sha() {
            die(format!("SCRIPT LOAD returned {sha}, expected {}", release_sha()));
        }
    }
    let stop = Arc::new(AtomicBool::new(false));
    let budget = Arc::new(AtomicU64::new(max_grants.max(1)));
    let asks = Arc::new(AtomicU64::new(0));
    let t0 = Instant::now();
    let all: Vec<Grant> = rt.block_on(async {
        let mut tasks = Vec::new();
        for id in 0..clients {
            let (addr, stop, budget, asks) = (addr_of(url), stop.clone(), budget.clone(), asks.clone());
            tasks.push(tokio::spawn(client_loop(mode, addr, id, t0, stop, budget, asks)));
        }
        let stopper = stop.clone();
        tokio::spawn(async move {
            tokio::time::sleep(warmup + Duration::from_secs(secs)).await;
            stopper.store(true, Ordering::Relaxed);
        });
        let mut all = Vec::new();
        for t in tasks {
            all.extend(t.await.unwrap_or_default());
        }
        all
    });
    let stopped_us = (t0.elapsed()).as_micros() as u64;
    let from = warmup.as_micros() as u64;
    // The window ends at the first grant after the stop flag (budget or time), approximated by
    // the planned end, or the last grant if the budget ran out earlier.
    let planned_end = (warmup + Duration::from_secs(secs)).as_micros() as u64;
    let last = all.iter().map(|g| g.at_us).max().unwrap_or(0);
    let to = planned_end.min(last.max(from + 1)).min(stopped_us);
    let window: Vec<&Grant> = all.iter().filter(|g| g.at_us >= from && g.at_us < to).collect();
    let mut lat: Vec<u64> = window.iter().map(|g| g.lat_us).collect();
    lat.sort_unstable();
    let pct = |p: usize| lat.get(lat.len().saturating_sub(1) * p / 100).copied().unwrap_or(0);
    let fifo = (mode == Mode::Native).then(|| fifo_check(&all, clients, from, to));
    let order = (mode == Mode::Native).then(|| order_check(&all, from, to));
    Outcome {
        name: name.to_string(),
        handoffs_per_s: window.len() as f64 / ((to - from) as f64 / 1e6),
        p50_us: pct(50),
        p99_us: pct(99),
        grants: window.len(),
        fifo,
        order,
    }
}

/// (grants checked, grants in request order) among the grants granted in [from, to): a grant is in
/// request order if its client sent its `LOCK` after the client of the previous grant (by fencing
/// token) sent its own. Unlike round-robin, this does not depend on how soon each client asks
/// again; it still counts as misses two requests sent a few microseconds apart that reach the server
/// (or its two threads) in the other order.
fn order_check(all: &[Grant], from: u64, to: u64) -> (u64, u64) {
    let mut seq: Vec<&Grant> = all.iter().collect();
    seq.sort_unstable_by_key(|g| g.token);
    let (mut checked, mut ok) = (0u64, 0u64);
    for w in seq.windows(2) {
        if w[1].at_us >= from && w[1].at_us < to {
            checked += 1;
            if w[1].asked > w[0].asked {
                ok += 1;
            }
        }
    }
    (checked, ok)
}

/// (grants checked, grants respecting round-robin) among the grants granted in [from, to).
fn fifo_check(all: &[Grant], clients: u32, from: u64, to: u64) -> (u64, u64) {
    let mut seq: Vec<&Grant> = all.iter().collect();
    seq.sort_unstable_by_key(|g| g.token);
    let mut prev: HashMap<u32, usize> = HashMap::new();
    let (mut checked, mut ok) = (0u64, 0u64);
    for (i, g) in seq.iter().enumerate() {
        if let Some(&j) = prev.get(&g.client)
            && seq[j].at_us >= from
            && g.at_us < to
        {
            checked += 1;
            let between = &seq[j + 1..i];
            let mut seen = std::collections::HashSet::new();
            let distinct = between.iter().all(|b| b.client != g.client && seen.insert(b.client));
            if distinct && between.len() == clients as usize - 1 {
                ok += 1;
            }
        }
        prev.insert(g.client, i);
    }
    (checked, ok)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        for l in include_str!("lock-bench.rs").lines().take_while(|l| l.starts_with("//!")) {
            println!("{}", l.trim_start_matches("//!").trim_start());
        }
        return;
    }
    let o = Opts::parse(&args);
    let base = u16::try_from(o.num("port-base", 7640)).unwrap_or_else(|_| die("--port-base".into()));
    let modes = o.get_or("modes", "native,polling-latch,polling-redis");
    let need_latch = modes.contains("native") || modes.contains("-latch");
    let need_redis = modes.contains("-redis");
    let mut keep = Vec::new();
    let latch_url = match (o.get("latch"), need_latch) {
        (Some(u), _) => u.to_string(),
        (None, false) => String::new(),
        (None, true) => {
            let me = std::env::current_exe().unwrap_or_else(|e| die(format!("current_exe: {e}")));
            let bin = o.get("latch-server").map(PathBuf::from).unwrap_or_else(|| me.with_file_name("latch-server"));
            let p = base.to_string();
            let io = o.num("latch-io-threads", 0).to_string();
            let (s, u) = start(&bin, &["--bind", "127.0.0.1", "--port", &p, "--save", "", "--io-threads", &io], base);
            keep.push(s);
            u
        }
    };
    let redis_url = match (o.get("redis"), need_redis) {
        (Some(u), _) => u.to_string(),
        (None, false) => String::new(),
        (None, true) => {
            let bin = PathBuf::from(o.get("redis-server").unwrap_or("redis-server"));
            let p = (base + 1).to_string();
            let args = ["--bind", "127.0.0.1", "--port", &p, "--save", "", "--appendonly", "no"];
            let (s, u) = start(&bin, &args, base + 1);
            keep.push(s);
            u
        }
    };
    let threads = o.num("threads", 1).clamp(1, 64) as usize;
    let rt = if threads == 1 {
        tokio::runtime::Builder::new_current_thread().enable_all().build()
    } else {
        tokio::runtime::Builder::new_multi_thread().worker_threads(threads).enable_all().build()
    }
    .unwrap_or_else(|e| die(format!("runtime: {e}")));
    let mut results = Vec::new();
    for m in modes.split(',') {
        let r = match m {
            "native" => run_mode(&rt, "latch native (LOCK WAIT/UNLOCK)", Mode::Native, &latch_url, &o),
            "polling-latch" => run_mode(&rt, "latch polling (SET NX/DELIFEQ)", Mode::PollingDelifeq, &latch_url, &o),
            "polling-redis" => run_mode(&rt, "redis polling (SET NX/Lua)", Mode::PollingLua, &redis_url, &o),
            "ping-latch" => run_ping(&rt, "latch PING, 1 client (round trips)", &latch_url, &o),
            "ping-redis" => run_ping(&rt, "redis PING, 1 client (round trips)", &redis_url, &o),
            other => die(format!("unknown mode {other}")),
        };
        results.push(r);
    }
    let redis = results.iter().find(|r| r.name.starts_with("redis polling")).map(|r| r.handoffs_per_s);
    println!();
    println!(
        "{:<34} {:>10} {:>12} {:>9} {:>9} {:>10} {:>8} {:>8}",
        "mode", "grants", "handoffs/s", "p50 ms", "p99 ms", "vs redis", "FIFO", "RR"
    );
    for r in &results {
        let ratio = redis.filter(|x| *x > 0.0).map_or("-".to_string(), |x| format!("{:.1}x", r.handoffs_per_s / x));
        let share = |x: Option<(u64, u64)>| {
            x.map_or("-".to_string(), |(n, ok)| {
                if n == 0 { "n/a".to_string() } else { format!("{:.2}%", ok as f64 * 100.0 / n as f64) }
            })
        };
        let (fifo, rr) = (share(r.order), share(r.fifo));
        println!(
            "{:<34} {:>10} {:>12.0} {:>9.3} {:>9.3} {:>10} {:>8} {:>8}",
            r.name,
            r.grants,
            r.handoffs_per_s,
            r.p50_us as f64 / 1000.0,
            r.p99_us as f64 / 1000.0,
            ratio,
            fifo,
            rr
        );
    }
    for r in &results {
        if let Some((n, ok)) = r.order {
            println!("{}: {ok} of {n} grants in the order their LOCK was sent (FIFO)", r.name);
        }
        if let Some((n, ok)) = r.fifo {
            println!("{}: {ok} of {n} grants respected round-robin order (RR)", r.name);
        }
    }
}
