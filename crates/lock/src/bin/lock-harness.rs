//! lock-harness: checks the lock library's safety under contention and crashes, against Latch and
//! redis-server in the same run.
//!
//! The harness starts its own servers on loopback (a resource server, the lock servers), then for
//! each scenario spawns worker processes (itself, `lock-harness worker ...`) that contend for one
//! lock and, while holding it, do a deliberately non-atomic read-modify-write of a counter on the
//! resource server: `GET counter`, pause, `SET counter v+1`. Each section is logged on the resource
//! server: `E pid fence` on entry (with `SET inside pid`), and the write plus `X pid v fence lat_us`
//! in one `MULTI`, so a section either completed (write and record) or did not. Meanwhile the
//! coordinator SIGKILLs workers that are inside the section (`GET inside`), logs `D pid` after
//! reaping them, and spawns replacements; in the Redlock scenario it also SIGSTOPs one of the five
//! lock servers and SIGKILLs another mid-run.
//!
//! Checks, from the log: a mutual-exclusion violation is an `E` while another live holder is
//! inside; a fencing violation is an entry whose token is not above the previous one; a lost update
//! is an `X` whose value is not the previous completed value + 1, or a final counter different
//! from the number of completed sections. All must be zero. It reports cycles per second and
//! acquire latency (p50/p99).
//!
//! Scenarios: `native` (Latch's LOCK ... WAIT / UNLOCK / LOCKEXTEND, the path the library picks on
//! Latch: waiting in the server's FIFO queue, the server's fencing tokens), `latch` (the portable
//! protocol forced on Latch: SET NX PX, DELIFEQ, MULTI/INCR fencing), `redis` (portable, Lua
//! release) and `redlock` (five servers).
//!
//! Usage: `lock-harness [--secs 5] [--workers 8] [--kills 3] [--ttl-ms 400] [--hold-us 500]
//! [--scenarios native,latch,redis,redlock] [--redlock-servers mixed|latch|redis] [--port-base 7620]
//! [--latch-server PATH] [--redis-server PATH]`. The scenario `nolock` (not in the default set)
//! runs the workers without any lock, to show that the checks do detect violations.
//! Exit status: 0 if every scenario is clean, 1 otherwise.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use lock::{Backoff, LockClient, Redlock};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

fn unix_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

mod common;
use common::{Opts, die};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("worker") {
        let o = Opts::parse(&args[1..]);
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        std::process::exit(rt.block_on(worker(o)));
    }
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!(
            "{}",
            include_str!("lock-harness.rs")
                .lines()
                .take_while(|l| l.starts_with("//!"))
                .map(|l| l.trim_start_matches("//!").trim_start())
                .collect::<Vec<_>>()
                .join("\n")
        );
        return;
    }
    std::process::exit(coordinator(Opts::parse(&args)));
}

// ------------------------------------------------------------------------------------------------
// Worker

