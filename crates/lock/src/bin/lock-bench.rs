//! lock-bench: one lock, many contending clients; handoffs per second, acquire latency and FIFO
//! order, for Latch's native queue against the polling protocol on Latch and redis-server.
//!
//! Each of `--clients` clients (tokio tasks, one connection each) loops: acquire -> empty critical
//! section -> release, for `--secs` seconds per mode after a `--warmup-ms` warm-up. Modes:
//! - `native`: Latch's `LOCK key owner ttl WAIT ms` (queued in the server, granted in arrival order
//!   by the `UNLOCK` that frees it) and `UNLOCK key owner`;
//! - `polling-latch`: `SET key owner NX PX ttl`, retried at once on failure, `DELIFEQ key owner`;
//! - `polling-redis`: the same on redis-server with the Lua compare-and-delete (`EVALSHA`).
//!
//! A handoff is a grant; handoffs/s counts the grants inside the measured window. Acquire latency
//! is from the first acquire request to the grant. FIFO (native only): grants are ordered by their
//! fencing tokens; with every client always queued, FIFO means round-robin, so a grant "respects
//! FIFO" if between it and the same client's previous grant every other client got exactly one.
//!
//! It starts its own latch-server (next to this binary, or `--latch-server PATH`) and redis-server
//! (`--redis-server PATH`) on loopback ports from `--port-base` (7640), or uses running ones given by
//! `--latch URL` / `--redis URL`. Bounded: at most `--max-grants` grants per mode (default 5 M) and
//! `--secs` (default 3, at most 60) per mode. `--modes native,polling-latch,polling-redis` selects.
//! `--threads N` sets the client's tokio workers (default 1, leaving the other core to the server);
//! `--latch-io-threads N` the started latch-server's `io-threads` (default 0: one per core).
//!
//! FIFO is the server's arrival order; a client that is slow to send its next `LOCK` after its
//! `UNLOCK` (descheduled on a busy machine) arrives behind a later releaser, which shows up as a
//! round-robin miss although the server served the queue in order.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Script};

const KEY: &str = "bench:lock";
const TTL_MS: u64 = 10_000;

fn die(msg: String) -> ! {
    eprintln!("lock-bench: {msg}");
    std::process::exit(2)
}

struct Opts(HashMap<String, String>);

impl Opts {
    fn parse(args: &[String]) -> Opts {
        let mut m = HashMap::new();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let Some(name) = a.strip_prefix("--") else { die(format!("unexpected argument {a}")) };
            let Some(v) = it.next() else { die(format!("--{name} needs a value")) };
            m.insert(name.to_string(), v.clone());
        }
        Opts(m)
    }

    fn get(&self, k: &str) -> Option<&str> {
        self.0.get(k).map(String::as_str)
    }

    fn num(&self, k: &str, default: u64) -> u64 {
        self.0.get(k).map_or(default, |v| v.parse().unwrap_or_else(|_| die(format!("--{k}: not a number: {v}"))))
    }
}

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
}

struct Outcome {
    name: String,
    handoffs_per_s: f64,
    p50_us: u64,
    p99_us: u64,
    grants: usize,
    fifo: Option<(u64, u64)>,
}

async fn connect(url: &str) -> MultiplexedConnection {
    let cfg = AsyncConnectionConfig::new().set_response_timeout(None);
    let c = redis::Client::open(url).unwrap_or_else(|e| die(format!("{url}: {e}")));
    c.get_multiplexed_async_connection_with_config(&cfg).await.unwrap_or_else(|e| die(format!("{url}: {e}")))
}

