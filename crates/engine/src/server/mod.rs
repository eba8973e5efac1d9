//! Server-wide state and the single entry point that runs a command: [`Server::execute`].
//!
//! All generic checks happen here, before any handler runs (unknown command, arity, authentication),
//! and so does the bookkeeping after it (command statistics, error statistics, slow log, MONITOR).

use crate::client::Client;
use crate::clients::{ClientInfo, ClientRegistry};
use crate::clock::Clock;
use crate::command::Flags;
use crate::config::Config;
use crate::ctx::{Command, CommandTable};
use crate::keyspace::Keyspace;
pub use crate::stats::{CmdStats, Stats};

mod acl;
mod evict;
mod notify;
mod pause;
mod persistence;
mod pubsub;
mod replication;
pub mod scripting;
pub mod shutdown;
mod tracking;
use bytes::Bytes;
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};

pub use crate::version::{LATCH_VERSION, REDIS_VERSION};

/// One slow log entry.
#[derive(Clone, Debug)]
pub struct SlowEntry {
    /// Increasing id.
    pub id: u64,
    /// Unix seconds when the command started.
    pub time: i64,
    /// Duration in microseconds.
    pub micros: u64,
    /// Arguments, trimmed as Redis does (32 args, 128 bytes each).
    pub args: Vec<Bytes>,
    /// Client address.
    pub addr: String,
    /// Client name.
    pub name: Vec<u8>,
}

/// The slow log.
#[derive(Default)]
pub struct SlowLog {
    /// Newest first.
    pub entries: VecDeque<SlowEntry>,
    /// Next id.
    pub next_id: u64,
}

/// Everything shared by all connections.
pub struct Server {
    /// The data.
    pub ks: Arc<Keyspace>,
    /// Time source.
    pub clock: Arc<dyn Clock>,
    /// Configuration.
    pub config: Config,
    /// Connected clients.
    pub clients: ClientRegistry,
    /// Counters.
    pub stats: Stats,
    /// The command table: the one the server was built with, or its renamed view
    /// (`rename-command`).
    pub table: &'static CommandTable,
    /// The command table as defined, before `rename-command` (what scripts and ACL rules name).
    pub commands: &'static CommandTable,
    /// Slow log.
    pub slowlog: Mutex<SlowLog>,
    /// ACL users, the ACL log and its counters (see [`crate::acl`]).
    pub acl: crate::acl::Acl,
    monitors: Mutex<Vec<Arc<crate::clients::ClientInfo>>>,
    pub(crate) has_monitors: AtomicBool,
    shutdown_hook: Mutex<Option<Box<dyn Fn() + Send + Sync>>>,
    long_op_hook: Mutex<Option<Arc<dyn Fn() + Send + Sync>>>,
    /// Random 40-hex run id.
    pub run_id: String,
    /// Start time (monotonic ms).
    pub started_ms: u64,
    /// TCP port actually bound (for INFO), set by the server crate.
    pub tcp_port: AtomicU64,
    /// Every change, as the commands that reproduce it (see [`crate::changes`]).
    pub changes: crate::changes::ChangeStream,
    /// RDB saves: what INFO persistence reports and what decides the next one.
    pub persistence: Arc<crate::persistence::State>,
    /// Clients currently blocked on keys or by a client pause (`blocked_clients`).
    pub blocked_clients: AtomicU64,
    /// CLIENT PAUSE's state and the clients it holds back (see [`crate::pause`]).
    pub pause: crate::pause::Pause<crate::ctx::Engine>,
    /// The dataset is being loaded at startup: commands without the `loading` flag get
    /// `-LOADING` (INFO's `loading:1`).
    pub loading: AtomicBool,
    /// A replica receives and loads its primary's file while it serves the old dataset (Redis's
    /// async loading: `repl-diskless-load swapdb`, the same replication history): commands flagged
    /// `no_async_loading` get `-LOADING` (INFO's `async_loading:1`).
    pub async_loading: AtomicBool,
    /// Last fencing token handed out by LOCK.
    pub fence: Arc<AtomicU64>,
    /// The configuration file the server was started with (CONFIG REWRITE, `INFO server`), set by the
    /// server crate.
    pub config_file: Mutex<Option<std::path::PathBuf>>,
    /// Lua scripts, function libraries and the running script's state.
    pub scripting: crate::lua::Scripting,
    /// Pub/sub subscriptions.
    pub pubsub: crate::pubsub::PubSub,
    /// Client-side caching.
    pub tracking: crate::tracking::Tracking,
    /// `maxmemory` eviction state and counters.
    pub evictor: crate::evict::Evictor,
    /// `used_memory_peak`.
    pub memory_peak: AtomicU64,
    /// `used_memory_startup`: used memory once the server was ready, set by the server crate.
    pub memory_startup: AtomicU64,
    /// Switches the testing commands flip (DEBUG SET-ACTIVE-EXPIRE, PAUSE-CRON...).
    pub debug: Switches,
    /// Replication, the primary's side: ids, the stream and its backlog, the replicas.
    pub repl: crate::repl::Replication,
    /// Replication, the replica's side: the primary followed and the link's state.
    pub upstream: crate::upstream::Upstream,
    /// Values freed off the command path.
    pub lazyfree: Arc<crate::stats::LazyFree>,
    /// The latency monitor's events (LATENCY LATEST/HISTORY).
    pub latency_monitor: crate::latency::Monitor,
    /// MIGRATE's connections to other servers, kept open between commands (INFO's
    /// `migrate_cached_sockets`); the cron closes idle ones ([`Server::close_idle_connections`]).
    pub migrate_sockets: crate::host::ConnCache,
}

