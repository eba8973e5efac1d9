//! Replication, the primary's side, in Redis 7.0's protocol (`replication.c`): the replication
//! ids, the byte stream every replica receives and its offset, the backlog partial resyncs start
//! from, and the replicas attached with what they acknowledged.
//!
//! The stream is the change stream's units encoded as Redis encodes its replication stream:
//! `SELECT` when the database changes, a unit of several effects wrapped in `MULTI`/`EXEC`, every
//! command a RESP array of bulk strings. `master_repl_offset` counts its bytes, so offsets, acks and
//! WAIT mean what they mean on Redis. One buffer serves the backlog and every replica (as Redis
//! 7.0's shared replication buffer): it keeps `repl-backlog-size` bytes, and more while an online
//! replica has not been sent them, up to the replica class's `client-output-buffer-limit`; a
//! replica further behind is closed, as Redis closes it. The buffer is a list of 16 KiB blocks
//! (Redis's `replBufBlock`s of `PROTO_REPLY_CHUNK_BYTES`): a replica's connection writes whole
//! blocks without copying them, a trim frees whole blocks, and the buffer's memory is what its
//! blocks take ([`Replication::memory`]). What it holds past the backlog's share is the
//! replicas' output, which `maxmemory` does not count (Redis's `freeMemoryGetNotCountedMemory`).
//!
//! Nothing is recorded until the first replica attaches ([`Replication::activate`]), which, as in
//! Redis, gives the primary a new replication id. The engine does no IO: the connection layer
//! sends a replica its full sync and then [`Replication::read`]s the stream from its offset,
//! woken through the replica's [`ClientInfo::wake`].

use crate::changes::{Effect, encode_command, encode_unit, unit_reaches};
use crate::clients::ClientInfo;
use crate::persistence::Snapshot;
use bytes::Bytes;
use parking_lot::Mutex;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// A replication id as Redis shows one when there is none (`master_replid2` at start).
pub const NO_ID: &str = "0000000000000000000000000000000000000000";

/// The smallest backlog Redis allows (`CONFIG_REPL_BACKLOG_MIN_SIZE`).
pub const BACKLOG_MIN: usize = 16 * 1024;

/// Bytes of the stream per block of the replication buffer (Redis's `PROTO_REPLY_CHUNK_BYTES`).
pub const BLOCK: usize = 16 * 1024;

/// What a full block takes beside its bytes: its handle in the list, and the shared header the
/// first slice handed to a replica's connection gives it (`bytes`'s `Shared`, 24 bytes in
/// jemalloc's 32-byte class).
const BLOCK_OVERHEAD: usize = std::mem::size_of::<Bytes>() + 32;

/// Handles the list of blocks keeps room for however few blocks it holds.
const LIST_MIN: usize = 8;

/// The replication buffer: the stream's last `len` bytes in blocks of [`BLOCK`] bytes. Full blocks
/// are frozen, so a replica's connection is handed slices of them rather than copies; the tail
/// block fills up. The first `head` bytes of the first block were trimmed.
#[derive(Default)]
struct Blocks {
    full: VecDeque<Bytes>,
    tail: Vec<u8>,
    head: usize,
    len: usize,
}

impl Blocks {
    fn len(&self) -> usize {
        self.len
    }

    fn clear(&mut self) {
        *self = Blocks::default();
    }

    fn extend(&mut self, mut bytes: &[u8]) {
        self.len += bytes.len();
        while !bytes.is_empty() {
            if self.tail.capacity() == 0 {
                self.tail = Vec::with_capacity(BLOCK);
            }
            let take = (BLOCK - self.tail.len()).min(bytes.len());
            self.tail.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.tail.len() == BLOCK {
                self.full.push_back(Bytes::from(std::mem::take(&mut self.tail)));
            }
        }
    }

    /// Drops the oldest `n` bytes (at most `len`); blocks wholly dropped are freed.
    fn drain_front(&mut self, n: usize) {
        let n = n.min(self.len);
        self.head += n;
        self.len -= n;
        while self.head >= BLOCK && !self.full.is_empty() {
            self.full.pop_front();
            self.head -= BLOCK;
        }
        // The list of blocks gives back its room too once a stalled replica's blocks are gone.
        if self.full.capacity() > LIST_MIN && self.full.capacity() / 4 > self.full.len() {
            self.full.shrink_to(LIST_MIN.max(self.full.len() * 2));
        }
        if self.len == 0 {
            // Nothing held: the tail starts over (its allocation stays for the next bytes).
            self.tail.clear();
            self.head = 0;
        }
    }

    /// Up to `max` bytes from `start` (0: the oldest byte held), never past the end of a block:
    /// a slice of a full block, or a copy of the tail's.
    fn piece(&self, start: usize, max: usize) -> Bytes {
        let n = max.min(self.len.saturating_sub(start));
        if n == 0 {
            return Bytes::new();
        }
        let at = self.head + start;
        let (block, off) = (at / BLOCK, at % BLOCK);
        let end = (off + n).min(BLOCK);
        match self.full.get(block) {
            Some(b) => b.slice(off..end),
            None => Bytes::copy_from_slice(&self.tail[off..end.min(self.tail.len())]),
        }
    }

    /// Bytes the buffer takes from the allocator: its blocks, the tail's allocation, the list.
    fn allocated(&self) -> usize {
        self.full.len() * (BLOCK + BLOCK_OVERHEAD)
            + self.tail.capacity()
            + (self.full.capacity() - self.full.len()) * std::mem::size_of::<Bytes>()
    }
}

/// What the backlog counts as of the buffer, at `size` bytes (`repl-backlog-size`): its bytes and
/// the overhead of the blocks they fill, Redis's estimate in `freeMemoryGetNotCountedMemory` and
/// `getMemoryOverheadData` (it cannot know how the bytes fall in blocks: partly filled blocks at
/// either end count as the replicas').
pub fn backlog_share(size: usize) -> u64 {
    (size + (size / BLOCK + 1) * BLOCK_OVERHEAD) as u64
}

/// The replication buffer's memory as INFO and MEMORY STATS report it, and as `maxmemory` leaves
/// it out (Redis's `getMemoryOverheadData` and `freeMemoryGetNotCountedMemory`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BufferMemory {
    /// All of it (`mem_total_replication_buffers`).
    pub total: u64,
    /// The backlog's part (`mem_replication_backlog`): all of it without replicas, else up to
    /// its share ([`backlog_share`]).
    pub backlog: u64,
    /// The replicas' part, what they have not been sent beyond the backlog
    /// (`mem_clients_slaves`); 0 without replicas.
    pub replicas: u64,
    /// What `maxmemory` does not count: the part beyond the backlog's share, with or without
    /// replicas (blocks a departed replica held are still being given back).
    pub not_counted: u64,
}