async fn client_loop(
    mode: Mode,
    url: String,
    id: u32,
    t0: Instant,
    stop: Arc<AtomicBool>,
    budget: Arc<AtomicU64>,
) -> Vec<Grant> {
    let mut c = connect(&url).await;
    let owner = format!("client-{id}");
    let script = Script::new(lock::RELEASE_SCRIPT);
    let mut grants = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let start = Instant::now();
        let token: u64 = match mode {
            Mode::Native => loop {
                let r: Option<i64> = redis::cmd("LOCK")
                    .arg(KEY)
                    .arg(&owner)
                    .arg(TTL_MS)
                    .arg("WAIT")
                    .arg(5000)
                    .query_async(&mut c)
                    .await
                    .unwrap_or_else(|e| die(format!("LOCK: {e}")));
                if let Some(t) = r {
                    break t.max(0) as u64;
                }
            },
            Mode::PollingDelifeq | Mode::PollingLua => loop {
                let r: Option<String> = redis::cmd("SET")
                    .arg(KEY)
                    .arg(&owner)
                    .arg("NX")
                    .arg("PX")
                    .arg(TTL_MS)
                    .query_async(&mut c)
                    .await
                    .unwrap_or_else(|e| die(format!("SET: {e}")));
                if r.is_some() {
                    break 0;
                }
                if stop.load(Ordering::Relaxed) {
                    return grants;
                }
            },
        };
        let now = Instant::now();
        grants.push(Grant {
            at_us: (now - t0).as_micros() as u64,
            lat_us: (now - start).as_micros() as u64,
            token,
            client: id,
        });
        if budget.fetch_sub(1, Ordering::Relaxed) <= 1 {
            stop.store(true, Ordering::Relaxed);
        }
        let released: i64 = match mode {
            Mode::Native => redis::cmd("UNLOCK").arg(KEY).arg(&owner).query_async(&mut c).await,
            Mode::PollingDelifeq => redis::cmd("DELIFEQ").arg(KEY).arg(&owner).query_async(&mut c).await,
            Mode::PollingLua => script.key(KEY).arg(&owner).invoke_async(&mut c).await,
        }
        .unwrap_or_else(|e| die(format!("release: {e}")));
        if released != 1 {
            die(format!("client {id}: release returned {released}: the lock was not ours"));
        }
    }
    grants
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
    let stop = Arc::new(AtomicBool::new(false));
    let budget = Arc::new(AtomicU64::new(max_grants.max(1)));
    let t0 = Instant::now();
    let all: Vec<Grant> = rt.block_on(async {
        let mut tasks = Vec::new();
        for id in 0..clients {
            let (url, stop, budget) = (url.to_string(), stop.clone(), budget.clone());
            tasks.push(tokio::spawn(client_loop(mode, url, id, t0, stop, budget)));
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
    Outcome {
        name: name.to_string(),
        handoffs_per_s: window.len() as f64 / ((to - from) as f64 / 1e6),
        p50_us: pct(50),
        p99_us: pct(99),
        grants: window.len(),
        fifo,
    }
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
    let modes = o.get("modes").unwrap_or("native,polling-latch,polling-redis").to_string();
    let need_latch = modes.contains("native") || modes.contains("polling-latch");
    let need_redis = modes.contains("polling-redis");
    let mut keep = Vec::new();
    let latch_url = match (o.get("latch"), need_latch) {
        (Some(u), _) => u.to_string(),
        (None, false) => String::new(),
        (None, true) => {
            let me = std::env::current_exe().unwrap_or_else(|e| die(format!("current_exe: {e}")));
            let bin = o.get("latch-server").map(PathBuf::from).unwrap_or_else(|| me.with_file_name("latch-server"));
            let p = base.to_string();
            let io = o.num("latch-io-threads", 0).to_string();
            let (s, u) = start(&bin, &["--bind", "127.0.0.1", "--port", &p, "--io-threads", &io], base);
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
            other => die(format!("unknown mode {other}")),
        };
        results.push(r);
    }
    let redis = results.iter().find(|r| r.name.starts_with("redis")).map(|r| r.handoffs_per_s);
    println!();
    println!(
        "{:<34} {:>10} {:>12} {:>9} {:>9} {:>10} {:>8}",
        "mode", "grants", "handoffs/s", "p50 ms", "p99 ms", "vs redis", "FIFO"
    );
    for r in &results {
        let ratio = redis.filter(|x| *x > 0.0).map_or("-".to_string(), |x| format!("{:.1}x", r.handoffs_per_s / x));
        let fifo = r.fifo.map_or("-".to_string(), |(n, ok)| {
            if n == 0 { "n/a".to_string() } else { format!("{:.2}%", ok as f64 * 100.0 / n as f64) }
        });
        println!(
            "{:<34} {:>10} {:>12.0} {:>9.3} {:>9.3} {:>10} {:>8}",
            r.name,
            r.grants,
            r.handoffs_per_s,
            r.p50_us as f64 / 1000.0,
            r.p99_us as f64 / 1000.0,
            ratio,
            fifo
        );
    }
    for r in &results {
        if let Some((n, ok)) = r.fifo {
            println!("{}: {ok} of {n} grants respected round-robin FIFO order", r.name);
        }
    }
}
