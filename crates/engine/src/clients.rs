//! The registry of connected clients and what other clients may read or do of one: its
//! [`ClientInfo`] (CLIENT LIST, CLIENT KILL, INFO clients, memory accounting) and its [`Outbox`]
//! (messages that answer none of its commands). The connection's own state is `crate::client`.

use crate::config::ObufLimits;
use parking_lot::Mutex;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};

/// The shared part of a client.
pub struct ClientInfo {
    /// Client id.
    pub id: u64,
    /// Peer address `ip:port`.
    pub addr: String,
    /// Local address `ip:port`.
    pub laddr: String,
    /// Creation time (monotonic ms).
    pub created_ms: u64,
    /// Time of the last command (monotonic ms).
    pub last_active_ms: AtomicU64,
    /// `CLIENT SETNAME`.
    pub name: Mutex<Option<Vec<u8>>>,
    /// `CLIENT SETINFO LIB-NAME`.
    pub lib_name: Mutex<Option<Vec<u8>>>,
    /// `CLIENT SETINFO LIB-VER`.
    pub lib_ver: Mutex<Option<Vec<u8>>>,
    /// Last command name (`cmd=` in CLIENT LIST).
    pub last_cmd: Mutex<&'static str>,
    /// The ACL user's name (`user=` in CLIENT LIST, CLIENT KILL USER).
    pub user: Mutex<bytes::Bytes>,
    /// Selected db, mirrored for CLIENT LIST.
    pub db: AtomicUsize,
    /// Protocol version, mirrored for CLIENT LIST.
    pub resp: AtomicUsize,
    /// Query buffer length, kept by the connection layer.
    pub qbuf: AtomicUsize,
    /// Query buffer allocation (length plus free room), kept by the connection layer.
    pub qbuf_cap: AtomicUsize,
    /// Output bytes the connection is writing and has not written yet, kept by the connection
    /// layer (CLIENT LIST's `omem` is [`ClientInfo::output_pending`]).
    pub omem: AtomicUsize,
    /// Flag letters for CLIENT LIST (`N`, `M` for monitor, `x` in MULTI...), kept by the engine.
    pub flags: Mutex<String>,
    /// Set by [`ClientInfo::trim_query_buffer`], cleared by the connection task.
    pub trim_qbuf: AtomicBool,
    /// The reply buffer's size (`rbs=`): what the connection keeps allocated for replies between
    /// flushes, resized by the server's cron as Redis resizes its static reply buffer.
    pub rbs: AtomicUsize,
    /// The most the reply buffer held since the last peak reset (`rbp=`), kept by the connection.
    pub rbp: AtomicUsize,
    /// When `rbp` was last reset (monotonic ms).
    pub rbp_reset_ms: AtomicU64,
    /// Bytes of the arguments of a request still arriving, kept by the connection layer (CLIENT
    /// LIST `argv-mem` of a client between commands).
    pub argv_mem: AtomicUsize,
    /// Bytes of the commands queued in MULTI and of the WATCH list (CLIENT LIST `multi-mem`).
    pub multi_mem: AtomicUsize,
    /// The WATCH list's part of `multi_mem`.
    pub watched_mem: AtomicUsize,
    /// Bytes of the client's BCAST prefixes (Redis counts its prefix tree's nodes), set as
    /// tracking turns on or off.
    pub tracking_mem: AtomicUsize,
    /// The client's memory as last reported by its connection ([`ClientRegistry::set_mem`]):
    /// what `maxmemory-clients` counts.
    pub mem: AtomicUsize,
    /// Set when the client must be disconnected (CLIENT KILL, SHUTDOWN).
    pub killed: AtomicBool,
    /// A stable, small per-connection number shown as `fd=` (the lowest free one, like a file
    /// descriptor).
    pub fd: u32,
    /// Channels subscribed (`sub=`), kept by the pub/sub code.
    pub sub: AtomicUsize,
    /// Patterns subscribed (`psub=`), kept by the pub/sub code.
    pub psub: AtomicUsize,
    /// Shard channels subscribed (`ssub=`), kept by the pub/sub code.
    pub ssub: AtomicUsize,
    /// Commands queued in MULTI (`multi=`), -1 outside a transaction; kept by the transaction code.
    pub multi: AtomicI64,
    /// Messages waiting for the connection to write them: pub/sub messages, MONITOR lines,
    /// tracking invalidations (see [`crate::pubsub`]).
    pub outbox: Outbox,
    /// Client-side caching state, while tracking is on.
    pub tracking: Mutex<Option<crate::tracking::ClientTracking>>,
    waker: Mutex<Option<Box<dyn Fn() + Send + Sync>>>,
    blocked_on: Mutex<Option<std::sync::Weak<dyn crate::keyspace::Waiting>>>,
    /// The WATCH state while the client watches keys: CLIENT LIST shows `d` once a watched key
    /// was touched (Redis's `CLIENT_DIRTY_CAS`).
    watch: Mutex<Option<Arc<crate::keyspace::WatchState>>>,
}