/// Where a replica is in its life (INFO's `state=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplicaState {
    /// Announced itself (`REPLCONF`), not synced yet: not a replica.
    Announced,
    /// Waiting for its full sync to start (`wait_bgsave`): the snapshot slot is taken, or
    /// `repl-diskless-sync-delay` runs. The stream is not kept for it.
    Waiting,
    /// Receiving its full sync (`wait_bgsave`: Redis's names).
    Sync,
    /// Receiving the stream (`online`).
    Online,
}

/// A replica attached to this primary.
pub struct Replica {
    /// The replica's connection.
    pub info: Arc<ClientInfo>,
    /// `REPLCONF listening-port` (0 until announced).
    pub port: u16,
    /// `REPLCONF ip-address`, else the connection's address.
    pub ip: Option<String>,
    /// `REPLCONF capa eof`: takes a full sync without its length first.
    pub capa_eof: bool,
    /// `REPLCONF capa psync2`: understands `+CONTINUE <id>`.
    pub capa_psync2: bool,
    /// `REPLCONF capa latch`: a Latch replica, sent Latch's own commands (`LOCKRESTORE`).
    pub capa_latch: bool,
    /// Its state.
    pub state: ReplicaState,
    /// The offset it acknowledged last (`REPLCONF ACK`).
    pub ack: u64,
    /// When it acknowledged last (monotonic ms).
    pub ack_ms: u64,
    /// The offset of the last stream byte it was sent (or, during its full sync, the snapshot's).
    pub sent: u64,
    /// Sent the old `SYNC` (no `+FULLRESYNC`, no acks expected).
    pub pre_psync: bool,
    /// Acknowledged since it attached.
    pub acked: bool,
    /// Waiting for a full sync (Some): asked by PSYNC (true) or SYNC, and whether it will be
    /// diskless. Replicas waiting for a diskless one share the next that starts; replicas waiting
    /// for a disk-based one take the file of the disk-based sync running when they came.
    pub waiting_sync: Option<WaitingSync>,
}

impl Replica {
    fn new(info: Arc<ClientInfo>) -> Replica {
        Replica {
            info,
            port: 0,
            ip: None,
            capa_eof: false,
            capa_psync2: false,
            capa_latch: false,
            state: ReplicaState::Announced,
            ack: 0,
            ack_ms: 0,
            sent: 0,
            pre_psync: false,
            acked: false,
            waiting_sync: None,
        }
    }

    /// The address it announced (`REPLCONF ip-address`), else its connection's.
    fn announced_ip(&self) -> String {
        self.ip.clone().unwrap_or_else(|| host_of(&self.info.addr))
    }

    /// Synced or syncing: a replica INFO and ROLE list, whose stream bytes are kept.
    fn attached(&self) -> bool {
        self.state != ReplicaState::Announced
    }
}

/// The answer to a `PSYNC` (see [`Replication::psync`]).
#[derive(Debug, PartialEq, Eq)]
pub enum Psync {
    /// `+CONTINUE`: the replica has the stream up to `from - 1`; what follows comes from the backlog.
    Continue {
        /// The first offset the replica needs.
        from: u64,
        /// The id to announce (`+CONTINUE <id>` to a psync2 replica).
        replid: String,
    },
    /// A full sync is needed.
    Full,
}

/// What a replica's connection does once its SYNC or PSYNC was answered.
pub enum SyncJob {
    /// Sends the snapshot (an RDB file), then the stream from `offset + 1`.
    Full {
        /// The dataset at the instant of `offset`.
        snapshot: Snapshot,
        /// `master_repl_offset` at that instant.
        offset: u64,
        /// Without its length first: `$EOF:<40 bytes>`, the file, the same 40 bytes (the replica
        /// announced `capa eof` and `repl-diskless-sync` is on); else `$<len>` and the file.
        eof: bool,
        /// Holds the one snapshot slot while the file is written.
        slot: crate::persistence::ReplSnapshot,
        /// Other replicas that waited for a diskless sync and take this one's file too (Redis's
        /// one child writing to every waiting replica): each is in its full sync from `offset`.
        joined: Vec<Joiner>,
    },
    /// Waits until `until` (monotonic ms) and until no other snapshot runs, then starts a full
    /// sync (`Server::try_full_sync`).
    Wait {
        /// Asked by PSYNC (answered `+FULLRESYNC` when it starts), not SYNC.
        psync: bool,
        /// The transfer will be diskless.
        eof: bool,
        /// Not before this instant (`repl-diskless-sync-delay`).
        until: u64,
    },
    /// Sends the stream from `from` (a partial resync).
    Partial {
        /// The first offset the replica needs.
        from: u64,
    },
}

/// How a replica waits for its full sync.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitingSync {
    /// Asked by PSYNC (answered `+FULLRESYNC`), not SYNC.
    pub psync: bool,
    /// The transfer will be diskless.
    pub eof: bool,
}

/// A replica that joins another's full sync.
pub struct Joiner {
    /// Its connection.
    pub info: Arc<ClientInfo>,
    /// It asked with PSYNC: its connection answers `+FULLRESYNC` first.
    pub psync: bool,
}

/// Why a replica cannot be sent the stream from where it is.
#[derive(Debug, PartialEq, Eq)]
pub struct Behind;

/// Replication state and counters (the primary's side).
pub struct Replication {
    inner: Mutex<Inner>,
    /// `master_repl_offset`: bytes ever fed to the stream.
    offset: AtomicU64,
    /// The stream is recorded (a replica attached once: the backlog exists).
    active: AtomicBool,
    /// Replicas online, for the one load a write pays when there are none.
    online: AtomicU64,
    /// INFO's `sync_full`.
    pub sync_full: AtomicU64,
    /// INFO's `sync_partial_ok`.
    pub sync_partial_ok: AtomicU64,
    /// INFO's `sync_partial_err`.
    pub sync_partial_err: AtomicU64,
    /// Clients in WAIT, rung on each acknowledgement.
    ack_waiters: Mutex<Vec<(u64, AckWaker)>>,
    /// `repl-backlog-size` (at least [`BACKLOG_MIN`]); changed under `inner`'s lock.
    backlog_size: AtomicUsize,
    /// Bytes the buffer's blocks take, kept with every change (read without the lock by eviction).
    allocated: AtomicU64,
    /// Since when (monotonic ms) no replica is attached, for `repl-backlog-ttl`; 0 while one is.
    alone_since: AtomicU64,
}

type AckWaker = Arc<dyn Fn() + Send + Sync>;

struct Inner {
    replid: String,
    replid2: String,
    /// `second_repl_offset` (-1: none).
    second_offset: i64,
    /// The last `backlog.len()` bytes of the stream, ending at `offset`.
    backlog: Blocks,
    /// The database the stream selected last (None: the next effect selects).
    seldb: Option<usize>,
    replicas: BTreeMap<u64, Replica>,
    /// Where Latch's own commands (`LOCKRESTORE`) sit in the backlog: (first offset, length),
    /// oldest first. A replica that did not announce `capa latch` is sent an `ECHO` of the same
    /// length in their place (see [`echo_padding`]).
    native: VecDeque<(u64, u64)>,
}

