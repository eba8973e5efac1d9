//! Replication, the replica's side (Redis's `replicationSetMaster` and the link state
//! `replication.c` keeps): which primary this server follows, where its link to it stands, and what
//! INFO, ROLE and the checks before a command read of it.
//!
//! The engine does no IO: the server crate runs the link (connect, handshake, full sync, the
//! stream) and reports here; REPLICAOF and the configuration set the primary and ring the link's
//! waker. The stream itself, the ids and the offset stay `crate::repl`'s: a replica keeps a
//! backlog of what it applied, so it can serve replicas of its own and a partial resync after a
//! promotion.

use parking_lot::Mutex;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};

/// Where the link to the primary stands (ROLE's state names, Redis's `repl_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum LinkState {
    /// Not a replica.
    None = 0,
    /// To connect (Redis's `REPL_STATE_CONNECT`).
    Connect = 1,
    /// Connecting.
    Connecting = 2,
    /// The handshake (PING, AUTH, REPLCONF, PSYNC).
    Handshake = 3,
    /// Receiving the full sync.
    Sync = 4,
    /// Following the stream.
    Connected = 5,
}

impl LinkState {
    fn from_u8(v: u8) -> LinkState {
        match v {
            1 => LinkState::Connect,
            2 => LinkState::Connecting,
            3 => LinkState::Handshake,
            4 => LinkState::Sync,
            5 => LinkState::Connected,
            _ => LinkState::None,
        }
    }

    /// ROLE's name for it.
    pub fn role_name(self) -> &'static str {
        match self {
            LinkState::None => "none",
            LinkState::Connect => "connect",
            LinkState::Connecting => "connecting",
            LinkState::Handshake => "handshake",
            LinkState::Sync => "sync",
            LinkState::Connected => "connected",
        }
    }
}

/// A coordinated failover (FAILOVER) on a primary: Redis's `failover_state` and its target.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Failover {
    /// None running.
    #[default]
    None,
    /// Writes are paused until a replica acknowledged the whole stream.
    WaitForSync {
        /// The replica to hand over to (FAILOVER TO), else the first that catches up.
        target: Option<Primary>,
        /// Monotonic ms when it times out, if TIMEOUT was given.
        end: Option<u64>,
        /// FORCE: at the timeout, hand over anyway.
        force: bool,
    },
    /// This server follows the target and asks it, with `PSYNC ... FAILOVER`, to take over.
    InProgress {
        /// The replica handed over to.
        target: Primary,
    },
}

impl Failover {
    /// INFO's `master_failover_state`.
    pub fn info_name(&self) -> &'static str {
        match self {
            Failover::None => "no-failover",
            Failover::WaitForSync { .. } => "waiting-for-sync",
            Failover::InProgress { .. } => "failover-in-progress",
        }
    }
}

/// A primary's address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Primary {
    /// Host as given (REPLICAOF's or the configuration's).
    pub host: String,
    /// Port.
    pub port: u16,
}

/// The replica's side of replication.
pub struct Upstream {
    primary: Mutex<Option<Primary>>,
    /// Bumped whenever the primary changes (the link started for an older one gives up).
    generation: AtomicU64,
    replica: AtomicBool,
    state: AtomicU8,
    /// Monotonic ms the link went down (0: it never was up).
    down_since: AtomicU64,
    /// Monotonic ms of the last bytes from the primary.
    last_io: AtomicU64,
    /// `slave_read_repl_offset`: the stream's offset up to what was read (applied or not).
    read_offset: AtomicU64,
    /// Full sync in progress: its size when known (0 for an EOF-marked transfer) and bytes read.
    sync_total: AtomicU64,
    sync_read: AtomicU64,
    /// Monotonic ms of the last bytes of the full sync.
    sync_last_io: AtomicU64,
    /// Rings the link's task (the server crate's).
    waker: Mutex<Option<Arc<dyn Fn() + Send + Sync>>>,
    /// Id of the client the primary's stream runs on (0: none).
    pub master_client: AtomicU64,
    /// The database the primary's stream selected last: where a partial resync goes on (saved in
    /// the RDB as `repl-stream-db`).
    pub stream_db: std::sync::atomic::AtomicUsize,
    /// A coordinated failover (FAILOVER), on a primary.
    pub failover: Mutex<Failover>,
    /// Keys with a TTL that clients of a writable replica wrote (database, key): the replica
    /// expires them itself, as no primary will.
    own_expires: Mutex<std::collections::BTreeSet<(usize, bytes::Bytes)>>,
}