/// A client's queue of messages that do not answer one of its commands. Other clients' commands
/// fill it ([`crate::server::Server::deliver`]); the connection task empties it between commands,
/// and right after each of its own commands, before the reply (a message a command sends its own
/// client arrives first, as in Redis).
#[derive(Default)]
pub struct Outbox {
    queue: Mutex<OutboxQueue>,
    /// True while `queue` holds messages: what the connection checks after each command.
    pending: AtomicBool,
}

#[derive(Default)]
struct OutboxQueue {
    msgs: Vec<bytes::Bytes>,
    /// Bytes in `msgs`.
    bytes: usize,
    /// Unix second the soft output limit was first seen reached, while it stays reached.
    soft_since: Option<u64>,
}

impl OutboxQueue {
    /// Whether `other` bytes of output (what the connection has not written yet, and a message
    /// about to be queued) with this queue put the client over `limits`, counted as
    /// [`reply_bytes`] past a static reply buffer of `rbs` bytes; the queue keeps when the soft
    /// limit was first reached.
    fn over(&mut self, other: usize, rbs: usize, limits: ObufLimits, now_s: u64) -> bool {
        limits.over(reply_bytes(other + self.bytes, rbs) as u64, now_s, &mut self.soft_since)
    }
}

/// How [`Outbox::push`] went.
#[derive(Debug, PartialEq, Eq)]
pub enum Pushed {
    /// Queued behind other messages: the connection has been woken already.
    Queued,
    /// Queued into an empty outbox: wake the connection.
    First,
    /// Over the output limits: not queued, and the queue was emptied.
    Overflow,
}

/// A Redis reply node: 16 KiB of room (`PROTO_REPLY_CHUNK_BYTES`) behind a 16-byte header, which
/// jemalloc serves from its 20 KiB class; Redis counts each node's whole usable size.
const REPLY_NODE: usize = 20 * 1024 - 16;

/// Redis's `getClientOutputBufferMemoryUsage` (its `reply_bytes`, CLIENT LIST's `omem`, what the
/// output limits are checked against) for `pending` bytes of output not yet written by a client
/// whose static reply buffer is `rbs` bytes: what does not fit that buffer, in whole reply nodes.
pub fn reply_bytes(pending: usize, rbs: usize) -> usize {
    pending.saturating_sub(rbs).div_ceil(REPLY_NODE) * REPLY_NODE
}

impl Outbox {
    /// Queues `msg` unless the client's pending output (`unwritten`, what its connection has not
    /// written yet, plus this queue) goes over `limits`, counted as [`reply_bytes`] with a static
    /// reply buffer of `rbs` bytes.
    pub fn push(&self, msg: bytes::Bytes, unwritten: usize, rbs: usize, limits: ObufLimits, now_s: u64) -> Pushed {
        let mut q = self.queue.lock();
        if q.over(unwritten + msg.len(), rbs, limits, now_s) {
            q.msgs.clear();
            q.bytes = 0;
            self.pending.store(false, Ordering::Relaxed);
            return Pushed::Overflow;
        }
        q.bytes += msg.len();
        q.msgs.push(msg);
        if q.msgs.len() == 1 {
            self.pending.store(true, Ordering::Release);
            Pushed::First
        } else {
            Pushed::Queued
        }
    }