impl Replication {
    /// Replication of a new server, with a fresh `replid`.
    pub fn new(replid: String) -> Replication {
        Replication {
            inner: Mutex::new(Inner {
                replid,
                replid2: NO_ID.to_string(),
                second_offset: -1,
                backlog: Blocks::default(),
                seldb: None,
                replicas: BTreeMap::new(),
                native: VecDeque::new(),
            }),
            offset: AtomicU64::new(0),
            active: AtomicBool::new(false),
            online: AtomicU64::new(0),
            sync_full: AtomicU64::new(0),
            sync_partial_ok: AtomicU64::new(0),
            sync_partial_err: AtomicU64::new(0),
            ack_waiters: Mutex::new(Vec::new()),
            backlog_size: AtomicUsize::new(1 << 20),
            allocated: AtomicU64::new(0),
            alone_since: AtomicU64::new(0),
        }
    }

    /// True while the stream is recorded.
    #[inline]
    pub fn active(&self) -> bool {
        self.active.load(Ordering::Relaxed)
    }

    /// `master_repl_offset`.
    pub fn offset(&self) -> u64 {
        self.offset.load(Ordering::Acquire)
    }

    /// The current replication id.
    pub fn replid(&self) -> String {
        self.inner.lock().replid.clone()
    }

    /// A new replication id (DEBUG CHANGE-REPL-ID, Redis's `changeReplicationId`).
    pub fn set_replid(&self, id: String) {
        self.inner.lock().replid = id;
    }

    /// `repl-backlog-size` (at least [`BACKLOG_MIN`]); a smaller backlog drops its oldest bytes,
    /// and so do bytes only replicas that have gone were still to be sent (the cron calls this
    /// every second, as Redis's cron trims the buffer incrementally).
    pub fn set_backlog_size(&self, bytes: usize) {
        let mut g = self.inner.lock();
        self.backlog_size.store(bytes.max(BACKLOG_MIN), Ordering::Relaxed);
        self.trim(&mut g, self.offset.load(Ordering::Relaxed), u64::MAX);
    }

    /// Drops what neither the backlog nor a replica needs (see [`trim`]) and notes the buffer's
    /// memory.
    fn trim(&self, g: &mut Inner, offset: u64, limit: u64) {
        let size = self.backlog_size.load(Ordering::Relaxed);
        trim(&mut g.backlog, size, &mut g.replicas, offset, limit);
        let first = offset + 1 - g.backlog.len() as u64;
        while g.native.front().is_some_and(|&(s, n)| s + n <= first) {
            g.native.pop_front();
        }
        self.note_memory(g);
    }

    /// A new history from here: `replid`, no secondary id, an empty backlog (and so nothing of
    /// Latch's own commands indexed in it), the next command selects its database again.
    fn new_history(&self, g: &mut Inner, replid: String) {
        g.replid = replid;
        g.replid2 = NO_ID.to_string();
        g.second_offset = -1;
        g.backlog.clear();
        g.native.clear();
        g.seldb = None;
        self.note_memory(g);
    }

    fn note_memory(&self, g: &Inner) {
        self.allocated.store(g.backlog.allocated() as u64, Ordering::Relaxed);
    }

    /// The buffer's memory (see [`BufferMemory`]). Replicas are those attached and not closed
    /// (a killed replica is gone for Redis at once; here its connection goes a moment later).
    pub fn memory(&self) -> BufferMemory {
        let g = self.inner.lock();
        let total = g.backlog.allocated() as u64;
        let backlog = total.min(backlog_share(self.backlog_size.load(Ordering::Relaxed)));
        let replicas = g.replicas.values().any(|r| r.attached() && !r.info.killed.load(Ordering::Relaxed));
        BufferMemory {
            total,
            backlog: if replicas { backlog } else { total },
            replicas: if replicas { total - backlog } else { 0 },
            not_counted: total - backlog,
        }
    }

    /// [`BufferMemory::not_counted`] without taking the buffer's lock: what eviction leaves out
    /// of used memory, read before every command under `maxmemory`.
    pub fn not_counted_memory(&self) -> u64 {
        let total = self.allocated.load(Ordering::Relaxed);
        total.saturating_sub(backlog_share(self.backlog_size.load(Ordering::Relaxed)))
    }

    /// The first replica arrives at a primary that records no stream: a new replication id, no
    /// secondary id, an empty backlog (Redis's `syncCommand` creating the backlog).
    pub fn activate(&self, new_id: impl FnOnce() -> String) {
        if self.active() {
            return;
        }
        let mut g = self.inner.lock();
        if self.active.load(Ordering::Relaxed) {
            return;
        }
        self.new_history(&mut g, new_id());
        self.active.store(true, Ordering::Release);
    }

    /// `repl-backlog-ttl` (seconds, 0: never), on a primary at `now_ms`: once no replica has been
    /// attached for that long, the backlog is freed and the replication id changes (Redis's
    /// replicationCron: a replica that comes back later cannot continue partially anyway). True
    /// when it was freed now.
    pub fn expire_backlog(&self, ttl_s: u64, now_ms: u64, new_id: impl FnOnce() -> String) -> bool {
        if !self.active() {
            return false;
        }
        if self.attached_count() > 0 {
            self.alone_since.store(0, Ordering::Relaxed);
            return false;
        }
        let since = self.alone_since.load(Ordering::Relaxed);
        if since == 0 {
            self.alone_since.store(now_ms.max(1), Ordering::Relaxed);
            return false;
        }
        if ttl_s == 0 || now_ms.saturating_sub(since) <= ttl_s.saturating_mul(1000) {
            return false;
        }
        let mut g = self.inner.lock();
        self.new_history(&mut g, new_id());
        self.active.store(false, Ordering::Release);
        self.alone_since.store(0, Ordering::Relaxed);
        true
    }

    /// A replica's full sync from its primary loaded: the stream is the primary's from `offset`
    /// on, under its id; no secondary id, an empty backlog (Redis's `readSyncBulkPayload` after the
    /// load: a replica keeps a backlog for its own replicas and for a promotion).
    pub fn follow(&self, replid: &str, offset: u64) {
        let mut g = self.inner.lock();
        self.new_history(&mut g, replid.to_string());
        self.offset.store(offset, Ordering::Release);
        self.active.store(true, Ordering::Release);
    }

    /// A primary restarted from a file saved in replication history `replid` at `offset` (Redis's
    /// `loadDataFromDisk`): that id becomes the secondary one, the offset goes on from there, and
    /// an empty backlog lets its replicas continue from exactly there.
    pub fn restore_as_primary(&self, replid: &str, offset: u64) {
        let mut g = self.inner.lock();
        g.replid2 = replid.to_string();
        g.second_offset = offset as i64 + 1;
        g.backlog.clear();
        g.native.clear();
        g.seldb = None;
        self.note_memory(&g);
        self.offset.store(offset, Ordering::Release);
        self.active.store(true, Ordering::Release);
    }

