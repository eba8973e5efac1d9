//! Replication in the composition: a client becomes a replica (its full sync is the fork-less
//! snapshot at the stream's offset), the stream gets the change stream's units, PUBLISH and the
//! periodic PING, and `min-replicas-*` counts the replicas that acknowledged lately. The
//! replication state itself is `crate::repl`'s; the replica's connection sends its `SyncJob`.

use super::Server;
use crate::client::Client;
use crate::keyspace::Locked;
use crate::persistence::{LoadOptions, SnapshotKind};
use crate::rdb;
use crate::repl::{Psync, ReplicaState, SyncJob};
use crate::upstream::{Failover, Primary};
use bytes::Bytes;
use resp::Frame;
use std::sync::atomic::Ordering;

impl Server {
    /// True when writes must be refused with `NOREPLICAS`: `min-replicas-to-write` and
    /// `min-replicas-max-lag` are set and fewer replicas than that acknowledged within the lag
    /// (Redis's `checkGoodReplicasStatus`).
    pub fn writes_need_replicas(&self) -> bool {
        let Some((n, lag)) = self.config.min_replicas() else { return false };
        if self.upstream.is_replica() {
            return false;
        }
        (self.repl.good_replicas(self.clock.now_ms(), lag) as u64) < n
    }

    /// Appends a command to the replication stream only (not the AOF), in database `db`: PUBLISH,
    /// which Redis propagates as a command of the client's database (a `SELECT` before it when
    /// the stream is elsewhere).
    pub fn feed_replicas_in(&self, db: usize, args: &[Bytes]) {
        if self.repl.active() && !self.upstream.is_replica() {
            let e = crate::changes::Effect::of(db, args.to_vec());
            for r in self.repl.feed_unit(&[e], self.config.replica_obuf_limits().hard) {
                r.wake();
            }
        }
    }

    /// Appends a command that selects no database to the replication stream (PING, GETACK).
    pub fn feed_replicas<A: AsRef<[u8]>>(&self, args: &[A]) {
        if self.repl.active() && !self.upstream.is_replica() {
            for r in self.repl.feed_command(args, self.config.replica_obuf_limits().hard) {
                r.wake();
            }
        }
    }