impl Default for Upstream {
    fn default() -> Self {
        Upstream {
            primary: Mutex::new(None),
            generation: AtomicU64::new(0),
            replica: AtomicBool::new(false),
            state: AtomicU8::new(LinkState::None as u8),
            down_since: AtomicU64::new(0),
            last_io: AtomicU64::new(0),
            read_offset: AtomicU64::new(0),
            sync_total: AtomicU64::new(0),
            sync_read: AtomicU64::new(0),
            sync_last_io: AtomicU64::new(0),
            waker: Mutex::new(None),
            master_client: AtomicU64::new(0),
            stream_db: std::sync::atomic::AtomicUsize::new(0),
            own_expires: Mutex::new(std::collections::BTreeSet::new()),
            failover: Mutex::new(Failover::None),
        }
    }
}

impl Upstream {
    /// True while this server replicates a primary (one load: it is on the path of writes).
    #[inline]
    pub fn is_replica(&self) -> bool {
        self.replica.load(Ordering::Relaxed)
    }

    /// The primary followed, if any.
    pub fn primary(&self) -> Option<Primary> {
        self.primary.lock().clone()
    }

    /// The primary and the generation the link serves.
    pub fn target(&self) -> Option<(Primary, u64)> {
        let g = self.primary.lock();
        g.clone().map(|p| (p, self.generation.load(Ordering::Acquire)))
    }

    /// True while `generation` is still the current one (REPLICAOF did not change the primary).
    pub fn current(&self, generation: u64) -> bool {
        self.generation.load(Ordering::Acquire) == generation
    }

    /// Follows `primary` from now on, or none (`REPLICAOF NO ONE`); the link is told.
    pub fn set_primary(&self, primary: Option<Primary>) {
        {
            let mut g = self.primary.lock();
            self.replica.store(primary.is_some(), Ordering::Relaxed);
            *g = primary;
            self.generation.fetch_add(1, Ordering::AcqRel);
        }
        let state = if self.is_replica() { LinkState::Connect } else { LinkState::None };
        self.state.store(state as u8, Ordering::Relaxed);
        self.down_since.store(0, Ordering::Relaxed);
        self.end_sync();
        self.wake();
    }

    /// Installs what rings the link's task.
    pub fn set_waker(&self, f: Arc<dyn Fn() + Send + Sync>) {
        *self.waker.lock() = Some(f);
    }

    fn wake(&self) {
        let w = self.waker.lock().clone();
        if let Some(w) = w {
            w();
        }
    }

    /// The link's state.
    pub fn state(&self) -> LinkState {
        LinkState::from_u8(self.state.load(Ordering::Relaxed))
    }

    /// The link moves to `state` at `now_ms`; leaving `Connected` marks it down since then.
    pub fn set_state(&self, state: LinkState, now_ms: u64) {
        let was = LinkState::from_u8(self.state.swap(state as u8, Ordering::Relaxed));
        if was == LinkState::Connected && state != LinkState::Connected {
            self.down_since.store(now_ms.max(1), Ordering::Relaxed);
        }
        if state != LinkState::Sync {
            self.end_sync();
        }
    }

    /// True while the link is up (`master_link_status:up`).
    pub fn link_up(&self) -> bool {
        self.state() == LinkState::Connected
    }

    /// Bytes arrived from the primary at `now_ms`.
    pub fn heard(&self, now_ms: u64) {
        self.last_io.store(now_ms, Ordering::Relaxed);
    }

    /// Monotonic ms of the last bytes from the primary.
    pub fn last_io(&self) -> u64 {
        self.last_io.load(Ordering::Relaxed)
    }

    /// The stream was read up to `offset` (`slave_read_repl_offset`).
    pub fn set_read_offset(&self, offset: u64) {
        self.read_offset.store(offset, Ordering::Relaxed);
    }

    /// A full sync of `total` bytes (0: unknown) starts.
    pub fn begin_sync(&self, total: u64, now_ms: u64) {
        self.sync_total.store(total, Ordering::Relaxed);
        self.sync_read.store(0, Ordering::Relaxed);
        self.sync_last_io.store(now_ms, Ordering::Relaxed);
    }

    /// `n` more bytes of the full sync arrived.
    pub fn sync_progress(&self, n: u64, now_ms: u64) {
        self.sync_read.fetch_add(n, Ordering::Relaxed);
        self.sync_last_io.store(now_ms, Ordering::Relaxed);
    }

    fn end_sync(&self) {
        self.sync_total.store(0, Ordering::Relaxed);
        self.sync_read.store(0, Ordering::Relaxed);
    }

    /// A client of this (writable) replica wrote `key` in `db` with a TTL.
    pub fn remember_own_expire(&self, db: usize, key: bytes::Bytes) {
        self.own_expires.lock().insert((db, key));
    }