    /// The database the stream selected last (0 when it has to select again).
    pub fn stream_db(&self) -> usize {
        self.inner.lock().seldb.unwrap_or(0)
    }

    /// `+CONTINUE <id>` with an id other than this one's: the primary's history changed (it was
    /// promoted); this replica's id becomes the secondary one up to here, as the primary's did.
    pub fn continue_as(&self, replid: &str) {
        let mut g = self.inner.lock();
        if g.replid != replid {
            g.replid2 = std::mem::replace(&mut g.replid, replid.to_string());
            g.second_offset = self.offset.load(Ordering::Relaxed) as i64 + 1;
        }
        self.active.store(true, Ordering::Release);
    }

    /// A promotion (`REPLICAOF NO ONE`, Redis's `shiftReplicationId`): a new id, the old one kept
    /// as the secondary up to the next byte, so replicas of the old primary continue from here.
    pub fn shift_replid(&self, new_id: String) {
        let mut g = self.inner.lock();
        g.replid2 = std::mem::replace(&mut g.replid, new_id);
        g.second_offset = self.offset.load(Ordering::Relaxed) as i64 + 1;
        g.seldb = None;
    }

    /// Appends bytes of the primary's stream as they were applied (a replica's backlog and its
    /// own replicas get exactly the primary's bytes: Redis's `replicationFeedStreamFromMasterStream`).
    /// `native`: where Latch's own commands sit in `bytes` (start, length).
    pub fn feed_raw(&self, bytes: &[u8], native: &[(usize, usize)], hard_limit: u64) -> Vec<Arc<ClientInfo>> {
        if bytes.is_empty() {
            return Vec::new();
        }
        let mut g = self.inner.lock();
        let base = self.offset.load(Ordering::Relaxed) + 1;
        g.native.extend(native.iter().map(|&(s, n)| (base + s as u64, n as u64)));
        self.append(&mut g, bytes, hard_limit)
    }

    /// Closes every attached replica (they resync: the history they follow changed).
    pub fn disconnect_replicas(&self) {
        let g = self.inner.lock();
        for r in g.replicas.values().filter(|r| r.attached()) {
            r.info.kill();
        }
    }

    /// Rings `wake` on each acknowledgement until [`Replication::forget_ack_waiter`] (a client in
    /// WAIT).
    pub fn on_ack(&self, id: u64, wake: Arc<dyn Fn() + Send + Sync>) {
        self.ack_waiters.lock().push((id, wake));
    }

    /// Client `id` waits no more.
    pub fn forget_ack_waiter(&self, id: u64) {
        self.ack_waiters.lock().retain(|(i, _)| *i != id);
    }

    /// Appends one unit of the change stream (the effects of one command) to the stream. Returns
    /// the replicas to wake. `hard_limit`: the replica class's output limit (0: none); replicas
    /// further behind are closed.
    pub fn feed_unit(&self, effects: &[Effect], hard_limit: u64) -> Vec<Arc<ClientInfo>> {
        if !self.active() || !unit_reaches(effects, Effect::REPLICAS) {
            return Vec::new();
        }
        let mut out = Vec::new();
        let mut g = self.inner.lock();
        let base = self.offset.load(Ordering::Relaxed) + 1;
        let inner = &mut *g;
        let native = &mut inner.native;
        encode_unit(&mut out, &mut inner.seldb, effects, Effect::REPLICAS, |out, e| {
            let start = out.len();
            encode_command(out, &e.args);
            if is_native(&e.args[0]) {
                native.push_back((base + start as u64, (out.len() - start) as u64));
            }
        });
        self.append(&mut g, &out, hard_limit)
    }

    /// Appends a command that selects no database (PUBLISH, PING, REPLCONF GETACK).
    pub fn feed_command<A: AsRef<[u8]>>(&self, args: &[A], hard_limit: u64) -> Vec<Arc<ClientInfo>> {
        if !self.active() {
            return Vec::new();
        }
        let mut out = Vec::new();
        encode_command(&mut out, args);
        let mut g = self.inner.lock();
        self.append(&mut g, &out, hard_limit)
    }

    fn append(&self, g: &mut Inner, bytes: &[u8], hard_limit: u64) -> Vec<Arc<ClientInfo>> {
        g.backlog.extend(bytes);
        let offset = self.offset.load(Ordering::Relaxed) + bytes.len() as u64;
        self.offset.store(offset, Ordering::Release);
        // A hard limit below `repl-backlog-size` counts as that size (Redis's
        // checkClientOutputBufferLimits: the replica shares the backlog's memory anyway, and a
        // partial resync would succeed only for the replica to be closed again).
        let limit =
            if hard_limit == 0 { u64::MAX } else { hard_limit.max(self.backlog_size.load(Ordering::Relaxed) as u64) };
        self.trim(g, offset, limit);
        g.replicas.values().filter(|r| r.state == ReplicaState::Online).map(|r| r.info.clone()).collect()
    }

    /// The instant of a full sync: `master_repl_offset`, after which the stream selects its database
    /// again (Redis's `replicationSetupSlaveForFullResync`). Taken while every shard is held, so
    /// the snapshot and the stream meet exactly there.
    pub fn full_sync_point(&self) -> u64 {
        let mut g = self.inner.lock();
        g.seldb = None;
        self.offset.load(Ordering::Relaxed)
    }

    /// The stream from offset `from` (the first byte the replica needs), at most `max` bytes and
    /// never past the end of a block of the buffer (a full block's bytes are not copied); empty
    /// when it has everything. [`Behind`] when those bytes are gone.
    /// Without `latch` (a replica that did not announce `capa latch`), Latch's own commands come
    /// as `ECHO`s of their length.
    pub fn read(&self, from: u64, max: usize, latch: bool) -> Result<Bytes, Behind> {
        let g = self.inner.lock();
        let offset = self.offset.load(Ordering::Relaxed);
        let first = offset + 1 - g.backlog.len() as u64;
        if from < first {
            return Err(Behind);
        }
        if from > offset {
            return Ok(Bytes::new());
        }
        let piece = g.backlog.piece((from - first) as usize, max);
        let end = from + piece.len() as u64;
        let mut native = g.native.iter().filter(|&&(s, len)| s < end && s + len > from).peekable();
        if latch || native.peek().is_none() {
            return Ok(piece);
        }
        let mut v = piece.to_vec();
        for &(s, len) in native {
            let pad = echo_padding(len as usize);
            for off in s.max(from)..(s + len).min(end) {
                v[(off - from) as usize] = pad[(off - s) as usize];
            }
        }
        Ok(Bytes::from(v))
    }