    /// SYNC (`psync` None) or PSYNC `replid offset` from `client`, with every shard held: the
    /// reply (`+CONTINUE`, `+FULLRESYNC`, or none for SYNC) and the job its connection runs next.
    pub fn start_sync(
        &self,
        client: &mut Client,
        locked: &mut Locked<'_>,
        psync: Option<(&[u8], i64)>,
    ) -> Option<Frame> {
        let now = self.clock.now_ms();
        let (eof_capa, psync2) = self.repl.capa(client.id);
        if let Some((replid, offset)) = psync {
            match self.repl.psync(replid, offset) {
                Psync::Continue { from, replid } => {
                    self.repl.sync_partial_ok.fetch_add(1, Ordering::Relaxed);
                    self.repl.attach(client.info.clone(), ReplicaState::Online, from - 1, false, now);
                    client.become_replica();
                    client.sync = Some(SyncJob::Partial { from });
                    self.log_replica(&format!("Partial resynchronization request from {} accepted.", client.info.addr));
                    let line = if psync2 { format!("CONTINUE {replid}") } else { "CONTINUE".to_string() };
                    return Some(Frame::Simple(Bytes::from(line)));
                }
                Psync::Full => {
                    if replid != b"?" {
                        self.repl.sync_partial_err.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }
        let diskless = self.config.get("repl-diskless-sync").as_deref() == Some("yes");
        let eof = psync.is_some() && eof_capa && diskless;
        let delay_ms = if eof { self.config.get_i64("repl-diskless-sync-delay").max(0) as u64 * 1000 } else { 0 };
        self.log_replica(&format!("Full resync requested by replica {}", client.info.addr));
        client.become_replica();
        if delay_ms > 0 || self.persistence.snapshot_busy() {
            // Redis's WAIT_BGSAVE_START: the file starts once the delay is over and no other
            // snapshot runs; `+FULLRESYNC` is sent then.
            let offset = self.repl.offset();
            self.repl.attach(client.info.clone(), ReplicaState::Waiting, offset, psync.is_none(), now);
            self.repl.wait_sync(client.id, crate::repl::WaitingSync { psync: psync.is_some(), eof });
            client.sync = Some(SyncJob::Wait { psync: psync.is_some(), eof, until: now + delay_ms });
            return None;
        }
        self.full_sync_now(client, locked, psync.is_some(), eof)
    }

    /// Enough replicas wait for a diskless full sync to start it before the delay is over
    /// (`repl-diskless-sync-max-replicas`, 0: no such number).
    pub fn diskless_batch_ready(&self) -> bool {
        let max = self.config.get_i64("repl-diskless-sync-max-replicas");
        max > 0 && self.repl.waiting_diskless() >= max as usize
    }

    /// A waiting full sync ([`SyncJob::Wait`]) tries to start: None while another snapshot runs;
    /// else the `+FULLRESYNC` line (for PSYNC) to send, with the job in `client.sync`.
    pub fn try_full_sync(&self, client: &mut Client, psync: bool, eof: bool) -> Option<Option<Frame>> {
        // Looked at without the locks first: a waiting replica polls, and every shard is a stall.
        if self.persistence.snapshot_busy() {
            return None;
        }
        let mut locked = self.ks.lock_all();
        if self.persistence.snapshot_busy() {
            return None;
        }
        Some(self.full_sync_now(client, &mut locked, psync, eof))
    }

    /// Starts a full sync with every shard held: takes the snapshot slot, and the snapshot and
    /// the stream's offset at one instant.
    fn full_sync_now(&self, client: &mut Client, locked: &mut Locked<'_>, psync: bool, eof: bool) -> Option<Frame> {
        let now = self.clock.now_ms();
        self.persistence.repl_snapshot.store(true, Ordering::SeqCst);
        self.persistence.bgsave_started.store(self.clock.unix_ms() / 1000, Ordering::SeqCst);
        let slot = crate::persistence::ReplSnapshot(self.persistence.clone());
        self.repl.activate(super::random_id);
        self.repl.set_backlog_size(self.config.get_i64("repl-backlog-size").max(0) as usize);
        self.record_for_replicas(Some(locked));
        self.repl.sync_full.fetch_add(1, Ordering::Relaxed);
        let offset = self.repl.full_sync_point();
        let snapshot = self.begin_snapshot(locked, SnapshotKind::Rdb);
        self.repl.attach(client.info.clone(), ReplicaState::Sync, offset, !psync, now);
        // The replicas waiting for a diskless sync take this file too (those waiting for a
        // disk-based one join when its file is written: [`Server::join_disk_sync`]).
        let joined = if eof { self.repl.join_waiting(client.id, offset, true, now) } else { Vec::new() };
        self.repl.sync_full.fetch_add(joined.len() as u64, Ordering::Relaxed);
        client.sync = Some(SyncJob::Full { snapshot, offset, eof, slot, joined });
        psync.then(|| Frame::Simple(Bytes::from(format!("FULLRESYNC {} {offset}", self.repl.replid()))))
    }

    /// The file of the disk-based full sync of replica `owner`, at snapshot offset `offset`, is
    /// written: the replicas that came meanwhile and wait for a disk-based sync take it too, in
    /// their full sync from `offset` (Redis attaches a replica to the running BGSAVE for SYNC).
    /// Called before the snapshot slot is let go, so none of them starts a snapshot of its own.
    pub fn join_disk_sync(&self, owner: u64, offset: u64) -> Vec<crate::repl::Joiner> {
        let joined = self.repl.join_waiting(owner, offset, false, self.clock.now_ms());
        self.repl.sync_full.fetch_add(joined.len() as u64, Ordering::Relaxed);
        for j in &joined {
            self.log_replica(&format!(
                "Waiting for end of BGSAVE for SYNC: replica {} takes the file written for another",
                j.info.addr
            ));
        }
        joined
    }

    fn log_replica(&self, line: &str) {
        self.config.host().log(crate::host::LogLevel::Notice, line);
    }

    /// The process's `oom_score_adj` for its new class (replica or primary), as Redis's
    /// `setOOMScoreAdj(-1)`; the host logs a failure, as that function does, and nothing else
    /// depends on it.
    fn reapply_oom_score_adj(&self) {
        let _ = self.config.apply_current_oom_score_adj();
    }

    /// After a write of a client of a replica (a writable one): its keys that now have a TTL are
    /// the replica's to expire.
    pub(crate) fn remember_own_expires(
        &self,
        client: &Client,
        locked: &mut Locked<'_>,
        cmd: &crate::ctx::Command,
        args: &[Bytes],
    ) {
        for i in cmd.keys.positions(args) {
            let k = &args[i];
            if locked.shard_for(k).dbs[client.db].peek(k).is_some_and(|e| e.has_ttl()) {
                self.upstream.remember_own_expire(client.db, k.clone());
            }
        }
    }

    /// A replica deletes the keys its own clients wrote with a TTL once it passed (Redis's
    /// `expireSlaveKeys`); the others wait for the primary's `DEL`.
    pub fn expire_own_keys(&self, now_ms: u64) {
        for (db, key) in self.upstream.take_own_expires() {
            let mut locked = self.ks.lock_shards(vec![self.ks.shard_of(&key)]);
            if locked.shard_for(&key).dbs[db].expire_own_key(&key, now_ms) {
                self.upstream.remember_own_expire(db, key);
            }
        }
    }

    /// The replication part of the cron, at `now_ms`: the buffer trimmed, the periodic PING to
    /// replicas (`repl-ping-replica-period`), and replicas silent for `repl-timeout` closed.
    pub fn replication_cron(&self, now_ms: u64, ping: bool) {
        if self.upstream.is_replica() {
            self.expire_own_keys(now_ms);
        }
        if !self.upstream.is_replica() {
            let ttl = self.config.get_i64("repl-backlog-ttl").max(0) as u64;
            if self.repl.expire_backlog(ttl, now_ms, super::random_id) {
                self.config.host().log(
                    crate::host::LogLevel::Notice,
                    &format!("Replication backlog freed after {ttl} seconds without connected replicas."),
                );
            }
        }
        if !self.repl.active() {
            return;
        }
        // The buffer gives back what only replicas that have gone still held (Redis trims it
        // incrementally in its cron).
        self.repl.set_backlog_size(self.config.get_i64("repl-backlog-size").max(0) as usize);
        if self.repl.online_count() == 0 {
            return;
        }
        // A replica's replicas get its primary's PINGs.
        if ping && !self.upstream.is_replica() {
            self.feed_replicas(&["PING"]);
        }
        let timeout_ms = (self.config.get_i64("repl-timeout").max(1) as u64) * 1000;
        for info in self.repl.silent_since(now_ms.saturating_sub(timeout_ms)) {
            self.config.host().log(crate::host::LogLevel::Warning, "Disconnecting timedout replica (streaming sync)");
            info.kill();
        }
    }
}

/// How far a promoted replica's fencing counter jumps: 10^9 tokens, 1000 seconds of the
/// counter's clock floor (see `Server::next_fence`).
pub const PROMOTION_FENCE_GAP: u64 = 1_000_000_000;

/// Redis's `-READONLY` error, for writes a read-only replica refuses.
pub const READONLY: &str = "READONLY You can't write against a read only replica.";

pub use crate::error::MASTERDOWN;

impl Server {
    /// REPLICAOF / SLAVEOF: follows `primary`, or none (`NO ONE`, a promotion). The link connects
    /// after the reply, as Redis's does (Redis's `replicaofCommand`). The command holds every shard
    /// (`ALL_SHARDS`: inside EXEC, the transaction's locks), which a promotion works through.
    pub fn replicaof(
        &self,
        client: &Client,
        locked: &mut Locked<'_>,
        primary: Option<crate::upstream::Primary>,
    ) -> Frame {
        let who = format!("id={} addr={}", client.id, client.info.addr);
        match primary {
            None => {
                if self.upstream.is_replica() {
                    self.promote_locked(locked);
                    self.log_replica(&format!("MASTER MODE enabled (user request from '{who}')"));
                }
            }
            Some(p) => {
                if client.info.has_flag('S') {
                    return Frame::error("ERR Command is not valid when client is a replica.");
                }
                if !matches!(*self.upstream.failover.lock(), Failover::None) {
                    return Frame::error("ERR REPLICAOF not allowed while failing over.");
                }
                if self.upstream.primary().as_ref() == Some(&p) {
                    self.log_replica(
                        "REPLICAOF would result into synchronization with the master we are already connected with. No operation performed.",
                    );
                    return Frame::simple("OK Already connected to specified master");
                }
                self.follow_primary(p.clone());
                self.log_replica(&format!("REPLICAOF {}:{} enabled (user request from '{who}')", p.host, p.port));
            }
        }
        Frame::ok()
    }

    /// Becomes a replica of `p` (Redis's `replicationSetMaster`): clients blocked on keys are
    /// answered with an error, keys stop expiring here, the link connects.
    pub fn follow_primary(&self, p: crate::upstream::Primary) {
        let was_primary = !self.upstream.is_replica();
        self.ks.hold_expiry_as_replica(true);
        let _ = self.config.set("replicaof", &format!("{} {}", p.host, p.port), true);
        self.reapply_oom_score_adj();
        self.log_replica(&format!("Connecting to MASTER {}:{}", p.host, p.port));
        self.upstream.set_primary(Some(p));
        if was_primary {
            self.unblock_all(
                "UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)",
            );
        }
    }

    /// A replica becomes a primary (Redis's `replicationUnsetMaster`): a new replication id with
    /// the old one as the secondary (its replicas continue partially), the replicas closed so they
    /// learn it, keys expire here again.
    pub fn promote(&self) {
        self.promote_with(None);
    }

    /// [`Server::promote`] by a command that holds every shard already (PSYNC ... FAILOVER).
    pub fn promote_locked(&self, locked: &mut Locked<'_>) {
        self.promote_with(Some(locked));
    }

    fn promote_with(&self, locked: Option<&mut Locked<'_>>) {
        // Its own writes go to its stream from the moment it takes them.
        if self.repl.active() {
            self.record_for_replicas(locked);
        }
        self.repl.shift_replid(super::random_id());
        self.raise_fence_for_promotion();
        self.upstream.set_primary(None);
        let _ = self.config.set("replicaof", "no one", true);
        self.reapply_oom_score_adj();
        self.repl.disconnect_replicas();
        self.ks.hold_expiry_as_replica(false);
        self.upstream.forget_own_expires();
    }

    /// A promoted replica's fencing counter jumps [`PROMOTION_FENCE_GAP`] past both what it
    /// replicated and the clock's floor (`next_fence`'s microseconds), so it mints no token that
    /// the old primary may have granted and another replica acknowledged: that token is below the
    /// old primary's counter, which ran at most 1000 grants a millisecond ahead of its clock.
    fn raise_fence_for_promotion(&self) {
        let floor = (self.clock.unix_ms().max(0) as u64).saturating_mul(1000);
        let base = self.fence.load(Ordering::SeqCst).max(floor);
        self.fence.fetch_max(base.saturating_add(PROMOTION_FENCE_GAP), Ordering::SeqCst);
    }

    /// The change stream is recorded from now on for the replication stream (not kept in the
    /// tests' log): the tables log the keys they delete on their own, as `DEL`s. With `locked`
    /// (every shard, held by the caller) without locking again.
    fn record_for_replicas(&self, locked: Option<&mut Locked<'_>>) {
        match locked {
            Some(l) => l.shards_mut().for_each(|s| s.dbs.iter_mut().for_each(|t| t.log_server_deletes(true))),
            None => self.log_server_deletes(),
        }
        self.changes.record();
    }

    /// Answers every client blocked on keys with `error` (a role change).
    fn unblock_all(&self, error: &str) {
        for info in self.clients.snapshot() {
            if let Some(w) = info.blocked_on().and_then(|w| w.into_any().downcast::<crate::ctx::Waiter>().ok())
                && w.claim()
            {
                w.finish(crate::waiters::WaitState::Served(Frame::error(error)));
            }
        }
    }

    /// INFO `replication`'s lines.
    pub fn info_replication(&self, now_ms: u64) -> Vec<String> {
        let upstream = self.upstream.is_replica().then(|| {
            self.upstream.info_lines(
                now_ms,
                self.repl.offset(),
                self.config.get_i64("replica-priority"),
                self.config.get("replica-read-only").as_deref() == Some("yes"),
                self.config.get("replica-announced").as_deref() == Some("yes"),
            )
        });
        let failover = self.upstream.failover.lock().info_name();
        let mut lines = self.repl.info_lines(now_ms, upstream, failover);
        // Right after `connected_slaves`, when `min-replicas-*` are both set.
        if let Some((_, lag)) = self.config.min_replicas() {
            let good = self.repl.good_replicas(now_ms, lag);
            let at = lines.iter().position(|l| l.starts_with("connected_slaves:")).map_or(lines.len(), |i| i + 1);
            lines.insert(at, format!("min_slaves_good_slaves:{good}"));
        }
        lines
    }

    /// A replica that refuses its clients' writes (`replica-read-only yes`).
    pub fn read_only_replica(&self) -> bool {
        self.upstream.is_replica() && self.config.get("replica-read-only").as_deref() == Some("yes")
    }

    /// A replica whose link is down and that serves no stale data (`replica-serve-stale-data no`).
    pub fn running_stale(&self) -> bool {
        self.upstream.is_replica()
            && !self.upstream.link_up()
            && self.config.get("replica-serve-stale-data").as_deref() == Some("no")
    }

    /// Whether a command from `client` is refused because this is a replica: `READONLY` for a
    /// write on a read-only replica, `MASTERDOWN` for a command that shows data while the link is
    /// down and stale data is not served. Commands from the primary always run.
    pub fn replica_refuses(
        &self,
        client: &Client,
        cmd: &crate::ctx::Command,
        args: &[Bytes],
        write: bool,
    ) -> Option<Frame> {
        if client.from_primary {
            return None;
        }
        // EXEC runs on stale data only if everything it queued may (Redis's `is_denystale_command`);
        // a script that declared its flags may only with `allow-stale`.
        let denied = client.multi.any_run(cmd, args, |c, a| !self.scripting.may_run_stale(c, a));
        if denied && self.running_stale() {
            return Some(Frame::error(MASTERDOWN));
        }
        if write && self.read_only_replica() {
            return Some(Frame::error(READONLY));
        }
        None
    }

    /// The client the primary's stream runs on (flag `M`): authenticated, no ACL user, no replies,
    /// keys seen whatever their TTL (the primary deletes them), never blocked.
    pub fn primary_client(&self, addr: String, laddr: String) -> Client {
        let mut c = self.new_client(addr, laddr);
        c.authenticated = true;
        c.user = None;
        c.loading = true;
        c.deny_blocking = true;
        c.from_primary = true;
        c.info.set_flag('M', true);
        c.db = self.upstream.stream_db.load(Ordering::Relaxed);
        self.upstream.master_client.store(c.id, Ordering::Relaxed);
        c
    }

    /// Loads the primary's full sync from `input` (all at hand, or arriving from the socket):
    /// the stream then follows the primary's id from `offset`; this server's own replicas resync.
    /// `aside` (`repl-diskless-load swapdb`): the file loads into a keyspace of its own while the
    /// old dataset and function libraries go on serving (Redis's temp db); they are swapped in once
    /// the whole file loaded, and a file that fails leaves the old ones in place. Otherwise every
    /// database is emptied first and the file loads in place (clients get -LOADING meanwhile); one
    /// that fails leaves the databases empty, as Redis's does.
    pub fn load_full_sync(
        &self,
        input: &mut dyn rdb::Input,
        replid: &str,
        offset: u64,
        aside: bool,
    ) -> Result<(), String> {
        if aside {
            return self.load_full_sync_aside(input, replid, offset);
        }
        self.repl.disconnect_replicas();
        self.upstream.forget_own_expires();
        self.log_replica("MASTER <-> REPLICA sync: Flushing old data");
        let mut locked = self.ks.lock_all();
        self.clear_all(&mut locked);
        self.log_replica("MASTER <-> REPLICA sync: Loading DB in memory");
        let opts = LoadOptions { yields: true, replica: true, ..LoadOptions::default() };
        if let Err(e) = self.rdb_load_from(&mut locked, input, opts) {
            // Remove the half-loaded data.
            self.clear_all(&mut locked);
            return Err(e);
        }
        for s in locked.shards_mut() {
            s.take_server_deletes();
        }
        self.repl.follow(replid, offset);
        drop(locked);
        self.log_replica("MASTER <-> REPLICA sync: Finished with success");
        Ok(())
    }

    /// [`Server::load_full_sync`] into a keyspace aside, swapped in at the end.
    fn load_full_sync_aside(&self, input: &mut dyn rdb::Input, replid: &str, offset: u64) -> Result<(), String> {
        self.log_replica("MASTER <-> REPLICA sync: Loading DB in memory");
        let aside = self.ks.sibling();
        let mut libraries = Vec::new();
        let opts = LoadOptions { replica: true, libraries: Some(&mut libraries), ..LoadOptions::default() };
        let loaded = self.rdb_load_from(&mut aside.lock_all(), input, opts);
        if let Err(e) = loaded {
            std::thread::spawn(move || drop(aside));
            self.log_replica("MASTER <-> REPLICA sync: Discarding temporary DB in background");
            return Err(e);
        }
        // Redis's replicationAttachToNewMaster, then the swap.
        self.repl.disconnect_replicas();
        self.upstream.forget_own_expires();
        self.log_replica("MASTER <-> REPLICA sync: Swapping active DB with loaded DB");
        let now = self.clock.now_ms();
        let mut locked = self.ks.lock_all();
        let mut new = aside.lock_all();
        let mut old = Vec::new();
        for (s, n) in locked.shards_mut().zip(new.shards_mut()) {
            for (t, nt) in s.dbs.iter_mut().zip(n.dbs.iter_mut()) {
                old.push(t.take_data(now));
                t.put_back(nt.take_data(now), now);
            }
            // The swap is not news for the change stream: the primary's file replaces it.
            s.take_server_deletes();
        }
        self.scripting.flush_functions();
        for code in libraries {
            let lib = self.scripting.compile_library(&code).map_err(|e| format!("Failed loading library: {e}"))?;
            self.scripting.install_libraries(vec![lib], true).map_err(|e| format!("Failed loading library: {e}"))?;
        }
        self.repl.follow(replid, offset);
        drop(locked);
        drop(new);
        // The old dataset is freed aside, not under the shards' locks.
        std::thread::spawn(move || drop((old, aside)));
        self.log_replica("MASTER <-> REPLICA sync: Discarding old DB in background");
        self.log_replica("MASTER <-> REPLICA sync: Finished with success");
        Ok(())
    }

    /// Empties every database of the locked keyspace, not as news for the change stream, and
    /// drops the function libraries (what a full sync replaces).
    fn clear_all(&self, locked: &mut Locked<'_>) {
        self.scripting.flush_functions();
        let now = self.clock.now_ms();
        for s in locked.shards_mut() {
            for t in s.dbs.iter_mut() {
                t.clear(now);
            }
            s.take_server_deletes();
        }
    }

    /// Keys in every database, counted shard by shard (`repl-diskless-load on-empty-db` asks).
    pub fn dbsize_all(&self) -> usize {
        (0..self.ks.nshards())
            .map(|i| {
                let mut locked = self.ks.lock_shards(vec![i]);
                locked.shard(i).dbs.iter().map(|t| t.len()).sum::<usize>()
            })
            .sum()
    }

    /// The database the replication stream is in: the primary's stream's on a replica, this
    /// server's own stream's on a primary (`repl-stream-db` in the RDB).
    pub fn repl_stream_db(&self) -> usize {
        if self.upstream.is_replica() { self.upstream.stream_db.load(Ordering::Relaxed) } else { self.repl.stream_db() }
    }

    /// After a restart from a file that recorded a replication history (`repl-id`, `repl-offset`,
    /// `repl-stream-db`): a replica asks its primary to continue from there; a primary keeps
    /// that history as its secondary id, so its replicas can (Redis's `loadDataFromDisk`).
    /// `expired`: keys the load skipped as expired, whose deletion a primary propagates (as Redis's
    /// loader feeds their `DEL`s to the new backlog).
    /// `replica`: the server is about to follow a primary.
    pub fn restore_replication(&self, replid: &str, offset: u64, db: usize, expired: &[(usize, Bytes)], replica: bool) {
        if replica {
            self.repl.follow(replid, offset);
            self.upstream.stream_db.store(db, Ordering::Relaxed);
        } else {
            self.record_for_replicas(None);
            self.repl.restore_as_primary(replid, offset);
            let del: &[u8] =
                if self.config.get("lazyfree-lazy-expire").as_deref() == Some("yes") { b"UNLINK" } else { b"DEL" };
            let limit = self.config.replica_obuf_limits().hard;
            for (db, key) in expired {
                self.repl.feed_unit(&[crate::changes::Effect::new(*db, &[del, &key[..]])], limit);
            }
        }
    }

    /// Bytes of the primary's stream the link applied: this replica's backlog and replicas get
    /// them as they are.
    /// `native`: where Latch's own commands sit in `bytes` (start, length).
    pub fn applied_from_primary(&self, bytes: &[u8], native: &[(usize, usize)]) {
        for r in self.repl.feed_raw(bytes, native, self.config.replica_obuf_limits().hard) {
            r.wake();
        }
    }

    /// `+CONTINUE <id>`: a partial resync; a new id means the primary's history was taken over
    /// (its replicas resync to learn it).
    pub fn continue_from_primary(&self, replid: Option<&str>) {
        if let Some(id) = replid
            && id != self.repl.replid()
        {
            self.log_replica(&format!("Master replication ID changed to {id}"));
            self.repl.continue_as(id);
            self.repl.disconnect_replicas();
        }
        self.log_replica("MASTER <-> REPLICA sync: Master accepted a Partial Resynchronization.");
    }

    /// What the link sends after `PSYNC`: this server's id and the next offset it needs (Redis's
    /// cached master, or itself as one after a demotion).
    pub fn psync_request(&self) -> (String, u64) {
        (self.repl.replid(), self.repl.offset() + 1)
    }

    /// Logs a line about the link.
    pub fn log_link(&self, warning: bool, line: &str) {
        let level = if warning { crate::host::LogLevel::Warning } else { crate::host::LogLevel::Notice };
        self.config.host().log(level, line);
    }
}

impl Server {
    /// A WAIT starts waiting (see [`Client::wait_acks`]): shown blocked, and rung by each
    /// acknowledgement through the client's block waker.
    pub fn wait_acks_begin(&self, client: &mut Client, args: &[Bytes]) {
        if let Some(w) = client.block_waker.clone() {
            self.repl.on_ack(client.id, w);
        }
        self.mark_blocked(client, args);
    }

    /// How many replicas acknowledged `offset`.
    pub fn acks_reached(&self, offset: u64) -> usize {
        self.repl.acked(offset).0
    }

    /// The WAIT is over (answered, timed out, or its client gone).
    pub fn wait_acks_end(&self, client: &mut Client) {
        self.repl.forget_ack_waiter(client.id);
        self.unmark_blocked(client);
    }
}

impl Server {
    /// FAILOVER [TO host port [FORCE]] [TIMEOUT ms]: writes pause until a replica acknowledged the
    /// whole stream, then this primary follows it and asks it to take over (Redis's
    /// `failoverCommand`).
    pub fn failover_start(&self, target: Option<Primary>, timeout_ms: u64, force: bool, now: u64) -> Frame {
        if !matches!(*self.upstream.failover.lock(), Failover::None) {
            return Frame::error("ERR FAILOVER already in progress.");
        }
        if self.upstream.is_replica() {
            return Frame::error("ERR FAILOVER is not valid when server is a replica.");
        }
        if self.repl.attached_count() == 0 {
            return Frame::error("ERR FAILOVER requires connected replicas.");
        }
        if force && (timeout_ms == 0 || target.is_none()) {
            return Frame::error("ERR FAILOVER with force option requires both a timeout and target HOST and IP.");
        }
        match &target {
            Some(t) => match self.repl.has_online_replica(&t.host, t.port) {
                None => return Frame::error("ERR FAILOVER target HOST and PORT is not a replica."),
                Some(false) => return Frame::error("ERR FAILOVER target replica is not online."),
                Some(true) => self.log_replica(&format!("FAILOVER requested to {}:{}.", t.host, t.port)),
            },
            None => self.log_replica("FAILOVER requested to any replica."),
        }
        let end = (timeout_ms > 0).then(|| now.saturating_add(timeout_ms));
        *self.upstream.failover.lock() = Failover::WaitForSync { target, end, force };
        self.pause_clients(crate::pause::PauseKind::Write, u64::MAX, now);
        Frame::ok()
    }

    /// FAILOVER ABORT.
    pub fn failover_abort_command(&self) -> Frame {
        if matches!(*self.upstream.failover.lock(), Failover::None) {
            return Frame::error("ERR No failover in progress.");
        }
        self.failover_abort("Failover manually aborted");
        Frame::ok()
    }

    /// Ends a failover that did not happen: a primary again, writes go on.
    pub fn failover_abort(&self, why: &str) {
        let was = std::mem::take(&mut *self.upstream.failover.lock());
        let target = match &was {
            Failover::None => return,
            Failover::WaitForSync { target, .. } => target.clone(),
            Failover::InProgress { target } => Some(target.clone()),
        };
        match target {
            Some(t) => self.log_replica(&format!("FAILOVER to {}:{} aborted: {why}", t.host, t.port)),
            None => self.log_replica(&format!("FAILOVER to any replica aborted: {why}")),
        }
        if matches!(was, Failover::InProgress { .. }) {
            self.promote();
        }
        self.unpause_clients();
    }

    /// The target took over (its answer to `PSYNC ... FAILOVER`): the failover is done.
    pub fn failover_done(&self) {
        if matches!(*self.upstream.failover.lock(), Failover::InProgress { .. }) {
            *self.upstream.failover.lock() = Failover::None;
            self.unpause_clients();
        }
    }

    /// The failover's part of the cron (Redis's `updateFailoverStatus`): the timeout, and the hand
    /// over once the target (or any replica) acknowledged everything.
    pub fn failover_cron(&self, now: u64) {
        let Failover::WaitForSync { target, end, force } = self.upstream.failover.lock().clone() else { return };
        if end.is_some_and(|e| e <= now) {
            if let (true, Some(t)) = (force, target) {
                self.log_replica(&format!("FAILOVER to {}:{} time out exceeded, failing over.", t.host, t.port));
                self.hand_over(t);
            } else {
                self.failover_abort("Replica never caught up before timeout");
            }
            return;
        }
        let wanted = target.as_ref().map(|t| (t.host.as_str(), t.port));
        if let Some((host, port)) = self.repl.caught_up(wanted) {
            self.log_replica(&format!("Failover target {host}:{port} is synced, failing over."));
            self.hand_over(Primary { host, port });
        }
    }

    fn hand_over(&self, target: Primary) {
        *self.upstream.failover.lock() = Failover::InProgress { target: target.clone() };
        self.follow_primary(target);
    }

    /// Whether the link asks its primary to take over (`PSYNC ... FAILOVER`).
    pub fn failing_over(&self) -> bool {
        matches!(*self.upstream.failover.lock(), Failover::InProgress { .. })
    }
}
