//! `latch-server [config-file] [--name value ...]`: a Redis-compatible server.
//!
//! Startup mirrors redis-server: configuration from an optional file then `--name value` arguments,
//! defaults of port 6379 on every interface (`bind * -::*`, protected mode), a log line with the version and every bound address,
//! and a clean exit on SIGINT, SIGTERM or SHUTDOWN.

mod alloc;
mod aof;
mod config_file;
mod conn;
mod consensus;
mod crash;
mod log;
mod net;
mod os_host;
mod process;
mod proctitle;
mod tls;
mod upstream;
mod watchdog;

use engine::clock::{Clock, SystemClock};
use engine::config::Config;
use engine::server::Server;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Notify;

/// jemalloc, as Redis uses. Its per-thread caches make the request path's small, short-lived
/// allocations (argument buffers, Lua strings and tables) cheap: glibc malloc took ~16% of the CPU
/// of the EVALSHA benchmark (docs/performance.md). The `background_threads` feature turns on
/// jemalloc's purging thread (Redis's `jemalloc-bg-thread yes`): without it the pages a growing table
/// freed stay resident until the next burst of allocations, ~25% more RSS per key after a bulk load.
/// Its per-thread counters are INFO's `used_memory` and what `maxmemory` limits (`alloc.rs`). Set in
/// the binary only; integration-test binaries keep the system allocator.
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() {
    // First, while this is the only thread: the process title takes over the environment's memory.
    proctitle::init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("-v" | "--version") => {
            // redis-server's form, with the Redis version Latch implements (tools read ` v=7.`);
            // Latch's own version is the build field.
            println!(
                // tikv-jemalloc-sys 0.7.1 bundles jemalloc 5.3.1.
                "Latch server v={} sha=00000000:0 malloc=jemalloc-5.3.1 bits={} build=latch-{}",
                engine::server::REDIS_VERSION,
                usize::BITS,
                engine::server::LATCH_VERSION
            );
            return;
        }
        Some("-h" | "--help") => {
            println!("Usage: latch-server [/path/to/latch.conf] [--option value ...]");
            println!("       latch-server -v | --version");
            println!(
                "Examples:\n  latch-server\n  latch-server --port 7777\n  latch-server /etc/latch.conf --loglevel verbose"
            );
            return;
        }
        _ => {}
    }
    let config = Config::with_host(Arc::new(os_host::OsHost));
    let text = match config_file::assemble(&args, |p| {
        if p == "-" { std::io::read_to_string(std::io::stdin()) } else { std::fs::read_to_string(p) }
    }) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    if let Err(e) = config_file::apply(&config, &text) {
        eprintln!("{e}");
        std::process::exit(1);
    }
    // The config file, if any, for CONFIG REWRITE and INFO (redis-server's first non-option argument).
    let config_file = args
        .first()
        .filter(|a| !a.starts_with("--") && a.as_str() != "-")
        .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| std::path::PathBuf::from(p)));
    // Before any thread is started: the child goes on, the parent exits (Redis's daemonize()).
    if config.get("daemonize").as_deref() == Some("yes") {
        process::daemonize();
    }
    if let Err(e) = log::init(&config.get("logfile").unwrap_or_default()) {
        eprintln!("{e}");
        std::process::exit(1);
    }
    tracing::warn!("oO0OoO0OoO0Oo Latch is starting oO0OoO0OoO0Oo");
    tracing::warn!(
        "Latch version={}, Redis version={}, bits={}, pid={}, just started",
        engine::server::LATCH_VERSION,
        engine::server::REDIS_VERSION,
        usize::BITS,
        std::process::id()
    );
    match &config_file {
        Some(_) => tracing::warn!("Configuration loaded"),
        None => tracing::warn!(
            "Warning: no config file specified, using the default config. In order to specify a config file use latch-server /path/to/latch.conf"
        ),
    }
    // Auto: a worker per core but one. The spare core is for the kernel's network processing, the
    // cron and whatever else runs on the box: on 2 cores with the client alongside, one worker beat
    // two on 9 of bench-compare's 10 workloads at -P 1 and on 6 at -P 16 (docs/performance.md).
    let threads = match config.get_i64("io-threads") {
        0 => std::thread::available_parallelism().map(|n| n.get().saturating_sub(1).max(1)).unwrap_or(1),
        n => n as usize,
    };
    // Replies nest up to the 2000 levels a script may return (then "reached lua stack limit"), and
    // converting, encoding and dropping them recurses: 16 MiB stacks (reserved, touched only as used)
    // leave room for that in unoptimised builds too, where frames are several times larger.
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    // Connections whose requests arrive together run in arrival order, as Redis's event loop runs
    // them: tokio otherwise runs the task woken last first (its LIFO slot), so a PUBLISH sent
    // right after another client's UNSUBSCRIBE ran before it in 36 of 50 tries.
    #[cfg(tokio_unstable)]
    builder.disable_lifo_slot();
    let rt = builder.worker_threads(threads).thread_stack_size(16 << 20).enable_all().build().unwrap_or_else(|e| {
        eprintln!("cannot start runtime: {e}");
        std::process::exit(1)
    });
    let code = rt.block_on(run(config, threads, config_file));
    // Connection tasks may still hold sockets; do not wait for them.
    rt.shutdown_timeout(Duration::from_millis(100));
    std::process::exit(code);
}

