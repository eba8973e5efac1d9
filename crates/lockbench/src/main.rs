//! lockbench: the load generator of `scripts/lock-bench-etcd.sh`, lock cycles (acquire, then
//! release at once) against a Latch consensus group and an etcd 3.4 cluster with the same client
//! code for both.
//!
//! It does what `scripts/lib/lockbench.py run` does (that file's docstring is the specification:
//! systems, workloads, retries, the JSON line it prints), in one thread: a tokio current-thread
//! runtime drives every client of a run, a task and a connection each, as the Python drives them
//! from one asyncio loop. The Python client took 55-60% of a core for 10,600 cycles/s of a 3-node Latch group on the 2-core
//! machine the benchmark runs on, so there the client, not the servers, set the rate.
//!
//! ```text
//! lockbench run SYSTEM ADDR WORKLOAD [--duration S] [--max N] [--max-attempts N] [--ttl-ms MS]
//!                                    [--retry-ms MS] [--label L]
//! ```
//! SYSTEM: `latch-lock`, `latch-wait`, `latch-setnx`, `latch-delifeq` (ADDR `host:port`),
//! `etcd-txn`, `etcd-lock` (ADDR `http://host:port`); WORKLOAD: `distinct:N` or `contend:N`. Only
//! loopback addresses are accepted, and only loopback `MOVED` targets followed. Every loop is
//! bounded by the run's deadline, `--max` cycles and `--max-attempts` acquires in total; a request
//! still pending `GRACE` after the deadline ends its client, and the whole run is cut off
//! `REQ_TIMEOUT` later.

use std::cell::RefCell;
use std::io;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use bytes::BytesMut;
use rand::{Rng, SeedableRng};
use resp::Frame;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const RELEASE: &str = "if redis.call('get',KEYS[1]) == ARGV[1] then return redis.call('del',KEYS[1]) else return 0 end";
/// SHA1 of `RELEASE` (`printf %s "$RELEASE" | sha1sum`): what `EVALSHA` names once `EVAL` has
/// cached the script, on a build that refuses `SCRIPT LOAD`.
const RELEASE_SHA: &str = "ae3671744a5dbb24ea37ef607b8b10ac7856d43e";
/// Connecting, and setup requests.
const REQ_TIMEOUT: Duration = Duration::from_secs(10);
/// After the deadline, before pending requests are cut off.
const GRACE: Duration = Duration::from_secs(2);
const SYSTEMS: [&str; 6] = ["latch-lock", "latch-wait", "latch-setnx", "latch-delifeq", "etcd-txn", "etcd-lock"];

/// Why a request failed: the server refused it (a run stops; during setup it is reported as the
/// run's `error`), or the connection failed.
#[derive(Debug)]
enum Error {
    Reply(String),
    Io(io::Error),
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Error {
        Error::Io(e)
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Reply(e) => write!(f, "{e}"),
            Error::Io(e) => write!(f, "{e}"),
        }
    }
}

type Result<T> = std::result::Result<T, Error>;