async fn worker(o: Opts) -> i32 {
    let mode = o.get_or("mode", "single");
    let urls: Vec<String> = o.get_or("lock", "").split(',').filter(|s| !s.is_empty()).map(String::from).collect();
    let until = o.num("until-ms", 0);
    let ttl = Duration::from_millis(o.num("ttl-ms", 400));
    let hold = Duration::from_micros(o.num("hold-us", 500));
    let pid = std::process::id();
    let res = match redis::Client::open(o.get_or("resource", "")) {
        Ok(c) => c,
        Err(e) => die(format!("worker: resource: {e}")),
    };
    let mut r = match res.get_multiplexed_async_connection().await {
        Ok(c) => c,
        Err(e) => die(format!("worker: resource: {e}")),
    };
    let backoff = Backoff { base: Duration::from_millis(1), max: Duration::from_millis(20) };
    let path = o.get_or("path", "auto");
    let single = match (mode.as_str(), urls.first()) {
        ("single", Some(u)) => match LockClient::connect(u).await {
            Ok(c) => {
                let c = match path.as_str() {
                    "native" => c.with_native(true),
                    "portable" => c.with_native(false),
                    _ => c,
                };
                if path == "native" && !matches!(c.native().await, Ok(true)) {
                    die(format!("worker: {u} has no native lock commands"));
                }
                Some(c.lock("harness:lock").ttl(ttl).watchdog(true).fencing(true).backoff(backoff))
            }
            Err(e) => die(format!("worker: {u}: {e}")),
        },
        _ => None,
    };
    let red = (mode == "redlock").then(|| {
        let u: Vec<&str> = urls.iter().map(String::as_str).collect();
        Redlock::open(&u, Duration::from_millis(50)).unwrap_or_else(|e| die(format!("worker: {e}"))).backoff(backoff)
    });
    while unix_ms() < until {
        let t0 = Instant::now();
        let (g1, g2, fence) = if let Some(l) = &single {
            match l.lock(Duration::from_secs(2)).await {
                Ok(g) => {
                    if path == "native" && !g.is_native() {
                        die("worker: native path expected".into());
                    }
                    let f = g.fence().unwrap_or(0);
                    (Some(g), None, f)
                }
                Err(_) => continue,
            }
        } else if let Some(rl) = &red {
            match rl.lock("harness:lock", ttl, Duration::from_secs(2)).await {
                Ok(g) => (None, Some(g), 0),
                Err(_) => continue,
            }
        } else {
            (None, None, 0)
        };
        let lat = t0.elapsed().as_micros() as u64;
        let enter: redis::RedisResult<()> = redis::pipe()
            .atomic()
            .cmd("RPUSH")
            .arg("log")
            .arg(format!("E {pid} {fence}"))
            .ignore()
            .cmd("SET")
            .arg("inside")
            .arg(pid)
            .ignore()
            .query_async(&mut r)
            .await;
        if let Err(e) = enter {
            die(format!("worker: resource: {e}"));
        }
        let v: Option<i64> = redis::cmd("GET").arg("counter").query_async(&mut r).await.unwrap_or(None);
        let v = v.unwrap_or(0) + 1;
        tokio::time::sleep(hold).await;
        let exit: redis::RedisResult<()> = redis::pipe()
            .atomic()
            .cmd("SET")
            .arg("counter")
            .arg(v)
            .ignore()
            .cmd("RPUSH")
            .arg("log")
            .arg(format!("X {pid} {v} {fence} {lat}"))
            .ignore()
            .cmd("DEL")
            .arg("inside")
            .ignore()
            .query_async(&mut r)
            .await;
        if let Err(e) = exit {
            die(format!("worker: resource: {e}"));
        }
        if let Some(g) = g1 {
            let _ = g.release().await;
        }
        if let Some(g) = g2 {
            g.release().await;
        }
    }
    0
}

// ------------------------------------------------------------------------------------------------
// Servers

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Latch,
    Redis,
}

struct Server {
    child: Child,
    port: u16,
    kind: Kind,
    stopped: bool,
}