    /// The keys [`Upstream::remember_own_expire`] kept, taken (the caller puts back those that
    /// still have a TTL to wait for).
    pub fn take_own_expires(&self) -> Vec<(usize, bytes::Bytes)> {
        std::mem::take(&mut *self.own_expires.lock()).into_iter().collect()
    }

    /// Forgets every such key (a full sync replaced the data, or this server was promoted).
    pub fn forget_own_expires(&self) {
        self.own_expires.lock().clear();
    }

    /// INFO `replication`'s lines for a replica (Redis's order), after `role:slave`:
    /// `applied` is `slave_repl_offset`, `priority`, `read_only` and `announced` the parameters.
    pub fn info_lines(
        &self,
        now_ms: u64,
        applied: u64,
        priority: i64,
        read_only: bool,
        announced: bool,
    ) -> Vec<String> {
        let Some(p) = self.primary() else { return Vec::new() };
        let state = self.state();
        let up = state == LinkState::Connected;
        let mut out = vec![
            format!("master_host:{}", p.host),
            format!("master_port:{}", p.port),
            format!("master_link_status:{}", if up { "up" } else { "down" }),
        ];
        let last_io = self.last_io();
        let last = if self.master_client.load(Ordering::Relaxed) != 0 && last_io != 0 {
            (now_ms.saturating_sub(last_io) / 1000) as i64
        } else {
            -1
        };
        out.push(format!("master_last_io_seconds_ago:{last}"));
        out.push(format!("master_sync_in_progress:{}", u8::from(state == LinkState::Sync)));
        out.push(format!("slave_read_repl_offset:{}", self.read_offset.load(Ordering::Relaxed).max(applied)));
        out.push(format!("slave_repl_offset:{applied}"));
        if state == LinkState::Sync {
            let total = self.sync_total.load(Ordering::Relaxed);
            let read = self.sync_read.load(Ordering::Relaxed);
            let left = total.saturating_sub(read);
            let perc = if total == 0 { 0.0 } else { read as f64 * 100.0 / total as f64 };
            out.push(format!("master_sync_total_bytes:{}", total as i64));
            out.push(format!("master_sync_read_bytes:{read}"));
            out.push(format!("master_sync_left_bytes:{}", left as i64));
            out.push(format!("master_sync_perc:{perc:.2}"));
            let io = now_ms.saturating_sub(self.sync_last_io.load(Ordering::Relaxed)) / 1000;
            out.push(format!("master_sync_last_io_seconds_ago:{io}"));
        }
        if !up {
            let since = self.down_since.load(Ordering::Relaxed);
            let secs = if since == 0 { -1 } else { (now_ms.saturating_sub(since) / 1000) as i64 };
            out.push(format!("master_link_down_since_seconds:{secs}"));
        }
        out.push(format!("slave_priority:{priority}"));
        out.push(format!("slave_read_only:{}", u8::from(read_only)));
        out.push(format!("replica_announced:{}", u8::from(announced)));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn primary_changes_bump_the_generation_and_ring_the_link() {
        let u = Upstream::default();
        let rung = Arc::new(AtomicU64::new(0));
        let r = rung.clone();
        u.set_waker(Arc::new(move || {
            r.fetch_add(1, Ordering::Relaxed);
        }));
        assert!(!u.is_replica());
        u.set_primary(Some(Primary { host: "127.0.0.1".into(), port: 7000 }));
        let (p, generation) = u.target().unwrap();
        assert_eq!(p.port, 7000);
        assert!(u.is_replica() && u.current(generation));
        assert_eq!(u.state(), LinkState::Connect);
        u.set_primary(None);
        assert!(!u.is_replica() && !u.current(generation));
        assert_eq!(u.state(), LinkState::None);
        assert_eq!(rung.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn a_link_that_goes_down_counts_its_seconds() {
        let u = Upstream::default();
        u.set_primary(Some(Primary { host: "h".into(), port: 1 }));
        let lines = u.info_lines(5_000, 0, 100, true, true);
        assert!(lines.contains(&"master_link_down_since_seconds:-1".to_string()), "{lines:?}");
        u.set_state(LinkState::Connected, 5_000);
        let lines = u.info_lines(6_000, 42, 100, true, true);
        assert!(lines.contains(&"master_link_status:up".to_string()));
        assert!(lines.contains(&"slave_repl_offset:42".to_string()));
        assert!(!lines.iter().any(|l| l.starts_with("master_link_down_since_seconds")));
        u.set_state(LinkState::Connect, 7_000);
        let lines = u.info_lines(10_000, 42, 100, true, true);
        assert!(lines.contains(&"master_link_down_since_seconds:3".to_string()), "{lines:?}");
    }
}