fn closed() -> Error {
    Error::Io(io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed"))
}

/// `host:port` with a loopback host (`localhost` is 127.0.0.1).
fn loopback(hostport: &str) -> Option<SocketAddr> {
    let (host, port) = hostport.rsplit_once(':')?;
    let host = if host == "localhost" { "127.0.0.1" } else { host.trim_start_matches('[').trim_end_matches(']') };
    let ip: std::net::IpAddr = host.parse().ok()?;
    let port = port.parse().ok()?;
    ip.is_loopback().then(|| SocketAddr::new(ip, port))
}

async fn connect(addr: SocketAddr) -> Result<TcpStream> {
    let sock = tokio::time::timeout(REQ_TIMEOUT, TcpStream::connect(addr))
        .await
        .map_err(|_| Error::Io(io::Error::new(io::ErrorKind::TimedOut, format!("connecting to {addr}"))))??;
    sock.set_nodelay(true)?;
    Ok(sock)
}

// ---------------------------------------------------------------- RESP (Latch)

/// Where a `-MOVED slot host:port` error sends the client.
fn moved_to(err: &str) -> Option<&str> {
    let mut it = err.strip_prefix("MOVED ")?.split(' ');
    it.next()?;
    it.next()
}

/// What a Latch reply asks of the client.
#[derive(Debug, PartialEq)]
enum Answer {
    /// The command's reply.
    Reply(Frame),
    /// `-MOVED`: send it again to this (loopback) address.
    Moved(SocketAddr),
    /// `-CLUSTERDOWN` or `-TRYAGAIN` (an election under way): send it again in 50 ms.
    Down,
    /// Any other error, or a redirect to an address that is not loopback.
    Refused(String),
}

fn answer(reply: Frame) -> Answer {
    let Frame::Error(e) = reply else { return Answer::Reply(reply) };
    let e = String::from_utf8_lossy(&e).into_owned();
    if let Some(to) = moved_to(&e) {
        match loopback(to) {
            Some(addr) => Answer::Moved(addr),
            None => Answer::Refused(format!("refusing non-loopback redirect {e}")),
        }
    } else if e.starts_with("CLUSTERDOWN") || e.starts_with("TRYAGAIN") {
        Answer::Down
    } else {
        Answer::Refused(e)
    }
}

/// One connection to a Latch node, one request in flight.
struct Resp {
    addr: SocketAddr,
    sock: Option<TcpStream>,
    rbuf: BytesMut,
    wbuf: BytesMut,
    /// `-CLUSTERDOWN` replies (an election under way), each retried.
    downs: u64,
    /// The last command was sent again after `-CLUSTERDOWN`.
    retried: bool,
}

impl Resp {
    fn new(addr: SocketAddr) -> Resp {
        Resp { addr, sock: None, rbuf: BytesMut::with_capacity(512), wbuf: BytesMut::new(), downs: 0, retried: false }
    }

    async fn connect(&mut self) -> Result<()> {
        self.sock = Some(connect(self.addr).await?);
        self.rbuf.clear();
        Ok(())
    }

    async fn read(&mut self) -> Result<Frame> {
        let sock = self.sock.as_mut().ok_or_else(closed)?;
        loop {
            match resp::decode_reply(&mut self.rbuf) {
                Ok(Some(f)) => return Ok(f),
                Ok(None) => {}
                Err(e) => return Err(Error::Io(io::Error::other(format!("bad reply: {e}")))),
            }
            if sock.read_buf(&mut self.rbuf).await? == 0 {
                return Err(closed());
            }
        }
    }

    /// Sends a command; follows `-MOVED` to the leader (at most 5 times), and during an election
    /// (`-CLUSTERDOWN`, `-TRYAGAIN`) sends it again every 50 ms for up to 10 s, as the `lock`
    /// crate does. A server error is `Error::Reply`.
    async fn cmd(&mut self, args: &[&[u8]]) -> Result<Frame> {
        self.retried = false;
        let (mut moved, mut down) = (0, 0);
        while moved < 5 && down < 200 {
            self.wbuf.clear();
            resp::encode_request(args, &mut self.wbuf);
            self.sock.as_mut().ok_or_else(closed)?.write_all(&self.wbuf).await?;
            match answer(self.read().await?) {
                Answer::Reply(reply) => return Ok(reply),
                Answer::Moved(addr) => {
                    self.addr = addr;
                    self.connect().await?;
                    moved += 1;
                }
                Answer::Down => {
                    self.downs += 1;
                    self.retried = true;
                    down += 1;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Answer::Refused(e) => return Err(Error::Reply(e)),
            }
        }
        Err(Error::Reply(format!("too many redirects or no leader for 10 s: {}", String::from_utf8_lossy(args[0]))))
    }
}

// ---------------------------------------------------------------- HTTP/JSON (etcd)

/// A complete HTTP/1.1 response at the front of `buf`: its status, its body, and how many bytes
/// of `buf` it took. None while incomplete. Bodies are `Content-Length` or chunked.
fn parse_http(buf: &[u8]) -> io::Result<Option<(u16, Vec<u8>, usize)>> {
    let bad = |what: &str| io::Error::new(io::ErrorKind::InvalidData, format!("bad HTTP response: {what}"));
    let Some(head_end) = memchr::memmem::find(buf, b"\r\n\r\n") else { return Ok(None) };
    let head = std::str::from_utf8(&buf[..head_end]).map_err(|_| bad("header not UTF-8"))?;
    let mut lines = head.split("\r\n");
    let status =
        lines.next().and_then(|l| l.split(' ').nth(1)).and_then(|c| c.parse().ok()).ok_or_else(|| bad("status"))?;
    let (mut length, mut chunked) = (None, false);
    for line in lines {
        let (k, v) = line.split_once(':').ok_or_else(|| bad("header line"))?;
        let (k, v) = (k.trim(), v.trim());
        if k.eq_ignore_ascii_case("content-length") {
            length = Some(v.parse::<usize>().map_err(|_| bad("content-length"))?);
        } else if k.eq_ignore_ascii_case("transfer-encoding") && v.to_ascii_lowercase().contains("chunked") {
            chunked = true;
        }
    }
    let mut pos = head_end + 4;
    if !chunked {
        let n = length.unwrap_or(0);
        return Ok((buf.len() >= pos + n).then(|| (status, buf[pos..pos + n].to_vec(), pos + n)));
    }
    let mut body = Vec::new();
    loop {
        let Some(eol) = memchr::memmem::find(&buf[pos..], b"\r\n") else { return Ok(None) };
        let size = std::str::from_utf8(&buf[pos..pos + eol]).map_err(|_| bad("chunk size"))?;
        let size =
            usize::from_str_radix(size.split(';').next().unwrap_or("").trim(), 16).map_err(|_| bad("chunk size"))?;
        pos += eol + 2;
        if buf.len() < pos + size + 2 {
            return Ok(None);
        }
        if size == 0 {
            // No trailers from etcd's gateway: the last chunk's CRLF ends the body.
            return Ok(Some((status, body, pos + 2)));
        }
        body.extend_from_slice(&buf[pos..pos + size]);
        pos += size + 2;
    }
}

/// A keep-alive HTTP/1.1 connection to an etcd member's v3 JSON gateway.
struct Http {
    addr: SocketAddr,
    sock: Option<TcpStream>,
    rbuf: BytesMut,
}

impl Http {
    fn new(addr: SocketAddr) -> Http {
        Http { addr, sock: None, rbuf: BytesMut::with_capacity(1024) }
    }

    async fn connect(&mut self) -> Result<()> {
        self.sock = Some(connect(self.addr).await?);
        self.rbuf.clear();
        Ok(())
    }

    /// POSTs `body` to `path`; the JSON reply, or `Error::Reply` for a status other than 200.
    async fn post(&mut self, path: &str, body: &Value) -> Result<Value> {
        let body = body.to_string();
        let req = format!(
            "POST {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            self.addr,
            body.len()
        );
        let sock = self.sock.as_mut().ok_or_else(closed)?;
        sock.write_all(req.as_bytes()).await?;
        let (status, data) = loop {
            if let Some((status, data, used)) = parse_http(&self.rbuf)? {
                let _ = self.rbuf.split_to(used);
                break (status, data);
            }
            if sock.read_buf(&mut self.rbuf).await? == 0 {
                return Err(closed());
            }
        };
        let reply: Value = if data.is_empty() {
            json!({})
        } else {
            serde_json::from_slice(&data)
                .map_err(|e| Error::Io(io::Error::other(format!("bad JSON from {path}: {e}"))))?
        };
        if status != 200 {
            return Err(Error::Reply(format!("HTTP {status} {path}: {reply}")));
        }
        Ok(reply)
    }
}

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

// ---------------------------------------------------------------- one client per system

enum Client {
    /// `latch-lock` (`wait` false) and `latch-wait`.
    Lock {
        c: Resp,
        owner: String,
        ttl: String,
        wait: bool,
    },
    /// `latch-setnx` (with the release script's sha) and `latch-delifeq` (None).
    Setnx {
        c: Resp,
        cid: usize,
        ttl: String,
        sha: Option<String>,
    },
    EtcdTxn {
        c: Http,
        cid: usize,
        lease: String,
    },
    EtcdLock {
        c: Http,
        lease: String,
        held: Value,
    },
}

impl Client {
    fn new(system: &str, addr: SocketAddr, cid: usize, ttl: u64) -> Client {
        let t = ttl.to_string();
        match system {
            "latch-lock" | "latch-wait" => Client::Lock {
                c: Resp::new(addr),
                owner: format!("owner-{cid}-{}", std::process::id()),
                ttl: t,
                wait: system == "latch-wait",
            },
            "latch-setnx" => Client::Setnx { c: Resp::new(addr), cid, ttl: t, sha: Some(String::new()) },
            "latch-delifeq" => Client::Setnx { c: Resp::new(addr), cid, ttl: t, sha: None },
            "etcd-txn" => Client::EtcdTxn { c: Http::new(addr), cid, lease: t },
            _ => Client::EtcdLock { c: Http::new(addr), lease: t, held: Value::Null },
        }
    }

    /// Connects; `latch-setnx` loads the release script, the etcd clients take their session
    /// lease (the TTL given at `new`).
    async fn setup(&mut self) -> Result<()> {
        match self {
            Client::Lock { c, .. } => c.connect().await,
            Client::Setnx { c, cid, sha, .. } => {
                c.connect().await?;
                if sha.is_some() {
                    match c.cmd(&[b"SCRIPT", b"LOAD", RELEASE.as_bytes()]).await {
                        Ok(Frame::Bulk(b)) => *sha = Some(String::from_utf8_lossy(&b).into_owned()),
                        Ok(other) => return Err(Error::Reply(format!("SCRIPT LOAD answered {other:?}"))),
                        Err(Error::Reply(_)) => {
                            // A build whose consensus mode refuses SCRIPT LOAD: EVAL caches the
                            // script as well (and fails here too if the build does not replicate
                            // scripts at all, which the run reports as its error).
                            let absent = format!("lb/absent/{cid}");
                            c.cmd(&[b"EVAL", RELEASE.as_bytes(), b"1", absent.as_bytes(), b"x"]).await?;
                            *sha = Some(RELEASE_SHA.to_string());
                        }
                        Err(e) => return Err(e),
                    }
                }
                Ok(())
            }
            Client::EtcdTxn { c, lease, .. } | Client::EtcdLock { c, lease, .. } => {
                c.connect().await?;
                let ttl: i64 = lease.parse().unwrap_or(60);
                let r = c.post("/v3/lease/grant", &json!({ "TTL": ttl })).await?;
                *lease = r["ID"].as_str().ok_or_else(|| Error::Reply(format!("lease grant answered {r}")))?.to_string();
                Ok(())
            }
        }
    }

    fn downs(&self) -> u64 {
        match self {
            Client::Lock { c, .. } | Client::Setnx { c, .. } => c.downs,
            _ => 0,
        }
    }

    /// Tries to take the lock on `key` for this client's cycle `n`: true if it did.
    async fn acquire(&mut self, key: &str, n: u64) -> Result<bool> {
        match self {
            Client::Lock { c, owner, ttl, wait } => {
                let mut args: Vec<&[u8]> = vec![b"LOCK", key.as_bytes(), owner.as_bytes(), ttl.as_bytes()];
                if *wait {
                    // Blocks in the group's queue until granted; nil only if the wait (longer than
                    // any run) ran out.
                    args.extend_from_slice(&[b"WAIT", b"600000"]);
                }
                Ok(matches!(c.cmd(&args).await?, Frame::Integer(_)))
            }
            Client::Setnx { c, cid, ttl, .. } => {
                let token = format!("tok-{cid}-{n}");
                let r = c.cmd(&[b"SET", key.as_bytes(), token.as_bytes(), b"NX", b"PX", ttl.as_bytes()]).await?;
                if matches!(&r, Frame::Simple(s) if s.as_ref() == b"OK") {
                    return Ok(true);
                }
                // Sent again after -CLUSTERDOWN: the first one may have applied.
                Ok(c.retried
                    && matches!(c.cmd(&[b"GET", key.as_bytes()]).await?, Frame::Bulk(b) if b.as_ref() == token.as_bytes()))
            }
            Client::EtcdTxn { c, cid, lease } => {
                let k = b64(key);
                let r = c
                    .post(
                        "/v3/kv/txn",
                        &json!({
                            "compare": [{"key": k, "target": "CREATE", "result": "EQUAL", "create_revision": "0"}],
                            "success": [{"request_put": {"key": k, "value": b64(&format!("tok-{cid}-{n}")), "lease": lease}}],
                        }),
                    )
                    .await?;
                Ok(r["succeeded"].as_bool().unwrap_or(false))
            }
            Client::EtcdLock { c, lease, held } => {
                let r = c.post("/v3/lock/lock", &json!({"name": b64(key), "lease": lease})).await?;
                *held = r["key"].clone();
                Ok(true)
            }
        }
    }

    /// Releases the lock this client's cycle `n` holds on `key`; an error if it did not hold it.
    async fn release(&mut self, key: &str, n: u64) -> Result<()> {
        match self {
            Client::Lock { c, owner, .. } => {
                let r = c.cmd(&[b"UNLOCK", key.as_bytes(), owner.as_bytes()]).await?;
                if r != Frame::Integer(1) && !c.retried {
                    return Err(Error::Reply("UNLOCK did not release".into()));
                }
            }
            Client::Setnx { c, cid, sha, .. } => {
                let token = format!("tok-{cid}-{n}");
                let r = match sha {
                    Some(sha) => c.cmd(&[b"EVALSHA", sha.as_bytes(), b"1", key.as_bytes(), token.as_bytes()]).await?,
                    None => c.cmd(&[b"DELIFEQ", key.as_bytes(), token.as_bytes()]).await?,
                };
                if r != Frame::Integer(1) && !c.retried {
                    let what = if sha.is_some() { "EVALSHA release did not delete" } else { "DELIFEQ did not delete" };
                    return Err(Error::Reply(what.into()));
                }
            }
            Client::EtcdTxn { c, cid, .. } => {
                let k = b64(key);
                let r = c
                    .post(
                        "/v3/kv/txn",
                        &json!({
                            "compare": [{"key": k, "target": "VALUE", "result": "EQUAL", "value": b64(&format!("tok-{cid}-{n}"))}],
                            "success": [{"request_delete_range": {"key": k}}],
                        }),
                    )
                    .await?;
                if !r["succeeded"].as_bool().unwrap_or(false) {
                    return Err(Error::Reply("etcd release: not the holder".into()));
                }
            }
            Client::EtcdLock { c, held, .. } => {
                c.post("/v3/lock/unlock", &json!({"key": held})).await?;
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------- a run

struct Args {
    system: String,
    addr: SocketAddr,
    workload: String,
    clients: usize,
    contend: bool,
    duration: Duration,
    max: u64,
    max_attempts: u64,
    ttl_ms: u64,
    retry_ms: f64,
    label: String,
}

/// The run's counters, shared by its clients (one thread).
#[derive(Default)]
struct State {
    done: u64,
    attempts: u64,
    refused: u64,
}

fn usage() -> ! {
    eprintln!(
        "usage: lockbench run SYSTEM ADDR WORKLOAD [--duration S] [--max N] [--max-attempts N] [--ttl-ms MS] [--retry-ms MS] [--label L]\n\
         SYSTEM: {}; WORKLOAD: distinct:N or contend:N",
        SYSTEMS.join(", ")
    );
    std::process::exit(2)
}

fn parse_args(argv: &[String]) -> std::result::Result<Args, String> {
    let [cmd, system, addr, workload, rest @ ..] = argv else { usage() };
    if cmd != "run" {
        usage();
    }
    if !SYSTEMS.contains(&system.as_str()) {
        return Err(format!("unknown system {system}"));
    }
    let hostport = addr.rsplit("://").next().unwrap_or(addr).trim_end_matches('/');
    let addr = loopback(hostport).ok_or("loopback addresses only")?;
    let (kind, n) = workload.split_once(':').ok_or("workload: distinct:N or contend:N")?;
    let clients: usize = n.parse().map_err(|_| "workload: distinct:N or contend:N")?;
    if !matches!(kind, "distinct" | "contend") || !(1..=10_000).contains(&clients) {
        return Err("workload: distinct:N or contend:N, N in 1..=10000".into());
    }
    let mut a = Args {
        system: system.clone(),
        addr,
        workload: workload.clone(),
        clients,
        contend: kind == "contend",
        duration: Duration::from_secs(10),
        max: 200_000,
        max_attempts: 2_000_000,
        ttl_ms: 10_000,
        retry_ms: 5.0,
        label: String::new(),
    };
    let mut it = rest.iter();
    while let Some(flag) = it.next() {
        let v = it.next().ok_or(format!("{flag} needs a value"))?;
        let num = |what: &str| v.parse::<f64>().map_err(|_| format!("{what}: not a number: {v}"));
        match flag.as_str() {
            "--duration" => {
                let s = num("--duration")?;
                if !(s > 0.0 && s <= 600.0) {
                    return Err("duration must be in (0, 600] s".into());
                }
                a.duration = Duration::from_secs_f64(s);
            }
            "--max" => a.max = num("--max")? as u64,
            "--max-attempts" => a.max_attempts = num("--max-attempts")? as u64,
            "--ttl-ms" => a.ttl_ms = num("--ttl-ms")? as u64,
            "--retry-ms" => a.retry_ms = num("--retry-ms")?.max(0.0),
            "--label" => a.label = v.clone(),
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    if !(0 < a.max && a.max <= 10_000_000 && 0 < a.max_attempts && a.max_attempts <= 100_000_000) {
        return Err("max in (0, 1e7], max-attempts in (0, 1e8]".into());
    }
    Ok(a)
}

/// The process's CPU time (user + system), from `/proc/self/stat` (clock ticks of 1/100 s, the
/// fixed `USER_HZ` of that file).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')').map_or("", |x| x.1);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    (ticks(11) + ticks(12)) / 100.0
}

/// The `p` quantile of sorted latencies (seconds), in ms rounded to 2 places, as the Python's.
fn pct(sorted: &[f64], p: f64) -> Value {
    if sorted.is_empty() {
        return Value::Null;
    }
    let i = ((p * sorted.len() as f64) as usize).min(sorted.len() - 1);
    json!(round(sorted[i] * 1000.0, 2))
}

fn round(x: f64, places: i32) -> f64 {
    let m = 10f64.powi(places);
    (x * m).round() / m
}

/// One client's cycles until the run's limits. Each cycle's latency (seconds) goes into the run's
/// `lat` as it completes, so a client cut off later by the watchdog keeps the cycles it counted.
async fn cycles(
    c: &mut Client,
    key: String,
    a: &Args,
    state: &RefCell<State>,
    lat: &RefCell<Vec<f64>>,
    rng: &RefCell<rand::rngs::StdRng>,
    deadline: Instant,
) -> Result<()> {
    let more = || {
        let s = state.borrow();
        Instant::now() < deadline && s.done < a.max && s.attempts < a.max_attempts
    };
    let mut seq = 0; // this client's cycle number: part of its token
    while more() {
        seq += 1;
        let t0 = Instant::now();
        let mut got = false;
        while more() {
            state.borrow_mut().attempts += 1;
            got = c.acquire(&key, seq).await?;
            if got {
                break;
            }
            state.borrow_mut().refused += 1;
            let pause = rng.borrow_mut().random_range(0.0..=2.0 * a.retry_ms) / 1000.0;
            tokio::time::sleep(Duration::from_secs_f64(pause)).await;
        }
        if !got {
            break;
        }
        c.release(&key, seq).await?;
        let t1 = Instant::now();
        if t1 <= deadline {
            state.borrow_mut().done += 1;
            lat.borrow_mut().push((t1 - t0).as_secs_f64());
        }
    }
    Ok(())
}

async fn run(a: Args) -> std::result::Result<String, String> {
    let unix_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis());
    let tag = format!("lb/{}/{}/{unix_ms}", a.system, std::process::id());
    let ttl = if a.system.starts_with("latch") {
        a.ttl_ms
    } else {
        // An etcd session lease longer than the run: no keep-alives needed.
        (a.duration.as_secs_f64() * 3.0) as u64 + 30
    }
    .max(if a.system.starts_with("latch") { 1 } else { 60 });
    // Every client connects and sets up at once, a task each, as the Python's gather does.
    let setups: Vec<_> = (0..a.clients)
        .map(|i| {
            let mut c = Client::new(&a.system, a.addr, i, ttl);
            tokio::task::spawn_local(async move {
                let r = c.setup().await;
                (c, r)
            })
        })
        .collect();
    let mut clients = Vec::with_capacity(a.clients);
    let (mut refused, mut failed) = (None, None);
    let setup = async {
        for h in setups {
            let (c, r) = h.await.expect("a setup task ran");
            match r {
                Err(Error::Reply(e)) => _ = refused.get_or_insert(e),
                Err(e) => _ = failed.get_or_insert(e),
                Ok(()) => {}
            }
            clients.push(c);
        }
    };
    tokio::time::timeout(Duration::from_secs(30), setup)
        .await
        .map_err(|_| "setup took longer than 30 s".to_string())?;
    if let Some(e) = refused {
        // E.g. a build whose consensus mode does not replicate scripts.
        return Ok(line(&[
            ("system", json!(a.system)),
            ("workload", json!(a.workload)),
            ("error", json!(e)),
            ("label", json!(a.label)),
        ]));
    }
    if let Some(e) = failed {
        return Err(format!("setup: {e}"));
    }
    let a = Rc::new(a);
    let state = Rc::new(RefCell::new(State::default()));
    let rng = Rc::new(RefCell::new(rand::rngs::StdRng::seed_from_u64(1)));
    let lat = Rc::new(RefCell::new(Vec::new()));
    let start = Instant::now();
    let deadline = start + a.duration;
    let cpu0 = cpu_seconds();
    // A task per client on this thread, as asyncio.gather makes one per coroutine: the runtime
    // runs whichever is ready, in the order they became ready.
    let runs: Vec<_> = clients
        .into_iter()
        .enumerate()
        .map(|(i, mut c)| {
            let key = if a.contend { format!("{tag}/one") } else { format!("{tag}/c{i}") };
            let (a, state, lat, rng) = (a.clone(), state.clone(), lat.clone(), rng.clone());
            tokio::task::spawn_local(async move {
                // A request still pending GRACE after the deadline ends the client (e.g. a lock
                // call waiting in etcd's queue at the end); an error before then ends the run.
                let run = cycles(&mut c, key, &a, &state, &lat, &rng, deadline);
                let r = match tokio::time::timeout_at((deadline + GRACE).into(), run).await {
                    Ok(Ok(())) => Ok(()),
                    Ok(Err(Error::Io(_))) if Instant::now() >= deadline + GRACE => Ok(()),
                    Ok(Err(e)) => Err(e.to_string()),
                    Err(_) => Ok(()),
                };
                (c.downs(), r)
            })
        })
        .collect();
    let mut downs = 0;
    let whole = async {
        for h in runs {
            let (d, r) = h.await.expect("a client task ran");
            downs += d;
            r?;
        }
        Ok::<(), String>(())
    };
    tokio::time::timeout(a.duration + GRACE + REQ_TIMEOUT, whole)
        .await
        .map_err(|_| "the run did not end in time".to_string())??;
    let elapsed = start.elapsed().min(a.duration).as_secs_f64();
    let cpu = cpu_seconds() - cpu0;
    let mut lat = std::mem::take(&mut *lat.borrow_mut());
    lat.sort_by(f64::total_cmp);
    let s = state.borrow();
    Ok(line(&[
        ("system", json!(a.system)),
        ("workload", json!(a.workload)),
        ("cycles", json!(s.done)),
        ("seconds", json!(round(elapsed, 3))),
        ("cycles_per_s", json!(round(s.done as f64 / elapsed, 1))),
        ("p50_ms", pct(&lat, 0.50)),
        ("p99_ms", pct(&lat, 0.99)),
        ("attempts", json!(s.attempts)),
        ("refused", json!(s.refused)),
        ("clusterdown", json!(downs)),
        ("client_cpu_pct", json!(round(100.0 * cpu / elapsed, 1))),
        ("label", json!(a.label)),
    ]))
}

/// A JSON object with its fields in the given order, written as Python's `json.dumps` writes it
/// (`", "` and `": "` between them), so the two clients' lines read alike. serde_json's own
/// objects would sort the keys.
fn line(fields: &[(&str, Value)]) -> String {
    let mut out = String::from("{");
    for (i, (k, v)) in fields.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(&format!("{}: {v}", Value::from(*k)));
    }
    out.push('}');
    out
}

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let a = parse_args(&argv).unwrap_or_else(|e| {
        eprintln!("lockbench: {e}");
        std::process::exit(2)
    });
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    match tokio::task::LocalSet::new().block_on(&rt, run(a)) {
        Ok(line) => println!("{line}"),
        Err(e) => {
            eprintln!("lockbench: {e}");
            std::process::exit(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moved_names_the_leader() {
        assert_eq!(moved_to("MOVED 866 127.0.0.1:7001"), Some("127.0.0.1:7001"));
        assert_eq!(moved_to("CLUSTERDOWN The cluster is down"), None);
        assert_eq!(loopback("127.0.0.1:7001"), Some("127.0.0.1:7001".parse().unwrap()));
        assert_eq!(loopback("localhost:7001"), Some("127.0.0.1:7001".parse().unwrap()));
        assert_eq!(loopback("[::1]:7001"), Some("[::1]:7001".parse().unwrap()));
        assert_eq!(loopback("10.0.0.1:7001"), None, "only loopback is a target");
        assert_eq!(loopback("example.com:7001"), None);
    }

    #[test]
    fn latch_replies_are_values_redirects_retries_or_errors() {
        // Each reply as it comes off the socket, in two reads: the first one half a reply.
        let read = |wire: &[u8]| {
            let mut buf = BytesMut::from(&wire[..wire.len() / 2]);
            assert_eq!(resp::decode_reply(&mut buf).unwrap(), None, "half a reply");
            buf.extend_from_slice(&wire[wire.len() / 2..]);
            let frame = resp::decode_reply(&mut buf).unwrap().expect("a whole reply");
            assert!(buf.is_empty());
            answer(frame)
        };
        assert_eq!(read(b":7\r\n"), Answer::Reply(Frame::Integer(7)));
        assert_eq!(read(b"+OK\r\n"), Answer::Reply(Frame::Simple("OK".into())));
        assert_eq!(read(b"$9\r\ntok-3-141\r\n"), Answer::Reply(Frame::Bulk("tok-3-141".into())));
        assert_eq!(read(b"-MOVED 866 127.0.0.1:7001\r\n"), Answer::Moved("127.0.0.1:7001".parse().unwrap()));
        assert_eq!(read(b"-MOVED 866 localhost:7002\r\n"), Answer::Moved("127.0.0.1:7002".parse().unwrap()));
        assert_eq!(
            read(b"-MOVED 866 10.1.2.3:7001\r\n"),
            Answer::Refused("refusing non-loopback redirect MOVED 866 10.1.2.3:7001".into())
        );
        assert_eq!(read(b"-CLUSTERDOWN no leader\r\n"), Answer::Down);
        assert_eq!(read(b"-TRYAGAIN election\r\n"), Answer::Down);
        assert_eq!(read(b"-ERR unknown command\r\n"), Answer::Refused("ERR unknown command".into()));
    }

    #[test]
    fn the_json_line_reads_like_pythons() {
        let l = line(&[
            ("system", json!("etcd-txn")),
            ("cycles", json!(12)),
            ("p50_ms", json!(0.5)),
            ("p99_ms", Value::Null),
        ]);
        assert_eq!(l, r#"{"system": "etcd-txn", "cycles": 12, "p50_ms": 0.5, "p99_ms": null}"#);
        assert_eq!(line(&[("seconds", json!(round(3.0004, 3)))]), r#"{"seconds": 3.0}"#);
    }

    #[test]
    fn http_responses_are_framed_by_length_or_chunks() {
        let r = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}HTTP/1.1";
        assert_eq!(parse_http(r).unwrap(), Some((200, b"{}".to_vec(), r.len() - 8)));
        assert_eq!(parse_http(&r[..r.len() - 10]).unwrap(), None, "incomplete body");
        assert_eq!(parse_http(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n").unwrap(), None, "incomplete header");
        let c = b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{\"a\r\n4;x=y\r\n\":1}\r\n0\r\n\r\n";
        assert_eq!(parse_http(c).unwrap(), Some((404, b"{\"a\":1}".to_vec(), c.len())));
        assert_eq!(parse_http(&c[..c.len() - 2]).unwrap(), None, "the last chunk's CRLF missing");
        assert!(parse_http(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n").is_err());
    }

    #[test]
    fn percentiles_and_arguments_follow_the_python_client() {
        let lat: Vec<f64> = (1..=100).map(|i| i as f64 / 1000.0).collect();
        assert_eq!(pct(&lat, 0.5), json!(51.0));
        assert_eq!(pct(&lat, 0.99), json!(100.0));
        assert_eq!(pct(&[], 0.5), Value::Null);
        let argv = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        let a = parse_args(&argv("run etcd-txn http://127.0.0.1:2379 contend:50 --duration 3 --label r1")).unwrap();
        assert!(a.contend && a.clients == 50 && a.duration == Duration::from_secs(3) && a.label == "r1");
        assert!(parse_args(&argv("run latch-lock 192.168.1.1:6379 distinct:1")).is_err());
        assert!(parse_args(&argv("run latch-lock 127.0.0.1:6379 distinct:0")).is_err());
        assert!(parse_args(&argv("run latch-lock 127.0.0.1:6379 distinct:1 --duration 601")).is_err());
        assert!(parse_args(&argv("run nope 127.0.0.1:6379 distinct:1")).is_err());
    }
}
