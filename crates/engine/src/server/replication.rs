//! Replication in the composition: a client becomes a replica (its full sync is the fork-less
//! snapshot at the stream's offset), the stream gets the change stream's units, PUBLISH and the
//! periodic PING, and `min-replicas-*` counts the replicas that acknowledged lately. The
//! replication state itself is `crate::repl`'s; the replica's connection sends its `SyncJob`.

use super::Server;
use crate::client::Client;
use crate::keyspace::Locked;
use crate::persistence::SnapshotKind;
use crate::repl::{Psync, ReplicaState, SyncJob};
use bytes::Bytes;
use resp::Frame;
use std::sync::atomic::Ordering;

impl Server {
    /// True when writes must be refused with `NOREPLICAS`: `min-replicas-to-write` and
    /// `min-replicas-max-lag` are set and fewer replicas than that acknowledged within the lag
    /// (Redis's `checkGoodReplicasStatus`).
    pub fn writes_need_replicas(&self) -> bool {
        let Some((n, lag)) = self.config.min_replicas() else { return false };
        (self.repl.good_replicas(self.clock.now_ms(), lag) as u64) < n
    }

    /// Appends a command that selects no database to the replication stream (PUBLISH).
    pub fn feed_replicas<A: AsRef<[u8]>>(&self, args: &[A]) {
        if self.repl.active() {
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
                    client.info.set_flag('S', true);
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
        self.repl.activate(super::random_id);
        self.repl.set_backlog_size(self.config.get_i64("repl-backlog-size").max(0) as usize);
        self.changes.record();
        // Every shard is held: the tables log their own deletes from now on (the change stream's
        // `DEL`s), without locking again.
        for s in locked.shards_mut() {
            s.dbs.iter_mut().for_each(|t| t.log_server_deletes(true));
        }
        self.repl.sync_full.fetch_add(1, Ordering::Relaxed);
        let offset = self.repl.full_sync_point();
        let snapshot = self.begin_snapshot(locked, SnapshotKind::Rdb);
        let diskless = self.config.get("repl-diskless-sync").as_deref() == Some("yes");
        let eof = psync.is_some() && eof_capa && diskless;
        self.repl.attach(client.info.clone(), ReplicaState::Sync, offset, psync.is_none(), now);
        client.info.set_flag('S', true);
        client.sync = Some(SyncJob::Full { snapshot, offset, eof });
        self.log_replica(&format!("Full resync requested by replica {}", client.info.addr));
        psync.map(|_| Frame::Simple(Bytes::from(format!("FULLRESYNC {} {offset}", self.repl.replid()))))
    }

    fn log_replica(&self, line: &str) {
        self.config.host().log(crate::host::LogLevel::Notice, line);
    }

    /// The replication part of the cron, at `now_ms`: the periodic PING to replicas
    /// (`repl-ping-replica-period`), and replicas silent for `repl-timeout` closed.
    pub fn replication_cron(&self, now_ms: u64, ping: bool) {
        if !self.repl.active() || self.repl.online_count() == 0 {
            return;
        }
        self.repl.set_backlog_size(self.config.get_i64("repl-backlog-size").max(0) as usize);
        if ping {
            self.feed_replicas(&["PING"]);
        }
        let timeout_ms = (self.config.get_i64("repl-timeout").max(1) as u64) * 1000;
        for info in self.repl.silent_since(now_ms.saturating_sub(timeout_ms)) {
            self.config.host().log(crate::host::LogLevel::Warning, "Disconnecting timedout replica (streaming sync)");
            info.kill();
        }
    }
}