    /// True when messages are waiting.
    pub fn pending(&self) -> bool {
        self.pending.load(Ordering::Acquire)
    }

    /// Bytes waiting.
    pub fn bytes(&self) -> usize {
        self.queue.lock().bytes
    }

    /// Takes every waiting message, oldest first, into `out` (emptied first).
    pub fn take(&self, out: &mut Vec<bytes::Bytes>) {
        out.clear();
        let mut q = self.queue.lock();
        std::mem::swap(&mut q.msgs, out);
        q.bytes = 0;
        self.pending.store(false, Ordering::Relaxed);
    }
}

/// Memory a client costs besides its buffers, so that `tot-mem` looks like Redis's.
const CLIENT_BASE_MEM: usize = 790;

/// A client's memory as CLIENT LIST's `tot-mem` adds it up (Redis's `getClientMemoryUsage`): its
/// bookkeeping, reply buffer, query buffer, arguments, pending output, and its MULTI state and
/// subscriptions (`state_mem`, [`ClientInfo::state_mem`]).
pub fn tot_mem(rbs: usize, qbuf_alloc: usize, argv_mem: usize, omem: usize, state_mem: usize) -> usize {
    CLIENT_BASE_MEM
        .saturating_add(rbs)
        .saturating_add(qbuf_alloc)
        .saturating_add(argv_mem)
        .saturating_add(omem)
        .saturating_add(state_mem)
}

/// What Redis counts per subscription in a client's memory: a pattern is a list node (24 bytes);
/// a channel is a dict entry (24 bytes) plus its share of the dict's slots (8 bytes each, a power
/// of two, at least 4).
fn subscriptions_mem(patterns: usize, channels: usize, shard_channels: usize) -> usize {
    let dict = |n: usize| if n == 0 { 0 } else { n * 24 + n.next_power_of_two().max(4) * 8 };
    patterns * 24 + dict(channels) + dict(shard_channels)
}

/// Smallest reply buffer (Redis's `PROTO_REPLY_MIN_BYTES`).
pub const REPLY_BUFFER_MIN: usize = 1024;
/// Largest reply buffer the cron grows to, and a new client's (Redis's `PROTO_REPLY_CHUNK_BYTES`).
pub const REPLY_BUFFER_MAX: usize = 16 * 1024;

/// Order in which Redis prints the flag letters of `CLIENT LIST` (`O` = monitor, `S` = replica,
/// `M` = master, `P` = pub/sub, `x` = MULTI, `b` = blocked, `t` = tracking, `d` = dirty CAS,
/// `e` = no-evict, `T` = no-touch...). `N` stands alone when no other flag is set.
pub const FLAG_ORDER: &str = "OSMPxbtRBdcuAUreT";

/// First number handed out as `fd=` (Redis's first client usually gets 8).
const FIRST_FD: u32 = 8;

