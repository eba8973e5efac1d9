//! `latch-cli lock NAME [--ttl MS] [--wait MS] -- command args...`: runs a command while holding a
//! lock, like `flock(1)` and `etcdctl lock`.
//!
//! The lock is taken through the `lock` crate: `LOCK NAME <random token> ttl WAIT ms` on Latch
//! (queued in the server, FIFO), `SET NAME <random token> NX PX ttl` elsewhere, kept alive by a watchdog
//! (extended every third of the TTL) while the command runs, and released (owner-checked) when it
//! exits. SIGINT and SIGTERM received meanwhile are forwarded to the command; the lock is released
//! once it has exited. If the lock is lost while the command runs (the server lost the key or was
//! unreachable for a whole TTL), the command is sent SIGTERM and a warning is printed.
//!
//! Exit status: the command's (128 + N if it was killed by signal N); 1 (or `--conflict-exit-code`)
//! if the lock could not be acquired within `--wait`; 2 for usage, connection or server errors;
//! 126 if the command cannot be executed, 127 if it is not found.

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use clap::{ArgAction, Parser};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tokio::signal::unix::{SignalKind, signal};

use crate::opts::{self, ConnInfo};

/// `latch-cli lock`'s command line.
#[derive(Parser, Debug, Default)]
#[command(
    name = "latch-cli lock",
    about = "Run a command while holding a lock on a Latch (or Redis) server",
    disable_help_flag = true,
    disable_version_flag = true,
    override_usage = "latch-cli [-h host] [-p port] [-a password] [--user user] [-u uri] [-n db] lock NAME \
                      [--ttl MS] [--wait MS] [--fence] [--group host:port,...] -- command [args...]"
)]
pub struct LockArgs {
    /// Where and as whom to connect (as for latch-cli itself).
    #[command(flatten)]
    pub conn: opts::ConnArgs,
    /// Lease in milliseconds; the watchdog extends it every third of it while the command runs.
    #[arg(long = "ttl", value_name = "MS", default_value_t = 10_000)]
    pub ttl: u64,
    /// Give up after waiting this many milliseconds for the lock (default: wait forever; 0: try once).
    #[arg(long = "wait", value_name = "MS")]
    pub wait: Option<u64>,
    /// Exit status when the lock is not acquired within --wait.
    #[arg(long = "conflict-exit-code", value_name = "N", default_value_t = 1)]
    pub conflict_exit_code: i32,
    /// Also take a fencing token (INCR NAME:fence in the acquiring MULTI) and pass it to the command
    /// as LATCH_LOCK_FENCE.
    #[arg(long = "fence")]
    pub fence: bool,
    /// The members of a Latch consensus group (docs/consensus.md), as host:port,host:port,...:
    /// requests follow MOVED to the leader and go on with the next member when one goes away, so the
    /// watchdog keeps the lock across a leader change. The credentials and TLS options apply to each.
    #[arg(long = "group", value_name = "HOST:PORT,...", value_delimiter = ',')]
    pub group: Vec<String>,
    /// Print progress (acquired, released) on stderr.
    #[arg(long = "verbose")]
    pub verbose: bool,
    /// Output this help and exit.
    #[arg(long = "help", action = ArgAction::Help)]
    pub help: Option<bool>,
    /// The lock's name (the key).
    #[arg(value_name = "NAME")]
    pub name: String,
    /// The command to run and its arguments (after `--`).
    #[arg(last = true, required = true, value_name = "command")]
    pub command: Vec<OsString>,
}

/// The `redis` crate connection target for `info`.
pub fn connection_info(info: &ConnInfo) -> redis::RedisResult<redis::ConnectionInfo> {
    use redis::IntoConnectionInfo;
    let addr = match &info.socket {
        Some(path) => redis::ConnectionAddr::Unix(path.into()),
        None if info.tls.enabled => redis::ConnectionAddr::TcpTls {
            host: info.host.clone(),
            port: info.port,
            insecure: info.tls.insecure,
            tls_params: None,
        },
        None => redis::ConnectionAddr::Tcp(info.host.clone(), info.port),
    };
    let mut settings = redis::RedisConnectionInfo::default().set_db(info.db);
    if let Some(u) = &info.user {
        settings = settings.set_username(u);
    }
    if let Some(p) = &info.auth {
        settings = settings.set_password(p);
    }
    Ok(addr.into_connection_info()?.set_redis_settings(settings))
}