/// What DEBUG switches on and off for tests.
#[derive(Debug)]
pub struct Switches {
    /// DEBUG SET-ACTIVE-EXPIRE: the cron reclaims expired keys (on by default).
    pub active_expire: AtomicBool,
    /// DEBUG PAUSE-CRON: the server crate's cron does nothing while set.
    pub pause_cron: AtomicBool,
    /// DEBUG SET-SKIP-CHECKSUM-VALIDATION: RESTORE takes payloads whatever their CRC (tests of
    /// corrupt payloads).
    pub skip_checksum: AtomicBool,
    /// DEBUG SET-DISABLE-DENY-SCRIPTS: scripts may call commands flagged `noscript`.
    pub disable_deny_scripts: AtomicBool,
    /// DEBUG REPLYBUFFER PEAK-RESET-TIME: milliseconds between resets of a client's reply buffer
    /// peak (-1: never). Redis's default is 5000.
    pub reply_buffer_peak_reset_ms: AtomicI64,
    /// DEBUG REPLYBUFFER RESIZING: the cron resizes reply buffers.
    pub reply_buffer_resizing: AtomicBool,
    /// DEBUG SLEEP: the monotonic ms until which the server is frozen (0: it is not). Every
    /// command waits on its thread until then, as everything waits behind Redis's one thread.
    pub frozen_until: AtomicU64,
    /// DEBUG QUICKLIST-PACKED-THRESHOLD, in bytes. Latch's lists have no listpack nodes, so no
    /// element is ever "packed": the value is kept only so that it reads back.
    pub quicklist_packed_threshold: AtomicU64,
}

impl Default for Switches {
    fn default() -> Self {
        Switches {
            active_expire: AtomicBool::new(true),
            pause_cron: AtomicBool::new(false),
            skip_checksum: AtomicBool::new(false),
            disable_deny_scripts: AtomicBool::new(false),
            reply_buffer_peak_reset_ms: AtomicI64::new(REPLY_BUFFER_PEAK_RESET_MS),
            reply_buffer_resizing: AtomicBool::new(true),
            quicklist_packed_threshold: AtomicU64::new(1 << 30),
            frozen_until: AtomicU64::new(0),
        }
    }
}

/// Redis's `REPLY_BUFFER_DEFAULT_PEAK_RESET_TIME`.
pub const REPLY_BUFFER_PEAK_RESET_MS: i64 = 5000;