impl ClientInfo {
    /// The waiter of this client while it is blocked (CLIENT UNBLOCK).
    pub fn blocked_on(&self) -> Option<Arc<dyn crate::keyspace::Waiting>> {
        self.blocked_on.lock().as_ref().and_then(std::sync::Weak::upgrade)
    }
    /// Records (or clears) the waiter of this client.
    pub fn set_blocked_on(&self, w: Option<Arc<dyn crate::keyspace::Waiting>>) {
        *self.blocked_on.lock() = w.as_ref().map(Arc::downgrade);
    }
    /// Sets or clears one flag letter of [`FLAG_ORDER`], keeping Redis's order and the lone `N`.
    pub fn set_flag(&self, letter: char, on: bool) {
        let mut f = self.flags.lock();
        let mut letters: Vec<char> = f.chars().filter(|&c| c != 'N' && c != letter).collect();
        if on {
            letters.push(letter);
        }
        letters.sort_by_key(|c| FLAG_ORDER.find(*c).unwrap_or(usize::MAX));
        *f = if letters.is_empty() { String::from("N") } else { letters.into_iter().collect() };
    }
    /// Records the client's WATCH state (WATCH), or forgets it (UNWATCH, EXEC, DISCARD, RESET).
    pub fn set_watch_state(&self, w: Option<Arc<crate::keyspace::WatchState>>) {
        *self.watch.lock() = w;
    }
    /// The flag letters CLIENT LIST shows: the ones set, plus `d` while a watched key was touched.
    pub fn flags_shown(&self) -> String {
        let dirty = self.watch.lock().as_ref().is_some_and(|w| w.dirty.load(Ordering::Relaxed));
        let f = self.flags.lock().clone();
        if !dirty {
            return f;
        }
        let mut letters: Vec<char> = f.chars().filter(|&c| c != 'N').chain(['d']).collect();
        letters.sort_by_key(|c| FLAG_ORDER.find(*c).unwrap_or(usize::MAX));
        letters.into_iter().collect()
    }
    /// True if the flag letter is set.
    pub fn has_flag(&self, letter: char) -> bool {
        letter != 'N' && self.flags.lock().contains(letter)
    }
    /// The client's type as `CLIENT LIST TYPE` / `CLIENT KILL TYPE` see it: `normal`, `slave`,
    /// `pubsub` or `master` (a MONITOR client is normal). A client is `pubsub` while it has the `P`
    /// flag or any subscription (Redis's `CLIENT_PUBSUB` is set exactly then).
    pub fn type_name(&self) -> &'static str {
        let f = self.flags.lock();
        let subscribed = || {
            self.sub.load(Ordering::Relaxed) + self.psub.load(Ordering::Relaxed) + self.ssub.load(Ordering::Relaxed) > 0
        };
        if f.contains('M') {
            "master"
        } else if f.contains('S') {
            "slave"
        } else if f.contains('P') || subscribed() {
            "pubsub"
        } else {
            "normal"
        }
    }
    /// Installs the function the connection layer wants called when this client is killed.
    pub fn set_waker(&self, f: Box<dyn Fn() + Send + Sync>) {
        *self.waker.lock() = Some(f);
    }
    /// CLIENT LIST `multi-mem`: the MULTI queue and the WATCH list.
    pub fn multi_mem_total(&self) -> usize {
        self.multi_mem.load(Ordering::Relaxed) + self.watched_mem.load(Ordering::Relaxed)
    }

    /// What this client holds in memory as the connection last reported it (CLIENT LIST
    /// `tot-mem` between commands): what `maxmemory-clients` counts.
    pub fn estimate_mem(&self) -> usize {
        tot_mem(
            self.rbs.load(Ordering::Relaxed),
            self.qbuf_cap.load(Ordering::Relaxed).max(self.qbuf.load(Ordering::Relaxed)),
            self.argv_mem.load(Ordering::Relaxed),
            self.output_pending(),
            self.state_mem(),
        )
    }

    /// The memory of this client's MULTI queue, of its subscriptions (Redis counts the
    /// per-client overhead of each channel and pattern: the names themselves are shared) and of
    /// its tracking prefixes.
    pub fn state_mem(&self) -> usize {
        self.multi_mem_total()
            + self.tracking_mem.load(Ordering::Relaxed)
            + subscriptions_mem(
                self.psub.load(Ordering::Relaxed),
                self.sub.load(Ordering::Relaxed),
                self.ssub.load(Ordering::Relaxed),
            )
    }

    /// Output waiting for the client beyond the static reply buffer (Redis's
    /// `getClientOutputBufferMemoryUsage`, CLIENT LIST's `omem`): what its connection has not
    /// written yet, and the messages queued in its outbox, the same sum the output limits are
    /// checked against ([`ClientInfo::deliver`]).
    pub fn output_pending(&self) -> usize {
        let queued = if self.outbox.pending() { self.outbox.bytes() } else { 0 };
        reply_bytes(self.omem.load(Ordering::Relaxed) + queued, self.rbs.load(Ordering::Relaxed))
    }

    /// Redis's `clientsCronResizeOutputBuffer`, run by the cron: the reply buffer shrinks to its
    /// peak (at least 1 KiB) when the peak is under half of it, or doubles (up to 16 KiB) when a
    /// reply filled it; the peak starts over every `peak_reset_ms` (never when negative). The
    /// connection reallocates to the new `rbs` when its buffer is next empty.
    pub fn resize_reply_buffer(&self, now_ms: u64, peak_reset_ms: i64, resizing: bool) {
        let size = self.rbs.load(Ordering::Relaxed);
        let peak = self.rbp.load(Ordering::Relaxed);
        let mut new = 0;
        if resizing {
            if size / 2 >= REPLY_BUFFER_MIN && peak < size / 2 {
                new = REPLY_BUFFER_MIN.max(peak + 1);
            } else if size * 2 < REPLY_BUFFER_MAX * 2 && peak >= size {
                new = REPLY_BUFFER_MAX.min(size * 2);
            }
        }
        if peak_reset_ms >= 0
            && now_ms.saturating_sub(self.rbp_reset_ms.load(Ordering::Relaxed)) >= peak_reset_ms as u64
        {
            self.rbp.store(0, Ordering::Relaxed);
            self.rbp_reset_ms.store(now_ms, Ordering::Relaxed);
        }
        if new != 0 {
            self.rbs.store(new, Ordering::Relaxed);
        }
    }

    /// Asks the connection task to give its (drained) query buffer back, as Redis's clientsCron
    /// does for a client idle over 2 seconds.
    pub fn trim_query_buffer(&self) {
        self.trim_qbuf.store(true, Ordering::Relaxed);
        if let Some(w) = &*self.waker.lock() {
            w();
        }
    }
    /// Wakes the connection task (messages are waiting in its outbox).
    pub fn wake(&self) {
        if let Some(w) = &*self.waker.lock() {
            w();
        }
    }
    /// Marks the client killed and wakes its connection task.
    pub fn kill(&self) {
        self.killed.store(true, Ordering::SeqCst);
        if let Some(w) = &*self.waker.lock() {
            w();
        }
    }
}