/// A `redis` crate client for `info`; with TLS, the `--cacert` and `--cert`/`--key` files are
/// read here (without `--cacert`, the system's roots are trusted). `--cacertdir` and `--sni` have
/// no equivalent in the `redis` crate and are refused.
fn open_client(info: redis::ConnectionInfo, conn: &ConnInfo) -> redis::RedisResult<redis::Client> {
    let t = &conn.tls;
    if !t.enabled {
        return redis::Client::open(info);
    }
    let refuse = |what: &str| {
        redis::RedisError::from((redis::ErrorKind::InvalidClientConfig, "unsupported option", what.to_string()))
    };
    if t.cacertdir.is_some() || t.sni.is_some() {
        return Err(refuse(
            "--cacertdir and --sni are not supported by latch-cli lock (use --cacert; the host is the name checked)",
        ));
    }
    let read = |p: &str| {
        std::fs::read(p).map_err(|e| {
            redis::RedisError::from((redis::ErrorKind::InvalidClientConfig, "cannot read", format!("{p}: {e}")))
        })
    };
    let client_tls = match (&t.cert, &t.key) {
        (Some(c), Some(k)) => Some(redis::ClientTlsConfig { client_cert: read(c)?, client_key: read(k)? }),
        (None, None) => None,
        _ => return Err(refuse("--cert and --key go together")),
    };
    let root_cert = t.cacert.as_deref().map(read).transpose()?;
    redis::Client::build_with_tls(info, redis::TlsCertificates { client_tls, root_cert })
}

/// A client of the group `members` (host:port each), with `conn`'s credentials, database and TLS.
fn group_client(members: &[String], conn: &ConnInfo) -> redis::RedisResult<lock::LockClient> {
    let bad =
        |m: &str| redis::RedisError::from((redis::ErrorKind::InvalidClientConfig, "bad --group member", m.to_string()));
    let mut clients = Vec::new();
    for m in members {
        let (host, port) = m.rsplit_once(':').ok_or_else(|| bad(m))?;
        let port = port.parse().map_err(|_| bad(m))?;
        let mut one = conn.clone();
        one.host = host.to_string();
        one.port = port;
        one.socket = None;
        clients.push(open_client(connection_info(&one)?, &one)?);
    }
    lock::LockClient::group(clients)
        .map_err(|e| redis::RedisError::from((redis::ErrorKind::InvalidClientConfig, "group", e.to_string())))
}

/// Applies the lock subcommand's connection options over `base` (the options given before `lock`).
pub fn merge_conn(a: &LockArgs, conn: ConnInfo) -> Result<ConnInfo, String> {
    a.conn.apply(conn)
}

/// Parses `argv` (starting with `lock`) and runs it; returns the exit status.
pub fn run(argv: Vec<OsString>, base: ConnInfo) -> i32 {
    let args = match LockArgs::try_parse_from(argv) {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    let conn = match merge_conn(&args, base) {
        Ok(mut c) => {
            if c.auth.is_none() {
                c.auth = std::env::var("LATCHCLI_AUTH").or_else(|_| std::env::var("REDISCLI_AUTH")).ok();
            }
            c
        }
        Err(msg) => {
            eprintln!("latch-cli lock: {msg}");
            return 2;
        }
    };
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("latch-cli lock: {e}");
            return 2;
        }
    };
    rt.block_on(run_async(args, conn))
}

fn forward(pid: Option<u32>, sig: Signal) {
    if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
        let _ = kill(Pid::from_raw(pid), sig);
    }
}

