//! Dispatch: running one command for a client, from the table lookup and the generic checks to the
//! handler, its statistics, the slow log, MONITOR and the change stream, and serving the clients
//! blocked on keys it changed. [`Server::execute`] is the engine's single entry point.

use crate::client::{Client, RecentCommand, ReplyMode};
use crate::command::{Flags, Keys};
use crate::ctx::{Command, Ctx};
use crate::keyspace::PREFETCH_BATCH;
use crate::server::{Server, SlowEntry};
use bytes::Bytes;
use resp::Frame;
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// What [`Server::look_ahead`] tells a connection of a request it decoded ahead of its turn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ahead {
    /// The position of its first key, to load ahead.
    pub key: Option<usize>,
    /// Whether the requests after it may be decoded before it runs.
    pub decode_past: bool,
}

impl Server {
    /// Runs one command. Returns the reply to send, or None when the client asked for no reply.
    pub fn execute(&self, client: &mut Client, args: &[Bytes]) -> Option<Frame> {
        if self.debug.frozen_until.load(Ordering::Relaxed) != 0 {
            self.wait_thawed();
        }
        let reply = self.execute_inner(client, args);
        // A client released from a pause has run its command again: the next one's turn.
        self.pause_turn_done(client.id);
        if let Some(r) = &reply
            && !std::mem::take(&mut client.error_counted)
        {
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

    /// What a connection decoding requests ahead of their turn needs to know of one (`args`):
    /// where its first key is (commands whose key spec starts at a fixed position), for
    /// [`Server::prefetch`], and whether the requests after it may be decoded before it runs.
    /// Only past a command of keys at fixed positions that does not block (GET, SET, INCR,
    /// MSET...): such a command cannot change how the next requests decode. The client's
    /// authentication (AUTH, HELLO, RESET), `proto-max-bulk-len` (CONFIG SET, also inside EXEC)
    /// and what the connection becomes (SYNC, MONITOR) change through commands without keys, and a
    /// blocking command would hold the requests decoded after it out of the query buffer while it
    /// waits.
    pub fn look_ahead(&self, client: &Client, args: &[Bytes]) -> Ahead {
        let cmd = args.first().and_then(|name| match client.recent {
            Some(r) if r.named(name) => Some(r.cmd),
            _ => self.table.get(name),
        });
        let Some(cmd) = cmd else { return Ahead::default() };
        match cmd.keys {
            Keys::Range { first, .. } if first > 0 && (first as usize) < args.len() => {
                Ahead { key: Some(first as usize), decode_past: !cmd.flags.has(Flags::BLOCKING) }
            }
            _ => Ahead::default(),
        }
    }

    /// Starts loading the memory of `keys`, the first keys of requests of `client` decoded ahead
    /// of their turn ([`Server::look_ahead`]), in the client's database
    /// ([`crate::keyspace::Keyspace::prefetch`]). Returns whether it was worth it for any of
    /// them (their database large enough, [`crate::keyspace::PREFETCH_MIN_KEYS`]); fewer than two
    /// keys are left alone and answered as worth it, so that the next batch is looked at.
    /// Changes nothing.
    pub fn prefetch<'b>(&self, client: &Client, keys: impl Iterator<Item = &'b [u8]>) -> bool {
        let mut batch: [&[u8]; PREFETCH_BATCH] = [&[]; PREFETCH_BATCH];
        let mut n = 0;
        for key in keys.take(PREFETCH_BATCH) {
            batch[n] = key;
            n += 1;
        }
        n < 2 || self.ks.prefetch(client.db, &batch[..n])
    }

    fn execute_inner(&self, client: &mut Client, args: &[Bytes]) -> Option<Frame> {
        let (now, start) = self.clock.stamp();
        client.info.last_active_ms.store(now, Ordering::Relaxed);
        // CLIENT LIST's `cmd=` is the command as looked up, before any check (Redis's `lastcmd`):
        // rejected and queued commands show too, an unknown one (or subcommand) as NULL, a container
        // without its subcommand as itself.
        let resolved = match client.recent {
            Some(r) if r.named(&args[0]) => Ok(r.cmd),
            _ => self.table.resolve(args).inspect(|&c| client.recent = RecentCommand::new(&args[0], c)),
        };
        let cmd = match resolved {
            Ok(c) => {
                client.show_last_cmd(c.name);
                c
            }
            Err(e) => {
                let known = self.table.get(&args[0]);
                if let Some(c) = known {
                    self.reject(c);
                }
                client.show_last_cmd(known.filter(|_| args.len() == 1).map_or("NULL", |c| c.name));
                client.multi.flag_error();
                return Some(e);
            }
        };
        if !cmd.arity_ok(args.len()) {
            self.reject(cmd);
            client.multi.flag_error();
            return Some(crate::error::wrong_arity(cmd.name));
        }
        if !client.authenticated && !cmd.flags.has(Flags::NO_AUTH) && self.config.has_password.load(Ordering::Relaxed) {
            self.reject(cmd);
            client.multi.flag_error();
            return Some(crate::error::noauth());
        }
        // ACL (see crate::acl): one load for an unrestricted user; commands queued in MULTI are
        // checked now and again by EXEC, scripts' calls by the Lua call path.
        let context = if client.multi.active() { crate::acl::Context::Multi } else { crate::acl::Context::Toplevel };
        if let Err(d) = self.acl_check(client, cmd, args, context) {
            self.reject(cmd);
            return Some(self.reject_in_multi(client, cmd, Frame::error(d.reply(cmd))));
        }
        // maxmemory (Redis's processCommand): evict first; refuse what may grow memory if that failed.
        // Not while a script runs long: it holds the shards eviction would wait for.
        client.oom = false;
        if self.config.maxmemory.load(Ordering::Relaxed) > 0 && !client.from_primary && !self.script_running_long(now) {
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
        // The tracking table stays within tracking-table-max-keys (Redis checks before each
        // command, queued ones included).
        if self.tracking.clients.load(Ordering::Relaxed) > 0 {
            self.limit_tracking_table();
        }
        if self.writes_need_replicas() && self.is_write(client, cmd, args) {
            self.reject(cmd);
            return Some(self.reject_in_multi(client, cmd, Frame::error(crate::error::NOREPLICAS)));
        }
        // A replica: read-only, and with `replica-serve-stale-data no` nothing while its link is down.
        if self.upstream.is_replica()
            && let Some(e) = self.replica_refuses(client, cmd, args, self.is_write(client, cmd, args))
        {
            self.reject(cmd);
            return Some(self.reject_in_multi(client, cmd, e));
        }
        // After a failed background save, writes (and PING, as in Redis) wait for a good one.
        if !client.from_primary
            && self.persistence.last_bgsave_failed.load(Ordering::Relaxed)
            && (self.is_write(client, cmd, args) || cmd.name == "ping")
            && self.writes_denied_by_disk_error()
        {
            self.reject(cmd);
            return Some(self.reject_in_multi(client, cmd, Frame::error(crate::error::MISCONF)));
        }
        // A RESP2 client with subscriptions reads messages on its connection: only commands that
        // answer in the same shape are let through.
        if client.subs.total() > 0
            && client.proto == resp::Protocol::Resp2
            && !matches!(
                cmd.name,
                "ping"
                    | "subscribe"
                    | "ssubscribe"
                    | "unsubscribe"
                    | "sunsubscribe"
                    | "psubscribe"
                    | "punsubscribe"
                    | "quit"
                    | "reset"
            )
        {
            self.reject(cmd);
            return Some(self.reject_in_multi(
                client,
                cmd,
                Frame::error(format!(
                    "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
                    cmd.name
                )),
            ));
        }
        // A replica's connection does not touch the keyspace (Redis: a replica is exempt from
        // client pauses, which it must not use to get round them).
        if client.is_replica
            && (cmd.flags.has(Flags::READONLY) || cmd.flags.has(Flags::WRITE) || cmd.flags.has(Flags::MAY_REPLICATE))
        {
            self.reject(cmd);
            return Some(self.reject_in_multi(
                client,
                cmd,
                Frame::error("ERR Replica can't interact with the keyspace"),
            ));
        }
        // Loading (Redis checks it before a busy script): at startup or a replica's full sync,
        // every command without the `loading` flag; while a replica loads asynchronously, those
        // flagged `no_async_loading`.
        if (self.loading.load(Ordering::Relaxed) && !cmd.flags.has(Flags::LOADING))
            || (self.async_loading.load(Ordering::Relaxed) && cmd.flags.has(Flags::NO_ASYNC_LOADING))
        {
            self.reject(cmd);
            return Some(self.reject_in_multi(
                client,
                cmd,
                Frame::error("LOADING Redis is loading the dataset in memory"),
            ));
        }
        // The AOF could not be written: writes wait until it can (Redis's DISK_ERROR_TYPE_AOF).
        if self.persistence.aof_write_failed.load(Ordering::Relaxed)
            && self.changes.aof_on()
            && (self.is_write(client, cmd, args) || cmd.name == "ping")
        {
            self.reject(cmd);
            let text = format!("MISCONF Errors writing to the AOF file: {}", self.persistence.aof_last_error.lock());
            return Some(self.reject_in_multi(client, cmd, Frame::error(text)));
        }
        if let Some(e) = self.busy_error_at(cmd, Some(now)) {
            self.reject(cmd);
            return Some(self.reject_in_multi(client, cmd, e));
        }
        if client.multi.active() && cmd.flags.has(Flags::NO_MULTI) {
            self.reject(cmd);
            client.multi.flag_error();
            return Some(Frame::error("ERR Command not allowed inside a transaction"));
        }
        // CLIENT PAUSE: last of the checks, before MULTI queues the command (see crate::pause).
        // The primary's stream is held by its link instead (`Server::pause_holds_primary`).
        if !client.from_primary && self.postpone_if_paused(client, cmd, args, now) {
            return None;
        }
        if client.multi.active() && !matches!(cmd.name, "exec" | "discard" | "multi" | "watch" | "quit" | "reset") {
            if let Some(q) = client.multi.queued.as_mut() {
                q.push((cmd, args.to_vec()));
                client.info.multi.store(q.len() as i64, Ordering::Relaxed);
                client.info.multi_mem.fetch_add(crate::transactions::queued_size(args), Ordering::Relaxed);
            }
            return Some(Frame::simple("QUEUED"));
        }
        let handed_off = std::cell::Cell::new(false);
        let give_up = || {
            if !handed_off.replace(true) {
                self.long_op();
            }
            self.busy_error(cmd).is_some()
        };
        let locked = if cmd.needs_all_shards(args) || self.scripting.needs_all_shards(cmd, args) {
            self.ks.lock_all_until(&give_up)
        } else if let Some(i) = cmd.keys.single(args.len()) {
            self.ks.lock_key_until(&args[i], &give_up)
        } else {
            let pos = cmd.keys.positions(args);
            match pos[..] {
                [] => Some(self.ks.lock_none()),
                [i] => self.ks.lock_shard_until(self.ks.shard_of(&args[i]), &give_up),
                _ => self.ks.lock_shards_until(pos.iter().map(|&i| self.ks.shard_of(&args[i])), &give_up),
            }
        };
        let Some(mut locked) = locked else {
            self.reject(cmd);
            let e = self.busy_error(cmd).unwrap_or_else(|| Frame::error(crate::error::BUSY_EVAL));
            return Some(self.reject_in_multi(client, cmd, e));
        };
        let reply = self.call_from(client, &mut locked, cmd, args, now, start);
        if self.upstream.is_replica() && !client.from_primary && cmd.flags.has(Flags::WRITE) {
            self.remember_own_expires(client, &mut locked, cmd, args);
        }
        if matches!(cmd.name, "scan" | "randomkey") && self.changes.enabled() {
            // Redis's `touches-arbitrary-keys` commands: the keys they found expired go out as
            // units of their own, not in one MULTI (Redis's propagatePendingCommands).
            for e in std::mem::take(&mut client.effects) {
                self.publish_unit(now, vec![e]);
            }
        }
        self.publish_changes(client, &mut locked, now);
        // Blocked clients are served after the whole top-level command (a MULTI that pushes then
        // deletes wakes nobody), before its locks are released. Reads count: a lazy expiry can free
        // a lock that has waiters.
        self.serve_ready(&mut locked, now);
        if self.tracking.clients.load(Ordering::Relaxed) > 0 {
            self.broadcast_invalidations(crate::tracking::Cause::of(client));
            // CLIENT CACHING applies to the next command (or transaction) only.
            if client.tracking
                && !client.multi.active()
                && !cmd.name.starts_with("client|")
                && let Some(t) = client.info.tracking.lock().as_mut()
            {
                t.caching = false;
            }
        }
        if let Some(req) = client.block.take() {
            if client.defer_blocking {
                // The caller waits its own way: the request stays for it, the reply is the
                // timeout's (see `Client::defer_blocking`).
                let reply = req.timeout_reply.clone();
                client.block = Some(req);
                return Some(reply);
            }
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
        // Its reply shows or depends on data (commands of EXEC and scripts set it on their own).
        client.wait_durable |= cmd.flags.has(Flags::READONLY) || cmd.flags.has(Flags::WRITE);
        let mut ctx = Ctx::new(self, client, locked, args, now, cmd);
        let reply = (cmd.handler)(&mut ctx);
        let (dirty, rewrite, named) = (ctx.dirty, ctx.rewrite.take(), std::mem::take(&mut ctx.events));
        if self.ks.key_log() != 0 {
            let changed = dirty > 0 || rewrite.is_some() || !named.is_empty();
            let ran = crate::notify::Ran { name: cmd.name, args, changed, named: &named };
            self.raise_key_events(locked, Some(ran), db, crate::tracking::Cause::of(client));
        }
        if client.tracking {
            // Reads remember their keys. A script that called a read command remembers the keys
            // it declared (its own commands' keys are not followed), as Redis does.
            let script = matches!(cmd.name, "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "fcall" | "fcall_ro");
            if script {
                if std::mem::take(&mut client.script_read) {
                    self.remember_keys(client, cmd, args);
                }
            } else if cmd.flags.has(Flags::READONLY) {
                if client.in_script {
                    client.script_read = true;
                } else {
                    self.remember_keys(client, cmd, args);
                }
            }
        }
        if matches!(cmd.name, "flushall" | "flushdb") {
            self.invalidate_all(crate::tracking::Cause::of(client));
        }
        if self.changes.enabled() {
            // Commands run on this one's behalf (EXEC's, a script's) propagated what it did.
            let inner = client.effects.len() != mark;
            let own = if inner { None } else { Some((db, args, client.propagate_to)) };
            self.collect_effects(locked, &mut client.effects, dirty, rewrite, own);
        }
        let took = self.clock.ticks_us().saturating_sub(start_ticks);
        // Also total_commands_processed, as Redis's call() counts it: commands that ran, EXEC's and
        // scripts' included, once they ran (not the rejected, unknown or queued ones; INFO does not
        // count itself).
        self.stats.count_call(cmd, took, reply.is_error(), dirty);
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
        req: crate::waiters::BlockRequest,
    ) {
        let keys = req.keys.clone();
        let w = client.waiter(cmd, args, req);
        self.enqueue(client, locked, args, &keys, Arc::new(w));
    }

    /// Queues `w`, `client`'s waiter for `args`, on each of `keys` (locked), and shows the client
    /// blocked (CLIENT LIST, INFO, CLIENT UNBLOCK) until [`Server::unblocked`].
    fn enqueue(
        &self,
        client: &mut Client,
        locked: &mut crate::keyspace::Locked<'_>,
        args: &[Bytes],
        keys: &[Bytes],
        w: Arc<crate::ctx::Waiter>,
    ) {
        for k in keys {
            locked.shard_for(k).dbs[client.db].block(k, w.clone());
        }
        client.info.set_blocked_on(Some(w.clone()));
        client.blocked = Some(w);
        self.mark_blocked(client, args);
    }

    /// Queues a waiter that blocked before (a consensus node loading a snapshot puts back the lock
    /// waiters the snapshot holds, in their order) without running its command: `args` is the
    /// blocking command (`LOCK key owner ttl WAIT timeout`), `deadline` its deadline on the
    /// server's clock; `locked` holds the key's shard. Counted in `blocked_clients` until
    /// [`Server::forget_waiter`].
    #[allow(clippy::too_many_arguments)]
    pub fn restore_waiter(
        &self,
        locked: &mut crate::keyspace::Locked<'_>,
        info: Arc<crate::clients::ClientInfo>,
        db: usize,
        proto: resp::Protocol,
        args: Vec<Bytes>,
        deadline: Option<u64>,
        wake: Arc<dyn Fn() + Send + Sync>,
    ) -> Result<Arc<crate::ctx::Waiter>, Frame> {
        let cmd = self.table.resolve(&args)?;
        let key = args.get(1).cloned().ok_or_else(crate::error::syntax)?;
        let req = crate::waiters::BlockRequest {
            keys: vec![key.clone()],
            deadline,
            timeout_reply: Frame::Null,
            serve_args: None,
        };
        let w = Arc::new(crate::waiters::Waiter::new(info, db, proto, cmd, args, req, wake));
        locked.shard_for(&key).dbs[db].block(&key, w.clone());
        self.blocked_clients.fetch_add(1, Ordering::Relaxed);
        Ok(w)
    }

    /// Takes the waiter `client`'s last command queued, leaving the client itself unblocked:
    /// whoever takes it answers for it (a consensus node's state machine, whose one apply client
    /// queues waiters for the clients of the proposing node). It stays counted in
    /// `blocked_clients` until [`Server::forget_waiter`].
    pub fn hand_on_waiter(&self, client: &mut Client) -> Option<Arc<crate::ctx::Waiter>> {
        let w = client.blocked.take()?;
        client.info.set_blocked_on(None);
        clear_blocked_marks(&client.info);
        Some(w)
    }

    /// Stops counting a waiter queued by [`Server::restore_waiter`] or by a command of a client
    /// that handed its waiter on (`blocked_clients`); the waiter itself leaves its queue once it no
    /// longer waits.
    pub fn forget_waiter(&self) {
        self.blocked_clients.fetch_sub(1, Ordering::Relaxed);
    }

    /// Shows `client` blocked in CLIENT LIST and INFO: the `b` flag, its command's arguments as
    /// `argv-mem` (Redis keeps them while the client waits), `blocked_clients`; also a client the
    /// connection keeps waiting on its own (SHUTDOWN's wait for replicas, Redis's `BLOCKED_SHUTDOWN`).
    pub fn mark_blocked(&self, client: &mut Client, args: &[Bytes]) {
        client.info.set_flag('b', true);
        client.info.argv_mem.store(args.iter().map(|a| a.len()).sum(), Ordering::Relaxed);
        self.blocked_clients.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts the reply a blocked client got later (served by a writer, unblocked, timed out): an
    /// error counts in the error statistics and as a failed call of its command, as Redis counts
    /// it on unblocking.
    pub fn count_blocked_reply(&self, w: &crate::ctx::Waiter, reply: &Frame) {
        if reply.is_error() {
            self.stats.count_error(reply);
            self.stats.count_failed(w.cmd);
        }
    }

    /// The connection layer is done with a blocked client (served, timed out, or gone).
    pub fn unblocked(&self, client: &mut Client) {
        if client.blocked.take().is_some() {
            client.info.set_blocked_on(None);
            self.unmark_blocked(client);
        }
    }

    /// Undoes [`Server::mark_blocked`].
    pub fn unmark_blocked(&self, client: &Client) {
        clear_blocked_marks(&client.info);
        self.blocked_clients.fetch_sub(1, Ordering::Relaxed);
    }

    /// Starts recording the change stream (see [`crate::changes`]): from now on every change is
    /// published, keys the server deletes on its own included.
    pub fn record_changes(&self) {
        self.log_server_deletes();
        self.changes.enable();
    }

    /// Makes every table log the keys it deletes on its own (expired, evicted), which the change
    /// stream holds as `DEL`s: before the stream's first consumer starts.
    pub(crate) fn log_server_deletes(&self) {
        self.ks.for_each_shard(|s| s.dbs.iter_mut().for_each(|t| t.log_server_deletes(true)));
    }

    /// Publishes the effects of the top-level command finishing on `client` as one unit, after the
    /// `DEL`s of keys the locked shards' tables deleted on their own meanwhile. Called under the
    /// command's locks, before blocked clients are served: by [`Server::execute`], and by EXEC, which
    /// takes locks of its own.
    pub fn publish_changes(&self, client: &mut Client, locked: &mut crate::keyspace::Locked<'_>, now: u64) {
        if self.changes.enabled() {
            self.publish_server_deletes(locked, now);
            self.publish_unit(now, std::mem::take(&mut client.effects));
        }
    }

    /// One unit of the change stream: to the replicas, then to the AOF and the log.
    pub(crate) fn publish_unit(&self, now: u64, effects: Vec<crate::changes::Effect>) {
        // A replica's stream is its primary's bytes (`Server::applied_from_primary`); its own
        // writes (a writable replica's) stay local, as in Redis.
        if self.repl.active() && !self.upstream.is_replica() {
            let limit = self.config.replica_obuf_limits().hard;
            for r in self.repl.feed_unit(&effects, limit) {
                r.wake();
            }
        }
        self.changes.publish(now, self.aof_timestamp(now), effects);
    }

    /// With `aof-timestamp-enabled`, the Unix second of `now` (monotonic ms) for the AOF's `#TS:`.
    fn aof_timestamp(&self, now: u64) -> Option<i64> {
        self.config
            .aof_timestamps
            .load(Ordering::Relaxed)
            .then(|| (now as i64 + self.clock.wall_offset_ms()).div_euclid(1000))
    }

    /// Publishes a `DEL` unit for each key the locked shards' tables deleted on their own (expired,
    /// evicted) since the last call, outside any command (the cron, eviction).
    fn publish_server_deletes(&self, locked: &mut crate::keyspace::Locked<'_>, now: u64) {
        let mut dels = Vec::new();
        self.drain_server_deletes(locked, &mut dels);
        for d in dels {
            self.publish_unit(now, vec![d]);
        }
    }

    /// Turns what a handler (or a waiter's serve step) reported into effects, in order: the `DEL`s
    /// of keys the tables deleted on their own while it ran (BLMOVE's expired destination, a key a
    /// write found expired), then its own change when it made one or asked to be propagated, as
    /// its rewrite or else `own`'s database and arguments, for `own`'s targets. `own` is None when commands run on its
    /// behalf (EXEC's, a script's) propagated already.
    fn collect_effects(
        &self,
        locked: &mut crate::keyspace::Locked<'_>,
        out: &mut Vec<crate::changes::Effect>,
        dirty: u64,
        rewrite: Option<Vec<Vec<Bytes>>>,
        own: Option<(usize, &[Bytes], u8)>,
    ) {
        self.drain_server_deletes(locked, out);
        if let Some((db, args, targets)) = own
            && (dirty > 0 || rewrite.is_some())
        {
            propagate(out, db, args, rewrite, targets);
        }
    }

    /// Appends a `DEL` effect for each key the locked shards' tables deleted on their own since the
    /// last call.
    fn drain_server_deletes(&self, locked: &mut crate::keyspace::Locked<'_>, out: &mut Vec<crate::changes::Effect>) {
        for s in locked.shards_mut() {
            for (db, key) in s.take_server_deletes() {
                out.push(crate::changes::Effect::new(db, &[&b"DEL"[..], &key[..]]));
            }
        }
    }

    /// Serves clients blocked on keys written by the command that just ran, in arrival order, while
    /// the writer still holds the locks (see [`crate::waiters`]).
    ///
    /// Whoever takes its own locks (EXEC, scripts) must call this before releasing them.
    #[inline]
    pub fn serve_ready(&self, locked: &mut crate::keyspace::Locked<'_>, now: u64) {
        // After nearly every command there is nothing to do: three loads inline.
        if self.ks.key_log() != 0 || self.changes.enabled() || locked.any_ready() {
            self.serve_ready_keys(locked, now);
        }
    }

    /// [`Server::serve_ready`] when there may be something to do.
    #[inline(never)]
    fn serve_ready_keys(&self, locked: &mut crate::keyspace::Locked<'_>, mut now: u64) {
        use crate::waiters::{Serve, WaitState};
        loop {
            // Keys the cron expired or eviction removed, and an expired lock's events before the
            // grant to its next waiter.
            if self.ks.key_log() != 0 {
                self.raise_key_events(locked, None, 0, crate::tracking::Cause { id: 0, after_reply: None });
            }
            // An expired lock's DEL goes before the grant to its next waiter.
            if self.changes.enabled() {
                self.publish_server_deletes(locked, now);
            }
            // Mostly nothing is ready: a load per held shard, no list built.
            if !locked.any_ready() {
                return;
            }
            let mut work: Vec<(u64, usize, crate::value::Key)> = Vec::new();
            for s in locked.shards_mut() {
                work.extend(s.take_ready());
            }
            if work.is_empty() {
                return;
            }
            // Keys expire against the time now, not the start of the command that made them
            // ready (Redis's handleClientsBlockedOnKeys updates its cached time first): a key that
            // expired during a long command (a DEBUG SLEEP in a MULTI) serves nobody.
            now = now.max(self.clock.now_ms());
            work.sort_unstable_by_key(|(seq, _, _)| *seq);
            for (_, db, key) in work {
                // Waiters passed over (`Serve::Pass`, ringing waiters) stay in front of the ones
                // still to try.
                let mut skip = 0;
                // A ringing waiter of this key was rung (or told to try again).
                let mut rang = false;
                while let Some(w) = locked.shard_for(&key).dbs[db].nth_waiter(&key, skip) {
                    let Ok(w) = w.into_any().downcast::<crate::ctx::Waiter>() else {
                        unreachable!("tables queue only the runtime's waiters")
                    };
                    if w.rings() {
                        // Rung, not served (see crate::waiters): the first ringing waiter the key
                        // can serve is rung, or told to try again while it runs; the ringing
                        // waiters after it wait for its outcome. Waiters of other kinds behind
                        // them are served as usual.
                        if !rang {
                            rang = self.try_ring(locked, &w, &key, now);
                        }
                        skip += 1;
                        continue;
                    }
                    if !w.claim() {
                        // Being served through another of its keys by another writer: keep order,
                        // stop here (that writer wakes it either way).
                        break;
                    }
                    if w.cmd.serve.is_none() {
                        w.finish(WaitState::Retry);
                        continue;
                    }
                    let outcome = self.serve_one(locked, &w.info, w.db, w.proto, w.cmd, &w.args, &key, now);
                    match outcome {
                        Serve::Reply(f) => w.finish(WaitState::Served(f)),
                        Serve::Retry => w.finish(WaitState::Retry),
                        Serve::Pass => {
                            w.finish(WaitState::Waiting);
                            skip += 1;
                        }
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

    /// Runs `cmd`'s serve step with `args` for `key`, which just became ready, on behalf of the
    /// blocked client `info` (database `db`, protocol `proto`), against `locked`: what a writer does
    /// for a waiter, with the events, effects, statistics and slow log entry a command gets. A
    /// reply comes with the invalidations the client's own change caused after it.
    #[allow(clippy::too_many_arguments)]
    fn serve_one(
        &self,
        locked: &mut crate::keyspace::Locked<'_>,
        info: &Arc<crate::clients::ClientInfo>,
        db: usize,
        proto: resp::Protocol,
        cmd: &'static Command,
        args: &[Bytes],
        key: &[u8],
        now: u64,
    ) -> crate::waiters::Serve {
        use crate::waiters::Serve;
        let Some(serve) = cmd.serve else { return Serve::Retry };
        let mut stand_in = Client::detached(info.clone(), db, proto);
        let started = self.clock.ticks_us();
        let outcome = {
            let mut ctx = Ctx::new(self, &mut stand_in, locked, args, now, cmd);
            let outcome = serve(&mut ctx, key);
            let (dirty, rewrite) = (ctx.dirty, ctx.rewrite.take());
            if dirty > 0 {
                self.stats.add_dirty(dirty);
            }
            if self.ks.key_log() != 0 {
                // Named after what the serve step did (LPOP, LMOVE, ZPOPMIN...), as
                // Redis names a served blocking pop's events.
                let effect = rewrite.as_ref().and_then(|r| r.first()).cloned().unwrap_or_default();
                let name = match effect.first() {
                    _ if cmd.name == "lock" => "lock_served".to_string(),
                    Some(n) => String::from_utf8_lossy(n).to_ascii_lowercase(),
                    None => String::new(),
                };
                let ran = crate::notify::Ran { name: &name, args: &effect, changed: true, named: &ctx.events };
                // The stand-in has the served client's id.
                self.raise_key_events(ctx.locked, Some(ran), db, crate::tracking::Cause::of(ctx.client));
            }
            if self.changes.enabled() {
                // A served waiter's own arguments (BLPOP ...) are never its effect: its
                // serve step says what it did.
                debug_assert!(dirty == 0 || rewrite.is_some(), "{} served without its effect", cmd.name);
                let mut effects = Vec::new();
                self.collect_effects(
                    ctx.locked,
                    &mut effects,
                    dirty,
                    rewrite,
                    Some((db, &[], crate::changes::Effect::ALL)),
                );
                self.publish_unit(now, effects);
            }
            outcome
        };
        match outcome {
            Serve::Reply(f) => {
                // Logged as it was sent (BLPOP, not the LPOP it did), after the command that
                // served it, as Redis's updateStatsOnUnblock logs it.
                let took = self.clock.ticks_us().saturating_sub(started);
                if self.is_slow(cmd, took) {
                    self.slowlog_push(&stand_in, &redacted(cmd, args), took);
                }
                // Its own invalidations follow the reply (BLMOVE's destination).
                let msgs = std::mem::take(&mut stand_in.after_reply);
                Serve::Reply(crate::tracking::followed_by(f, proto, &msgs))
            }
            other => other,
        }
    }

    /// Rings the ringing waiter `w` for `key` if the key can serve it now (its command's
    /// [`Command::ready`], else the key's existence); true if it was rung or told to try again.
    fn try_ring(&self, locked: &mut crate::keyspace::Locked<'_>, w: &crate::ctx::Waiter, key: &[u8], now: u64) -> bool {
        let mut stand_in = Client::detached(w.info.clone(), w.db, w.proto);
        let ready = {
            let mut ctx = Ctx::new(self, &mut stand_in, locked, &w.args, now, w.cmd);
            match w.cmd.ready {
                Some(ready) => ready(&mut ctx, key),
                None => ctx.db().exists(key),
            }
        };
        ready && w.ring(key)
    }

    /// Queues `client` as a ringing waiter (see [`crate::waiters`]) for its blocking command `args`,
    /// which found nothing to serve it and handed back its request `req` (see
    /// [`Client::defer_blocking`]): its connection is woken when one of the keys can serve it, and
    /// runs the serve step itself ([`Server::serve_now`], on every node of a consensus group). The
    /// keys are looked at as it is queued, under their locks: one that can serve a ringing waiter
    /// already (a write came between the command and now) rings the first such at once, this one
    /// or one queued before it. Shown blocked (CLIENT LIST, INFO) until [`Server::unblocked`].
    pub fn block_ringing(
        &self,
        client: &mut Client,
        args: &[Bytes],
        req: crate::waiters::BlockRequest,
    ) -> Result<Arc<crate::ctx::Waiter>, Frame> {
        let cmd = self.table.resolve(args)?;
        let keys = req.keys.clone();
        let w = Arc::new(client.waiter(cmd, args, req).ringing());
        let mut locked = self.ks.lock_keys(keys.iter().map(|k| &k[..]));
        self.enqueue(client, &mut locked, args, &keys, w.clone());
        let now = self.clock.now_ms();
        self.ring_first(&mut locked, client.db, &keys, now);
        Ok(w)
    }

    /// Runs the serve step of the blocking command `args` (a ringing waiter's arguments, XREAD's
    /// with its IDs resolved) for the first of `keys` that serves it, now, on behalf of `client`,
    /// as the writer that made the key ready would have for a waiter (see [`Server::serve_one`]);
    /// then serves the waiters its change made ready. None: none of the keys serves it (its waiter
    /// waits on). The run of a ringing waiter, which a consensus node applies from its log.
    pub fn serve_now(&self, client: &mut Client, args: &[Bytes], keys: &[Bytes]) -> Option<Frame> {
        use crate::waiters::Serve;
        let cmd = self.table.resolve(args).ok()?;
        // The command's keys (BLMOVE's destination with its source) and the ones to serve from.
        let pos = cmd.keys.positions(args);
        let shards = pos.iter().map(|&i| &args[i][..]).chain(keys.iter().map(|k| &k[..]));
        let mut locked = self.ks.lock_keys(shards);
        let now = self.clock.now_ms();
        let mut reply = None;
        for key in keys {
            if let Serve::Reply(f) =
                self.serve_one(&mut locked, &client.info, client.db, client.proto, cmd, args, key, now)
            {
                reply = Some(f);
                break;
            }
        }
        self.serve_ready(&mut locked, now);
        reply
    }

    /// Gives the ringing waiters queued on `keys` (database `db`) after one that leaves their
    /// turn: each key that can serve one rings the first such (see [`crate::waiters`]). The
    /// connection of a ringing waiter calls it when it is done with it, whatever the outcome: a
    /// ring it took may have gone unused (it was served from another key, timed out, went away).
    pub fn pass_on(&self, db: usize, keys: &[Bytes]) {
        let mut locked = self.ks.lock_keys(keys.iter().map(|k| &k[..]));
        let now = self.clock.now_ms();
        self.ring_first(&mut locked, db, keys, now);
    }

    /// For each of `keys` (database `db`, locked): the first ringing waiter queued on it that the
    /// key can serve is rung (or told to try again while it runs). Other waiters are left alone.
    fn ring_first(&self, locked: &mut crate::keyspace::Locked<'_>, db: usize, keys: &[Bytes], now: u64) {
        for key in keys {
            let mut skip = 0;
            while let Some(w) = locked.shard_for(key).dbs[db].nth_waiter(key, skip) {
                let Ok(w) = w.into_any().downcast::<crate::ctx::Waiter>() else {
                    unreachable!("tables queue only the runtime's waiters")
                };
                if w.rings() && self.try_ring(locked, &w, key, now) {
                    break;
                }
                skip += 1;
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
        client.multi.any_run(cmd, args, |c, a| c.flags.has(Flags::DENYOOM) || self.scripting.denies_oom(c, a))
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

    /// Redis's `writeCommandsDeniedByDiskError` for RDB: the last background save failed, save points
    /// are set and `stop-writes-on-bgsave-error` is on.
    fn writes_denied_by_disk_error(&self) -> bool {
        self.config.get("stop-writes-on-bgsave-error").as_deref() == Some("yes") && !self.save_points().is_empty()
    }

    /// Redis's `is_write_command`: a write command, a script whose shebang lets it write (its flags
    /// replace EVAL's and FCALL's, as `getCommandFlags` has them), or EXEC of a queue holding one.
    fn is_write(&self, client: &Client, cmd: &Command, args: &[Bytes]) -> bool {
        client.multi.any_run(cmd, args, |c, a| c.flags.has(Flags::WRITE) || self.scripting.may_write(c, a))
    }

    /// Redis's `rejectCommand` inside MULTI: flags the transaction, and a rejected EXEC discards it
    /// with `-EXECABORT Transaction discarded because of: <error>`.
    fn reject_in_multi(&self, client: &mut Client, cmd: &Command, e: Frame) -> Frame {
        if cmd.name == "exec" && client.multi.active() {
            client.leave_multi();
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

    fn reject(&self, cmd: &Command) {
        self.stats.count_rejected(cmd);
    }

    /// Slow log and MONITOR, stamped with the time the command finished (as Redis stamps both).
    /// A command that blocks is logged when it is served, not now (Redis's call() leaves a
    /// blocked client to updateStatsOnUnblock; one that times out is not logged).
    fn after_call(&self, client: &Client, cmd: &Command, args: &[Bytes], took: u64) {
        let slow = client.block.is_none() && self.is_slow(cmd, took);
        let monitored = self.has_monitors.load(Ordering::Relaxed)
            && !cmd.flags.has(Flags::SKIP_MONITOR)
            && !cmd.flags.has(Flags::ADMIN);
        if !slow && !monitored {
            return;
        }
        let args = &*redacted(cmd, args);
        if slow {
            self.slowlog_push(client, args, took);
        }
        if monitored {
            self.feed_monitors(client, args);
        }
    }

    /// True when `cmd`, having taken `took` microseconds, goes to the slow log.
    fn is_slow(&self, cmd: &Command, took: u64) -> bool {
        let threshold = self.config.slowlog_log_slower_than.load(Ordering::Relaxed);
        threshold >= 0 && took as i64 >= threshold && !cmd.flags.has(Flags::SKIP_SLOWLOG)
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

/// Adds a command's effects to `effects`: the commands it asked to propagate as, or else its own
/// arguments (see [`crate::changes`]), for `targets` (none: nothing is added).
fn propagate(
    effects: &mut Vec<crate::changes::Effect>,
    db: usize,
    args: &[Bytes],
    rewrite: Option<Vec<Vec<Bytes>>>,
    targets: u8,
) {
    if targets == 0 {
        return;
    }
    let effect = |args| crate::changes::Effect { db, args, targets };
    match rewrite {
        Some(cmds) => effects.extend(cmds.into_iter().map(effect)),
        None => effects.push(effect(args.to_vec())),
    }
}

/// `args` as SLOWLOG and MONITOR show them: passwords replaced by `(redacted)`, as Redis's
/// `redactClientCommandArgument` does (AUTH's arguments, HELLO's and MIGRATE's AUTH/AUTH2 ones,
/// ACL SETUSER's user and rules, the values of sensitive parameters in CONFIG SET).
fn redacted<'a>(cmd: &Command, args: &'a [Bytes]) -> std::borrow::Cow<'a, [Bytes]> {
    let eq = |i: usize, w: &str| args.get(i).is_some_and(|a| a.eq_ignore_ascii_case(w.as_bytes()));
    let mut secret: Vec<usize> = Vec::new();
    match cmd.name {
        "auth" => secret.extend(1..args.len()),
        "hello" => {
            if let Some(i) = (2..args.len()).find(|&i| eq(i, "auth")) {
                secret.extend([i + 1, i + 2]);
            }
        }
        "migrate" => {
            for i in 6..args.len() {
                if eq(i, "keys") {
                    break;
                }
                if eq(i, "auth") {
                    secret.push(i + 1);
                } else if eq(i, "auth2") {
                    secret.extend([i + 1, i + 2]);
                }
            }
        }
        // Every argument, the user name too, whether or not the rules are valid (Redis redacts
        // them before it parses them).
        "acl|setuser" => secret.extend(2..args.len()),
        "config|set" => {
            for i in (2..args.len()).step_by(2) {
                let name = String::from_utf8_lossy(&args[i]);
                if crate::config::find(&name).is_some_and(|p| p.flags & crate::config::SENS != 0) {
                    secret.push(i + 1);
                }
            }
        }
        _ => {}
    }
    secret.retain(|&i| i < args.len());
    if secret.is_empty() {
        return std::borrow::Cow::Borrowed(args);
    }
    let mut v = args.to_vec();
    for i in secret {
        v[i] = Bytes::from_static(b"(redacted)");
    }
    std::borrow::Cow::Owned(v)
}

/// What CLIENT LIST shows of a blocked client ([`Server::mark_blocked`]): the `b` flag and its
/// command's arguments as `argv-mem`, cleared.
fn clear_blocked_marks(info: &crate::clients::ClientInfo) {
    info.set_flag('b', false);
    info.argv_mem.store(0, Ordering::Relaxed);
}

#[cfg(test)]
mod redaction_tests {
    use crate::testkit::TestServer;

    /// Passwords never reach SLOWLOG (nor MONITOR, fed from the same arguments).
    #[test]
    fn passwords_are_redacted_in_the_slowlog() {
        let ts = TestServer::new();
        let mut c = ts.client();
        c.run("CONFIG SET slowlog-log-slower-than 0");
        for line in [
            "AUTH secretpw",
            "AUTH someone secretpw",
            "HELLO 3 AUTH default secretpw",
            "HELLO 2",
            "MIGRATE 127.0.0.1 1 k 0 10 AUTH secretpw",
            "MIGRATE 127.0.0.1 1 k 0 10 AUTH2 someone secretpw",
            "CONFIG SET requirepass secretpw maxmemory-samples 5",
            "AUTH secretpw",
            "CONFIG SET requirepass \"\"",
            "ACL SETUSER someone on >secretpw +get",
            // Refused (a space in the name): redacted all the same.
            "ACL SETUSER \"someone else\" >secretpw",
        ] {
            c.run(line);
        }
        let log = c.run("SLOWLOG GET 20");
        assert!(!log.contains("secretpw") && !log.contains("someone"), "{log}");
        assert!(log.contains("(redacted)"), "{log}");
        assert!(log.contains("\"maxmemory-samples\"") && log.contains("\"5\""), "other values stay: {log}");
    }
}

#[cfg(test)]
mod blocked_slowlog_tests {
    use crate::testkit::TestServer;

    /// A command that blocks goes to the slow log when it is served, as sent (BLPOP, not the LPOP
    /// it did), after the command that served it (here a transaction that reset the log); one that
    /// times out never does. Redis's unit/slowlog "Rewritten commands are logged as their original
    /// command".
    #[test]
    fn a_blocked_command_is_logged_when_it_is_served() {
        let ts = TestServer::new();
        let (mut a, mut b) = (ts.client(), ts.client());
        a.run("CONFIG SET slowlog-log-slower-than 0");
        assert_eq!(b.run("BLPOP l 0"), "(no reply)");
        a.run("MULTI");
        a.run("LPUSH l foo");
        a.run("SLOWLOG RESET");
        a.run("EXEC");
        assert!(b.blocked_reply().is_some());
        let log = a.run("SLOWLOG GET 10");
        let first = log.find("\"BLPOP\"").unwrap_or_else(|| panic!("the served BLPOP is logged: {log}"));
        assert!(log[first..].contains("\"SLOWLOG\""), "BLPOP after SLOWLOG RESET: {log}");
        assert!(log.contains("[\"BLPOP\", \"l\", \"0\"]") && !log.contains("[\"LPOP\""), "as sent: {log}");
        a.run("SLOWLOG RESET");
        assert_eq!(b.run("BLPOP none 1"), "(no reply)");
        assert!(b.time_out().is_some());
        assert!(!a.run("SLOWLOG GET 10").contains("BLPOP"), "a timed-out command is not logged");
    }
}

#[cfg(test)]
mod prefetch_tests {
    use crate::keyspace::{PREFETCH_BATCH, PREFETCH_MIN_KEYS};
    use crate::testkit::TestServer;
    use bytes::Bytes;

    fn request(args: &[&str]) -> Vec<Bytes> {
        args.iter().map(|a| Bytes::copy_from_slice(a.as_bytes())).collect()
    }

    /// What a connection does with `requests` decoded ahead: their first keys, loaded ahead.
    fn prefetch(ts: &TestServer, c: &crate::testkit::TestClient, requests: &[Vec<Bytes>]) -> bool {
        let keys = requests.iter().filter_map(|r| ts.srv.look_ahead(&c.client, r).key.map(|k| &r[k][..]));
        ts.srv.prefetch(&c.client, keys)
    }

    fn stat(c: &mut crate::testkit::TestClient, name: &str) -> String {
        let info = c.run("INFO stats");
        let at = info.find(&format!("{name}:")).unwrap_or_else(|| panic!("{name} in {info}"));
        // `run` shows the bulk reply escaped: its lines end in a literal `\r\n`.
        info[at..].split("\\r\\n").next().unwrap().to_string()
    }

    /// Prefetching reads nothing a client can see: no hit or miss counted, no access time
    /// touched, nothing expired, nothing changed; it leaves one request alone.
    #[test]
    fn prefetch_looks_at_a_batch_and_changes_nothing() {
        let config = crate::config::Config::new();
        config.set("enable-debug-command", "yes", true).expect("valid");
        let ts = TestServer::with_config(config);
        let mut c = ts.client();
        for i in 0..100 {
            c.run(&format!("SET key:{i} v{i}"));
        }
        // Enough keys for loading ahead to be worth it.
        for i in 0..PREFETCH_MIN_KEYS * 2 {
            c.run(&format!("SET fill:{i} v"));
        }
        c.run("SET gone x PX 5");
        ts.clock.advance_ms(10_000);
        let stats = |c: &mut crate::testkit::TestClient| {
            ["keyspace_hits", "keyspace_misses", "expired_keys"].map(|s| stat(c, s)).join(" ")
        };
        let idle = c.run("OBJECT IDLETIME key:3");
        let before = (stats(&mut c), c.run("DEBUG DIGEST"));

        let mut batch = Vec::new();
        for i in 0..PREFETCH_BATCH / 2 {
            batch.push(request(&["GET", &format!("key:{i}")]));
            batch.push(request(&["set", &format!("key:{}", 100 + i), "v"]));
        }
        batch.push(request(&["GET", "gone"]));
        assert!(prefetch(&ts, &c, &batch));
        assert!(prefetch(&ts, &c, &[request(&["GET", "key:3"])]));
        assert!(prefetch(&ts, &c, &[]));
        assert!(prefetch(&ts, &c, &vec![request(&["GET", "gone"]); 3]));

        let after = (stats(&mut c), c.run("DEBUG DIGEST"));
        assert_eq!(before, after);
        assert!(
            before.0.starts_with("keyspace_hits:1 keyspace_misses:0 ") && before.0.ends_with("expired_keys:0"),
            "{}",
            before.0
        );
        assert_eq!(c.run("OBJECT IDLETIME key:3"), idle);
        assert_eq!(idle, ":10");
        assert_eq!(c.run("EXISTS key:100"), ":0");
        assert_eq!(c.run("PTTL gone"), ":-2");
    }

    /// A small database is not loaded ahead, and the caller hears that it was not worth it.
    #[test]
    fn a_small_database_is_not_prefetched() {
        let ts = TestServer::new();
        let mut c = ts.client();
        let gets: Vec<Vec<Bytes>> = (0..PREFETCH_BATCH).map(|i| request(&["GET", &format!("key:{i}")])).collect();
        assert!(!prefetch(&ts, &c, &gets));
        for i in 0..PREFETCH_MIN_KEYS / 4 {
            c.run(&format!("SET key:{i} v"));
        }
        assert!(!prefetch(&ts, &c, &gets));
        for i in PREFETCH_MIN_KEYS / 4..PREFETCH_MIN_KEYS * 2 {
            c.run(&format!("SET key:{i} v"));
        }
        assert!(prefetch(&ts, &c, &gets));
        // Requests without keys are left alone (answered as worth it: nothing was judged).
        assert!(prefetch(&ts, &c, &vec![request(&["PING"]); 4]));
    }

    /// Requests are decoded past commands of keys at fixed positions that do not block, and not
    /// past anything that could change how the next requests decode (authentication, the
    /// protocol's limits, the connection's role) or that waits; a command's first key is named
    /// for loading ahead where its key spec gives a fixed position.
    #[test]
    fn decoding_ahead_stops_where_the_next_requests_could_decode_otherwise() {
        let ts = TestServer::new();
        let c = ts.client();
        let ahead = |args: &[&str]| ts.srv.look_ahead(&c.client, &request(args));
        let past = |args: &[&str]| ahead(args).decode_past;
        for plain in
            [&["GET", "k"][..], &["set", "k", "v"], &["INCR", "k"], &["MSET", "a", "1", "b", "2"], &["SETNX", "k", "v"]]
        {
            assert!(past(plain), "{plain:?}");
            assert_eq!(ahead(plain).key, Some(1), "{plain:?}");
        }
        assert_eq!(ahead(&["BLPOP", "k", "0"]).key, Some(1));
        assert_eq!(ahead(&["GET"]).key, None, "no key where the spec puts it");
        assert_eq!(ahead(&["PING"]).key, None);
        for stops in [
            &["AUTH", "pw"][..],
            &["HELLO", "3"],
            &["RESET"],
            &["CONFIG", "SET", "proto-max-bulk-len", "1mb"],
            &["MULTI"],
            &["EXEC"],
            &["SYNC"],
            &["PSYNC", "?", "-1"],
            &["MONITOR"],
            &["SELECT", "1"],
            &["CLIENT", "REPLY", "OFF"],
            &["BLPOP", "k", "0"],
            &["EVAL", "return 1", "1", "k"],
            &["PING"],
            &["NOSUCHCOMMAND", "k"],
            &[],
        ] {
            assert!(!past(stops), "{stops:?}");
        }
    }
}