/// 40 random hex digits: a run ID or a replication ID.
pub fn random_id() -> String {
    (0..40).map(|_| format!("{:x}", rand::random::<u8>() % 16)).collect()
}

impl Server {
    /// Builds a server running the commands of `commands` (the families' table, which the assembly
    /// layer passes: [`Server::new`]), from a configuration and a clock.
    pub fn with_commands(config: Config, clock: Arc<dyn Clock>, commands: &'static CommandTable) -> Server {
        let ndbs = config.get_i64("databases").max(1) as usize;
        let mut nshards = config.get_i64("shards") as usize;
        if nshards == 0 {
            let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
            nshards = (cores * 16).clamp(16, 1024);
        }
        let renames = config.renames.lock().clone();
        let table: &'static CommandTable = if renames.is_empty() {
            commands
        } else {
            // Built once per server started with `rename-command` (validated when the file was
            // read), and kept for the process's life like the default table.
            let t = commands.renamed(&renames);
            Box::leak(Box::new(t.expect("rename-command lines are checked when the configuration is read")))
        };
        let run_id = random_id();
        let scripting = crate::lua::Scripting::new(commands, clock.clone(), config.host_arc());
        let now = clock.now_ms();
        let unix_s = (clock.unix_ms() / 1000) as u64;
        let ks = Arc::new(Keyspace::new(ndbs, nshards));
        let acl = crate::acl::Acl::new(crate::acl::Acl::default_user());
        config.bind_default_user(acl.default().clone());
        ks.set_key_log(crate::notify::key_log_mask(config.notify_keyspace_events.load(Ordering::Relaxed)));
        Server {
            ks,
            clock,
            config,
            clients: ClientRegistry::default(),
            stats: Stats::new(table.id_count()),
            table,
            commands,
            slowlog: Mutex::new(SlowLog::default()),
            acl,
            monitors: Mutex::new(Vec::new()),
            has_monitors: AtomicBool::new(false),
            shutdown_hook: Mutex::new(None),
            long_op_hook: Mutex::new(None),
            run_id,
            started_ms: now,
            tcp_port: AtomicU64::new(0),
            changes: Default::default(),
            persistence: Arc::new(crate::persistence::State::new(unix_s)),
            blocked_clients: AtomicU64::new(0),
            pause: Default::default(),
            loading: AtomicBool::new(false),
            async_loading: AtomicBool::new(false),
            fence: Arc::new(AtomicU64::new(0)),
            config_file: Mutex::new(None),
            scripting,
            pubsub: Default::default(),
            tracking: Default::default(),
            evictor: Default::default(),
            memory_peak: AtomicU64::new(0),
            memory_startup: AtomicU64::new(0),
            debug: Default::default(),
            repl: crate::repl::Replication::new(random_id()),
            upstream: Default::default(),
            lazyfree: Default::default(),
            latency_monitor: Default::default(),
            migrate_sockets: Default::default(),
        }
    }

    /// A new client connection.
    pub fn new_client(&self, addr: String, laddr: String) -> Client {
        let authenticated = !self.config.has_password.load(Ordering::Relaxed);
        let mut c = Client::new(&self.clients, addr, laddr, self.clock.now_ms(), authenticated);
        c.user = Some(self.acl.default().clone());
        c
    }

    /// Redis's clientsCron for idle connections, run by the server's cron: a client idle past
    /// `timeout` seconds is closed (blocked and MONITOR clients excepted, as Redis exempts blocked
    /// clients and replicas), and one idle over 2 seconds with an empty query buffer gives the buffer
    /// back (`clientsCronResizeQueryBuffer`).
    pub fn clients_cron(&self, now_ms: u64) {
        let timeout_ms = (self.config.timeout.load(Ordering::Relaxed).max(0) as u64).saturating_mul(1000);
        let peak_reset = self.debug.reply_buffer_peak_reset_ms.load(Ordering::Relaxed);
        let resizing = self.debug.reply_buffer_resizing.load(Ordering::Relaxed);
        let limits = self.delivery_limits();
        for c in self.clients.snapshot() {
            c.resize_reply_buffer(now_ms, peak_reset, resizing);
            if !c.has_flag('S') && c.check_output_limits(&limits) {
                self.log_output_limit_close(&c);
                continue;
            }
            let idle = now_ms.saturating_sub(c.last_active_ms.load(Ordering::Relaxed));
            if timeout_ms > 0 && idle > timeout_ms && !c.has_flag('b') && !c.has_flag('O') {
                c.kill();
            } else if idle > 2000 && c.qbuf_cap.load(Ordering::Relaxed) > 0 && c.qbuf.load(Ordering::Relaxed) == 0 {
                c.trim_query_buffer();
            }
        }
    }

    /// Closes MIGRATE's cached connections unused for more than 10 seconds (Redis's
    /// `migrateCloseTimedoutSockets`), run by the server's cron.
    pub fn close_idle_connections(&self, now_ms: u64) {
        self.migrate_sockets.close_idle(now_ms / 1000);
    }

    /// Records a client's memory (its connection calls this as its buffers change) and closes the
    /// largest clients while all together use more than `maxmemory-clients` (Redis's client
    /// eviction). True if this client itself was closed.
    pub fn client_memory(&self, info: &ClientInfo) -> bool {
        let mem = info.estimate_mem();
        if mem != info.mem.load(Ordering::Relaxed) {
            self.clients.set_mem(info, mem);
        }
        // Also when this client's memory did not change: a lowered limit evicts at the next
        // command of any client, as Redis's `evictClients` runs before each.
        let limit = self.config.clients_memory_limit();
        if limit == 0 || self.clients.mem_total() <= limit {
            return false;
        }
        for c in self.clients.evict_over(limit) {
            self.config.host().log(
                crate::host::LogLevel::Verbose,
                &format!("Evicting client: id={} addr={} tot-mem={}", c.id, c.addr, c.mem.load(Ordering::Relaxed)),
            );
        }
        info.killed.load(Ordering::Relaxed)
    }

    /// Forgets a closed connection.
    pub fn client_closed(&self, client: &Client) {
        self.clients.unregister(client.id);
        // A client released from a pause that goes before running its command passes its turn on.
        self.pause_turn_done(client.id);
        if client.monitor {
            self.remove_monitor(client.id);
        }
        self.forget_subscriptions(client);
        self.forget_tracking(&client.info);
        self.repl.detach(client.id);
    }

    /// Frees a value a command removed: on a background thread when freeing it is long (more
    /// than Redis's `LAZYFREE_THRESHOLD` of 64 allocations), else here.
    pub fn free_lazily(&self, value: crate::value::Value) {
        if value.free_effort() <= 64 {
            return;
        }
        let counters = self.lazyfree.clone();
        counters.pending.fetch_add(1, Ordering::Relaxed);
        let job = Box::new(move || {
            drop(value);
            counters.pending.fetch_sub(1, Ordering::Relaxed);
            counters.freed.fetch_add(1, Ordering::Relaxed);
        });
        if self.config.host().in_background(job).is_err() {
            // No thread: the job (and the value) was dropped here; nothing is pending.
            self.lazyfree.pending.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// DEBUG SLEEP: freezes the whole server for `ms` (commands of every client wait, the cron
    /// and the replication links with them), as Redis's single thread sleeping does.
    pub fn freeze_for(&self, ms: u64) {
        let until = self.clock.now_ms().saturating_add(ms).max(1);
        self.debug.frozen_until.fetch_max(until, Ordering::SeqCst);
        self.wait_thawed();
    }

    /// Blocks this thread while DEBUG SLEEP freezes the server.
    pub fn wait_thawed(&self) {
        loop {
            let until = self.debug.frozen_until.load(Ordering::SeqCst);
            let now = self.clock.now_ms();
            if until == 0 {
                return;
            }
            if now >= until {
                let _ = self.debug.frozen_until.compare_exchange(until, 0, Ordering::SeqCst, Ordering::SeqCst);
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis((until - now).min(10)));
        }
    }

    /// Installs what SHUTDOWN calls.
    pub fn set_shutdown_hook(&self, f: Box<dyn Fn() + Send + Sync>) {
        *self.shutdown_hook.lock() = Some(f);
    }

    /// Installs what the engine calls when the current command turns out to be long (a script running
    /// for a while, or a command waiting for a script's locks): the network layer uses it to let other
    /// connections run meanwhile (tokio's `block_in_place`). Called at most once per command.
    pub fn set_long_op_hook(&self, f: Arc<dyn Fn() + Send + Sync>) {
        self.scripting.set_long_op_hook(f.clone());
        *self.long_op_hook.lock() = Some(f);
    }

    /// Tells the network layer that the current command is long (see [`Server::set_long_op_hook`]).
    pub fn long_op(&self) {
        let hook = self.long_op_hook.lock().clone();
        if let Some(h) = hook {
            h();
        }
    }

    /// Asks the server process to stop (SHUTDOWN). Returns false if nobody listens.
    pub fn request_shutdown(&self) -> bool {
        match &*self.shutdown_hook.lock() {
            Some(f) => {
                f();
                true
            }
            None => false,
        }
    }

    /// Sends MONITOR output to a client's outbox.
    pub fn add_monitor(&self, client: Arc<crate::clients::ClientInfo>) {
        let mut m = self.monitors.lock();
        m.push(client);
        self.has_monitors.store(true, Ordering::SeqCst);
    }

    /// Stops a client's MONITOR output.
    pub fn remove_monitor(&self, id: u64) {
        let mut m = self.monitors.lock();
        m.retain(|c| c.id != id);
        self.has_monitors.store(!m.is_empty(), Ordering::SeqCst);
    }

    /// Background work for the server's cron: reclaims expired keys shard by shard (at most `budget`
    /// per table) and hands expired native locks to their next waiter in the same step. Returns the
    /// number of keys reclaimed.
    pub fn active_expire_cycle(&self, now: u64, budget: usize) -> usize {
        if !self.debug.active_expire.load(Ordering::Relaxed) {
            return 0;
        }
        let start = self.clock.ticks_us();
        let n = self.expire_shards(now, budget);
        self.latency_sample("expire-cycle", self.clock.ticks_us().saturating_sub(start) / 1000);
        n
    }

    fn expire_shards(&self, now: u64, budget: usize) -> usize {
        let mut n = 0;
        for i in 0..self.ks.nshards() {
            let mut locked = self.ks.lock_shards(vec![i]);
            for t in locked.shard(i).dbs.iter_mut() {
                n += t.active_expire(now, budget);
                t.prune_watchers();
            }
            self.serve_ready(&mut locked, now);
        }
        n
    }

    /// A fast, narrow expiry pass for the server to run often (every 10 ms) while clients are blocked:
    /// only the keys clients block on are checked, so a lock whose holder
    /// died is handed to its next waiter within milliseconds of its TTL rather than at the next
    /// `hz` cycle. Shards busy with a command are skipped (the command itself serves them).
    pub fn expire_for_waiters(&self, now: u64) {
        if self.blocked_clients.load(Ordering::Relaxed) == 0 {
            return;
        }
        for i in 0..self.ks.nshards() {
            let Some(mut locked) = self.ks.try_lock_shard(i) else { continue };
            let mut any = false;
            for t in locked.shard(i).dbs.iter_mut() {
                if t.blocked_len() > 0 && t.expire_blocked_keys(now) {
                    any = true;
                }
            }
            if any {
                self.serve_ready(&mut locked, now);
            }
        }
    }

    /// [`Server::expire_for_waiters`] for a consensus node's state machine, which runs it at each
    /// entry's raft time with every shard held (`locked`): the expired keys with blocked clients
    /// are removed in (database, key) order, so that every node hands them on, and draws their
    /// grants' tokens, in the same order whatever shard a key hashes to.
    pub fn expire_for_waiters_in_order(&self, locked: &mut crate::keyspace::Locked<'_>, now: u64) {
        let mut due: Vec<(usize, crate::value::Key)> = Vec::new();
        for s in locked.shards_mut() {
            for (db, t) in s.dbs.iter().enumerate() {
                if t.blocked_len() > 0 {
                    due.extend(t.blocked_due(now).into_iter().map(|k| (db, k)));
                }
            }
        }
        if due.is_empty() {
            return;
        }
        due.sort_unstable_by(|a, b| (a.0, &a.1[..]).cmp(&(b.0, &b.1[..])));
        for (db, k) in &due {
            locked.shard_for(k).dbs[*db].reclaim_key(k);
        }
        self.serve_ready(locked, now);
    }

    /// Next fencing token: strictly increasing for the life of the process, and, because it never
    /// falls behind the Unix time in microseconds, higher than any token an earlier run of the
    /// server handed out as long as that run granted fewer than a million locks per second on
    /// average and the wall clock did not step back.
    pub fn next_fence(&self) -> u64 {
        let floor = (self.clock.unix_ms().max(0) as u64).saturating_mul(1000);
        let mut cur = self.fence.load(Ordering::Relaxed);
        loop {
            let next = cur.saturating_add(1).max(floor);
            match self.fence.compare_exchange_weak(cur, next, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return next,
                Err(c) => cur = c,
            }
        }
    }

    /// The command's latency histogram (`latency-tracking`) and the latency monitor's `command` /
    /// `fast-command` event (`latency-monitor-threshold`), as Redis's `call()` records them.
    pub(crate) fn record_latency(&self, cmd: &Command, took_us: u64) {
        if self.config.latency_tracking.load(Ordering::Relaxed) {
            self.stats.record_latency(cmd, took_us);
        }
        let event = if cmd.flags.has(Flags::FAST) { "fast-command" } else { "command" };
        self.latency_sample(event, took_us / 1000);
    }

    /// Records `ms` for a latency-monitor event if it reaches `latency-monitor-threshold` (Redis's
    /// `latencyAddSampleIfNeeded`).
    pub fn latency_sample(&self, event: &'static str, ms: u64) {
        let threshold = self.config.latency_monitor_threshold.load(Ordering::Relaxed);
        if threshold > 0 && ms as i64 >= threshold {
            self.latency_monitor.add(event, self.clock.unix_ms() / 1000, ms);
        }
    }

    /// Sends a command to the MONITOR clients (Redis's `replicationFeedMonitors`). Scripts'
    /// commands appear as `[db lua]`; EVAL and FCALL feed themselves before their script runs,
    /// so that their commands come after them.
    pub(crate) fn feed_monitors(&self, client: &Client, args: &[Bytes]) {
        if self.has_monitors.load(Ordering::Relaxed) {
            let line = monitor_line(self.clock.wall_offset_ms(), self.clock.now_us(), client, args);
            for c in self.monitors.lock().iter() {
                if c.id == client.id {
                    client.monitor_echo.set(Some(line.clone()));
                } else {
                    self.deliver(c, line.clone());
                }
            }
        }
    }
}

/// Formats a MONITOR line: `1339518083.107412 [0 127.0.0.1:60866] "keys" "*"`.
fn monitor_line(offset_ms: i64, start_us: u64, client: &Client, args: &[Bytes]) -> Bytes {
    let unix_us = start_us as i64 + offset_ms * 1000;
    let from = if client.in_script { "lua" } else { client.info.addr.as_str() };
    let mut s = format!("{}.{:06} [{} {from}]", unix_us / 1_000_000, unix_us % 1_000_000, client.db);
    for a in args {
        s.push(' ');
        s.push_str(&crate::args::repr(a));
    }
    // A status reply, as the connection writes it (`+...\r\n`).
    Bytes::from(format!("+{s}\r\n"))
}