/// What a delivery to an outbox is checked against: the output limits of the two classes a
/// receiver may be in, and the second, read once for a whole fan-out.
pub struct DeliveryLimits {
    /// `client-output-buffer-limit normal`.
    pub normal: ObufLimits,
    /// `client-output-buffer-limit pubsub` (a receiver with subscriptions).
    pub pubsub: ObufLimits,
    /// Unix seconds.
    pub now_s: u64,
    /// `maxmemory-clients` in bytes (0: no limit): a receiver is weighed against it as its output
    /// grows, not only when its own connection next looks.
    pub clients_memory: u64,
}

impl ClientInfo {
    /// Queues `msg` in this client's outbox, waking its connection for the first message. A client
    /// its class's limits put over is closed instead (Redis's
    /// `closeClientOnOutputBufferLimitReached`): true when this delivery closed it. Never waits.
    pub fn deliver(&self, msg: bytes::Bytes, l: &DeliveryLimits) -> bool {
        if self.killed.load(Ordering::Relaxed) {
            return false;
        }
        let limits = self.class_limits(l);
        let unwritten = self.omem.load(Ordering::Relaxed);
        match self.outbox.push(msg, unwritten, self.rbs.load(Ordering::Relaxed), limits, l.now_s) {
            Pushed::Queued => false,
            Pushed::First => {
                self.wake();
                false
            }
            Pushed::Overflow => {
                if self.killed.load(Ordering::Relaxed) {
                    return false;
                }
                self.kill();
                true
            }
        }
    }
}

impl ClientInfo {
    /// The limits of this client's class: pub/sub while it has subscriptions, else normal.
    fn class_limits(&self, l: &DeliveryLimits) -> ObufLimits {
        let pubsub =
            self.sub.load(Ordering::Relaxed) + self.psub.load(Ordering::Relaxed) + self.ssub.load(Ordering::Relaxed)
                > 0;
        if pubsub { l.pubsub } else { l.normal }
    }