impl Server {
    fn start(kind: Kind, port: u16, bins: &Bins) -> Server {
        let p = port.to_string();
        let mut cmd = match kind {
            Kind::Latch => {
                let mut c = Command::new(&bins.latch);
                c.args(["--bind", "127.0.0.1", "--port", &p, "--save", ""]);
                c
            }
            Kind::Redis => {
                let mut c = Command::new(&bins.redis);
                c.args(["--bind", "127.0.0.1", "--port", &p, "--save", "", "--appendonly", "no"]);
                c
            }
        };
        let child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| die(format!("cannot start {kind:?} server: {e}")));
        let s = Server { child, port, kind, stopped: false };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let ok = redis::Client::open(s.url())
                .and_then(|c| c.get_connection_with_timeout(Duration::from_millis(200)))
                .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c));
            if ok.is_ok() {
                return s;
            }
            if Instant::now() > deadline {
                die(format!("{kind:?} server on port {port} did not start (port in use?)"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    fn signal(&mut self, sig: Signal) {
        if let Ok(pid) = i32::try_from(self.child.id()) {
            let _ = kill(Pid::from_raw(pid), sig);
        }
        self.stopped = sig == Signal::SIGSTOP;
    }

    fn conn(&self) -> redis::Connection {
        redis::Client::open(self.url())
            .and_then(|c| c.get_connection_with_timeout(Duration::from_secs(2)))
            .unwrap_or_else(|e| die(format!("connect {}: {e}", self.url())))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.stopped {
            self.signal(Signal::SIGCONT);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Bins {
    latch: PathBuf,
    redis: PathBuf,
    me: PathBuf,
}

fn find_bins(o: &Opts) -> Bins {
    let me = std::env::current_exe().unwrap_or_else(|e| die(format!("current_exe: {e}")));
    let latch = o.get("latch-server").map(PathBuf::from).unwrap_or_else(|| me.with_file_name("latch-server"));
    if !latch.exists() {
        die(format!(
            "latch-server not found at {} (build it: cargo build -p server, or pass --latch-server PATH)",
            latch.display()
        ));
    }
    let redis = PathBuf::from(o.get_or("redis-server", "redis-server"));
    Bins { latch, redis, me }
}

// ------------------------------------------------------------------------------------------------
// Coordinator

struct Report {
    name: String,
    secs: f64,
    completed: u64,
    violations: u64,
    fence_violations: u64,
    lost_updates: u64,
    kills: u64,
    kills_inside: u64,
    p50_us: u64,
    p99_us: u64,
    note: String,
}

impl Report {
    fn clean(&self) -> bool {
        self.violations == 0 && self.fence_violations == 0 && self.lost_updates == 0
    }
}

fn coordinator(o: Opts) -> i32 {
    let bins = find_bins(&o);
    let base = u16::try_from(o.num("port-base", 7620)).unwrap_or_else(|_| die("--port-base".into()));
    let scenarios = o.get_or("scenarios", "native,latch,redis,redlock");
    let resource = Server::start(Kind::Latch, base, &bins);
    let mut reports = Vec::new();
    for sc in scenarios.split(',') {
        let mut rc = resource.conn();
        let _: () = redis::cmd("FLUSHALL").query(&mut rc).unwrap_or_else(|e| die(format!("FLUSHALL: {e}")));
        let rep = match sc {
            "native" | "latch" | "redis" => {
                let kind = if sc == "redis" { Kind::Redis } else { Kind::Latch };
                let srv = Server::start(kind, base + 1, &bins);
                let mut servers = vec![srv];
                let path = if sc == "native" { "native" } else { "portable" };
                run_scenario(&o, &bins, sc, "single", path, &resource, &mut servers, false)
            }
            "redlock" => {
                let mix = o.get_or("redlock-servers", "mixed");
                let mut servers: Vec<Server> = (0..5u16)
                    .map(|i| {
                        let kind = match mix.as_str() {
                            "latch" => Kind::Latch,
                            "redis" => Kind::Redis,
                            _ if i % 2 == 0 => Kind::Latch,
                            _ => Kind::Redis,
                        };
                        Server::start(kind, base + 2 + i, &bins)
                    })
                    .collect();
                run_scenario(&o, &bins, "redlock", "redlock", "portable", &resource, &mut servers, true)
            }
            "nolock" => {
                let mut servers = Vec::new();
                run_scenario(&o, &bins, "nolock", "none", "portable", &resource, &mut servers, false)
            }
            other => die(format!("unknown scenario {other}")),
        };
        reports.push(rep);
    }
    println!();
    println!(
        "{:<10} {:>9} {:>9} {:>9} {:>9} {:>10} {:>7} {:>6} {:>7} {:>6}",
        "scenario", "cycles", "cycles/s", "p50 ms", "p99 ms", "violation", "fence", "lost", "kills", "inside"
    );
    for r in &reports {
        println!(
            "{:<10} {:>9} {:>9.0} {:>9.3} {:>9.3} {:>10} {:>7} {:>6} {:>7} {:>6}   {}",
            r.name,
            r.completed,
            r.completed as f64 / r.secs,
            r.p50_us as f64 / 1000.0,
            r.p99_us as f64 / 1000.0,
            r.violations,
            r.fence_violations,
            r.lost_updates,
            r.kills,
            r.kills_inside,
            r.note
        );
    }
    if reports.iter().any(|r| r.name == "nolock") {
        println!("(nolock is the unprotected control: its violations are expected and not counted)");
    }
    let clean = reports.iter().filter(|r| r.name != "nolock").all(Report::clean);
    println!("{}", if clean { "RESULT: no violation, no lost update" } else { "RESULT: FAILED" });
    if clean { 0 } else { 1 }
}

struct Spawn<'a> {
    mode: &'a str,
    path: &'a str,
    lock_urls: &'a str,
    resource: &'a str,
    until: u64,
}

fn spawn_worker(bins: &Bins, w: &Spawn<'_>, o: &Opts) -> Child {
    let Spawn { mode, path, lock_urls, resource, until } = *w;
    Command::new(&bins.me)
        .args(["worker", "--mode", mode, "--path", path, "--lock", lock_urls, "--resource", resource])
        .args(["--until-ms", &until.to_string()])
        .args(["--ttl-ms", &o.num("ttl-ms", 400).to_string(), "--hold-us", &o.num("hold-us", 500).to_string()])
        .stdout(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| die(format!("spawn worker: {e}")))
}

#[allow(clippy::too_many_arguments)]
fn run_scenario(
    o: &Opts,
    bins: &Bins,
    name: &str,
    mode: &str,
    path: &str,
    resource: &Server,
    servers: &mut [Server],
    disturb_servers: bool,
) -> Report {
    let secs = o.num("secs", 5).max(1);
    let nworkers = o.num("workers", 8).max(1);
    let nkills = o.num("kills", 3);
    let urls: Vec<String> = servers.iter().map(Server::url).collect();
    let lock_urls = urls.join(",");
    let kinds: Vec<String> = servers.iter().map(|s| format!("{:?}", s.kind).to_lowercase()).collect();
    eprintln!("scenario {name}: {nworkers} workers for {secs} s, {nkills} kills, lock servers {kinds:?}");
    let start = Instant::now();
    let until = unix_ms() + secs * 1000;
    let res_url = resource.url();
    let spawn = Spawn { mode, path, lock_urls: &lock_urls, resource: &res_url, until };
    let mut workers: Vec<Child> = (0..nworkers).map(|_| spawn_worker(bins, &spawn, o)).collect();
    let mut rc = resource.conn();
    let mut kills = 0;
    let mut note = String::new();
    let mut disturbed = false;
    let kill_every = Duration::from_millis(secs * 1000 / (nkills + 1));
    let mut next_kill = start + kill_every;
    while start.elapsed() < Duration::from_secs(secs) {
        std::thread::sleep(Duration::from_millis(5));
        if disturb_servers && !disturbed && start.elapsed() >= Duration::from_secs(secs) / 3 && servers.len() >= 5 {
            servers[3].signal(Signal::SIGSTOP);
            servers[4].signal(Signal::SIGKILL);
            disturbed = true;
            note = format!(
                "at {:.1}s: SIGSTOP server 4 ({:?}), SIGKILL server 5 ({:?})",
                start.elapsed().as_secs_f64(),
                servers[3].kind,
                servers[4].kind
            );
            eprintln!("  {note}");
        }
        if kills < nkills && Instant::now() >= next_kill {
            let inside: Option<u32> = redis::cmd("GET").arg("inside").query(&mut rc).unwrap_or(None);
            let Some(pid) = inside else { continue };
            let Some(i) = workers.iter().position(|w| w.id() == pid) else { continue };
            let mut w = workers.swap_remove(i);
            let _ = w.kill();
            let _ = w.wait();
            let _: () = redis::cmd("RPUSH").arg("log").arg(format!("D {pid}")).query(&mut rc).unwrap_or(());
            kills += 1;
            next_kill = Instant::now() + kill_every;
            workers.push(spawn_worker(bins, &spawn, o));
        }
    }
    let grace = Instant::now() + Duration::from_secs(8);
    for w in &mut workers {
        loop {
            match w.try_wait() {
                Ok(Some(_)) | Err(_) => break,
                Ok(None) if Instant::now() > grace => {
                    let _ = w.kill();
                    let _ = w.wait();
                    break;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
    }
    let elapsed = start.elapsed().as_secs_f64().min(secs as f64).max(0.001);
    let log: Vec<String> = redis::cmd("LRANGE").arg("log").arg(0).arg(-1).query(&mut rc).unwrap_or_default();
    let counter: Option<i64> = redis::cmd("GET").arg("counter").query(&mut rc).unwrap_or(None);
    let mut rep = analyze(name, &log, counter.unwrap_or(0), mode == "single");
    rep.secs = elapsed;
    rep.kills = kills;
    rep.note = note;
    rep
}

/// Replays the section log; see the module documentation for what counts as what.
fn analyze(name: &str, log: &[String], counter: i64, fencing: bool) -> Report {
    let mut inside: Option<String> = None;
    let (mut violations, mut fence_violations, mut lost, mut kills_inside) = (0, 0, 0, 0);
    let mut last_fence = 0u64;
    let mut last_v = 0i64;
    let mut completed = 0u64;
    let mut lat = Vec::new();
    for rec in log {
        let f: Vec<&str> = rec.split(' ').collect();
        match f.as_slice() {
            ["E", pid, fence] => {
                if inside.is_some() {
                    violations += 1;
                }
                inside = Some(pid.to_string());
                let fence: u64 = fence.parse().unwrap_or(0);
                if fencing {
                    if fence <= last_fence {
                        fence_violations += 1;
                    }
                    last_fence = last_fence.max(fence);
                }
            }
            ["X", pid, v, _fence, l] => {
                if inside.as_deref() == Some(*pid) {
                    inside = None;
                }
                let v: i64 = v.parse().unwrap_or(-1);
                if v != last_v + 1 {
                    lost += 1;
                }
                last_v = v;
                completed += 1;
                lat.push(l.parse::<u64>().unwrap_or(0));
            }
            ["D", pid] => {
                if inside.as_deref() == Some(*pid) {
                    inside = None;
                    kills_inside += 1;
                }
            }
            _ => die(format!("bad log record {rec:?}")),
        }
    }
    if counter != completed as i64 {
        lost += 1;
    }
    lat.sort_unstable();
    let pct = |p: usize| lat.get((lat.len().saturating_sub(1)) * p / 100).copied().unwrap_or(0);
    Report {
        name: name.to_string(),
        secs: 0.0,
        completed,
        violations,
        fence_violations,
        lost_updates: lost,
        kills: 0,
        kills_inside,
        p50_us: pct(50),
        p99_us: pct(99),
        note: String::new(),
    }
}
