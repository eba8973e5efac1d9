//! Starts the real `latch-server` binary on 127.0.0.1 on a free port, and talks to it through the
//! `redis` crate or raw bytes.

#![allow(dead_code)]

pub mod group;

use bytes::BytesMut;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A running server, killed on drop. It runs in a directory of its own (removed on drop), so that the
/// RDB file a test's server saves (Redis's default `save` points, SHUTDOWN, SIGTERM) is never loaded
/// by another test's server.
pub struct Latch {
    child: Child,
    dir: std::path::PathBuf,
    /// The bound port.
    pub port: u16,
    /// Log lines printed after startup (collected in the background).
    pub log: mpsc::Receiver<String>,
}

/// A port that was free a moment ago on 127.0.0.1. Another process may take it before the server
/// binds it: [`Latch::start_exact`] then tries another, as Redis's own test harness does.
///
/// Taken below Linux's ephemeral range (32768-60999), which the kernel draws outgoing connections'
/// local ports from: a port picked from that range could go to a connection of another test's
/// servers before the server here bound it ("Address already in use" for a consensus node that
/// cannot simply try another port, its peers having been told it). Successive calls in one test
/// process take successive ports from a start that differs between processes.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    const LOW: u32 = 10_000;
    const SPAN: u32 = 32_768 - LOW;
    static NEXT: AtomicU32 = AtomicU32::new(u32::MAX);
    let seed = std::process::id().wrapping_mul(7919) % SPAN;
    let _ = NEXT.compare_exchange(u32::MAX, seed, Ordering::SeqCst, Ordering::SeqCst);
    for _ in 0..SPAN {
        let port = (LOW + NEXT.fetch_add(1, Ordering::SeqCst) % SPAN) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port below 32768")
}

impl Latch {
    /// Starts a server with `--bind 127.0.0.1 --port <free port>` plus `args` (a config file path,
    /// if any, first).
    pub fn start(args: &[&str]) -> Latch {
        let (file, opts) = match args.first() {
            Some(f) if !f.starts_with("--") => (Some(*f), &args[1..]),
            _ => (None, args),
        };
        let mut all: Vec<&str> = file.into_iter().collect();
        all.extend(["--bind", "127.0.0.1", "--port", "$PORT"]);
        all.extend(opts);
        Latch::start_exact(&all).0
    }

    /// Starts a server with exactly `args`, where `$PORT` stands for a free port (picked again if the
    /// server reports "Failed listening on port"). Returns it once it logged "Ready to accept
    /// connections", with what it logged until then.
    pub fn start_exact(args: &[&str]) -> (Latch, String) {
        let mut last = String::new();
        for _ in 0..20 {
            let port = free_port();
            let args: Vec<String> = args.iter().map(|a| a.replace("$PORT", &port.to_string())).collect();
            match Latch::spawn(&args, port) {
                Ok(started) => return started,
                Err(log) if log.contains("Failed listening on port") => last = log,
                Err(log) => panic!("latch-server did not start; log:\n{log}"),
            }
        }
        panic!("latch-server found no free port; last log:\n{last}")
    }

    #[allow(clippy::zombie_processes)] // the child is reaped in Drop
    fn spawn(args: &[String], port: u16) -> Result<(Latch, String), String> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("latch-test-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("server directory");
        let mut child = Command::new(env!("CARGO_BIN_EXE_latch-server"))
            .args(args)
            .current_dir(&dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn latch-server");
        let out = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut log = String::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Ok(line) = rx.recv_timeout(left) else {
                let _ = child.kill();
                let _ = child.wait();
                let _ = std::fs::remove_dir_all(&dir);
                return Err(log);
            };
            log.push_str(&line);
            log.push('\n');
            if line.contains("Ready to accept connections") {
                return Ok((Latch { child, dir, port, log: rx }, log));
            }
        }
    }

    /// `redis://127.0.0.1:port/`
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// A synchronous `redis` crate connection.
    pub fn conn(&self) -> redis::Connection {
        redis::Client::open(self.url()).expect("client").get_connection().expect("connect")
    }

    /// A raw socket.
    pub fn raw(&self) -> Raw {
        Raw::connect(self.port)
    }

