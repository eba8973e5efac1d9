//! Server-wide state and the single entry point that runs a command: [`Server::execute`].
//!
//! All generic checks happen here, before any handler runs (unknown command, arity, authentication),
//! and so does the bookkeeping after it (command statistics, error statistics, slow log, MONITOR).

use crate::client::{Client, ClientInfo, ClientRegistry, ReplyMode};
use crate::clock::Clock;
use crate::command::{Command, CommandTable, Ctx, Flags};
use crate::config::Config;
use crate::keyspace::Keyspace;
pub use crate::stats::{CmdStats, Stats};
use bytes::Bytes;
use parking_lot::Mutex;
use resp::Frame;
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};

/// The Redis version Latch answers as (clients enable features by it).
pub const REDIS_VERSION: &str = "7.0.15";
/// Latch's own version.
pub const LATCH_VERSION: &str = env!("CARGO_PKG_VERSION");

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

/// A MONITOR subscriber: the connection layer gives a function that queues a line for its client.
pub type MonitorSink = Box<dyn Fn(Bytes) + Send + Sync>;

/// Everything shared by all connections.
pub struct Server {
    /// The data.
    pub ks: Keyspace,
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
    /// Slow log.
    pub slowlog: Mutex<SlowLog>,
    monitors: Mutex<Vec<(u64, MonitorSink)>>,
    has_monitors: AtomicBool,
    shutdown_hook: Mutex<Option<Box<dyn Fn() + Send + Sync>>>,
    long_op_hook: Mutex<Option<Arc<dyn Fn() + Send + Sync>>>,
    /// Random 40-hex run id.
    pub run_id: String,
    /// Start time (monotonic ms).
    pub started_ms: u64,
    /// TCP port actually bound (for INFO), set by the server crate.
    pub tcp_port: AtomicU64,
    /// Unix seconds of the last successful save (LASTSAVE).
    pub lastsave: AtomicU64,
    /// Writes since the last save (`rdb_changes_since_last_save`): the changes every command reports
    /// ([`Ctx::changed`]), added once it returns, and keys the server deleted on its own.
    pub dirty: crate::stats::Counter,
    /// Every change, as the commands that reproduce it (see [`crate::changes`]).
    pub changes: crate::changes::ChangeStream,
    /// Clients currently blocked on keys (`blocked_clients`).
    pub blocked_clients: AtomicU64,
    /// Last fencing token handed out by LOCK.
    pub fence: AtomicU64,
    /// The configuration file the server was started with (CONFIG REWRITE, `INFO server`), set by the
    /// server crate.
    pub config_file: Mutex<Option<std::path::PathBuf>>,
    /// Lua scripts, function libraries and the running script's state.
    pub scripting: crate::lua::Scripting,
    /// `maxmemory` eviction state and counters.
    pub evictor: crate::evict::Evictor,
    /// `used_memory_peak`.
    pub memory_peak: AtomicU64,
    /// `used_memory_startup`: used memory once the server was ready, set by the server crate.
    pub memory_startup: AtomicU64,
    /// Switches the testing commands flip (DEBUG SET-ACTIVE-EXPIRE, PAUSE-CRON...).
    pub debug: Switches,
    /// The replication ID (INFO's `master_replid`; DEBUG CHANGE-REPL-ID makes a new one).
    pub repl_id: Mutex<String>,
    /// The latency monitor's events (LATENCY LATEST/HISTORY).
    pub latency_monitor: crate::latency::Monitor,
}

/// What DEBUG switches on and off for tests.
#[derive(Debug)]
pub struct Switches {
    /// DEBUG SET-ACTIVE-EXPIRE: the cron reclaims expired keys (on by default).
    pub active_expire: AtomicBool,
    /// DEBUG PAUSE-CRON: the server crate's cron does nothing while set.
    pub pause_cron: AtomicBool,
    /// DEBUG SET-DISABLE-DENY-SCRIPTS: scripts may call commands flagged `noscript`.
    pub disable_deny_scripts: AtomicBool,
    /// DEBUG REPLYBUFFER PEAK-RESET-TIME: milliseconds between resets of a client's reply buffer
    /// peak (-1: never). Redis's default is 5000.
    pub reply_buffer_peak_reset_ms: AtomicI64,
    /// DEBUG REPLYBUFFER RESIZING: the cron resizes reply buffers.
    pub reply_buffer_resizing: AtomicBool,
    /// DEBUG QUICKLIST-PACKED-THRESHOLD, in bytes. Latch's lists have no listpack nodes, so no
    /// element is ever "packed": the value is kept only so that it reads back.
    pub quicklist_packed_threshold: AtomicU64,
}