async fn run(config: Config, threads: usize, config_file: Option<std::path::PathBuf>) -> i32 {
    // Install signal handlers before announcing readiness, so a SIGTERM right after \"Ready\" is a clean stop.
    let signals = Signals::install();
    let port = config.get_i64("port") as u16;
    let binds = config.get("bind").unwrap_or_default();
    match net::adjust_open_files_limit(config.get_i64("maxclients").max(1) as u64) {
        Ok(n) if n != config.get_i64("maxclients") as u64 => {
            let _ = config.set("maxclients", &n.to_string(), true);
        }
        Ok(_) => {}
        Err(e) => {
            tracing::error!("{e}");
            return 1;
        }
    }
    if config.apply_current_oom_score_adj().is_err() {
        tracing::warn!("Failed to set current oom_score_adj. Check server logs.");
    }
    let clock = Arc::new(SystemClock::new());
    // Consensus mode (`raft-id`): the engine's clock follows the group's raft time.
    let raft_opts = raft::Options::from_values(
        config.get_i64("raft-id"),
        config.get_i64("raft-port"),
        &config.get("raft-peers").unwrap_or_default(),
        std::path::PathBuf::from(config.get("dir").unwrap_or_else(|| ".".into())),
    )
    .and_then(|o| {
        o.map(|mut o| {
            o.snapshot_every = config.get_i64("raft-snapshot-every") as u64;
            o.join = config.get("raft-join").as_deref() == Some("yes");
            o.with_timing(
                config.get_i64("raft-heartbeat-interval") as u64,
                config.get_i64("raft-election-timeout") as u64,
            )
        })
        .transpose()
    });
    let raft_opts = match raft_opts {
        Ok(o) => o,
        Err(e) => {
            tracing::error!("{e}");
            return 1;
        }
    };
    if raft_opts.is_some() {
        consensus::expect();
    }
    let raft_clock = raft_opts.as_ref().map(|_| Arc::new(raft::RaftClock::new(clock.now_ms())));
    let engine_clock: Arc<dyn Clock> = match &raft_clock {
        Some(c) => c.clone(),
        None => clock.clone(),
    };
    let srv = Arc::new(Server::new(config, engine_clock));
    *srv.config_file.lock() = config_file;
    if let Err(e) = engine::cmd::acl::load_at_startup(&srv) {
        tracing::error!("{e}");
        return 1;
    }
    tracing::info!("{} I/O thread(s), {} keyspace shards", threads, srv.ks.nshards());

    let backlog = srv.config.get_i64("tcp-backlog").clamp(0, i32::MAX as i64) as i32;
    if let Some(warning) = net::backlog_warning(backlog, net::somaxconn()) {
        tracing::warn!("{warning}");
    }
    // TLS is configured before any socket is made (Redis's initServer), when it is on.
    let tls_port = srv.config.get_i64("tls-port") as u16;
    let tls_on = tls_port != 0
        || srv.config.get("tls-replication").as_deref() == Some("yes")
        || srv.config.get("tls-cluster").as_deref() == Some("yes");
    if tls_on && tls::configure(&|name| srv.config.get(name).unwrap_or_default()).is_err() {
        tracing::warn!("Failed to configure TLS. Check logs for more info.");
        return 1;
    }
    let Ok(listeners) = net::listen_all(&binds, port, backlog, false) else { return 1 };
    let Ok(tls_listeners) = net::listen_all(&binds, tls_port, backlog, true) else { return 1 };
    let unixsocket = srv.config.get("unixsocket").filter(|p| !p.is_empty());
    let unix_listener = match &unixsocket {
        Some(path) => match net::listen_unix(path, unix_perm(&srv.config.get("unixsocketperm").unwrap_or_default())) {
            Ok(l) => Some(l),
            Err(e) => {
                tracing::warn!("Failed opening Unix socket: {e}");
                return 1;
            }
        },
        None => None,
    };
    if listeners.is_empty() && tls_listeners.is_empty() && unix_listener.is_none() {
        tracing::error!("Configured to not listen anywhere, exiting.");
        return 1;
    }

    let stop = Arc::new(Notify::new());
    {
        let s = stop.clone();
        srv.set_shutdown_hook(Box::new(move || s.notify_one()));
        // A long script (or a command waiting for its locks) must not keep this worker's other
        // tasks and the IO driver from running: hand the worker off to another thread.
        srv.set_long_op_hook(std::sync::Arc::new(|| {
            let Ok(rt) = tokio::runtime::Handle::try_current() else { return };
            if rt.runtime_flavor() != tokio::runtime::RuntimeFlavor::MultiThread {
                return;
            }
            // `block_in_place` offers this worker's core to a thread of the blocking pool, and
            // takes it back when the closure returns if that thread has not taken it yet. So the
            // closure returns only once a task spawned here has run, which on a single worker
            // means the other thread owns the core (a fixed pause lost that race on a loaded
            // machine, and every other client waited behind the script, SCRIPT KILL included).
            // The command then goes on here, outside the runtime's workers.
            tokio::task::block_in_place(|| {
                let (ran, probe) = std::sync::mpsc::sync_channel(1);
                rt.spawn(async move {
                    let _ = ran.send(());
                });
                let _ = probe.recv_timeout(std::time::Duration::from_secs(1));
            });
        }));
    }
    // Redis's order after its listeners: the pid file, the logo, "Server initialized", then
    // (once the data is loaded) "Ready to accept connections".
    let pidfile = process::PidFile::create(&srv.config);
    process::announce(&srv.config, if port != 0 { port } else { tls_port });
    // Redis sets its title once its listeners are up; `proc-title-template` applies from then on.
    proctitle::arm(srv.config_file.lock().as_deref());
    if srv.config.get("set-proc-title").as_deref() == Some("yes") {
        srv.config.set_proc_title(&srv.config.get("proc-title-template").unwrap_or_default());
    }
    tracing::warn!("Server initialized");
    srv.memory_startup.store(alloc::used(), std::sync::atomic::Ordering::Relaxed);
    let aof = aof::Aof::new(srv.clone());

    // Clients are served while the data loads, as Redis serves them: commands without the
    // `loading` flag get -LOADING until it is done.
    srv.loading.store(true, std::sync::atomic::Ordering::SeqCst);
    // Each accept loop records the port it serves (for INFO), here and after CONFIG SET port.
    let (acceptor, acceptor_aof) = (srv.clone(), aof.clone());
    net::serve(false, listeners, &binds, port, backlog, move |l| {
        tracing::debug!("Listening on {}", l.local_addr().map(|a| a.to_string()).unwrap_or_default());
        acceptor.tcp_port.store(l.local_addr().map_or(0, |a| a.port()) as u64, std::sync::atomic::Ordering::Relaxed);
        tokio::spawn(accept_loop(l, false, acceptor.clone(), acceptor_aof.clone()))
    });
    // INFO's tcp_port is the TLS port when there is no plain one (Redis: port ? port : tls_port).
    let (acceptor, acceptor_aof) = (srv.clone(), aof.clone());
    net::serve(true, tls_listeners, &binds, tls_port, backlog, move |l| {
        tracing::debug!("Listening on {} (TLS)", l.local_addr().map(|a| a.to_string()).unwrap_or_default());
        if acceptor.config.get_i64("port") == 0 {
            acceptor
                .tcp_port
                .store(l.local_addr().map_or(0, |a| a.port()) as u64, std::sync::atomic::Ordering::Relaxed);
        }
        tokio::spawn(accept_loop(l, true, acceptor.clone(), acceptor_aof.clone()))
    });
    let unix_loop = match (unix_listener, unixsocket.clone()) {
        (Some(l), Some(path)) => Some(tokio::spawn(unix_accept_loop(l, path, srv.clone(), aof.clone()))),
        _ => None,
    };
    let (loader, loader_aof) = (srv.clone(), aof.clone());
    let raft_mode = raft_opts.is_some();
    let loaded = tokio::task::spawn_blocking(move || {
        if raft_mode {
            // The data is the group's: the snapshot and log under `dir`, loaded by the raft node.
            Ok(None)
        } else if loader.config.get("appendonly").as_deref() == Some("yes") {
            // With the AOF on, Redis loads the AOF and not the RDB file.
            loader_aof.start_at_boot().map(|()| None).map_err(|e| {
                // Redis's loader exits right after its message: the last line says why.
                for line in e.lines() {
                    tracing::warn!("{line}");
                }
            })
        } else {
            load_rdb(&loader)
        }
    })
    .await;
    let Ok(Ok(history)) = loaded else {
        pidfile.remove_quietly();
        return 1;
    };
    if let (Some(opts), Some(raft_clock)) = (raft_opts, raft_clock) {
        // The node replays its log into the engine, which must not refuse it as loading:
        // clients are held off by `consensus::node` until the node is installed instead.
        srv.loading.store(false, std::sync::atomic::Ordering::SeqCst);
        let client_addr = format!("{}:{port}", opts.own_host());
        match raft::Consensus::start(srv.clone(), raft_clock, opts, client_addr).await {
            Ok(node) => consensus::install(node),
            Err(e) => {
                tracing::warn!("{e}");
                pidfile.remove_quietly();
                return 1;
            }
        }
    }
    srv.loading.store(false, std::sync::atomic::Ordering::SeqCst);
    upstream::spawn(srv.clone());
    // `replicaof` in the configuration: a replica from the start.
    let primary = srv.config.get("replicaof").and_then(|v| {
        let (host, port) = v.split_once(' ')?;
        Some(engine::upstream::Primary { host: host.to_string(), port: port.parse().ok()? })
    });
    // The file's replication history, before the link starts: a replica continues from it, a
    // primary keeps it for its replicas (PSYNC after a restart).
    if let Some((id, offset, db, expired)) = history {
        srv.restore_replication(&id, offset, db, &expired, primary.is_some());
    }
    if let Some(p) = primary {
        srv.follow_primary(p);
    }
    tokio::spawn(waiter_timer(srv.clone()));
    watchdog::start(srv.clone());
    crash::install(srv.clone());
    tokio::spawn(cron(srv.clone(), clock, aof.clone()));
    tracing::info!("Ready to accept connections tcp");
    if let Some(path) = &unixsocket {
        tracing::info!("The server is now ready to accept connections at {path}");
    }

    let mut signals = signals;
    loop {
        let why = signals.wait(&stop).await;
        if why == "User requested shutdown" {
            break; // the shutdown finished (saved, if it had to): SHUTDOWN, or a signal's below
        }
        use engine::server::shutdown::{Shutdown, ShutdownFlags, ShutdownPhase};
        if matches!(srv.shutdown_phase(), ShutdownPhase::Waiting { .. }) {
            if why == "Received SIGINT" {
                tracing::warn!("You insist... exiting now.");
                break;
            }
            continue;
        }
        tracing::warn!("{why} scheduling shutdown...");
        // `shutdown-on-sigterm` / `shutdown-on-sigint`; the shutdown waits for lagging replicas,
        // and with save points the last changes are saved first: a save that fails keeps the
        // server up (Redis's prepareForShutdown), so nothing acknowledged is lost.
        let setting = if why == "Received SIGINT" { "shutdown-on-sigint" } else { "shutdown-on-sigterm" };
        let flags = ShutdownFlags::from_config(&srv.config.get(setting).unwrap_or_default());
        if srv.prepare_shutdown(flags, srv.clock.now_ms(), None) == Shutdown::Exiting {
            break;
        }
    }
    // No new client from here (Redis's closeListeningSockets); the ones connected are closed below.
    net::close_all().await;
    if let Some(l) = unix_loop {
        l.abort();
        let _ = l.await;
    }
    aof.flush_at_exit();
    for c in srv.clients.snapshot() {
        c.kill();
    }
    drop(pidfile);
    if let Some(path) = &unixsocket {
        tracing::info!("Removing the unix socket file.");
        if let Err(e) = std::fs::remove_file(path) {
            tracing::warn!("Error removing the unix socket file: {}", net::strerror(&e));
        }
    }
    tracing::warn!("Latch is now ready to exit, bye bye...");
    0
}