    /// The cron's look at this client's pending output (Redis's `clientsCron` calls
    /// `closeClientOnOutputBufferLimitReached`): a soft limit reached for longer than its seconds
    /// closes the client even when nothing more is sent to it. True when this closed it.
    pub fn check_output_limits(&self, l: &DeliveryLimits) -> bool {
        if self.killed.load(Ordering::Relaxed) {
            return false;
        }
        let (unwritten, rbs) = (self.omem.load(Ordering::Relaxed), self.rbs.load(Ordering::Relaxed));
        let over = self.outbox.queue.lock().over(unwritten, rbs, self.class_limits(l), l.now_s);
        if over {
            self.kill();
        }
        over
    }
}

/// Hands out the lowest free `fd=` number.
#[derive(Default)]
struct FdPool {
    next: u32,
    free: BTreeSet<u32>,
}

impl FdPool {
    fn take(&mut self) -> u32 {
        if let Some(fd) = self.free.pop_first() {
            return fd;
        }
        let fd = FIRST_FD.saturating_add(self.next);
        self.next = self.next.saturating_add(1);
        fd
    }
    fn give_back(&mut self, fd: u32) {
        self.free.insert(fd);
    }
}

/// All connected clients.
#[derive(Default)]
pub struct ClientRegistry {
    /// The sum of every client's [`ClientInfo::mem`] (`maxmemory-clients`).
    mem_total: AtomicU64,
    /// Clients closed by `maxmemory-clients` (INFO `evicted_clients`).
    pub evicted_clients: AtomicU64,
    next_id: AtomicU64,
    clients: Mutex<BTreeMap<u64, Arc<ClientInfo>>>,
    fds: Mutex<FdPool>,
    /// Connections accepted since start.
    pub total_connections: AtomicU64,
    /// Connections refused because of maxclients.
    pub rejected_connections: AtomicU64,
}