async fn run_async(args: LockArgs, conn: ConnInfo) -> i32 {
    let name = args.name.clone();
    let (mut sigint, mut sigterm) = match (signal(SignalKind::interrupt()), signal(SignalKind::terminate())) {
        (Ok(a), Ok(b)) => (a, b),
        _ => {
            eprintln!("latch-cli lock: cannot install signal handlers");
            return 2;
        }
    };
    let client = if args.group.is_empty() {
        connection_info(&conn).and_then(|i| open_client(i, &conn)).map(|c| lock::LockClient::new(c, None))
    } else {
        group_client(&args.group, &conn)
    };
    let client = match client {
        Ok(c) => c,
        Err(e) => {
            eprintln!("latch-cli lock: {e}");
            return 2;
        }
    };
    let ttl = Duration::from_millis(args.ttl.max(1));
    let lock = client.lock(name.as_str()).ttl(ttl).watchdog(true).fencing(args.fence);
    // Waiting "forever" is a year: tokio's Instant arithmetic must not overflow.
    let wait = Duration::from_millis(args.wait.unwrap_or(365 * 24 * 3600 * 1000));
    let acquired = tokio::select! {
        r = lock.lock(wait) => r,
        _ = sigint.recv() => return 130,
        _ = sigterm.recv() => return 143,
    };
    let guard = match acquired {
        Ok(g) => g,
        Err(lock::Error::Timeout(_)) => {
            eprintln!(
                "latch-cli lock: lock '{name}' is held by another client; not acquired within {} ms",
                wait.as_millis()
            );
            return args.conflict_exit_code;
        }
        Err(e) => {
            eprintln!("latch-cli lock: cannot acquire lock '{name}': {e}");
            return 2;
        }
    };
    if args.verbose {
        eprintln!("latch-cli lock: acquired '{name}' (token {})", guard.token());
    }
    let mut cmd = tokio::process::Command::new(&args.command[0]);
    cmd.args(&args.command[1..]).env("LATCH_LOCK_NAME", &name).env("LATCH_LOCK_TOKEN", guard.token());
    if let Some(f) = guard.fence() {
        cmd.env("LATCH_LOCK_FENCE", f.to_string());
    }
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("latch-cli lock: {}: {e}", args.command[0].to_string_lossy());
            let _ = guard.release().await;
            return if e.kind() == std::io::ErrorKind::NotFound { 127 } else { 126 };
        }
    };
    let pid = child.id();
    let mut lost_reported = false;
    let status = loop {
        tokio::select! {
            st = child.wait() => break st,
            _ = sigint.recv() => forward(pid, Signal::SIGINT),
            _ = sigterm.recv() => forward(pid, Signal::SIGTERM),
            _ = guard.lost(), if !lost_reported => {
                lost_reported = true;
                eprintln!("latch-cli lock: lock '{name}' was lost while the command ran; sending it SIGTERM");
                forward(pid, Signal::SIGTERM);
            }
        }
    };
    match guard.release().await {
        Ok(true) => {
            if args.verbose {
                eprintln!("latch-cli lock: released '{name}'");
            }
        }
        Ok(false) if !lost_reported => eprintln!("latch-cli lock: lock '{name}' had expired before release"),
        Ok(false) => {}
        Err(e) => eprintln!("latch-cli lock: release of '{name}' failed ({e}); it expires with its TTL"),
    }
    match status {
        Ok(st) => st.code().unwrap_or_else(|| 128 + st.signal().unwrap_or(0)),
        Err(e) => {
            eprintln!("latch-cli lock: waiting for the command: {e}");
            2
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<LockArgs, clap::Error> {
        LockArgs::try_parse_from(args)
    }

    #[test]
    fn options_name_and_command() {
        let a = parse(&["lock", "-p", "7000", "jobs", "--ttl", "500", "--wait", "0", "--", "sh", "-c", "x"]).unwrap();
        assert_eq!(a.conn.port, Some(7000));
        assert_eq!(a.name, "jobs");
        assert_eq!(a.ttl, 500);
        assert_eq!(a.wait, Some(0));
        assert_eq!(a.command, vec!["sh", "-c", "x"]);
        assert_eq!(a.conflict_exit_code, 1);
        assert!(parse(&["lock", "jobs"]).is_err(), "a command is required");
        assert!(parse(&["lock", "--", "true"]).is_err(), "a name is required");
    }

    #[test]
    fn connection_options_override_the_global_ones() {
        let a = parse(&["lock", "-h", "10.0.0.1", "-a", "pw", "-n", "3", "k", "--", "true"]).unwrap();
        let base = ConnInfo { port: 7001, ..ConnInfo::default() };
        let c = merge_conn(&a, base).unwrap();
        assert_eq!((c.host.as_str(), c.port, c.auth.as_deref(), c.db), ("10.0.0.1", 7001, Some("pw"), 3));
        let a = parse(&["lock", "-u", "redis://u:p@h:9/2", "k", "--", "true"]).unwrap();
        let c = merge_conn(&a, ConnInfo::default()).unwrap();
        assert_eq!(
            (c.host.as_str(), c.port, c.user.as_deref(), c.auth.as_deref(), c.db),
            ("h", 9, Some("u"), Some("p"), 2)
        );
        let info = connection_info(&c).unwrap();
        assert_eq!(info.redis_settings().db(), 2);
        assert_eq!(info.redis_settings().password(), Some("p"));
    }
}