impl Default for Switches {
    fn default() -> Self {
        Switches {
            active_expire: AtomicBool::new(true),
            pause_cron: AtomicBool::new(false),
            disable_deny_scripts: AtomicBool::new(false),
            reply_buffer_peak_reset_ms: AtomicI64::new(REPLY_BUFFER_PEAK_RESET_MS),
            reply_buffer_resizing: AtomicBool::new(true),
            quicklist_packed_threshold: AtomicU64::new(1 << 30),
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
        let now = clock.now_ms();
        let unix_s = (clock.unix_ms() / 1000) as u64;
        Server {
            ks: Keyspace::new(ndbs, nshards),
            clock,
            config,
            clients: ClientRegistry::default(),
            stats: Stats::new(table.id_count()),
            table,
            slowlog: Mutex::new(SlowLog::default()),
            monitors: Mutex::new(Vec::new()),
            has_monitors: AtomicBool::new(false),
            shutdown_hook: Mutex::new(None),
            long_op_hook: Mutex::new(None),
            run_id,
            started_ms: now,
            tcp_port: AtomicU64::new(0),
            lastsave: AtomicU64::new(unix_s),
            dirty: Default::default(),
            changes: Default::default(),
            blocked_clients: AtomicU64::new(0),
            fence: AtomicU64::new(0),
            config_file: Mutex::new(None),
            scripting: crate::lua::Scripting::new(commands),
            evictor: Default::default(),
            memory_peak: AtomicU64::new(0),
            memory_startup: AtomicU64::new(0),
            debug: Default::default(),
            repl_id: Mutex::new(random_id()),
            latency_monitor: Default::default(),
        }
    }

    /// A new client connection.
    pub fn new_client(&self, addr: String, laddr: String) -> Client {
        let authenticated = !self.config.has_password.load(Ordering::Relaxed);
        Client::new(&self.clients, addr, laddr, self.clock.now_ms(), authenticated)
    }

    /// Redis's clientsCron for idle connections, run by the server's cron: a client idle past
    /// `timeout` seconds is closed (blocked and MONITOR clients excepted, as Redis exempts blocked
    /// clients and replicas), and one idle over 2 seconds with an empty query buffer gives the buffer
    /// back (`clientsCronResizeQueryBuffer`).
    pub fn clients_cron(&self, now_ms: u64) {
        let timeout_ms = (self.config.timeout.load(Ordering::Relaxed).max(0) as u64).saturating_mul(1000);
        let peak_reset = self.debug.reply_buffer_peak_reset_ms.load(Ordering::Relaxed);
        let resizing = self.debug.reply_buffer_resizing.load(Ordering::Relaxed);
        for c in self.clients.snapshot() {
            c.resize_reply_buffer(now_ms, peak_reset, resizing);
            let idle = now_ms.saturating_sub(c.last_active_ms.load(Ordering::Relaxed));
            if timeout_ms > 0 && idle > timeout_ms && !c.has_flag('b') && !c.has_flag('O') {
                c.kill();
            } else if idle > 2000 && c.qbuf_cap.load(Ordering::Relaxed) > 0 && c.qbuf.load(Ordering::Relaxed) == 0 {
                c.trim_query_buffer();
            }
        }
    }

    /// Records a client's memory (its connection calls this as its buffers change) and closes the
    /// largest clients while all together use more than `maxmemory-clients` (Redis's client
    /// eviction). True if this client itself was closed.
    pub fn client_memory(&self, info: &ClientInfo) -> bool {
        let mem = info.estimate_mem();
        if mem == info.mem.load(Ordering::Relaxed) {
            return false;
        }
        self.clients.set_mem(info, mem);
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
        if client.monitor {
            self.remove_monitor(client.id);
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

    /// Subscribes a client to MONITOR output.
    pub fn add_monitor(&self, id: u64, sink: MonitorSink) {
        let mut m = self.monitors.lock();
        m.push((id, sink));
        self.has_monitors.store(true, Ordering::SeqCst);
    }

    /// Unsubscribes a client from MONITOR output.
    pub fn remove_monitor(&self, id: u64) {
        let mut m = self.monitors.lock();
        m.retain(|(i, _)| *i != id);
        self.has_monitors.store(!m.is_empty(), Ordering::SeqCst);
    }

    /// Runs one command. Returns the reply to send, or None when the client asked for no reply.
    pub fn execute(&self, client: &mut Client, args: &[Bytes]) -> Option<Frame> {
        let reply = self.execute_inner(client, args);
        if let Some(r) = &reply {
            self.stats.count_error(r);
        }
        match client.reply_mode {
            ReplyMode::On => reply,
            ReplyMode::Off => None,
            ReplyMode::Skip => {
                client.reply_mode = ReplyMode::SkipThis;
                reply
            }
            ReplyMode::SkipThis => {
                client.reply_mode = ReplyMode::On;
                None
            }
        }
    }

    fn execute_inner(&self, client: &mut Client, args: &[Bytes]) -> Option<Frame> {
        let now = self.clock.now_ms();
        let start = self.clock.ticks_us();
        client.info.last_active_ms.store(now, Ordering::Relaxed);
        let cmd = match self.table.resolve(args) {
            Ok(c) => c,
            Err(e) => {
                if let Some(c) = self.table.get(&args[0]) {
                    self.reject(c);
                }
                client.multi.flag_error();
                return Some(e);
            }
        };
        if !cmd.arity_ok(args.len()) {
            self.reject(cmd);
            client.multi.flag_error();
            return Some(crate::error::wrong_arity(cmd.name));
        }
        if !client.authenticated && !cmd.flags.has(Flags::NO_AUTH) {
            self.reject(cmd);
            client.multi.flag_error();
            return Some(crate::error::noauth());
        }
        // maxmemory (Redis's processCommand): evict first; refuse what may grow memory if that failed.
        // Not while a script runs long: it holds the shards eviction would wait for.
        client.oom = false;
        if self.config.maxmemory.load(Ordering::Relaxed) > 0 && !self.script_running_long(now) {
            let oom = self.perform_evictions() == crate::evict::Evicted::Fail;
            // In MULTI everything queued takes memory; EXEC, DISCARD, QUIT and RESET are let through.
            let refused = self.denies_oom(client, cmd, args)
                || (client.multi.active() && !matches!(cmd.name, "exec" | "discard" | "quit" | "reset"));
            if oom && refused {
                self.reject(cmd);
                return Some(self.reject_in_multi(client, cmd, Frame::error(crate::error::OOM)));
            }
            client.oom = oom;
        }
        if self.config.writes_need_replicas() && self.is_write(client, cmd) {
            self.reject(cmd);
            return Some(self.reject_in_multi(client, cmd, Frame::error(crate::error::NOREPLICAS)));
        }
        if let Some(e) = self.busy_error_at(cmd, Some(now)) {
            self.reject(cmd);
            return Some(self.reject_in_multi(client, cmd, e));
        }
        if client.multi.active() {
            if cmd.flags.has(Flags::NO_MULTI) {
                self.reject(cmd);
                client.multi.flag_error();
                return Some(Frame::error("ERR Command not allowed inside a transaction"));
            }
            if !matches!(cmd.name, "exec" | "discard" | "multi" | "watch" | "quit" | "reset") {
                if let Some(q) = client.multi.queued.as_mut() {
                    q.push((cmd, args.to_vec()));
                    client.info.multi.store(q.len() as i64, Ordering::Relaxed);
                    client.info.multi_mem.fetch_add(crate::multi::queued_size(args), Ordering::Relaxed);
                }
                return Some(Frame::simple("QUEUED"));
            }
        }
        *client.info.last_cmd.lock() = cmd.name;
        let handed_off = std::cell::Cell::new(false);
        let give_up = || {
            if !handed_off.replace(true) {
                self.long_op();
            }
            self.busy_error(cmd).is_some()
        };
        let locked = if cmd.needs_all_shards(args) || self.scripting.needs_all_shards(cmd, args) {
            self.ks.lock_all_until(&give_up)
        } else {
            let pos = cmd.keys.positions(args);
            if pos.is_empty() {
                Some(self.ks.lock_none())
            } else {
                self.ks.lock_shards_until(pos.iter().map(|&i| self.ks.shard_of(&args[i])).collect(), &give_up)
            }
        };
        let Some(mut locked) = locked else {
            self.reject(cmd);
            let e = self.busy_error(cmd).unwrap_or_else(|| Frame::error(crate::error::BUSY_EVAL));
            return Some(self.reject_in_multi(client, cmd, e));
        };
        let reply = self.call_from(client, &mut locked, cmd, args, now, start);
        self.publish_changes(client, &mut locked, now);
        // Blocked clients are served after the whole top-level command (a MULTI that pushes then
        // deletes wakes nobody), before its locks are released. Reads count: a lazy expiry can free
        // a lock that has waiters.
        self.serve_ready(&mut locked, now);
        if let Some(req) = client.block.take() {
            self.block(client, &mut locked, cmd, args, req);
            return None;
        }
        drop(locked);
        if client.suppress_reply {
            client.suppress_reply = false;
            return None;
        }
        Some(reply)
    }

    /// Runs a resolved, checked command against shards the caller already locked: the piece shared by
    /// plain execution, EXEC and scripts. Keeps statistics, the slow log and MONITOR up to date.
    pub fn call(
        &self,
        client: &mut Client,
        locked: &mut crate::keyspace::Locked<'_>,
        cmd: &'static Command,
        args: &[Bytes],
        now: u64,
    ) -> Frame {
        self.call_from(client, locked, cmd, args, now, self.clock.ticks_us())
    }

    /// [`Server::call`] with the start already read (`start_ticks`, [`Clock::ticks_us`]; one clock read
    /// per command saved).
    fn call_from(
        &self,
        client: &mut Client,
        locked: &mut crate::keyspace::Locked<'_>,
        cmd: &'static Command,
        args: &[Bytes],
        now: u64,
        start_ticks: u64,
    ) -> Frame {
        let (db, mark) = (client.db, client.effects.len());
        let mut ctx = Ctx::new(self, client, locked, args, now, cmd);
        let reply = (cmd.handler)(&mut ctx);
        let (dirty, rewrite) = (ctx.dirty, ctx.rewrite.take());
        if dirty > 0 {
            self.dirty.add(dirty);
        }
        if self.changes.enabled() {
            // Commands run on this one's behalf (EXEC's, a script's) propagated what it did.
            let inner = client.effects.len() != mark;
            // Keys found expired while it ran were deleted before its own change.
            self.drain_server_deletes(locked, &mut client.effects);
            if (dirty > 0 || rewrite.is_some()) && !inner {
                propagate(&mut client.effects, db, args, rewrite);
            }
        }
        let took = self.clock.ticks_us().saturating_sub(start_ticks);
        // Also total_commands_processed, as Redis's call() counts it: commands that ran, EXEC's and
        // scripts' included, once they ran (not the rejected, unknown or queued ones; INFO does not
        // count itself).
        self.stats.count_call(cmd, took, reply.is_error());
        self.record_latency(cmd, took);
        client.info.db.store(client.db, Ordering::Relaxed);
        self.after_call(client, cmd, args, took);
        reply
    }

    /// Queues `client` on the keys its blocking command asked for (their shards are locked: they
    /// are the command's keys). The reply comes later, through the waiter.
    fn block(
        &self,
        client: &mut Client,
        locked: &mut crate::keyspace::Locked<'_>,
        cmd: &'static Command,
        args: &[Bytes],
        req: crate::blocking::BlockRequest,
    ) {
        let keys = req.keys.clone();
        let wake = client.block_waker.clone().unwrap_or_else(|| Arc::new(|| {}));
        let w = Arc::new(crate::blocking::Waiter::new(
            client.info.clone(),
            client.db,
            client.proto,
            cmd,
            args.to_vec(),
            req,
            wake,
        ));
        for k in &keys {
            locked.shard_for(k).dbs[client.db].block(k, w.clone());
        }
        client.info.set_blocked_on(Some(&w));
        client.blocked = Some(w);
        client.info.set_flag('b', true);
        self.blocked_clients.fetch_add(1, Ordering::Relaxed);
    }

    /// The connection layer is done with a blocked client (served, timed out, or gone).
    pub fn unblocked(&self, client: &mut Client) {
        if client.blocked.take().is_some() {
            client.info.set_blocked_on(None);
            client.info.set_flag('b', false);
            self.blocked_clients.fetch_sub(1, Ordering::Relaxed);
        }
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
                if t.next_deadline().is_some_and(|d| d < now) {
                    n += t.active_expire(now, budget);
                }
                t.prune_watchers();
            }
            self.serve_ready(&mut locked, now);
        }
        n
    }

    /// A fast, narrow expiry pass for the server to run often (every 10 ms) while clients are blocked:
    /// only tables with blocked clients and an overdue deadline are touched, so a lock whose holder
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
                if t.blocked_len() > 0 && t.next_deadline().is_some_and(|d| d < now) {
                    t.active_expire(now, 1000);
                    any = true;
                }
            }
            if any {
                self.serve_ready(&mut locked, now);
            }
        }
    }

    /// Starts recording the change stream (see [`crate::changes`]): from now on every change is
    /// published, keys the server deletes on its own included.
    pub fn record_changes(&self) {
        for i in 0..self.ks.nshards() {
            let mut locked = self.ks.lock_shards(vec![i]);
            for t in locked.shard(i).dbs.iter_mut() {
                t.log_server_deletes(true);
            }
        }
        self.changes.enable();
    }

    /// Publishes the effects of the top-level command finishing on `client` as one unit, after the
    /// `DEL`s of keys the locked shards' tables deleted on their own meanwhile. Called under the
    /// command's locks, before blocked clients are served: by [`Server::execute`], and by EXEC, which
    /// takes locks of its own.
    pub fn publish_changes(&self, client: &mut Client, locked: &mut crate::keyspace::Locked<'_>, now: u64) {
        if self.changes.enabled() {
            self.publish_server_deletes(locked, now);
            self.changes.publish(now, std::mem::take(&mut client.effects));
        }
    }

    /// Publishes a `DEL` unit for each key the locked shards' tables deleted on their own (expired,
    /// evicted) since the last call, outside any command (the cron, eviction).
    fn publish_server_deletes(&self, locked: &mut crate::keyspace::Locked<'_>, now: u64) {
        let mut dels = Vec::new();
        self.drain_server_deletes(locked, &mut dels);
        for d in dels {
            self.changes.publish(now, vec![d]);
        }
    }

    /// Appends a `DEL` effect for each key the locked shards' tables deleted on their own since the
    /// last call.
    fn drain_server_deletes(&self, locked: &mut crate::keyspace::Locked<'_>, out: &mut Vec<crate::changes::Effect>) {
        for s in locked.shards_mut() {
            for (db, t) in s.dbs.iter_mut().enumerate() {
                for key in t.take_server_deletes() {
                    out.push(crate::changes::Effect::new(db, &[&b"DEL"[..], &key[..]]));
                }
            }
        }
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

    /// Serves clients blocked on keys written by the command that just ran, in arrival order, while
    /// the writer still holds the locks (see [`crate::blocking`]).
    ///
    /// Whoever takes its own locks (EXEC, scripts) must call this before releasing them.
    pub fn serve_ready(&self, locked: &mut crate::keyspace::Locked<'_>, now: u64) {
        use crate::blocking::{Serve, WaitState};
        loop {
            // An expired lock's DEL goes before the grant to its next waiter.
            if self.changes.enabled() {
                self.publish_server_deletes(locked, now);
            }
            let mut work: Vec<(u64, usize, crate::value::Key)> = Vec::new();
            for s in locked.shards_mut() {
                work.extend(s.take_ready());
            }
            if work.is_empty() {
                return;
            }
            work.sort_unstable_by_key(|(seq, _, _)| *seq);
            for (_, db, key) in work {
                while let Some(w) = locked.shard_for(&key).dbs[db].first_waiter(&key) {
                    let Ok(w) = w.into_any().downcast::<crate::blocking::Waiter>() else {
                        unreachable!("tables queue only the runtime's waiters")
                    };
                    if !w.claim() {
                        // Being served through another of its keys by another writer: keep order,
                        // stop here (that writer wakes it either way).
                        break;
                    }
                    let Some(serve) = w.cmd.serve else {
                        w.finish(WaitState::Retry);
                        continue;
                    };
                    let mut stand_in = Client::detached(w.info.clone(), w.db, w.proto);
                    let outcome = {
                        let mut ctx = Ctx::new(self, &mut stand_in, locked, &w.args, now, w.cmd);
                        let outcome = serve(&mut ctx, &key);
                        let (dirty, rewrite) = (ctx.dirty, ctx.rewrite.take());
                        if dirty > 0 {
                            self.dirty.add(dirty);
                        }
                        if self.changes.enabled() {
                            // Keys the serve step found expired go first (BLMOVE's destination).
                            let mut effects = Vec::new();
                            self.drain_server_deletes(ctx.locked, &mut effects);
                            if dirty > 0 || rewrite.is_some() {
                                // A served waiter's own arguments (BLPOP ...) are never its effect:
                                // its serve step says what it did.
                                debug_assert!(rewrite.is_some(), "{} served without its effect", w.cmd.name);
                                propagate(&mut effects, w.db, &[], rewrite);
                            }
                            self.changes.publish(now, effects);
                        }
                        outcome
                    };
                    match outcome {
                        Serve::Reply(f) => w.finish(WaitState::Served(f)),
                        Serve::Retry => w.finish(WaitState::Retry),
                        Serve::NotNow => {
                            w.finish(WaitState::Waiting);
                            // Looking at the key may have marked it ready again; nothing changed.
                            locked.shard_for(&key).dbs[db].unready(&key);
                            break;
                        }
                    }
                }
            }
        }
    }

    /// The `-BUSY` reply a command gets while a script has run past `busy-reply-threshold`
    /// (commands flagged `allow_busy` never get it), now.
    pub fn busy_error(&self, cmd: &Command) -> Option<Frame> {
        self.busy_error_at(cmd, None)
    }

    /// [`Server::busy_error`] at monotonic time `now` (ms) if given (a command checking as it
    /// starts: a script that started later has run for 0 ms), else at the clock's current time.
    pub fn busy_error_at(&self, cmd: &Command, now: Option<u64>) -> Option<Frame> {
        if !self.scripting.any_running() || cmd.flags.has(Flags::ALLOW_BUSY) {
            return None;
        }
        let threshold = self.config.busy_reply_threshold.load(Ordering::Relaxed);
        if threshold <= 0 {
            return None;
        }
        let now = now.unwrap_or_else(|| self.clock.now_ms());
        let run = self.scripting.states().find(|run| {
            run.running.load(Ordering::Relaxed)
                && (now.saturating_sub(run.start_ms.load(Ordering::Relaxed)) as i64) >= threshold
                && run.running.load(Ordering::SeqCst)
        })?;
        Some(Frame::error(if run.eval.load(Ordering::Relaxed) {
            crate::error::BUSY_EVAL
        } else {
            crate::error::BUSY_FUNCTION
        }))
    }

    /// Redis's `is_denyoom_command`: a `denyoom` command, a script whose flags make it one, or an EXEC
    /// whose queue holds one.
    fn denies_oom(&self, client: &Client, cmd: &Command, args: &[Bytes]) -> bool {
        let one = |c: &Command, a: &[Bytes]| c.flags.has(Flags::DENYOOM) || self.scripting.denies_oom(c, a);
        one(cmd, args)
            || (cmd.name == "exec" && client.multi.queued.as_ref().is_some_and(|q| q.iter().any(|(c, a)| one(c, a))))
    }

    /// A script has run past `busy-reply-threshold` (Redis's `isInsideYieldingLongCommand`).
    fn script_running_long(&self, now: u64) -> bool {
        let threshold = self.config.busy_reply_threshold.load(Ordering::Relaxed);
        self.scripting.any_running()
            && threshold > 0
            && self.scripting.states().any(|run| {
                run.running.load(Ordering::Relaxed)
                    && (now.saturating_sub(run.start_ms.load(Ordering::Relaxed)) as i64) >= threshold
            })
    }

    /// Redis's `is_write_command`: a write command, or an EXEC whose queue holds one.
    fn is_write(&self, client: &Client, cmd: &Command) -> bool {
        cmd.flags.has(Flags::WRITE)
            || (cmd.name == "exec"
                && client.multi.queued.as_ref().is_some_and(|q| q.iter().any(|(c, _)| c.flags.has(Flags::WRITE))))
    }

    /// Redis's `rejectCommand` inside MULTI: flags the transaction, and a rejected EXEC discards it
    /// with `-EXECABORT Transaction discarded because of: <error>`.
    fn reject_in_multi(&self, client: &mut Client, cmd: &Command, e: Frame) -> Frame {
        if cmd.name == "exec" && client.multi.active() {
            client.multi.reset();
            client.info.set_flag('x', false);
            client.info.multi.store(-1, Ordering::Relaxed);
            client.info.multi_mem.store(0, Ordering::Relaxed);
            client.info.watched_mem.store(0, Ordering::Relaxed);
            if let Frame::Error(m) = &e {
                return Frame::error(format!(
                    "EXECABORT Transaction discarded because of: {}",
                    String::from_utf8_lossy(m)
                ));
            }
        }
        client.multi.flag_error();
        e
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

    fn reject(&self, cmd: &Command) {
        self.stats.count_rejected(cmd);
    }

    /// Slow log and MONITOR, stamped with the time the command finished (as Redis stamps both).
    fn after_call(&self, client: &Client, cmd: &Command, args: &[Bytes], took: u64) {
        let threshold = self.config.slowlog_log_slower_than.load(Ordering::Relaxed);
        if threshold >= 0 && took as i64 >= threshold && !cmd.flags.has(Flags::SKIP_SLOWLOG) {
            self.slowlog_push(client, args, took);
        }
        if !cmd.flags.has(Flags::SKIP_MONITOR) && !cmd.flags.has(Flags::ADMIN) {
            self.feed_monitors(client, args);
        }
    }

    /// Sends a command to the MONITOR clients (Redis's `replicationFeedMonitors`). Scripts'
    /// commands appear as `[db lua]`; EVAL and FCALL feed themselves before their script runs,
    /// so that their commands come after them.
    pub(crate) fn feed_monitors(&self, client: &Client, args: &[Bytes]) {
        if self.has_monitors.load(Ordering::Relaxed) {
            let line = monitor_line(self.clock.wall_offset_ms(), self.clock.now_us(), client, args);
            for (_, sink) in self.monitors.lock().iter() {
                sink(line.clone());
            }
        }
    }

    fn slowlog_push(&self, client: &Client, args: &[Bytes], took: u64) {
        const MAX_ARGS: usize = 32;
        const MAX_LEN: usize = 128;
        let mut v = Vec::new();
        for (i, a) in args.iter().enumerate() {
            if i == MAX_ARGS - 1 && args.len() > MAX_ARGS {
                v.push(Bytes::from(format!("... ({} more arguments)", args.len() - MAX_ARGS + 1)));
                break;
            }
            if a.len() > MAX_LEN {
                let mut b = a[..MAX_LEN].to_vec();
                b.extend_from_slice(format!("... ({} more bytes)", a.len() - MAX_LEN).as_bytes());
                v.push(Bytes::from(b));
            } else {
                v.push(a.clone());
            }
        }
        let max = self.config.slowlog_max_len.load(Ordering::Relaxed).max(0) as usize;
        let mut log = self.slowlog.lock();
        let id = log.next_id;
        log.next_id += 1;
        let time = self.clock.unix_ms() / 1000;
        log.entries.push_front(SlowEntry {
            id,
            time,
            micros: took,
            args: v,
            addr: client.info.addr.clone(),
            name: client.info.name.lock().clone().unwrap_or_default(),
        });
        log.entries.truncate(max);
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
    Bytes::from(s)
}

/// Adds a command's effects to `effects`: the commands it asked to propagate as, or else its own
/// arguments (see [`crate::changes`]).
fn propagate(effects: &mut Vec<crate::changes::Effect>, db: usize, args: &[Bytes], rewrite: Option<Vec<Vec<Bytes>>>) {
    match rewrite {
        Some(cmds) => effects.extend(cmds.into_iter().map(|args| crate::changes::Effect { db, args })),
        None => effects.push(crate::changes::Effect { db, args: args.to_vec() }),
    }
}