impl ClientRegistry {
    /// Registers a new connection.
    pub fn register(&self, addr: String, laddr: String, now_ms: u64) -> Arc<ClientInfo> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let fd = self.fds.lock().take();
        let info = Arc::new(ClientInfo {
            id,
            addr,
            laddr,
            created_ms: now_ms,
            last_active_ms: AtomicU64::new(now_ms),
            name: Mutex::new(None),
            lib_name: Mutex::new(None),
            lib_ver: Mutex::new(None),
            last_cmd: Mutex::new("NULL"),
            user: Mutex::new(bytes::Bytes::from_static(b"default")),
            db: AtomicUsize::new(0),
            resp: AtomicUsize::new(2),
            qbuf: AtomicUsize::new(0),
            qbuf_cap: AtomicUsize::new(0),
            trim_qbuf: AtomicBool::new(false),
            rbs: AtomicUsize::new(REPLY_BUFFER_MAX),
            // As Redis's createClient: the peak starts at the buffer's size, so that the first cron
            // pass resets it rather than shrinking a buffer the client has not used yet.
            rbp: AtomicUsize::new(REPLY_BUFFER_MAX),
            rbp_reset_ms: AtomicU64::new(0),
            mem: AtomicUsize::new(0),
            argv_mem: AtomicUsize::new(0),
            multi_mem: AtomicUsize::new(0),
            tracking_mem: AtomicUsize::new(0),
            watched_mem: AtomicUsize::new(0),
            omem: AtomicUsize::new(0),
            flags: Mutex::new(String::from("N")),
            killed: AtomicBool::new(false),
            fd,
            sub: AtomicUsize::new(0),
            psub: AtomicUsize::new(0),
            ssub: AtomicUsize::new(0),
            multi: AtomicI64::new(-1),
            outbox: Outbox::default(),
            tracking: Mutex::new(None),
            waker: Mutex::new(None),
            blocked_on: Mutex::new(None),
            watch: Mutex::new(None),
        });
        self.clients.lock().insert(id, info.clone());
        self.total_connections.fetch_add(1, Ordering::Relaxed);
        info
    }

    /// Removes a closed connection.
    pub fn unregister(&self, id: u64) {
        let removed = self.clients.lock().remove(&id);
        if let Some(info) = removed {
            self.fds.lock().give_back(info.fd);
            self.mem_total.fetch_sub(info.mem.swap(0, Ordering::Relaxed) as u64, Ordering::Relaxed);
        }
    }

    /// Records that `info`'s client now uses `bytes` (its buffers and bookkeeping), keeping the
    /// total that `maxmemory-clients` limits.
    pub fn set_mem(&self, info: &ClientInfo, bytes: usize) {
        let old = info.mem.swap(bytes, Ordering::Relaxed);
        if bytes >= old {
            self.mem_total.fetch_add((bytes - old) as u64, Ordering::Relaxed);
        } else {
            self.mem_total.fetch_sub((old - bytes) as u64, Ordering::Relaxed);
        }
    }

    /// Memory of all clients together.
    pub fn mem_total(&self) -> u64 {
        self.mem_total.load(Ordering::Relaxed)
    }

    /// Redis's `evictClients`: while all clients together use more than `limit`, the client using
    /// the most is closed (normal and pub/sub clients only, not those with CLIENT NO-EVICT on).
    /// Returns the clients closed.
    pub fn evict_over(&self, limit: u64) -> Vec<Arc<ClientInfo>> {
        let mut total = self.mem_total();
        if limit == 0 || total <= limit {
            return Vec::new();
        }
        let mut candidates: Vec<Arc<ClientInfo>> = self
            .snapshot()
            .into_iter()
            .filter(|c| !c.has_flag('e') && !c.killed.load(Ordering::Relaxed))
            .filter(|c| matches!(c.type_name(), "normal" | "pubsub"))
            .collect();
        candidates.sort_by_key(|c| std::cmp::Reverse(c.mem.load(Ordering::Relaxed)));
        let mut closed = Vec::new();
        for c in candidates {
            if total <= limit {
                break;
            }
            total = total.saturating_sub(c.mem.load(Ordering::Relaxed) as u64);
            c.kill();
            self.evicted_clients.fetch_add(1, Ordering::Relaxed);
            closed.push(c);
        }
        closed
    }

    /// A snapshot of the connected clients, by id.
    pub fn snapshot(&self) -> Vec<Arc<ClientInfo>> {
        self.clients.lock().values().cloned().collect()
    }

    /// Number of connected clients.
    pub fn len(&self) -> usize {
        self.clients.lock().len()
    }

    /// True when nobody is connected.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Looks a client up by id.
    pub fn get(&self, id: u64) -> Option<Arc<ClientInfo>> {
        self.clients.lock().get(&id).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Client eviction closes the largest evictable clients until the total is within the limit.
    #[test]
    fn eviction_takes_the_largest_evictable_clients_first() {
        let r = ClientRegistry::default();
        let (a, b, c) = (
            r.register("a".into(), "".into(), 0),
            r.register("b".into(), "".into(), 0),
            r.register("c".into(), "".into(), 0),
        );
        r.set_mem(&a, 500);
        r.set_mem(&b, 3000);
        r.set_mem(&c, 2000);
        c.set_flag('e', true);
        assert_eq!(r.mem_total(), 5500);
        assert!(r.evict_over(6000).is_empty());
        let closed = r.evict_over(2600);
        assert_eq!(closed.iter().map(|c| c.addr.as_str()).collect::<Vec<_>>(), ["b"]);
        assert!(b.killed.load(Ordering::Relaxed) && !c.killed.load(Ordering::Relaxed));
        r.unregister(b.id);
        assert_eq!(r.mem_total(), 2500);
        // The protected client alone keeps the total over: every other client goes.
        assert_eq!(r.evict_over(1000).len(), 1);
        assert!(a.killed.load(Ordering::Relaxed));
        assert_eq!(r.evicted_clients.load(Ordering::Relaxed), 2);
    }

    /// Subscriptions count as Redis's `getClientMemoryUsage` counts them, so that a client
    /// subscribing without end reaches `maxmemory-clients`.
    #[test]
    fn subscriptions_count_toward_a_client_s_memory() {
        assert_eq!(subscriptions_mem(0, 0, 0), 0);
        assert_eq!(subscriptions_mem(3, 0, 0), 72);
        assert_eq!(subscriptions_mem(0, 1, 0), 24 + 4 * 8);
        assert_eq!(subscriptions_mem(0, 5, 5), 2 * (5 * 24 + 8 * 8));
        let r = ClientRegistry::default();
        let c = r.register("a".into(), "".into(), 0);
        let before = c.estimate_mem();
        c.psub.store(1000, Ordering::Relaxed);
        assert_eq!(c.estimate_mem(), before + 24_000);
    }

    /// Output is counted as Redis counts its reply list: nothing within the static reply buffer,
    /// then whole 20 KiB reply nodes.
    #[test]
    fn pending_output_counts_in_whole_reply_nodes_past_the_reply_buffer() {
        assert_eq!(reply_bytes(16 * 1024, 16 * 1024), 0);
        assert_eq!(reply_bytes(16 * 1024 + 1, 16 * 1024), REPLY_NODE);
        // KEYS of 1,000 100-byte names (Redis's "Obuf limit, KEYS stopped mid-run"): over a
        // 100,000-byte hard limit once it does not fit the static buffer.
        assert!(reply_bytes(111_000, 16 * 1024) > 100_000);
        assert_eq!(reply_bytes(111_000, 1024), 6 * REPLY_NODE);
    }

    /// The cron closes a client whose output stays over the soft limit for longer than its
    /// seconds, with nothing more sent to it (Redis's clientsCron), and not before.
    #[test]
    fn the_cron_closes_a_client_over_its_soft_limit_once_its_time_passed() {
        let r = ClientRegistry::default();
        let c = r.register("a".into(), "".into(), 0);
        c.rbs.store(1024, Ordering::Relaxed);
        c.sub.store(1, Ordering::Relaxed);
        let soft = ObufLimits { hard: 0, soft: 100_000, soft_secs: 3 };
        let at = |now_s| DeliveryLimits { normal: ObufLimits::default(), pubsub: soft, now_s, clients_memory: 0 };
        // Under the soft limit: nothing starts.
        c.omem.store(50_000, Ordering::Relaxed);
        assert!(!c.check_output_limits(&at(100)));
        // Over it from second 100 on: closed only once more than 3 seconds passed.
        c.omem.store(200_000, Ordering::Relaxed);
        assert!(!c.check_output_limits(&at(100)));
        assert!(!c.check_output_limits(&at(103)));
        assert!(c.check_output_limits(&at(104)));
        assert!(c.killed.load(Ordering::Relaxed));
        // A client of the normal class (no subscriptions) is held to the normal limits (none).
        let n = r.register("b".into(), "".into(), 0);
        n.omem.store(200_000, Ordering::Relaxed);
        assert!(!n.check_output_limits(&at(100)) && !n.check_output_limits(&at(200)));
    }

    /// Redis's clientsCronResizeOutputBuffer on a client's figures.
    #[test]
    fn reply_buffers_shrink_when_idle_and_grow_when_filled() {
        let c = ClientRegistry::default().register("a".into(), "b".into(), 0);
        // First pass: the initial peak is the size, so nothing changes; the peak is reset.
        c.resize_reply_buffer(100, 100, true);
        assert_eq!((c.rbs.load(Ordering::Relaxed), c.rbp.load(Ordering::Relaxed)), (16384, 0));
        c.resize_reply_buffer(150, 100, true);
        assert_eq!(c.rbs.load(Ordering::Relaxed), 1024);
        // Replies that fill the buffer double it each pass, up to 16 KiB.
        for want in [2048, 4096, 8192, 16384, 16384] {
            c.rbp.store(c.rbs.load(Ordering::Relaxed), Ordering::Relaxed);
            c.resize_reply_buffer(30, -1, true);
            assert_eq!(c.rbs.load(Ordering::Relaxed), want);
        }
        // Resizing off: the size stays.
        c.rbp.store(0, Ordering::Relaxed);
        c.resize_reply_buffer(40, -1, false);
        assert_eq!(c.rbs.load(Ordering::Relaxed), 16384);
    }
}