/// SIGINT/SIGTERM, registered once at startup.
struct Signals {
    #[cfg(unix)]
    term: Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>,
}

impl Signals {
    fn install() -> Signals {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let term = match (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) {
                (Ok(t), Ok(i)) => Some((t, i)),
                _ => None,
            };
            Signals { term }
        }
        #[cfg(not(unix))]
        Signals {}
    }

    async fn wait(&mut self, stop: &Notify) -> &'static str {
        #[cfg(unix)]
        {
            let Some((term, int)) = self.term.as_mut() else {
                stop.notified().await;
                return "User requested shutdown";
            };
            tokio::select! {
                _ = term.recv() => "Received SIGTERM",
                _ = int.recv() => "Received SIGINT",
                _ = stop.notified() => "User requested shutdown",
            }
        }
        #[cfg(not(unix))]
        {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => "Received Ctrl-C",
                _ = stop.notified() => "User requested shutdown",
            }
        }
    }
}

/// Accepts connections on `l` (TLS ones if `tls`: the handshake runs on the connection's own
/// task, with the TLS configuration current at accept) and serves each on a task of its own.
async fn accept_loop(l: TcpListener, tls: bool, srv: Arc<Server>, aof: Arc<aof::Aof>) {
    let local = l.local_addr().map(|a| a.to_string()).unwrap_or_default();
    loop {
        let (sock, peer) = match l.accept().await {
            Ok(x) => x,
            Err(e) => {
                // EMFILE and friends: back off instead of spinning.
                tracing::warn!("accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let reject = refusal(&srv, || {
            net::protected_refuses(
                srv.config.get("protected-mode").as_deref() == Some("yes"),
                srv.config.has_password.load(std::sync::atomic::Ordering::Relaxed),
                peer.ip(),
            )
        });
        let _ = sock.set_nodelay(true);
        if let Err(e) = net::keepalive(&sock, srv.config.get_i64("tcp-keepalive")) {
            tracing::debug!("tcp-keepalive on {peer}: {e}");
        }
        // CLIENT LIST's `laddr` is the connection's own address, as Redis reads it with getsockname:
        // 127.0.0.1:6379 for a client of a listener bound to 0.0.0.0.
        let laddr = sock.local_addr().map_or_else(|_| local.clone(), |a| a.to_string());
        if !tls {
            tokio::spawn(start(srv.clone(), aof.clone(), sock, reject, peer.to_string(), laddr));
            continue;
        }
        let auth = srv.config.get("tls-auth-clients").unwrap_or_default();
        let Some(acceptor) = tls::acceptor(&auth) else {
            tracing::debug!(
                "Error accepting a client connection: TLS is not configured for tls-auth-clients {auth} (conn: {peer})"
            );
            continue;
        };
        let (srv, aof) = (srv.clone(), aof.clone());
        tokio::spawn(async move {
            // Bytes that do not open a TLS handshake record (0x16), such as a plain-text command,
            // close the connection without a reply, as Redis's OpenSSL does; rustls would answer
            // with an alert, which a plain client reads as a reply.
            let mut first = [0u8; 1];
            if !matches!(sock.peek(&mut first).await, Ok(1) if first[0] == 0x16) {
                tracing::debug!("Error accepting a client connection: not a TLS handshake (conn: {peer})");
                return;
            }
            match acceptor.accept(sock).await {
                Ok(stream) => start(srv, aof, stream, reject, peer.to_string(), laddr).await,
                Err(e) => tracing::debug!("Error accepting a client connection: {e} (conn: {peer})"),
            }
        });
    }
}

/// `unixsocketperm` as the configuration keeps it (octal digits) to a file mode; 0 leaves the mode
/// the socket was made with.
fn unix_perm(octal: &str) -> u32 {
    u32::from_str_radix(octal, 8).unwrap_or(0)
}

/// Accepts connections on the Unix socket at `path`. Its clients are local: protected mode lets
/// them in, CLIENT LIST shows them with the `U` flag and `addr`/`laddr` of `path:0`, as Redis does.
async fn unix_accept_loop(l: tokio::net::UnixListener, path: String, srv: Arc<Server>, aof: Arc<aof::Aof>) {
    let addr = format!("{path}:0");
    loop {
        let sock = match l.accept().await {
            Ok((sock, _)) => sock,
            Err(e) => {
                tracing::warn!("accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let reject = refusal(&srv, || false);
        tokio::spawn(start(srv.clone(), aof.clone(), sock, reject, addr.clone(), addr.clone()));
    }
}

/// Why an accepted connection is refused, if it is, in Redis's order: the client limit at accept
/// (acceptCommonHandler), then protected mode (clientAcceptHandler, `protected`: never for a Unix
/// socket's clients); both count in rejected_connections.
fn refusal(srv: &Server, protected: impl FnOnce() -> bool) -> Option<&'static [u8]> {
    let max = srv.config.maxclients.load(std::sync::atomic::Ordering::Relaxed) as usize;
    let reject: Option<&'static [u8]> = if srv.clients.len() >= max {
        Some(b"-ERR max number of clients reached\r\n")
    } else if protected() {
        Some(net::DENIED)
    } else {
        None
    };
    if reject.is_some() {
        srv.clients.rejected_connections.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    reject
}

/// Serves an accepted connection, or writes why it is refused (`reject`: the client limit,
/// protected mode) and closes it.
async fn start<S>(
    srv: Arc<Server>,
    aof: Arc<aof::Aof>,
    stream: S,
    reject: Option<&'static [u8]>,
    peer: String,
    laddr: String,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    use tokio::io::AsyncWriteExt;
    match reject {
        Some(msg) => {
            let mut stream = stream;
            let _ = stream.write_all(msg).await;
            let _ = stream.shutdown().await;
        }
        None => conn::serve(srv, aof, stream, peer, laddr).await,
    }
}

/// While clients are blocked, expires their keys (dead lock holders) every 10 ms instead of every
/// `1000/hz` ms, so the next waiter gets the lock within milliseconds of the TTL.
async fn waiter_timer(srv: Arc<Server>) {
    loop {
        tokio::time::sleep(Duration::from_millis(10)).await;
        // A consensus node's waiters are the state machine's: it hands expired locks on at each
        // entry's raft time, the same on every node.
        if srv.blocked_clients.load(std::sync::atomic::Ordering::Relaxed) == 0 || crate::consensus::node().is_some() {
            continue;
        }
        let now = srv.clock.now_ms();
        // Clients held by a CLIENT PAUSE are blocked too: release them within 10 ms of its end.
        if !srv.debug.pause_cron.load(std::sync::atomic::Ordering::Relaxed) {
            srv.pause_cron(now);
        }
        let srv2 = srv.clone();
        let _ = tokio::task::spawn_blocking(move || srv2.expire_for_waiters(now)).await;
    }
}

/// Background work, `hz` times a second: active expiry, eviction, wall-clock resync.
async fn cron(srv: Arc<Server>, clock: Arc<SystemClock>, aof: Arc<aof::Aof>) {
    // Replication's part runs once a second (Redis's replicationCron), PING every
    // `repl-ping-replica-period` of those seconds.
    let (mut repl_last, mut repl_ticks) = (0u64, 0u64);
    loop {
        let hz = srv.config.hz.load(std::sync::atomic::Ordering::Relaxed).clamp(1, 500);
        tokio::time::sleep(Duration::from_millis(1000 / hz)).await;
        clock.resync();
        watchdog::tick(&srv);
        // DEBUG SLEEP: the cron sleeps with the rest of the server.
        srv.wait_thawed();
        if srv.debug.pause_cron.load(std::sync::atomic::Ordering::Relaxed) {
            continue;
        }
        // The engine's clock: raft time in consensus mode, where expiry must not run ahead of it.
        let now = srv.clock.now_ms();
        // A CLIENT PAUSE whose time is up ends, and its clients run (Redis's serverCron).
        srv.pause_cron(now);
        // FAILOVER's progress (Redis checks it before every sleep).
        srv.failover_cron(now);
        srv.shutdown_cron(now);
        srv.clients_cron(now);
        srv.close_idle_connections(now);
        srv.limit_tracking_table();
        if now >= repl_last + 1000 {
            repl_last = now;
            repl_ticks += 1;
            let period = srv.config.get_i64("repl-ping-replica-period").max(1) as u64;
            srv.replication_cron(now, repl_ticks.is_multiple_of(period));
            // The replication buffer's blocks it freed leave used_memory now, with its figures.
            alloc::publish();
        }
        let srv2 = srv.clone();
        let aof2 = aof.clone();
        // Expiry takes shard locks; keep it off the async workers' hot path.
        let _ = tokio::task::spawn_blocking(move || {
            aof2.tick();
            srv2.active_expire_cycle(now, 1000);
            srv2.save_cron();
            // Over maxmemory without commands coming (CONFIG SET maxmemory lowered it, or an
            // eviction ran out of time): evict here too, as Redis's eviction timer does.
            srv2.perform_evictions();
            srv2.broadcast_tracking();
            alloc::publish();
        })
        .await;
    }
}

/// The replication history an RDB file recorded: id, offset, stream database, and the keys the
/// load skipped as expired.
type History = (String, u64, usize, Vec<(usize, bytes::Bytes)>);

/// Loads `dir`/`dbfilename` if it exists, with Redis's log lines, and returns the replication
/// history it recorded; Err when the file is there but cannot be loaded (the server then exits,
/// as Redis does, rather than start without the data).
fn load_rdb(srv: &Server) -> Result<Option<History>, ()> {
    let path = srv.rdb_path();
    let data = match std::fs::read(&path) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            tracing::warn!("Fatal error loading the DB: {e}. Exiting.");
            return Err(());
        }
    };
    let start = std::time::Instant::now();
    match srv.rdb_load(&data) {
        Ok(l) => {
            let history = l.repl.clone().map(|(id, off, db)| (id, off, db, l.expired_keys.clone()));
            if l.empty_skipped > 0 {
                tracing::warn!(
                    "Done loading RDB, keys loaded: {}, keys expired: {}, empty keys skipped: {}.",
                    l.keys + l.locks,
                    l.expired,
                    l.empty_skipped
                );
            } else {
                tracing::info!("Done loading RDB, keys loaded: {}, keys expired: {}.", l.keys + l.locks, l.expired);
            }
            tracing::info!("DB loaded from disk: {:.3} seconds", start.elapsed().as_secs_f64());
            Ok(history)
        }
        Err(e) => {
            // Redis's rdbReportError: the reason, then this line, then exit.
            for line in e.lines() {
                tracing::warn!("{line}");
            }
            tracing::warn!("Terminating server after rdb file reading failure.");
            Err(())
        }
    }
}