    /// Redis's `masterTryPartialResynchronization`: `+CONTINUE` when `replid` is this primary's
    /// id (or its previous one, up to where it changed) and the backlog still holds `offset` on.
    pub fn psync(&self, replid: &[u8], offset: i64) -> Psync {
        let g = self.inner.lock();
        let ours = replid == g.replid.as_bytes();
        let previous = replid == g.replid2.as_bytes() && offset <= g.second_offset;
        let end = self.offset.load(Ordering::Relaxed);
        let first = end + 1 - g.backlog.len() as u64;
        let held = self.active() && offset >= 0 && (offset as u64) >= first && (offset as u64) <= end + 1;
        if (ours || previous) && held {
            Psync::Continue { from: offset as u64, replid: g.replid.clone() }
        } else {
            Psync::Full
        }
    }

    /// Attaches client `info` as a replica whose stream starts after offset `sent` (a full sync's
    /// snapshot offset, or a partial one's last byte held).
    pub fn attach(&self, info: Arc<ClientInfo>, state: ReplicaState, sent: u64, pre_psync: bool, now_ms: u64) {
        let mut g = self.inner.lock();
        let r = g.replicas.entry(info.id).or_insert_with(|| Replica::new(info.clone()));
        r.state = state;
        r.waiting_sync = None;
        r.acked = false;
        r.sent = sent;
        r.pre_psync = pre_psync;
        r.ack_ms = now_ms;
        if state == ReplicaState::Online {
            self.online.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The replica waits for a full sync as `how` says.
    pub fn wait_sync(&self, id: u64, how: WaitingSync) {
        if let Some(r) = self.inner.lock().replicas.get_mut(&id) {
            r.waiting_sync = Some(how);
        }
    }

    /// How many replicas wait for a diskless full sync (`repl-diskless-sync-max-replicas`).
    pub fn waiting_diskless(&self) -> usize {
        let g = self.inner.lock();
        g.replicas
            .values()
            .filter(|r| {
                r.state == ReplicaState::Waiting
                    && r.waiting_sync.is_some_and(|w| w.eof)
                    && !r.info.killed.load(Ordering::Relaxed)
            })
            .count()
    }

    /// A full sync of the form `eof` starts, or has its file, at snapshot offset `offset`: the
    /// other replicas waiting for one of that form join it, in their full sync from that offset
    /// (their stream starts after it). A disk-based sync's file is handed over once it is written,
    /// so its joiners are those that came while it was: none joins once the stream from `offset`
    /// is gone from the buffer (the replica that started it, which holds it, went away and the
    /// backlog moved on); they start their own.
    pub fn join_waiting(&self, except: u64, offset: u64, eof: bool, now_ms: u64) -> Vec<Joiner> {
        let mut g = self.inner.lock();
        let first = self.offset.load(Ordering::Relaxed) + 1 - g.backlog.len() as u64;
        if offset + 1 < first {
            return Vec::new();
        }
        let mut out = Vec::new();
        for r in g.replicas.values_mut() {
            if r.info.id == except || r.state != ReplicaState::Waiting || r.info.killed.load(Ordering::Relaxed) {
                continue;
            }
            let Some(how) = r.waiting_sync.filter(|w| w.eof == eof) else { continue };
            r.waiting_sync = None;
            r.state = ReplicaState::Sync;
            r.sent = offset;
            r.acked = false;
            r.ack_ms = now_ms;
            out.push(Joiner { info: r.info.clone(), psync: how.psync });
        }
        out
    }

    /// The replica finished its full sync: it receives the stream from now on.
    pub fn online(&self, id: u64, now_ms: u64) {
        let mut g = self.inner.lock();
        if let Some(r) = g.replicas.get_mut(&id)
            && r.state != ReplicaState::Online
        {
            r.state = ReplicaState::Online;
            r.ack_ms = now_ms;
            self.online.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The replica's connection closed (or that of a client that only announced itself).
    pub fn detach(&self, id: u64) {
        let mut g = self.inner.lock();
        let Some(r) = g.replicas.remove(&id) else { return };
        if r.state == ReplicaState::Online {
            self.online.fetch_sub(1, Ordering::Relaxed);
        }
        // What only it still needed goes now (Redis's freeReplicaReferencedReplBuffer).
        if r.attached() {
            self.trim(&mut g, self.offset.load(Ordering::Relaxed), u64::MAX);
        }
    }

    /// Records what was sent to replica `id`: the stream up to `offset`.
    pub fn sent(&self, id: u64, offset: u64) {
        if let Some(r) = self.inner.lock().replicas.get_mut(&id) {
            r.sent = r.sent.max(offset);
        }
    }

    /// `REPLCONF ACK <offset>` from replica `id`.
    pub fn ack(&self, id: u64, offset: u64, now_ms: u64) {
        if let Some(r) = self.inner.lock().replicas.get_mut(&id) {
            r.ack = r.ack.max(offset);
            r.ack_ms = now_ms;
            r.acked = true;
        }
        let waiters: Vec<AckWaker> = self.ack_waiters.lock().iter().map(|(_, w)| w.clone()).collect();
        for w in waiters {
            w();
        }
    }

    /// The other `REPLCONF` options a client announces before it syncs, kept until it attaches.
    pub fn announce(&self, info: &Arc<ClientInfo>, port: Option<u16>, ip: Option<String>, capa: &[&str]) {
        let mut g = self.inner.lock();
        let r = g.replicas.entry(info.id).or_insert_with(|| Replica::new(info.clone()));
        if let Some(p) = port {
            r.port = p;
        }
        if ip.is_some() {
            r.ip = ip;
        }
        for c in capa {
            match *c {
                "eof" => r.capa_eof = true,
                "psync2" => r.capa_psync2 = true,
                "latch" => r.capa_latch = true,
                _ => {}
            }
        }
    }

    /// Whether client `id` is known as a replica (announced, waiting, syncing or online): false
    /// once its connection closed.
    pub fn knows(&self, id: u64) -> bool {
        self.inner.lock().replicas.contains_key(&id)
    }

    /// Whether replica `id` acknowledged since it attached (a diskless full sync's stream starts
    /// then).
    pub fn has_acked(&self, id: u64) -> bool {
        self.inner.lock().replicas.get(&id).is_some_and(|r| r.acked)
    }

    /// Whether client `id` announced `capa latch`.
    pub fn capa_latch(&self, id: u64) -> bool {
        self.inner.lock().replicas.get(&id).is_some_and(|r| r.capa_latch)
    }

    /// What client `id` announced: (`capa eof`, `capa psync2`).
    pub fn capa(&self, id: u64) -> (bool, bool) {
        self.inner.lock().replicas.get(&id).map_or((false, false), |r| (r.capa_eof, r.capa_psync2))
    }

    /// Replicas online whose acknowledged offset reaches `offset`, and those online.
    pub fn acked(&self, offset: u64) -> (usize, usize) {
        let g = self.inner.lock();
        let online = g.replicas.values().filter(|r| r.state == ReplicaState::Online);
        let (mut reached, mut all) = (0, 0);
        for r in online {
            all += 1;
            if r.ack >= offset {
                reached += 1;
            }
        }
        (reached, all)
    }

    /// Replicas online that acknowledged within `max_lag_s` seconds of `now_ms`
    /// (`min-replicas-max-lag`).
    pub fn good_replicas(&self, now_ms: u64, max_lag_s: u64) -> usize {
        if self.online.load(Ordering::Relaxed) == 0 {
            return 0;
        }
        let g = self.inner.lock();
        g.replicas
            .values()
            .filter(|r| r.state == ReplicaState::Online && !r.pre_psync)
            .filter(|r| now_ms.saturating_sub(r.ack_ms) <= max_lag_s * 1000)
            .count()
    }

    /// Replicas online, speaking PSYNC, whose last acknowledgement is older than `before_ms`.
    pub fn silent_since(&self, before_ms: u64) -> Vec<Arc<ClientInfo>> {
        let g = self.inner.lock();
        g.replicas
            .values()
            .filter(|r| r.state == ReplicaState::Online && !r.pre_psync && r.ack_ms < before_ms)
            .map(|r| r.info.clone())
            .collect()
    }

    /// Replicas online.
    pub fn online_count(&self) -> usize {
        self.online.load(Ordering::Relaxed) as usize
    }

    /// INFO `replication`'s lines, at `now_ms` (lag in seconds since the last ack): a primary's, or
    /// with `upstream` (the replica's own lines, see `crate::upstream`) a replica's.
    pub fn info_lines(&self, now_ms: u64, upstream: Option<Vec<String>>, failover: &str) -> Vec<String> {
        let g = self.inner.lock();
        let offset = self.offset.load(Ordering::Relaxed);
        let listed = g.replicas.values().filter(|r| r.attached()).count();
        let mut out = vec![if upstream.is_some() { "role:slave" } else { "role:master" }.to_string()];
        out.extend(upstream.unwrap_or_default());
        out.push(format!("connected_slaves:{listed}"));
        for (i, r) in g.replicas.values().filter(|r| r.attached()).enumerate() {
            let ip = r.announced_ip();
            let state = if r.state == ReplicaState::Online { "online" } else { "wait_bgsave" };
            let lag = now_ms.saturating_sub(r.ack_ms) / 1000;
            out.push(format!("slave{i}:ip={ip},port={},state={state},offset={},lag={lag}", r.port, r.ack));
        }
        out.push(format!("master_failover_state:{failover}"));
        out.push(format!("master_replid:{}", g.replid));
        out.push(format!("master_replid2:{}", g.replid2));
        out.push(format!("master_repl_offset:{offset}"));
        out.push(format!("second_repl_offset:{}", g.second_offset));
        let active = self.active();
        out.push(format!("repl_backlog_active:{}", u8::from(active)));
        out.push(format!("repl_backlog_size:{}", self.backlog_size.load(Ordering::Relaxed)));
        let first = if active { offset + 1 - g.backlog.len() as u64 } else { 0 };
        out.push(format!("repl_backlog_first_byte_offset:{first}"));
        out.push(format!("repl_backlog_histlen:{}", g.backlog.len()));
        out
    }

    /// An online replica that acknowledged the whole stream: `target`, or any (its announced
    /// address then). Redis's `updateFailoverStatus` looks for it.
    pub fn caught_up(&self, target: Option<(&str, u16)>) -> Option<(String, u16)> {
        let g = self.inner.lock();
        let offset = self.offset.load(Ordering::Relaxed);
        g.replicas
            .values()
            .filter(|r| r.state == ReplicaState::Online && r.ack == offset)
            .map(|r| (r.announced_ip(), r.port))
            .find(|(ip, port)| target.is_none_or(|(h, p)| h == ip && p == *port))
    }

    /// At a shutdown (Redis's finishShutdown): how many replicas are attached, and for each that
    /// has not acknowledged the whole stream its name, how far behind it is, its lag in seconds
    /// (online ones) and its state.
    pub fn lagging(&self, now_ms: u64) -> (usize, Vec<(String, u64, u64, &'static str)>) {
        let g = self.inner.lock();
        let offset = self.offset.load(Ordering::Relaxed);
        let attached: Vec<&Replica> = g.replicas.values().filter(|r| r.attached()).collect();
        let lagging = attached
            .iter()
            .filter(|r| r.ack != offset)
            .map(|r| {
                let online = r.state == ReplicaState::Online;
                let lag = if online { now_ms.saturating_sub(r.ack_ms) / 1000 } else { 0 };
                let state = match r.state {
                    ReplicaState::Online => "online",
                    ReplicaState::Sync => "send_bulk",
                    _ => "wait_bgsave",
                };
                (format!("{}:{}", r.announced_ip(), r.port), offset - r.ack.min(offset), lag, state)
            })
            .collect();
        (attached.len(), lagging)
    }

    /// Whether an online replica announced `host`:`port` (FAILOVER TO checks it).
    pub fn has_online_replica(&self, host: &str, port: u16) -> Option<bool> {
        let g = self.inner.lock();
        g.replicas
            .values()
            .find(|r| r.attached() && r.port == port && r.announced_ip() == host)
            .map(|r| r.state == ReplicaState::Online)
    }

    /// Replicas attached (INFO's `connected_slaves`).
    pub fn attached_count(&self) -> usize {
        self.inner.lock().replicas.values().filter(|r| r.attached()).count()
    }

    /// ROLE's replica list: (ip, port, acknowledged offset) of each replica that announced a port.
    pub fn role_replicas(&self) -> Vec<(String, u16, u64)> {
        let g = self.inner.lock();
        g.replicas.values().filter(|r| r.attached()).map(|r| (r.announced_ip(), r.port, r.ack)).collect()
    }
}

/// Whether a stream command is Latch's own (a stock Redis replica would reject it).
pub fn is_native(name: &[u8]) -> bool {
    name.eq_ignore_ascii_case(b"LOCKRESTORE")
}

/// No-op commands exactly `len` bytes long on the wire (`len` at least 40): what a stock replica
/// runs in place of one of Latch's own commands, so that its offsets stay the primary's. An
/// `ECHO` whose argument fills the length; where no argument length fits (a length's digits
/// grow with it: 30, 121, 1022... bytes have none), an `ECHO` 14 bytes shorter and a `PING`.
pub fn echo_padding(len: usize) -> Vec<u8> {
    fn echo(len: usize) -> Option<Vec<u8>> {
        // `*2\r\n$4\r\nECHO\r\n$<m>\r\n<m bytes>\r\n` is 19 + digits(m) + m bytes.
        let m = (1..=20usize).find_map(|d| len.checked_sub(19 + d).filter(|m| m.to_string().len() == d))?;
        let mut out = Vec::with_capacity(len);
        out.extend_from_slice(format!("*2\r\n$4\r\nECHO\r\n${m}\r\n").as_bytes());
        out.resize(out.len() + m, b'-');
        out.extend_from_slice(b"\r\n");
        Some(out)
    }
    let out = echo(len).unwrap_or_else(|| {
        let mut out = echo(len - 14).expect("one of two neighbouring lengths fits");
        out.extend_from_slice(b"*1\r\n$4\r\nPING\r\n");
        out
    });
    debug_assert_eq!(out.len(), len);
    out
}

/// The host part of `ip:port` (an IPv6 address keeps its colons).
fn host_of(addr: &str) -> String {
    addr.rsplit_once(':').map_or(addr, |(h, _)| h).trim_matches(['[', ']']).to_string()
}

/// Drops the oldest bytes beyond what the backlog and the replicas need; a replica more than
/// `limit` bytes behind is closed (its output limit), and its need no longer counts, nor that of a
/// replica closed otherwise (CLIENT KILL) whose connection has not gone yet.
fn trim(backlog: &mut Blocks, size: usize, replicas: &mut BTreeMap<u64, Replica>, offset: u64, limit: u64) {
    let mut keep = size as u64;
    for r in replicas.values() {
        if !r.attached() || r.state == ReplicaState::Waiting || r.info.killed.load(Ordering::Relaxed) {
            continue;
        }
        let behind = offset.saturating_sub(r.sent);
        if behind > limit {
            // Closed once; until its connection goes, later feeds pass it by.
            r.info.kill();
            continue;
        }
        keep = keep.max(behind);
    }
    let len = backlog.len() as u64;
    if len > keep {
        backlog.drain_front((len - keep) as usize);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clients::ClientRegistry;

    fn effect(db: usize, args: &[&str]) -> Effect {
        Effect::new(db, args)
    }

    #[test]
    fn the_backlog_goes_after_repl_backlog_ttl_without_replicas() {
        let r = Replication::new("a".repeat(40));
        r.activate(|| "b".repeat(40));
        r.feed_unit(&[effect(0, &["SET", "k", "v"])], 0);
        let offset = r.offset();
        assert!(!r.expire_backlog(10, 1_000, || "c".repeat(40)), "alone from now on");
        assert!(!r.expire_backlog(10, 11_000, || "c".repeat(40)), "not longer than the ttl yet");
        assert!(!r.expire_backlog(0, 1_000_000, || "c".repeat(40)), "0: never");
        assert!(r.expire_backlog(10, 11_001, || "c".repeat(40)));
        assert!(!r.active());
        assert_eq!(r.replid(), "c".repeat(40));
        assert_eq!(r.offset(), offset, "the offset goes on");
        assert_eq!(r.psync(b"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", offset as i64 + 1), Psync::Full);
    }

    #[test]
    fn the_stream_selects_wraps_and_counts_its_bytes() {
        let r = Replication::new("a".repeat(40));
        assert!(r.feed_unit(&[effect(0, &["SET", "k", "v"])], 0).is_empty());
        assert_eq!(r.offset(), 0, "nothing is recorded before a replica attaches");
        r.activate(|| "b".repeat(40));
        assert_eq!(r.replid(), "b".repeat(40));
        r.feed_unit(&[effect(0, &["SET", "k", "v"])], 0);
        let one = b"*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n";
        assert_eq!(r.offset(), one.len() as u64);
        assert_eq!(&r.read(1, 1 << 20, true).unwrap()[..], &one[..]);
        r.feed_unit(&[effect(1, &["INCR", "a"]), effect(1, &["INCR", "b"])], 0);
        let rest = r.read(one.len() as u64 + 1, 1 << 20, true).unwrap();
        assert_eq!(
            &rest[..],
            &b"*2\r\n$6\r\nSELECT\r\n$1\r\n1\r\n*1\r\n$5\r\nMULTI\r\n*2\r\n$4\r\nINCR\r\n$1\r\na\r\n\
               *2\r\n$4\r\nINCR\r\n$1\r\nb\r\n*1\r\n$4\r\nEXEC\r\n"[..]
        );
        assert!(r.read(r.offset() + 1, 10, true).unwrap().is_empty());
    }

    /// A script's `redis.set_repl` narrows effects: the replicas get theirs only, inside the
    /// unit's MULTI/EXEC all the same (wrapped by the whole count, EXEC in the last effect's
    /// database), as Redis's propagatePendingCommands writes it; a lone effect for the AOF alone
    /// sends them nothing.
    #[test]
    fn the_stream_carries_only_what_goes_to_replicas() {
        let r = Replication::new("a".repeat(40));
        r.activate(|| "b".repeat(40));
        let only = |targets, e: Effect| Effect { targets, ..e };
        assert!(r.feed_unit(&[only(Effect::AOF, effect(0, &["SET", "c", "3"]))], 0).is_empty());
        assert_eq!(r.offset(), 0, "nothing to send");
        r.feed_unit(
            &[
                effect(0, &["SET", "a", "1"]),
                only(Effect::AOF, effect(0, &["SET", "c", "3"])),
                effect(0, &["SET", "d", "4"]),
                only(Effect::AOF, effect(2, &["SET", "e", "5"])),
            ],
            0,
        );
        assert_eq!(
            &r.read(1, 1 << 20, true).unwrap()[..],
            &b"*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n*1\r\n$5\r\nMULTI\r\n*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\n1\r\n\
               *3\r\n$3\r\nSET\r\n$1\r\nd\r\n$1\r\n4\r\n*2\r\n$6\r\nSELECT\r\n$1\r\n2\r\n*1\r\n$4\r\nEXEC\r\n"[..]
        );
    }

    #[test]
    fn partial_resync_needs_the_id_and_the_bytes() {
        let r = Replication::new("x".repeat(40));
        r.activate(|| "c".repeat(40));
        r.set_backlog_size(BACKLOG_MIN);
        for i in 0..2000 {
            r.feed_command(&["PING", &i.to_string()], 0);
        }
        let end = r.offset();
        let id = "c".repeat(40);
        assert_eq!(r.psync(id.as_bytes(), end as i64 + 1), Psync::Continue { from: end + 1, replid: id.clone() });
        assert_eq!(r.psync(id.as_bytes(), end as i64 + 2), Psync::Full);
        assert_eq!(r.psync(id.as_bytes(), 1), Psync::Full, "fell out of the 16 KiB backlog");
        assert_eq!(r.psync(b"?", -1), Psync::Full);
        assert_eq!(r.read(1, 10, true), Err(Behind));
        let first = end + 1 - BACKLOG_MIN as u64;
        let mut at = first;
        while at <= end {
            let piece = r.read(at, 1 << 20, true).unwrap();
            assert!(!piece.is_empty() && piece.len() <= BLOCK, "never past a block's end");
            at += piece.len() as u64;
        }
        assert_eq!(at - first, BACKLOG_MIN as u64);
    }

    #[test]
    fn blocks_keep_the_stream_and_free_what_is_trimmed() {
        let mut b = Blocks::default();
        let data: Vec<u8> = (0..5 * BLOCK + 123).map(|i| (i % 251) as u8).collect();
        for chunk in data.chunks(1000) {
            b.extend(chunk);
        }
        assert_eq!(b.len(), data.len());
        assert_eq!(b.full.len(), 5);
        // Read back in pieces, each within one block.
        let read_all = |b: &Blocks| {
            let mut out = Vec::new();
            while out.len() < b.len() {
                let p = b.piece(out.len(), 7000);
                assert!(!p.is_empty());
                out.extend_from_slice(&p);
            }
            out
        };
        assert_eq!(read_all(&b), data);
        let before = b.allocated();
        assert!((6 * BLOCK..7 * BLOCK).contains(&before), "{before}");
        // Dropping less than a block frees nothing; crossing blocks frees them whole.
        b.drain_front(BLOCK - 1);
        assert_eq!(b.full.len(), 5);
        b.drain_front(2 * BLOCK);
        assert_eq!(b.full.len(), 3);
        assert!(b.allocated() < before - 2 * BLOCK);
        assert_eq!(read_all(&b), &data[3 * BLOCK - 1..]);
        b.drain_front(usize::MAX);
        assert_eq!(b.len(), 0);
        assert!(b.full.is_empty());
        b.extend(b"abc");
        assert_eq!(&b.piece(0, 10)[..], b"abc");
    }

    #[test]
    fn a_stopped_replicas_share_of_the_buffer_is_not_counted_and_goes_with_it() {
        let registry = ClientRegistry::default();
        let info = registry.register("127.0.0.1:5000".into(), "".into(), 0);
        let r = Replication::new("x".repeat(40));
        r.activate(|| "e".repeat(40));
        r.set_backlog_size(BACKLOG_MIN);
        let quiet = r.memory();
        assert_eq!((quiet.replicas, quiet.not_counted), (0, 0));
        assert_eq!(quiet.backlog, quiet.total);
        r.attach(info.clone(), ReplicaState::Online, 0, false, 0);
        // The replica reads nothing: everything fed stays for it.
        for _ in 0..20_000 {
            r.feed_command(&["SET", "k", &"v".repeat(100)], 0);
        }
        let m = r.memory();
        assert!(m.total >= r.offset(), "the buffer holds the whole stream: {m:?}");
        assert_eq!(m.backlog, backlog_share(BACKLOG_MIN));
        assert_eq!(m.replicas, m.total - m.backlog);
        assert_eq!(m.not_counted, m.replicas);
        assert_eq!(r.not_counted_memory(), m.not_counted);
        // Closed: no replica any more, but until the buffer is trimmed its blocks are not the
        // dataset's either.
        info.kill();
        let killed = r.memory();
        assert_eq!(killed.replicas, 0);
        assert_eq!(killed.backlog, killed.total);
        assert_eq!(killed.not_counted, m.not_counted);
        // The cron's trim gives them back: what is left is the backlog's.
        r.set_backlog_size(BACKLOG_MIN);
        let trimmed = r.memory();
        assert!(trimmed.total <= 2 * (BLOCK + BLOCK_OVERHEAD) as u64 + 8 * 32, "{trimmed:?}");
        assert!(trimmed.not_counted < 2 * BLOCK as u64, "at most the blocks' free ends: {trimmed:?}");
        assert_eq!(r.not_counted_memory(), trimmed.not_counted);
        r.detach(info.id);
    }

    #[test]
    fn a_slow_replica_keeps_the_bytes_it_needs_until_its_limit() {
        let registry = ClientRegistry::default();
        let info = registry.register("127.0.0.1:5000".into(), "".into(), 0);
        let r = Replication::new("x".repeat(40));
        r.activate(|| "d".repeat(40));
        r.set_backlog_size(BACKLOG_MIN);
        r.attach(info.clone(), ReplicaState::Online, 0, false, 0);
        for _ in 0..1000 {
            r.feed_command(&["PING", &"p".repeat(50)], 1 << 20);
        }
        assert!(r.offset() > BACKLOG_MIN as u64);
        assert_eq!(r.read(1, 8, true).unwrap().len(), 8, "the replica's bytes are kept past the backlog");
        assert!(!info.killed.load(Ordering::Relaxed));
        for _ in 0..20000 {
            r.feed_command(&["PING", &"p".repeat(50)], 1 << 20);
        }
        assert!(info.killed.load(Ordering::Relaxed), "closed past the replica class's hard limit");
        assert_eq!(r.read(1, 8, true), Err(Behind));
        r.ack(info.id, 100, 5);
        assert_eq!(r.acked(100), (1, 1));
        assert_eq!(r.acked(101), (0, 1));
    }

    #[test]
    fn a_stock_replica_gets_latchs_own_commands_as_echoes_of_their_length() {
        for len in 40..20000 {
            let pad = echo_padding(len);
            assert_eq!(pad.len(), len);
            assert!(pad.starts_with(b"*2\r\n$4\r\nECHO\r\n$") && pad.ends_with(b"\r\n"));
            let mut buf = bytes::BytesMut::from(&pad[..]);
            let mut dec = resp::RequestDecoder::new();
            let limits = resp::Limits { proto_max_bulk_len: i64::MAX, auth_required: false };
            while let Some(args) = dec.decode(&mut buf, &limits).unwrap() {
                assert!(args[0] == "ECHO" || args[0] == "PING", "{len}");
            }
            assert!(buf.is_empty(), "{len}");
        }
        let r = Replication::new("a".repeat(40));
        r.activate(|| "b".repeat(40));
        r.feed_unit(&[effect(0, &["SET", "k", "v"])], 0);
        let before = r.offset();
        r.feed_unit(&[effect(0, &["LOCKRESTORE", "l", "me", "1800000000000", "7"])], 0);
        r.feed_unit(&[effect(0, &["SET", "k", "w"])], 0);
        let latch = r.read(1, 1 << 20, true).unwrap();
        let stock = r.read(1, 1 << 20, false).unwrap();
        assert_eq!(latch.len(), stock.len());
        let text = String::from_utf8_lossy(&stock);
        assert!(!text.contains("LOCKRESTORE") && text.contains("ECHO"), "{text}");
        assert!(String::from_utf8_lossy(&latch).contains("LOCKRESTORE"));
        // Read in pieces that cut through it, the stock stream is the same.
        let mut pieces = Vec::new();
        let mut at = 1;
        while at <= r.offset() {
            let p = r.read(at, 7, false).unwrap();
            at += p.len() as u64;
            pieces.extend_from_slice(&p);
        }
        assert_eq!(pieces, &stock[..]);
        assert_eq!(&latch[..before as usize], &stock[..before as usize]);
    }
}