    /// Waits for the process to exit by itself (after SHUTDOWN or a signal).
    pub fn wait_exit(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Ok(Some(st)) = self.child.try_wait() {
                return Some(st);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// True while the process runs.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Latch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `args` as one RESP command.
pub fn encode<A: AsRef<[u8]>>(args: &[A]) -> Vec<u8> {
    let mut b = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        let a = a.as_ref();
        b.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        b.extend_from_slice(a);
        b.extend_from_slice(b"\r\n");
    }
    b
}

/// Reads one complete reply from `s` (bytes read past it stay in `buf` for the next): its exact
/// bytes, or None when the connection closes, fails or times out first.
pub fn read_reply(s: &mut TcpStream, buf: &mut BytesMut) -> Option<Vec<u8>> {
    loop {
        let mut probe = buf.clone();
        let before = probe.len();
        if let Ok(Some(_)) = resp::decode_reply(&mut probe) {
            let used = before - probe.len();
            return Some(buf.split_to(used).to_vec());
        }
        let mut chunk = [0u8; 65536];
        match s.read(&mut chunk) {
            Ok(n) if n > 0 => buf.extend_from_slice(&chunk[..n]),
            _ => return None,
        }
    }
}

/// A raw connection for byte-exact checks.
pub struct Raw {
    /// The socket.
    pub s: TcpStream,
    buf: BytesMut,
}

impl Raw {
    /// Connects to 127.0.0.1:`port`.
    pub fn connect(port: u16) -> Raw {
        let s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
        s.set_nodelay(true).expect("nodelay");
        Raw { s, buf: BytesMut::new() }
    }

    /// Sends bytes.
    pub fn send(&mut self, b: &[u8]) {
        self.s.write_all(b).expect("write");
    }

    /// Reads one complete reply and returns its exact bytes.
    pub fn reply_bytes(&mut self) -> Vec<u8> {
        match read_reply(&mut self.s, &mut self.buf) {
            Some(reply) => reply,
            None => panic!("connection closed or failed; buffered: {:?}", String::from_utf8_lossy(&self.buf)),
        }
    }

    /// Sends a request and returns the reply bytes as a (lossy) string.
    pub fn call(&mut self, b: &[u8]) -> String {
        self.send(b);
        String::from_utf8_lossy(&self.reply_bytes()).into_owned()
    }

    /// Sends `args` as one RESP command and returns the reply's exact bytes.
    pub fn cmd_bytes(&mut self, args: &[&[u8]]) -> Vec<u8> {
        self.send(&encode(args));
        self.reply_bytes()
    }

    /// Sends `args` as one RESP command and returns the reply bytes as a (lossy) string.
    pub fn cmd(&mut self, args: &[&[u8]]) -> String {
        String::from_utf8_lossy(&self.cmd_bytes(args)).into_owned()
    }

    /// True if the server closed the connection (after reading any pending bytes).
    pub fn closed(&mut self) -> bool {
        let mut chunk = [0u8; 4096];
        loop {
            match self.s.read(&mut chunk) {
                Ok(0) => return true,
                Ok(_) => continue,
                Err(_) => return false,
            }
        }
    }
}

/// A real redis-server (the reference Latch is compared with) on a free loopback port, killed on drop.
pub struct RedisServer {
    child: Child,
    /// The port it listens on.
    pub port: u16,
    /// Its working directory (`--dir`, unless the caller gives another): what it saves, or what it
    /// writes as a replica, never lands in the source tree where another test's server would load it.
    _dir: TempDir,
}

impl RedisServer {
    /// Starts `redis-server` from PATH without persistence, or None if it cannot be run.
    ///
    /// redis-server has no "port 0": a port picked here can be taken by another test's server first,
    /// so the server answering on it must report our child's process id, or another port is tried.
    pub fn start() -> Option<RedisServer> {
        RedisServer::start_with(&[])
    }

    /// [`RedisServer::start`] with more `--name value` arguments.
    pub fn start_with(extra: &[&str]) -> Option<RedisServer> {
        for _ in 0..5 {
            let port = free_port();
            let dir = TempDir::new(&format!("redis-server-{port}"));
            let child = Command::new("redis-server")
                .args(["--bind", "127.0.0.1", "--port", &port.to_string(), "--save", "", "--appendonly", "no"])
                .args(["--dir", dir.path()])
                .args(extra)
                .stdout(Stdio::null())
                .spawn()
                .ok()?;
            let r = RedisServer { child, port, _dir: dir };
            for _ in 0..200 {
                if let Ok(mut c) = TcpStream::connect(("127.0.0.1", port)) {
                    let _ = c.set_read_timeout(Some(Duration::from_secs(2)));
                    let _ = c.write_all(b"INFO server\r\n");
                    let mut buf = vec![0u8; 16384];
                    let n = c.read(&mut buf).unwrap_or(0);
                    let ours = format!("process_id:{}\r\n", r.child.id());
                    if String::from_utf8_lossy(&buf[..n]).contains(&ours) {
                        return Some(r);
                    }
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        None
    }

    /// [`RedisServer::start`], where a missing reference server is an error, not a pass: the test
    /// fails loudly unless the run asked to go without one (`LATCH_TESTS_WITHOUT_REDIS=1`), in which
    /// case None says to skip `what`.
    pub fn start_or_skip(what: &str) -> Option<RedisServer> {
        RedisServer::start_with_or_skip(what, &[])
    }

    /// [`RedisServer::start_or_skip`] with more `--name value` arguments.
    pub fn start_with_or_skip(what: &str, extra: &[&str]) -> Option<RedisServer> {
        let r = RedisServer::start_with(extra);
        if r.is_none() {
            assert!(
                std::env::var_os("LATCH_TESTS_WITHOUT_REDIS").is_some(),
                "redis-server is not on PATH (apt-get install redis-server), so {what} cannot run; set \
                 LATCH_TESTS_WITHOUT_REDIS=1 to skip it knowingly"
            );
            eprintln!("LATCH_TESTS_WITHOUT_REDIS set: skipping {what}");
        }
        r
    }

    /// A raw connection.
    pub fn raw(&self) -> Raw {
        Raw::connect(self.port)
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits (at most 20 s) until the server has loaded its data: Redis answers INFO, and some
    /// commands with empty results, while it is still loading.
    pub fn wait_loaded(&self, c: &mut Raw) {
        let deadline = Instant::now() + Duration::from_secs(20);
        // `\nloading:` and not just `loading:`, which `async_loading:0` would match while loading.
        while !c.cmd(&[b"INFO", b"persistence"]).contains("\nloading:0\r") {
            assert!(Instant::now() < deadline, "redis-server did not finish loading");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A directory of its own under the system's temp dir, removed on drop.
pub struct TempDir(pub std::path::PathBuf);

impl TempDir {
    /// A fresh, empty directory named after `name` and this process.
    pub fn new(name: &str) -> TempDir {
        let d = std::env::temp_dir().join(format!("latch-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("temp dir");
        TempDir(d)
    }

    /// Its path, as an argument.
    pub fn path(&self) -> &str {
        self.0.to_str().expect("utf-8 path")
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
