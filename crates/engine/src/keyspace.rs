//! The sharded keyspace.
//!
//! Keys are spread over `N` shards (a power of two) by a hash of the key alone, so a key lives in the
//! same shard in every database: `MOVE`, `COPY ... DB` and `SWAPDB` never cross shards. Each shard is a
//! `parking_lot::Mutex<Shard>` holding one [`Table`] per database. A command locks the shards of the
//! keys it names (found through the command table's key specs), in ascending shard order, which makes
//! every command atomic and rules out lock-order deadlocks. Commands that see the whole keyspace
//! (`KEYS`, `SCAN`, `FLUSHALL`, `SWAPDB`, `EXEC`, `EVAL`) lock every shard, in the same order.
//!
//! ## Tables
//! A [`Table`] is a [`DenseMap`]: slots at dense positions, found through a compact hash index.
//! * Removal is `swap_remove`: the last entry moves down into the hole. Because entries only ever move
//!   to *lower* positions and new ones are appended, a cursor that walks positions from high to low
//!   visits every key that stays present for the whole iteration: Redis's `SCAN` guarantee, without
//!   Redis's reverse-binary cursor.
//! * Random access by position makes `RANDOMKEY` O(1).
//! * Keys with a TTL are listed by position in a plain vector, their deadlines in a parallel one
//!   (12 bytes per key with a TTL; each such entry knows its place in them, an entry without TTL
//!   says so in the same bits, so its reads touch nothing else). The active expiry cycle sweeps
//!   the list, and eviction samples it as Redis samples its `expires` dict. The cycle only sweeps
//!   a table when its earliest deadline (a lower bound kept as deadlines are set and refreshed by
//!   each full sweep) has passed.

use crate::densemap::DenseMap;
use crate::rdb::{self, RecordSpec, Writer};
use crate::value::{Entry, Hasher, Key};
use parking_lot::{Mutex, MutexGuard};
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// A client's WATCH state: set dirty when any key it watches is modified.
#[derive(Debug, Default)]
pub struct WatchState {
    /// Some watched key was touched since WATCH.
    pub dirty: AtomicBool,
}

/// One (client, key) watch registration, shared by the client and the table holding the key.
#[derive(Debug)]
pub struct WatchedKey {
    /// The watching client's state.
    pub state: Arc<WatchState>,
    /// The key was already logically expired when WATCH ran (Redis's `wk->expired`).
    pub expired: AtomicBool,
}

type WatchMap = HashMap<Key, Vec<Arc<WatchedKey>>, Hasher>;
type BlockMap = HashMap<Key, std::collections::VecDeque<Arc<dyn Waiting>>, Hasher>;

/// A client blocked on keys of a table, as the table sees it: the table queues it, drops it once it
/// no longer waits, and hands it back to whoever serves the key. What the client waits for, and how
/// it is served, is the runtime's business (`crate::waiters::Waiter`, recovered with
/// [`Waiting::into_any`]).
pub trait Waiting: Send + Sync + 'static {
    /// True while the client still waits (or is being served right now).
    fn is_waiting(&self) -> bool;
    /// The waiter as its own type.
    fn into_any(self: Arc<Self>) -> Arc<dyn std::any::Any + Send + Sync>;
}

/// A table's keys taken out whole (see [`Table::take_data`]).
pub struct TableData {
    map: DenseMap<Entry>,
    volatile: Vec<u32>,
    deadlines: Vec<u64>,
}

// A table slot is a key and its entry: 56 bytes. A regression costs every key: fail the build.
const _: () = assert!(std::mem::size_of::<(Key, Entry)>() == 56);
// A chunk of slots stays in jemalloc's small classes: a large allocation is placed one page
// longer (`densemap::CHUNK`), 4 bytes a key at 56-byte slots.
const _: () = assert!(crate::densemap::CHUNK * std::mem::size_of::<(Key, Entry)>() <= crate::densemap::SMALL_CLASS_MAX);

/// One database inside one shard.
#[derive(Default)]
pub struct Table {
    map: DenseMap<Entry>,
    /// Positions of the keys with a TTL, in no order; each such entry knows its place here
    /// (`Entry::vpos`).
    volatile: Vec<u32>,
    /// The deadlines (monotonic ms, never 0) of the keys listed in `volatile`, place for place:
    /// a key's TTL lives here rather than in its entry, so keys without one do not pay for it.
    deadlines: Vec<u64>,
    /// The active expiry's sweep over `volatile`, from the top down: places at and above it were
    /// visited in the running pass (entries only move down, so none present at the start of a
    /// pass is missed). `None` between passes.
    sweep: Option<usize>,
    /// No key of the table has a deadline before this (a lower bound: lowered as deadlines are
    /// set, raised to `pass_min` when a sweep completes). Lookups rely on it too: no key is
    /// expired while `now` has not passed it.
    next_at: u64,
    /// The earliest deadline the running pass saw, and of those set since it started.
    pass_min: u64,
    /// Keys removed because their TTL passed (lazily or actively).
    pub expired: u64,
    /// WATCH registrations on keys of this table; `None` until someone watches (keeps tables small).
    watch: Option<Box<WatchMap>>,
    /// Clients blocked on keys of this table, in arrival order; `None` until someone blocks.
    blocked: Option<Box<BlockMap>>,
    /// Keys with blocked clients that were written since the last serving pass, with the order in
    /// which they became ready (served in that order, as Redis does).
    ready: Vec<(u64, Key)>,
    /// Shared by the tables of one shard: set when any of them has ready keys, so the per-command
    /// check for blocked clients to serve is one load per shard, not one per database.
    shard_ready: Arc<AtomicBool>,
    /// Orders ready keys across the keyspace's shards; shared by all its tables (only touched when a
    /// key with blocked clients changes).
    ready_seq: Arc<std::sync::atomic::AtomicU64>,
    /// Keys this table deleted on its own (expired, evicted) since they were last taken, while the
    /// change stream records (`None` otherwise): they propagate as `DEL` (see [`crate::changes`]).
    server_deletes: Option<Vec<Key>>,
    /// Shared by the tables of one shard: set when any of them has such keys, so that taking them
    /// after each command is one load per shard, not one per database.
    shard_deletes: Arc<AtomicBool>,
    /// What this table logs about its keys for keyspace notifications and client tracking
    /// ([`KeyEvent`] bits, [`Keyspace::set_key_log`]); shared by every table of the keyspace.
    log_mask: Arc<AtomicU32>,
    /// Logged key events since they were last taken.
    log: Vec<(Key, KeyEvent)>,
    /// Shared by the tables of one shard: set when any of them has logged events.
    shard_log: Arc<AtomicBool>,
    /// The snapshot epoch (see [`Table::begin_snapshot`]); every table of a keyspace has the same.
    epoch: u8,
    /// The running snapshot's state in this table, if one runs.
    snap: Option<Box<TableSnapshot>>,
    /// Shared by all tables of a keyspace: while clients are paused, the last millisecond of the pause
    /// (0: no pause). Until then no key is deleted for its TTL: lookups treat an expired key as
    /// absent and leave it stored, and the active cycle skips it (see [`Keyspace::hold_expiry`]).
    held_until: Arc<std::sync::atomic::AtomicU64>,
}

/// A running snapshot's state in one table (see [`Table::begin_snapshot`]).
struct TableSnapshot {
    spec: Arc<RecordSpec>,
    db: usize,
    /// The walk goes down from the table's length at the start: positions at and above the cursor
    /// were visited. Removals move the last entry (visited, or created after the start) down into
    /// the freed position, and `retain` moves entries down too, so no unvisited entry ever moves
    /// above the cursor: none is skipped.
    cursor: usize,
    /// Records not yet taken by the writer.
    out: Writer,
    scratch: Writer,
    /// The file could not be written: entries are only marked, not encoded.
    discard: bool,
}

impl TableSnapshot {
    /// Writes `e` with its deadline `at` (0: none; as they were at the snapshot's instant) unless
    /// this snapshot has it already; `ahead`: ahead of the walk, because the entry is about to
    /// change or go.
    #[inline]
    fn cover(&mut self, epoch: u8, key: &[u8], e: &mut Entry, at: u64, ahead: bool) {
        if e.epoch() != epoch {
            e.set_epoch(epoch);
            if !self.discard {
                let before = self.out.buf.len();
                rdb::write_record(&self.spec, self.db, key, e, at, &mut self.out, &mut self.scratch);
                let p = &self.spec.progress;
                p.keys_written.fetch_add(1, Ordering::Relaxed);
                if ahead {
                    p.copied_bytes.fetch_add((self.out.buf.len() - before) as u64, Ordering::Relaxed);
                }
            }
        }
    }
}

/// What a table logs about a key, for keyspace notifications and client tracking (see
/// `crate::notify`): each kind is logged while its bit is in the keyspace's log mask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyEvent {
    /// Written or deleted (every path that tells WATCH: Redis's `signalModifiedKey`).
    Changed,
    /// Added (Redis's `dbAdd`: the `new` event).
    New,
    /// Reclaimed because its TTL passed; `lock` when it held a native lock.
    Expired {
        /// The key held a native lock.
        lock: bool,
    },
    /// Evicted under `maxmemory`.
    Evicted,
    /// Looked up for reading and not found (Redis's `keymiss` event).
    Missed,
}

impl KeyEvent {
    /// This kind's bit in the log mask.
    pub const fn bit(self) -> u32 {
        match self {
            KeyEvent::Changed => 1,
            KeyEvent::New => 2,
            KeyEvent::Expired { .. } => 4,
            KeyEvent::Evicted => 8,
            KeyEvent::Missed => 16,
        }
    }
}

/// The deadline of `e`, if it has one, given its table's deadlines (for callers that hold the
/// table's map borrowed: [`Table::deadline`] otherwise).
#[inline]
fn deadline_in(deadlines: &[u64], e: &Entry) -> Option<u64> {
    e.vpos().map(|v| deadlines[v])
}

impl Table {
    /// True while a client pause holds the dataset still at `now` (Redis's
    /// `checkClientPauseTimeoutAndReturnIfPaused` in `expireIfNeeded` and the active cycle): expired
    /// keys are not deleted. Only read on the path of an expired key.
    fn expiry_held(&self, now: u64) -> bool {
        let until = self.held_until.load(Ordering::Relaxed);
        until != 0 && now <= until
    }

    /// Number of keys, including expired ones not yet reclaimed.
    pub fn len(&self) -> usize {
        self.map.len()
    }
    /// True when the table holds no key.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
    /// How many keys the table holds before it grows (DEBUG HTSTATS).
    pub fn capacity(&self) -> usize {
        self.map.capacity()
    }
    /// Number of keys with a TTL.
    pub fn volatile_len(&self) -> usize {
        self.volatile.len()
    }

    /// The TTL deadline (monotonic ms) of `e`, an entry of this table (as [`Table::lookup`],
    /// [`Table::peek`], [`Table::iter`] and the others hand them out), if it has one. An entry
    /// without TTL answers from its own bits.
    #[inline]
    pub fn deadline(&self, e: &Entry) -> Option<u64> {
        deadline_in(&self.deadlines, e)
    }

    /// The TTL deadline of `key`, live or stale, if it is stored and has one.
    pub fn deadline_of(&self, key: &[u8]) -> Option<u64> {
        self.deadline(self.map.get(key)?)
    }

    /// The entry at `idx` and its deadline.
    #[inline]
    fn entry_and_deadline(&mut self, idx: usize) -> (&mut Entry, Option<u64>) {
        let e = &mut self.map[idx];
        let at = deadline_in(&self.deadlines, e);
        (e, at)
    }

    /// True when the entry at `idx` has a deadline before `now`.
    #[inline]
    fn expired_at(&self, idx: usize, now: u64) -> bool {
        self.expired(&self.map[idx], now)
    }

    /// True when `e` (an entry of this table) has a deadline before `now`. A key without TTL
    /// answers from its entry's bits; one with a TTL reads its deadline only once the table's
    /// earliest deadline (`next_at`, a lower bound) has come, so lookups of keys whose TTL is
    /// far off touch nothing but the table.
    #[inline]
    fn expired(&self, e: &Entry, now: u64) -> bool {
        e.vpos().is_some_and(|v| now > self.next_at && self.deadlines[v] < now)
    }

    /// Lists the key at `idx` (which has no deadline yet) among the keys with a TTL, with `at`.
    fn volatile_add(&mut self, idx: usize, at: u64) {
        debug_assert!(at != 0 && !self.map[idx].has_ttl());
        let v = self.volatile.len();
        self.volatile.push(idx as u32);
        self.deadlines.push(at);
        self.map[idx].set_vpos(v);
        self.deadline_set(at);
    }

    /// Sets the deadline of the key at `idx` to `at` (0: none). The TTL list, the entry's place in
    /// it and the sweep's bounds follow.
    fn set_deadline(&mut self, idx: usize, at: u64) {
        match (self.map[idx].vpos(), at) {
            (None, 0) => {}
            (None, at) => self.volatile_add(idx, at),
            (Some(v), 0) => {
                self.map[idx].clear_vpos();
                self.volatile_remove(v);
            }
            (Some(v), at) => {
                if self.deadlines[v] != at {
                    self.deadlines[v] = at;
                    self.deadline_set(at);
                }
            }
        }
    }

    /// The TTL list was replaced wholesale: the next sweep starts a new pass, and the earliest
    /// deadline is unknown until it ends.
    fn restart_sweep(&mut self) {
        (self.sweep, self.next_at) = (None, 0);
    }

    /// A deadline was set or changed: the sweep's bounds take it into account.
    #[inline]
    fn deadline_set(&mut self, at: u64) {
        self.next_at = self.next_at.min(at);
        self.pass_min = self.pass_min.min(at);
    }

    /// Unlists place `v` of the list of keys with a TTL (its entry, if still in the table, was
    /// told already); the last place moves into it.
    fn volatile_remove(&mut self, v: usize) {
        self.volatile.swap_remove(v);
        self.deadlines.swap_remove(v);
        if let Some(&moved) = self.volatile.get(v) {
            self.map[moved as usize].set_vpos(v);
        }
        if self.volatile.is_empty() {
            self.sweep = None;
            if self.volatile.capacity() > 64 {
                self.volatile = Vec::new();
                self.deadlines = Vec::new();
            }
        }
    }

    /// Lists again every key with a TTL, after positions changed wholesale (the entries' places
    /// still point into the old list, which holds their deadlines).
    fn volatile_rebuild(&mut self) {
        let old = std::mem::take(&mut self.deadlines);
        self.volatile.clear();
        self.restart_sweep();
        for idx in 0..self.map.len() {
            let e = &mut self.map[idx];
            if let Some(v) = e.vpos() {
                e.set_vpos(self.volatile.len());
                self.volatile.push(idx as u32);
                self.deadlines.push(old[v]);
            }
        }
    }

    /// Position of a live key, reclaiming it first if its TTL passed. `hash`: the key's hash when
    /// the caller knows it ([`Locked::known_hash`]).
    #[inline]
    fn live_index(&mut self, key: &[u8], hash: Option<u64>, now: u64) -> Option<usize> {
        let idx = self.map.get_index_of_hashed(key, hash)?;
        if self.expired_at(idx, now) {
            if self.expiry_held(now) {
                // Logically expired, kept until the pause ends.
                return None;
            }
            self.reclaim(idx, key);
            return None;
        }
        Some(idx)
    }

    /// Deletes the expired key at `idx` (an expiry: counted, logged, WATCH and waiters told).
    fn reclaim(&mut self, idx: usize, key: &[u8]) {
        let (e, _) = self.remove_index(idx);
        self.expired += 1;
        self.note_server_delete(key);
        self.log_key(key, KeyEvent::Expired { lock: matches!(e.value, crate::value::Value::Lock(_)) });
        self.touch(key);
        self.signal_ready(key);
    }

    /// Deletes `key` if its TTL passed, even while expiry is held: a writable replica's own keys,
    /// which no primary deletes (Redis's `expireSlaveKeys`). Returns whether the key is still
    /// there with a TTL (it may expire later).
    pub fn expire_own_key(&mut self, key: &[u8], now: u64) -> bool {
        let Some(idx) = self.map.get_index_of(key) else { return false };
        let Some(at) = self.deadline(&self.map[idx]) else { return false };
        if at < now {
            self.reclaim(idx, key);
            return false;
        }
        true
    }

    /// Finds a live key, reclaiming it first if its TTL passed.
    pub fn lookup(&mut self, key: &[u8], now: u64) -> Option<&mut Entry> {
        let idx = self.live_index(key, None, now)?;
        Some(&mut self.map[idx])
    }

    /// [`Table::lookup`] with the key's deadline (one lookup).
    pub fn lookup_with_deadline(&mut self, key: &[u8], now: u64) -> Option<(&mut Entry, Option<u64>)> {
        let idx = self.live_index(key, None, now)?;
        Some(self.entry_and_deadline(idx))
    }

    /// [`Table::lookup`] for a read that counts as a keyspace hit or miss: a miss is logged
    /// (keyspace notifications' `keymiss`).
    pub fn lookup_read(&mut self, key: &[u8], now: u64) -> Option<&mut Entry> {
        self.lookup_read_hashed(key, None, now)
    }

    /// [`Table::lookup_read`] with the key's hash when the caller knows it ([`Locked::known_hash`]).
    pub fn lookup_read_hashed(&mut self, key: &[u8], hash: Option<u64>, now: u64) -> Option<&mut Entry> {
        let idx = self.read_index(key, hash, now)?;
        Some(&mut self.map[idx])
    }

    /// [`Table::lookup_read`] with the key's deadline (one lookup).
    pub fn lookup_read_with_deadline(&mut self, key: &[u8], now: u64) -> Option<(&mut Entry, Option<u64>)> {
        let idx = self.read_index(key, None, now)?;
        Some(self.entry_and_deadline(idx))
    }

    #[inline]
    fn read_index(&mut self, key: &[u8], hash: Option<u64>, now: u64) -> Option<usize> {
        let idx = self.live_index(key, hash, now);
        if idx.is_none() {
            self.log_key(key, KeyEvent::Missed);
        }
        idx
    }

    /// Like [`Table::lookup`], for a caller about to modify the value in place: WATCH is told first.
    pub fn lookup_for_write(&mut self, key: &[u8], now: u64) -> Option<&mut Entry> {
        self.lookup_for_write_hashed(key, None, now)
    }

    /// [`Table::lookup_for_write`] with the key's hash when the caller knows it
    /// ([`Locked::known_hash`]).
    pub fn lookup_for_write_hashed(&mut self, key: &[u8], hash: Option<u64>, now: u64) -> Option<&mut Entry> {
        let idx = self.write_index(key, hash, now)?;
        Some(&mut self.map[idx])
    }

    /// [`Table::lookup_for_write`] with the key's deadline (one lookup).
    pub fn lookup_for_write_with_deadline(&mut self, key: &[u8], now: u64) -> Option<(&mut Entry, Option<u64>)> {
        let idx = self.write_index(key, None, now)?;
        Some(self.entry_and_deadline(idx))
    }

    #[inline]
    fn write_index(&mut self, key: &[u8], hash: Option<u64>, now: u64) -> Option<usize> {
        let idx = self.live_index(key, hash, now)?;
        self.before_change(idx);
        self.touch(key);
        self.signal_ready(key);
        Some(idx)
    }

    /// Looks at a key without the expiry check (callers that already checked, or that report on stale keys).
    pub fn peek(&self, key: &[u8]) -> Option<&Entry> {
        self.map.get(key)
    }

    /// True if `key` exists and its TTL has passed (it is still stored).
    pub fn is_stale(&self, key: &[u8], now: u64) -> bool {
        self.map.get(key).is_some_and(|e| self.expired(e, now))
    }

    /// Stores `entry` under `key` with the deadline `at` (monotonic ms; 0: none), replacing any
    /// previous entry and its TTL. Returns the previous entry (its deadline is gone).
    pub fn insert(&mut self, key: &[u8], entry: Entry, at: u64) -> Option<Entry> {
        let hash = self.map.hash(key);
        let found = self.map.find_hashed(hash, key);
        self.store(key, hash, found, entry, at)
    }

    /// [`Table::insert`] for a write that did not look the key up first (SET, MSET, RENAME...), with
    /// the key's hash when the caller knows it ([`Locked::known_hash`]): a key whose TTL passed at
    /// `now` is reclaimed as a lookup would have (an expiry: counted, logged, notified) before the
    /// new entry takes its name, in the same probe of the table. Returns the live entry replaced.
    pub fn set_hashed(&mut self, key: &[u8], hash: Option<u64>, entry: Entry, at: u64, now: u64) -> Option<Entry> {
        debug_assert!(hash.is_none_or(|h| h == self.map.hash(key)), "the keyspace and its tables hash alike");
        let hash = hash.unwrap_or_else(|| self.map.hash(key));
        let mut found = self.map.find_hashed(hash, key);
        if let Some(idx) = found
            && self.expired_at(idx, now)
            && !self.expiry_held(now)
        {
            self.reclaim(idx, key);
            found = None;
        }
        self.store(key, hash, found, entry, at)
    }

    /// Stores `entry` under `key` (hash `hash`) at `found`, the key's place if it has one. Inlined
    /// into its two callers: as a call of its own it cost MSET 4% more instructions.
    #[inline(always)]
    fn store(&mut self, key: &[u8], hash: u64, found: Option<usize>, mut entry: Entry, at: u64) -> Option<Entry> {
        // New data: no running snapshot writes it.
        entry.set_epoch(self.epoch);
        let old = match found {
            Some(idx) => {
                self.before_change(idx);
                // The new entry takes the old one's place in the TTL list, then the deadline follows.
                let slot = &mut self.map[idx];
                let place = slot.vpos();
                match place {
                    Some(v) => entry.set_vpos(v),
                    None => entry.clear_vpos(),
                }
                let mut old = std::mem::replace(slot, entry);
                old.clear_vpos();
                if place.is_some() || at != 0 {
                    self.set_deadline(idx, at);
                }
                Some(old)
            }
            None => {
                entry.clear_vpos();
                let idx = self.map.push_hashed(hash, Key::from_slice(key), entry);
                if at != 0 {
                    self.volatile_add(idx, at);
                }
                self.log_key(key, KeyEvent::New);
                None
            }
        };
        self.touch(key);
        self.signal_ready(key);
        old
    }

    /// Removes a key, live or stale.
    pub fn remove(&mut self, key: &[u8]) -> Option<Entry> {
        self.remove_with_deadline(key).map(|(e, _)| e)
    }

    /// [`Table::remove`] that also hands back the key's deadline (0: none), for a caller that
    /// stores the entry again (RENAME, MOVE: [`Table::insert`] takes the same pair).
    pub fn remove_with_deadline(&mut self, key: &[u8]) -> Option<(Entry, u64)> {
        let idx = self.map.get_index_of(key)?;
        let removed = self.remove_index(idx);
        self.touch(key);
        self.signal_ready(key);
        Some(removed)
    }

    /// Removes `keys` (those present) in one pass that also rebuilds the hash index: slots that
    /// deletions left marked deleted (hashbrown's tombstones) become free again, without allocating.
    /// Positions only move down, as with single removals (SCAN's guarantee holds). Returns how many.
    pub fn remove_many(&mut self, keys: &[Key]) -> usize {
        let doomed: std::collections::HashSet<&[u8], Hasher> = keys.iter().map(|k| &k[..]).collect();
        let mut gone: Vec<Key> = Vec::new();
        let (epoch, mut snap, deadlines) = (self.epoch, self.snap.as_deref_mut(), &self.deadlines);
        self.map.retain(|k, e| {
            let keep = !doomed.contains(&k[..]);
            if !keep {
                if let Some(s) = snap.as_deref_mut() {
                    s.cover(epoch, k, e, deadline_in(deadlines, e).unwrap_or(0), true);
                }
                gone.push(k.clone());
            }
            keep
        });
        self.volatile_rebuild();
        for k in &gone {
            self.touch(k);
            self.signal_ready(k);
        }
        gone.len()
    }

    /// Removes the slot at `idx`; returns its entry (without a place in the TTL list) and its
    /// deadline (0: none).
    fn remove_index(&mut self, idx: usize) -> (Entry, u64) {
        self.before_change(idx);
        let (_, mut e) = self.map.swap_remove_index(idx).expect("index from get_index_of");
        // The last slot moved into `idx`: its place in the TTL list follows.
        if idx < self.map.len()
            && let Some(v) = self.map[idx].vpos()
        {
            self.volatile[v] = idx as u32;
        }
        let at = match e.vpos() {
            Some(v) => {
                let at = self.deadlines[v];
                e.clear_vpos();
                self.volatile_remove(v);
                at
            }
            None => 0,
        };
        (e, at)
    }

    /// Sets (or with 0 clears) the TTL deadline of an existing key. Returns false if the key is absent.
    pub fn set_expire(&mut self, key: &[u8], at: u64) -> bool {
        let Some(idx) = self.map.get_index_of(key) else { return false };
        self.before_change(idx);
        self.set_deadline(idx, at);
        self.touch(key);
        true
    }

    /// True when some key's deadline may have passed at `now` (the active cycle has work here).
    pub fn expiry_due(&self, now: u64) -> bool {
        !self.volatile.is_empty() && self.next_at < now
    }

    /// The active expiry cycle's step in this table: sweeps the keys with a TTL, reclaiming those
    /// whose deadline is before `now`, until `max` are reclaimed or `16 * max` examined (the sweep
    /// goes on from there next time). Returns how many were reclaimed.
    pub fn active_expire(&mut self, now: u64, max: usize) -> usize {
        if !self.expiry_due(now) || self.expiry_held(now) {
            return 0;
        }
        let (mut reclaimed, mut examined) = (0, 0);
        let limit = max.saturating_mul(16).max(1);
        while reclaimed < max && examined < limit {
            let v = match self.sweep {
                Some(v) => v.min(self.volatile.len()),
                None => {
                    self.pass_min = u64::MAX;
                    self.volatile.len()
                }
            };
            if v == 0 {
                // A full pass: every deadline left is at or after the pass's minimum.
                self.next_at = self.pass_min;
                self.sweep = None;
                break;
            }
            let v = v - 1;
            self.sweep = Some(v);
            examined += 1;
            let at = self.deadlines[v];
            if at < now {
                let idx = self.volatile[v] as usize;
                // Removal moves the list's last place (visited) into `v`: nothing is skipped.
                let key = self.map.get_index(idx).expect("listed position").0.clone();
                self.reclaim(idx, &key);
                reclaimed += 1;
            } else {
                self.pass_min = self.pass_min.min(at);
            }
        }
        reclaimed
    }

    /// Reclaims the keys with blocked clients whose deadline passed (a lock whose holder died is
    /// handed on within milliseconds, not at the next sweep). True if any was.
    pub fn expire_blocked_keys(&mut self, now: u64) -> bool {
        if self.expiry_held(now) {
            return false;
        }
        let due = self.blocked_due(now);
        for k in &due {
            self.reclaim_key(k);
        }
        !due.is_empty()
    }

    /// The keys with blocked clients whose deadline passed at `now`, in no order.
    pub fn blocked_due(&self, now: u64) -> Vec<Key> {
        let Some(b) = self.blocked.as_deref() else { return Vec::new() };
        b.keys().filter(|k| self.is_stale(k, now)).cloned().collect()
    }

    /// Removes `key` as expired (its blocked clients are then served), if it is there.
    pub fn reclaim_key(&mut self, key: &[u8]) {
        if let Some(idx) = self.map.get_index_of(key) {
            self.reclaim(idx, key);
        }
    }

    /// Deletes a key the server chose to evict (it propagates as `DEL`).
    pub fn evict(&mut self, key: &[u8]) -> Option<Entry> {
        let e = self.remove(key)?;
        self.note_server_delete(key);
        self.log_key(key, KeyEvent::Evicted);
        Some(e)
    }

    /// [`Table::evict`] for eviction's accounting: the entry is removed and dropped, `measure`
    /// runs, and then the key is logged. The logs' copies of the key (for the change stream's
    /// `DEL`, notifications and tracking invalidations) are what propagating the eviction costs,
    /// not memory the key held: Redis measures `dbDelete` alone, or an eviction whose messages
    /// cost as much as the key would never count as freeing anything (a feedback loop that
    /// empties the keyspace). None (and `measure` not run) if `key` is not present.
    pub fn evict_measured<T>(&mut self, key: &[u8], measure: impl FnOnce() -> T) -> Option<T> {
        let idx = self.map.get_index_of(key)?;
        drop(self.remove_index(idx).0);
        let measured = measure();
        // What `remove` does after the removal.
        self.touch(key);
        self.signal_ready(key);
        self.note_server_delete(key);
        self.log_key(key, KeyEvent::Evicted);
        Some(measured)
    }

    /// [`Table::remove_many`] for keys the server chose to evict (they propagate as `DEL`).
    pub fn evict_many(&mut self, keys: &[Key]) -> usize {
        let n = self.remove_many(keys);
        for k in keys {
            self.log_key(k, KeyEvent::Evicted);
        }
        if let Some(log) = self.server_deletes.as_mut() {
            // The batch was picked from this table: every key in it was present.
            log.extend(keys.iter().cloned());
            self.shard_deletes.store(true, Ordering::Relaxed);
        }
        n
    }

    /// Starts or stops logging the keys this table deletes on its own.
    pub fn log_server_deletes(&mut self, on: bool) {
        self.server_deletes = on.then(Vec::new);
    }

    fn note_server_delete(&mut self, key: &[u8]) {
        if let Some(log) = self.server_deletes.as_mut() {
            log.push(Key::from_slice(key));
            self.shard_deletes.store(true, Ordering::Relaxed);
        }
    }

    /// Logs `ev` for `key` if its kind is being logged.
    #[inline]
    fn log_key(&mut self, key: &[u8], ev: KeyEvent) {
        if self.log_mask.load(Ordering::Relaxed) & ev.bit() != 0 {
            self.log.push((Key::from_slice(key), ev));
            self.shard_log.store(true, Ordering::Relaxed);
        }
    }

    /// Takes the key events logged since the last call.
    pub fn take_log(&mut self) -> Vec<(Key, KeyEvent)> {
        std::mem::take(&mut self.log)
    }

    /// Takes the keys deleted on the table's own since the last call (expired, evicted).
    pub fn take_server_deletes(&mut self) -> Vec<Key> {
        match self.server_deletes.as_mut() {
            Some(log) if !log.is_empty() => std::mem::take(log),
            _ => Vec::new(),
        }
    }

    /// Entry at a position (positions are what SCAN cursors and RANDOMKEY use).
    pub fn get_index(&self, idx: usize) -> Option<(&Key, &Entry)> {
        self.map.get_index(idx)
    }

    /// Iterates over all stored entries, stale ones included.
    pub fn iter(&self) -> impl Iterator<Item = (&Key, &Entry)> {
        self.map.iter()
    }

    /// Removes every key (FLUSHDB). Watchers of keys that existed are told, as Redis's
    /// `touchAllWatchedKeysInDb` does.
    pub fn clear(&mut self, now: u64) {
        self.finish_snapshot();
        self.touch_all_before_replace(None, now);
        self.map = Default::default();
        self.volatile = Vec::new();
        self.deadlines = Vec::new();
        self.restart_sweep();
        self.signal_all_blocked();
    }

    /// Takes the table's keys out whole, leaving it empty (watchers told, as by a flush): a
    /// replica with `repl-diskless-load swapdb` keeps them aside until its primary's file loaded,
    /// and puts them back ([`Table::put_back`]) if it does not.
    pub fn take_data(&mut self, now: u64) -> TableData {
        self.finish_snapshot();
        self.touch_all_before_replace(None, now);
        let data = TableData {
            map: std::mem::take(&mut self.map),
            volatile: std::mem::take(&mut self.volatile),
            deadlines: std::mem::take(&mut self.deadlines),
        };
        self.restart_sweep();
        self.signal_all_blocked();
        data
    }

    /// Puts back keys [`Table::take_data`] took out, in place of what the table holds.
    pub fn put_back(&mut self, data: TableData, now: u64) {
        self.clear(now);
        self.map = data.map;
        self.volatile = data.volatile;
        self.deadlines = data.deadlines;
        self.restart_sweep();
        self.signal_all_blocked();
    }

    /// Marks every key with blocked clients ready (the whole table changed: FLUSHDB, SWAPDB); each
    /// waiter's serve step decides whether the new state serves it (a freed lock does, an absent list
    /// does not).
    fn signal_all_blocked(&mut self) {
        let keys: Vec<Key> = self.blocked.as_deref().map(|b| b.keys().cloned().collect()).unwrap_or_default();
        for k in keys {
            self.signal_ready(&k);
        }
    }

    /// Swaps the data of two tables (SWAPDB) while each keeps its own watchers, telling them as Redis
    /// does: a watched key that exists on either side is touched.
    pub fn swap_data(a: &mut Table, b: &mut Table, now: u64) {
        a.finish_snapshot();
        b.finish_snapshot();
        a.touch_all_before_replace(Some(b), now);
        b.touch_all_before_replace(Some(a), now);
        std::mem::swap(&mut a.map, &mut b.map);
        std::mem::swap(&mut a.volatile, &mut b.volatile);
        std::mem::swap(&mut a.deadlines, &mut b.deadlines);
        a.restart_sweep();
        b.restart_sweep();
        // Clients blocked on either side may be served now (Redis's "SWAPDB awakes blocked client";
        // a lock that is absent after the swap is free).
        a.signal_all_blocked();
        b.signal_all_blocked();
    }

    /// Called before the entry at `idx` changes or goes: a running snapshot that does not have it
    /// yet writes it now, as it was. One branch when no snapshot runs.
    #[inline]
    fn before_change(&mut self, idx: usize) {
        if self.snap.is_some() {
            self.cover_before_change(idx);
        }
    }

    /// [`Table::before_change`] while a snapshot runs.
    #[inline(never)]
    fn cover_before_change(&mut self, idx: usize) {
        if let Some(s) = self.snap.as_deref_mut() {
            let (k, e) = self.map.get_index_mut(idx).expect("index of a present entry");
            s.cover(self.epoch, k, e, deadline_in(&self.deadlines, e).unwrap_or(0), true);
        }
    }

    /// Starts a snapshot of this table (database `db`) in epoch `epoch`, which must differ from the
    /// table's current one: from now on, an entry present now is written, as it is now, either by
    /// the walk ([`Table::snapshot_step`]) or just before it first changes or goes, whichever comes
    /// first, and exactly once; entries created from now on are not written. Nothing is copied up
    /// front: the memory a snapshot costs is the records not yet taken, and the old values of
    /// entries changed while it runs, in their encoded form.
    ///
    /// An entry is written when its epoch is not the table's. Every snapshot runs to its end (a
    /// failed write still walks, see [`TableSnapshot::discard`]), so when the next one starts every
    /// entry has the previous epoch, and none is mistaken for written.
    pub fn begin_snapshot(&mut self, spec: Arc<RecordSpec>, db: usize, epoch: u8) {
        debug_assert!(self.snap.is_none() && epoch != self.epoch);
        self.epoch = epoch;
        let compress = spec.compress;
        self.snap = Some(Box::new(TableSnapshot {
            spec,
            db,
            cursor: self.map.len(),
            out: Writer::new(compress),
            scratch: Writer::new(compress),
            discard: false,
        }));
    }

    /// The table's snapshot epoch.
    pub fn snapshot_epoch(&self) -> u8 {
        self.epoch
    }

    /// Walks the running snapshot on by up to `visits` positions, stopping early once `bytes` of
    /// records wait. No-op without a snapshot.
    pub fn snapshot_step(&mut self, visits: usize, bytes: usize) -> usize {
        let Some(s) = self.snap.as_deref_mut() else { return 0 };
        s.cursor = s.cursor.min(self.map.len());
        let end = s.cursor.saturating_sub(visits);
        let mut visited = 0;
        while s.cursor > end && s.out.buf.len() < bytes {
            s.cursor -= 1;
            visited += 1;
            let (k, e) = self.map.get_index_mut(s.cursor).expect("below the length");
            s.cover(self.epoch, k, e, deadline_in(&self.deadlines, e).unwrap_or(0), false);
        }
        visited
    }

    /// Moves the records written so far to `f` (database, bytes); once the walk is done, the
    /// snapshot ends in this table. True when it has ended (or none ran).
    pub fn snapshot_take(&mut self, f: &mut dyn FnMut(usize, &[u8])) -> bool {
        let Some(s) = self.snap.as_deref_mut() else { return true };
        if !s.out.buf.is_empty() {
            f(s.db, &s.out.buf);
            s.out.buf.clear();
            if s.out.buf.capacity() > 1 << 20 {
                s.out.buf = Vec::new();
            }
        }
        let done = s.cursor.min(self.map.len()) == 0;
        if done {
            self.snap = None;
        }
        done
    }

    /// Ends the running snapshot without its file (it could not be written): the rest of the walk
    /// only marks entries, so that the next snapshot finds every entry in the previous epoch.
    pub fn snapshot_abandon(&mut self) {
        if let Some(s) = self.snap.as_deref_mut() {
            s.discard = true;
            s.out.buf = Vec::new();
        }
        self.snapshot_step(usize::MAX, usize::MAX);
        self.snap = None;
    }

    /// Walks the rest of the running snapshot at once (the whole table is about to be replaced:
    /// FLUSHDB, SWAPDB); the records wait to be taken.
    fn finish_snapshot(&mut self) {
        self.snapshot_step(usize::MAX, usize::MAX);
    }

    /// Registers a WATCH on `key`. Returns the registration the client keeps.
    pub fn watch(&mut self, key: &[u8], state: &Arc<WatchState>, now: u64) -> Arc<WatchedKey> {
        let w = Arc::new(WatchedKey { state: state.clone(), expired: AtomicBool::new(self.is_stale(key, now)) });
        let list = self.watch.get_or_insert_with(Default::default).entry(Key::from_slice(key)).or_default();
        list.retain(|w| Arc::strong_count(w) > 1);
        list.push(w.clone());
        w
    }

    /// Marks the watchers of `key` dirty after a modification (Redis's `touchWatchedKey`), and
    /// logs the change for keyspace notifications and client tracking.
    #[inline]
    pub fn touch(&mut self, key: &[u8]) {
        // Nearly always neither: two loads inline.
        if self.log_mask.load(Ordering::Relaxed) & KeyEvent::Changed.bit() != 0 || self.watch.is_some() {
            self.touch_logged_or_watched(key);
        }
    }

    /// [`Table::touch`] when changes are logged or keys watched.
    #[inline(never)]
    fn touch_logged_or_watched(&mut self, key: &[u8]) {
        self.log_key(key, KeyEvent::Changed);
        let Some(watch) = self.watch.as_deref_mut() else { return };
        let Some(list) = watch.get_mut(key) else { return };
        let exists = self.map.contains_key(key);
        list.retain(|w| Arc::strong_count(w) > 1);
        for w in list.iter() {
            if w.expired.load(Ordering::Relaxed) && !exists {
                // The key was already expired when watched and is now deleted: no logical change.
                w.expired.store(false, Ordering::Relaxed);
                continue;
            }
            w.state.dirty.store(true, Ordering::Relaxed);
        }
        if list.is_empty() {
            watch.remove(key);
        }
    }

    fn touch_all_before_replace(&mut self, replaced_with: Option<&Table>, now: u64) {
        let Some(watch) = self.watch.as_deref_mut() else { return };
        for (key, list) in watch.iter_mut() {
            let in_self = self.map.contains_key(&key[..]);
            let in_other = replaced_with.is_some_and(|o| o.map.contains_key(&key[..]));
            if !in_self && !in_other {
                continue;
            }
            for w in list.iter() {
                if w.expired.load(Ordering::Relaxed) {
                    match replaced_with {
                        Some(o) if in_other => {
                            if o.is_stale(key, now) {
                                continue; // stays expired
                            }
                        }
                        _ => {
                            w.expired.store(false, Ordering::Relaxed);
                            continue;
                        }
                    }
                } else if !in_self && replaced_with.is_some_and(|o| o.is_stale(key, now)) {
                    w.expired.store(true, Ordering::Relaxed);
                    continue;
                }
                w.state.dirty.store(true, Ordering::Relaxed);
            }
        }
    }

    /// Queues a blocked client on `key`.
    pub fn block(&mut self, key: &[u8], w: Arc<dyn Waiting>) {
        // Gone waiters are dropped from the front as queues are served, and everywhere by the cron's
        // prune: no O(queue) scan per enqueue.
        self.blocked.get_or_insert_with(Default::default).entry(Key::from_slice(key)).or_default().push_back(w);
    }

    /// True if clients are blocked on `key`.
    pub fn has_waiters(&mut self, key: &[u8]) -> bool {
        self.first_waiter(key).is_some()
    }

    /// Notes that `key` changed (written, deleted, expired), if clients are blocked on it.
    #[inline]
    pub fn signal_ready(&mut self, key: &[u8]) {
        if self.blocked.is_some() {
            self.signal_ready_blocked(key);
        }
    }

    /// [`Table::signal_ready`] when clients are blocked on keys of this table.
    #[inline(never)]
    fn signal_ready_blocked(&mut self, key: &[u8]) {
        if let Some(b) = self.blocked.as_deref()
            && b.contains_key(key)
            && !self.ready.iter().any(|(_, k)| k[..] == *key)
        {
            self.ready.push((self.ready_seq.fetch_add(1, Ordering::Relaxed), Key::from_slice(key)));
            self.shard_ready.store(true, Ordering::Relaxed);
        }
    }

    /// Forgets that `key` is ready (its first waiter cannot be served by the key's current state).
    pub fn unready(&mut self, key: &[u8]) {
        self.ready.retain(|(_, k)| k[..] != *key);
    }

    /// True when written keys have blocked clients to serve.
    pub fn has_ready(&self) -> bool {
        !self.ready.is_empty()
    }

    /// Takes the keys to serve, with their readiness order.
    pub fn take_ready(&mut self) -> Vec<(u64, Key)> {
        std::mem::take(&mut self.ready)
    }

    /// The first still-waiting client blocked on `key` (dropping gone ones on the way).
    pub fn first_waiter(&mut self, key: &[u8]) -> Option<Arc<dyn Waiting>> {
        let b = self.blocked.as_deref_mut()?;
        let q = b.get_mut(key)?;
        while let Some(w) = q.front() {
            if w.is_waiting() {
                return Some(w.clone());
            }
            q.pop_front();
        }
        b.remove(key);
        None
    }

    /// The still-waiting client blocked on `key` after the first `skip` of them (the first when
    /// `skip` is 0, dropping gone ones at the front on the way).
    pub fn nth_waiter(&mut self, key: &[u8], skip: usize) -> Option<Arc<dyn Waiting>> {
        let first = self.first_waiter(key)?;
        if skip == 0 {
            return Some(first);
        }
        let q = self.blocked.as_deref()?.get(key)?;
        q.iter().filter(|w| w.is_waiting()).nth(skip).cloned()
    }

    /// Number of clients still waiting on `key`.
    pub fn blocked_queue_len(&self, key: &[u8]) -> usize {
        self.blocked.as_deref().and_then(|b| b.get(key)).map_or(0, |q| q.iter().filter(|w| w.is_waiting()).count())
    }

    /// Number of clients queued on keys of this table (gone ones not yet dropped included).
    pub fn blocked_len(&self) -> usize {
        self.blocked.as_deref().map_or(0, |b| b.values().map(|q| q.len()).sum())
    }

    /// Drops WATCH registrations whose client went away (UNWATCH, EXEC, disconnect).
    pub fn prune_watchers(&mut self) {
        if let Some(b) = self.blocked.as_deref_mut() {
            b.retain(|_, q| {
                q.retain(|w| w.is_waiting());
                !q.is_empty()
            });
            if b.is_empty() {
                self.blocked = None;
            }
        }
        if let Some(w) = self.watch.as_deref_mut() {
            w.retain(|_, list| {
                list.retain(|x| Arc::strong_count(x) > 1);
                !list.is_empty()
            });
            if w.is_empty() {
                self.watch = None;
            }
        }
    }

    /// Walks positions downward from `upper` (exclusive; `None` = from the top), visiting at most
    /// `budget` entries; live keys go to `out`, stale ones are reclaimed. Returns the next upper bound,
    /// 0 when this table is done.
    pub fn scan(&mut self, upper: Option<usize>, budget: usize, now: u64, out: &mut dyn FnMut(&Key, &Entry)) -> usize {
        let mut pos = upper.unwrap_or(self.map.len()).min(self.map.len());
        let mut visited = 0;
        while pos > 0 && visited < budget {
            pos -= 1;
            visited += 1;
            let (k, e) = self.map.get_index(pos).expect("pos < len");
            if self.expired(e, now) {
                if self.expiry_held(now) {
                    continue;
                }
                // Swap-remove moves the last entry (already visited, position >= pos) into `pos`:
                // it may be returned twice, which SCAN allows, but nothing is skipped.
                // An expiry like any other: counted, propagated as DEL, notified.
                let k = k.clone();
                self.reclaim(pos, &k);
            } else {
                out(k, e);
            }
            pos = pos.min(self.map.len());
        }
        pos
    }

    /// Bytes of one key's slot in the table's structures: the key and entry in the dense array,
    /// and the index's bucket.
    pub const SLOT_BYTES: usize =
        std::mem::size_of::<Key>() + std::mem::size_of::<Entry>() + crate::densemap::INDEX_BUCKET_BYTES;

    /// True if storing `key` (`with_ttl`: with a deadline) would make the table allocate: it is
    /// new, and its index is full (or about to widen) or its last chunk of slots is; or it gets
    /// its first deadline and the list of keys with a TTL is full.
    pub fn would_grow(&self, key: &[u8], with_ttl: bool) -> bool {
        let slots_full = self.map.index_growth_bytes() > 0 || self.map.free_slots() == 0;
        let list_full = with_ttl && self.ttl_list_full();
        if !slots_full && !list_full {
            return false;
        }
        match self.map.get(key) {
            None => true,
            Some(e) => list_full && !e.has_ttl(),
        }
    }

    /// True when the next key given a TTL makes the list of them (positions or deadlines)
    /// reallocate.
    fn ttl_list_full(&self) -> bool {
        self.volatile.len() == self.volatile.capacity() || self.deadlines.len() == self.deadlines.capacity()
    }

    /// Bytes the table's next allocation takes, for a key stored `with_ttl` or not (see
    /// [`Table::would_grow`]): a new index (twice the buckets, the old one freed after the move)
    /// when the index is full, or wider positions when the key's needs them, a chunk of slots when the last one is, and the growth of the list
    /// of keys with a TTL when it is full and the key gets a deadline.
    pub fn growth_bytes(&self, with_ttl: bool) -> usize {
        let slot = std::mem::size_of::<Key>() + std::mem::size_of::<Entry>();
        let mut bytes = 0;
        if with_ttl {
            // A full vector doubles (to 4 places at first); the old block is freed.
            let more = |len: usize, cap: usize| if len == cap { cap.max(4) } else { 0 };
            bytes += more(self.volatile.len(), self.volatile.capacity()) * std::mem::size_of::<u32>()
                + more(self.deadlines.len(), self.deadlines.capacity()) * std::mem::size_of::<u64>();
        }
        bytes += self.map.index_growth_bytes();
        if self.map.free_slots() == 0 {
            bytes += self.map.len().clamp(4, crate::densemap::CHUNK) * slot;
        }
        bytes
    }

    /// Bytes of free slots: allocated, reused by the next keys added without allocating.
    pub fn slack_bytes(&self) -> usize {
        let slot = std::mem::size_of::<Key>() + std::mem::size_of::<Entry>();
        self.map.free_slots() * slot + (self.map.capacity() - self.map.len()) * self.map.index_bucket_bytes() * 8 / 7
    }

    /// Calls `f` on up to `n` keys drawn at random (with replacement) for eviction, with their
    /// deadlines: any key, or with `volatile` only keys with a TTL (drawn from the list of them, as
    /// Redis draws from `expires`).
    pub fn sample(&self, n: usize, volatile: bool, f: &mut dyn FnMut(&Key, &Entry, Option<u64>)) {
        let len = if volatile { self.volatile.len() } else { self.map.len() };
        if len == 0 {
            return;
        }
        for _ in 0..n {
            let mut idx = rand::random_range(0..len);
            if volatile {
                idx = self.volatile[idx] as usize;
            }
            let (k, e) = self.map.get_index(idx).expect("index < len");
            f(k, e, self.deadline(e));
        }
    }

    /// Bytes a key's TTL adds: its place in the list of keys with a TTL and its deadline.
    pub const TTL_BYTES: usize = std::mem::size_of::<u32>() + std::mem::size_of::<u64>();

    /// Approximate bytes used by this table's structures (not counting values' heap).
    pub fn overhead_bytes(&self) -> usize {
        self.map.len() * Self::SLOT_BYTES
            + self.slack_bytes()
            + self.volatile.capacity() * std::mem::size_of::<u32>()
            + self.deadlines.capacity() * std::mem::size_of::<u64>()
    }
}

/// A shard: one table per database, plus read statistics.
pub struct Shard {
    /// Tables, indexed by database number.
    pub dbs: Box<[Table]>,
    /// `keyspace_hits` contribution.
    pub hits: u64,
    /// `keyspace_misses` contribution.
    pub misses: u64,
    /// Set when a table of this shard has keys whose blocked clients should be served.
    ready: Arc<AtomicBool>,
    /// Set when a table of this shard has keys it deleted on its own, not yet taken.
    deletes: Arc<AtomicBool>,
    /// Set when a table of this shard has logged key events, not yet taken.
    logged: Arc<AtomicBool>,
}

impl Shard {
    /// Takes the key events this shard's tables logged, as (db, key, event), database by database.
    pub fn take_log(&mut self, out: &mut Vec<(usize, Key, KeyEvent)>) {
        if !self.logged.swap(false, Ordering::Relaxed) {
            return;
        }
        for (db, t) in self.dbs.iter_mut().enumerate() {
            if !t.log.is_empty() {
                out.extend(t.take_log().into_iter().map(|(k, e)| (db, k, e)));
            }
        }
    }

    /// Takes the keys this shard's tables deleted on their own (expired, evicted), as (db, key).
    pub fn take_server_deletes(&mut self) -> Vec<(usize, Key)> {
        if !self.deletes.swap(false, Ordering::Relaxed) {
            return Vec::new();
        }
        let mut out = Vec::new();
        for (db, t) in self.dbs.iter_mut().enumerate() {
            out.extend(t.take_server_deletes().into_iter().map(|k| (db, k)));
        }
        out
    }

    /// True when keys of this shard have blocked clients to serve ([`Shard::take_ready`]): one load.
    pub fn any_ready(&self) -> bool {
        self.ready.load(Ordering::Relaxed)
    }

    /// Takes the keys whose blocked clients should be served, as (readiness order, db, key).
    pub fn take_ready(&mut self) -> Vec<(u64, usize, Key)> {
        // Every command asks, and mostly nothing is ready: a load, where the swap would write the
        // flag's line each time (it is set under this shard's lock, which the caller holds).
        if !self.ready.load(Ordering::Relaxed) || !self.ready.swap(false, Ordering::Relaxed) {
            return Vec::new();
        }
        let mut out = Vec::new();
        for (db, t) in self.dbs.iter_mut().enumerate() {
            if t.has_ready() {
                out.extend(t.take_ready().into_iter().map(|(seq, k)| (seq, db, k)));
            }
        }
        out
    }
}

/// How many keys one [`Keyspace::prefetch`] looks at.
pub const PREFETCH_BATCH: usize = 16;

/// Databases smaller than this are not prefetched ([`Keyspace::prefetch`]). Measured with
/// `scripts/cpu-compare.sh` (SET and GET of present keys, P16, a build prefetching always against
/// one never): about even at 1,000 keys, 7% less CPU at 10,000 and 11% at 100,000.
pub const PREFETCH_MIN_KEYS: usize = 4096;

/// All the data.
pub struct Keyspace {
    shards: Box<[Mutex<Shard>]>,
    hasher: Hasher,
    mask: usize,
    bits: u32,
    ndbs: usize,
    /// Shared with every table: which [`KeyEvent`]s they log.
    log_mask: Arc<AtomicU32>,
    /// Shared with every table (see [`Keyspace::hold_expiry`]).
    held_until: Arc<std::sync::atomic::AtomicU64>,
    /// The pause's hold, kept apart from a replica's (see [`Keyspace::hold_expiry_as_replica`]).
    pause_until: std::sync::atomic::AtomicU64,
    replica_hold: AtomicBool,
}

impl Keyspace {
    /// A keyspace with `ndbs` databases and `nshards` shards (rounded up to a power of two, at least 1).
    pub fn new(ndbs: usize, nshards: usize) -> Keyspace {
        let n = nshards.max(1).next_power_of_two();
        let seq = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let log_mask = Arc::new(AtomicU32::new(0));
        let held_until = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let shards = (0..n)
            .map(|_| {
                let deletes = Arc::new(AtomicBool::new(false));
                let flag = Arc::new(AtomicBool::new(false));
                let logged = Arc::new(AtomicBool::new(false));
                let dbs = (0..ndbs)
                    .map(|_| Table {
                        shard_ready: flag.clone(),
                        ready_seq: seq.clone(),
                        shard_deletes: deletes.clone(),
                        log_mask: log_mask.clone(),
                        shard_log: logged.clone(),
                        held_until: held_until.clone(),
                        ..Table::default()
                    })
                    .collect();
                Mutex::new(Shard { dbs, hits: 0, misses: 0, ready: flag, deletes, logged })
            })
            .collect();
        Keyspace {
            shards,
            hasher: crate::densemap::keyspace_hasher(),
            mask: n - 1,
            bits: n.trailing_zeros(),
            ndbs,
            log_mask,
            held_until,
            pause_until: std::sync::atomic::AtomicU64::new(0),
            replica_hold: AtomicBool::new(false),
        }
    }

    /// An empty keyspace of the same shape that puts each key in the same shard as this one (every
    /// keyspace hashes with the process's [`crate::densemap::keyspace_hasher`]): a file loads into
    /// it aside, and its tables' data moves over whole (a replica's diskless load with
    /// `repl-diskless-load swapdb`, which serves the old dataset meanwhile).
    pub fn sibling(&self) -> Keyspace {
        Keyspace::new(self.ndbs, self.shards.len())
    }

    /// Sets which [`KeyEvent`]s the tables log (bits of [`KeyEvent::bit`]; 0: none).
    pub fn set_key_log(&self, mask: u32) {
        self.log_mask.store(mask, Ordering::Relaxed);
    }

    /// Which [`KeyEvent`]s the tables log.
    pub fn key_log(&self) -> u32 {
        self.log_mask.load(Ordering::Relaxed)
    }

    /// Holds the dataset still until `until` (monotonic ms, inclusive; 0 releases): while a client
    /// pause lasts no key is deleted because its TTL passed, though reads see it as gone (Redis keeps
    /// the dataset constant during a pause). Every table reads it, at no cost to keys that are live.
    pub fn hold_expiry(&self, until: u64) {
        self.pause_until.store(until, Ordering::Relaxed);
        self.apply_hold();
    }

    /// A replica never deletes a key because its TTL passed: it waits for its primary's `DEL`,
    /// while reads see the key as gone (Redis's `expireIfNeeded` on a replica). Held for as long
    /// as `on` stays set, whatever a pause does meanwhile.
    pub fn hold_expiry_as_replica(&self, on: bool) {
        self.replica_hold.store(on, Ordering::Relaxed);
        self.apply_hold();
    }

    fn apply_hold(&self) {
        let until =
            if self.replica_hold.load(Ordering::Relaxed) { u64::MAX } else { self.pause_until.load(Ordering::Relaxed) };
        self.held_until.store(until, Ordering::Relaxed);
    }

    /// Number of databases.
    pub fn ndbs(&self) -> usize {
        self.ndbs
    }
    /// Number of shards.
    pub fn nshards(&self) -> usize {
        self.shards.len()
    }
    /// log2 of the number of shards (SCAN cursors keep the shard in their low bits).
    pub fn shard_bits(&self) -> u32 {
        self.bits
    }

    /// The shard that owns `key`.
    #[inline]
    pub fn shard_of(&self, key: &[u8]) -> usize {
        self.shard_of_hash(self.hasher.hash_one(key))
    }

    /// The shard of a key of hash `hash`, the hash its shard's table files it under too
    /// ([`crate::densemap::keyspace_hasher`]). Bits 40 and up (at most 10 of them): a table
    /// places a key by the low bits of its hash and tags it with the top 7, so the keys of one
    /// shard are spread over their table as well as all keys are over the shards.
    #[inline]
    fn shard_of_hash(&self, hash: u64) -> usize {
        (hash >> 40) as usize & self.mask
    }

    /// Starts loading the memory that lookups of `keys` in database `db` will read, for a batch of
    /// requests about to run (at most [`PREFETCH_BATCH`] keys are looked at): first the index
    /// lines of every key, then, while the later ones load, the slots the earlier ones point at.
    /// The batch then waits for memory about once, where each lookup alone waits two or three
    /// times in a row (index, bucket, slot), as Redis 8 prefetches its commands' keys. A hint: it
    /// changes nothing, and passes over a shard another thread holds.
    ///
    /// A database of fewer than about [`PREFETCH_MIN_KEYS`] keys (judged by the key's table, one
    /// shard's share) stays in the caches, where loading ahead only costs: its keys are passed
    /// over. Returns whether any key was worth it, so that the caller can leave the next requests
    /// alone when none was.
    pub fn prefetch(&self, db: usize, keys: &[&[u8]]) -> bool {
        let mut found = [(0usize, 0u64); PREFETCH_BATCH];
        let mut n = 0;
        let min_len = (PREFETCH_MIN_KEYS / self.shards.len()).max(1);
        for key in keys.iter().take(PREFETCH_BATCH) {
            // One hash for the shard and the table.
            let hash = self.hasher.hash_one(key);
            let s = self.shard_of_hash(hash);
            let Some(shard) = self.shards[s].try_lock() else { continue };
            let Some(t) = shard.dbs.get(db) else { return false };
            if t.map.len() < min_len {
                continue;
            }
            debug_assert_eq!(hash, t.map.hash(key), "the keyspace and its tables hash alike");
            t.map.prefetch_index(hash);
            found[n] = (s, hash);
            n += 1;
        }
        for &(s, hash) in &found[..n] {
            if let Some(shard) = self.shards[s].try_lock() {
                shard.dbs[db].map.prefetch_slots(hash);
            }
        }
        n > 0
    }

    /// Locks the given shards (any order, duplicates allowed) in ascending order.
    pub fn lock_shards(&self, idx: impl IntoIterator<Item = usize>) -> Locked<'_> {
        let idx = sorted_unique(idx);
        if idx.len() == self.shards.len() {
            return self.lock_all();
        }
        let guards = idx.into_iter().map(|i| (i, self.shards[i].lock())).collect();
        Locked { ks: self, guards, all: false, known: None }
    }

    /// Locks the shards owning `keys`.
    pub fn lock_keys<'k>(&self, keys: impl IntoIterator<Item = &'k [u8]>) -> Locked<'_> {
        self.lock_shards(keys.into_iter().map(|k| self.shard_of(k)))
    }

    /// Locks every shard.
    pub fn lock_all(&self) -> Locked<'_> {
        let guards = self.shards.iter().enumerate().map(|(i, m)| (i, m.lock())).collect();
        Locked { ks: self, guards, all: true, known: None }
    }

    /// Like [`Keyspace::lock_shards`], but never waits unboundedly: on contention it retries in short
    /// timed waits and gives up (returning `None`, every lock released) as soon as `give_up` says so.
    /// The uncontended path is one `try_lock` per shard, as cheap as `lock`. Used while a script may
    /// hold every shard, so a waiting command can answer `-BUSY` instead of blocking its thread.
    pub fn lock_shards_until(
        &self,
        idx: impl IntoIterator<Item = usize>,
        give_up: &dyn Fn() -> bool,
    ) -> Option<Locked<'_>> {
        let idx = sorted_unique(idx);
        let all = idx.len() == self.shards.len();
        let mut guards = Guards::with_capacity(idx.len());
        for i in idx {
            guards.push((i, self.lock_one_until(i, give_up)?));
        }
        Some(Locked { ks: self, guards, all, known: None })
    }

    /// [`Keyspace::lock_shards_until`] for one shard (a one-key command's way to its lock).
    pub fn lock_shard_until(&self, i: usize, give_up: &dyn Fn() -> bool) -> Option<Locked<'_>> {
        let g = self.lock_one_until(i, give_up)?;
        Some(self.one_locked(i, g))
    }

    /// [`Keyspace::lock_shard_until`] for the shard of `key`, a one-key command's key, which the
    /// set remembers: the command's own accesses to that key find their shard without hashing it
    /// again ([`Locked::shard_for`]). `key` must outlive the set (a command's arguments do).
    pub fn lock_key_until(&self, key: &[u8], give_up: &dyn Fn() -> bool) -> Option<Locked<'_>> {
        let hash = self.hasher.hash_one(key);
        let i = self.shard_of_hash(hash);
        let mut locked = self.lock_shard_until(i, give_up)?;
        locked.known = Some(Known { at: key.as_ptr() as usize, len: key.len(), shard: i, hash });
        Some(locked)
    }

    /// [`Keyspace::lock_all`] with the bounded waits of [`Keyspace::lock_shards_until`].
    pub fn lock_all_until(&self, give_up: &dyn Fn() -> bool) -> Option<Locked<'_>> {
        let mut guards = Guards::with_capacity(self.shards.len());
        for i in 0..self.shards.len() {
            guards.push((i, self.lock_one_until(i, give_up)?));
        }
        Some(Locked { ks: self, guards, all: true, known: None })
    }

    fn lock_one_until(&self, i: usize, give_up: &dyn Fn() -> bool) -> Option<MutexGuard<'_, Shard>> {
        if let Some(g) = self.shards[i].try_lock() {
            return Some(g);
        }
        loop {
            if let Some(g) = self.shards[i].try_lock_for(std::time::Duration::from_millis(2)) {
                return Some(g);
            }
            if give_up() {
                return None;
            }
        }
    }

    /// Locks shard `i` if nobody holds it.
    pub fn try_lock_shard(&self, i: usize) -> Option<Locked<'_>> {
        let g = self.shards.get(i)?.try_lock()?;
        Some(self.one_locked(i, g))
    }

    /// The set holding shard `i` alone (the whole keyspace when it is the only shard).
    fn one_locked<'a>(&'a self, i: usize, g: MutexGuard<'a, Shard>) -> Locked<'a> {
        Locked { ks: self, guards: smallvec::smallvec![(i, g)], all: self.shards.len() == 1, known: None }
    }

    /// Locks nothing (commands that touch no key).
    pub fn lock_none(&self) -> Locked<'_> {
        Locked { ks: self, guards: Guards::new(), all: false, known: None }
    }

    /// Visits each shard in turn, locked, for statistics (INFO) without stopping the world.
    pub fn for_each_shard(&self, mut f: impl FnMut(&mut Shard)) {
        for s in self.shards.iter() {
            f(&mut s.lock());
        }
    }
}

/// Shard indices sorted and without duplicates; up to four inline.
fn sorted_unique(idx: impl IntoIterator<Item = usize>) -> smallvec::SmallVec<[usize; 4]> {
    let mut idx: smallvec::SmallVec<[usize; 4]> = idx.into_iter().collect();
    idx.sort_unstable();
    idx.dedup();
    idx
}

/// The guards a [`Locked`] holds, by shard index; a command's few inline (no allocation per
/// command), a whole-keyspace lock's on the heap.
type Guards<'a> = smallvec::SmallVec<[(usize, MutexGuard<'a, Shard>); 4]>;

/// A set of locked shards: the view of the keyspace a command (or a whole transaction) runs against.
pub struct Locked<'a> {
    ks: &'a Keyspace,
    guards: Guards<'a>,
    all: bool,
    /// The key it was locked for ([`Keyspace::lock_key_until`]).
    known: Option<Known>,
}

/// A key a [`Locked`] set was taken for: where it is, its shard and its hash. The key outlives
/// the set, so no other key can be at that address meanwhile.
#[derive(Clone, Copy)]
struct Known {
    at: usize,
    len: usize,
    shard: usize,
    hash: u64,
}

impl Known {
    #[inline]
    fn is(&self, key: &[u8]) -> bool {
        self.at == key.as_ptr() as usize && self.len == key.len()
    }
}

impl<'a> Locked<'a> {
    /// Lets every held shard go, then takes them all, in order (a script restarting with the whole
    /// keyspace: see `lua::ensure_shards`). Others may run in between.
    pub fn relock_all(&mut self) {
        self.guards.clear();
        *self = self.ks.lock_all();
    }

    /// Lets every held shard go while `f` runs, then takes them all again, in order (a load waiting
    /// for more of a file that is arriving).
    pub fn unlocked<T>(&mut self, f: impl FnOnce() -> T) -> T {
        self.guards.clear();
        let out = f();
        *self = self.ks.lock_all();
        out
    }

    /// The keyspace these locks belong to.
    pub fn keyspace(&self) -> &'a Keyspace {
        self.ks
    }

    /// True if every shard is locked.
    pub fn is_all(&self) -> bool {
        self.all
    }

    /// The shard owning `key`.
    ///
    /// # Panics
    /// If that shard is not locked: the command table's key spec for the running command missed a
    /// key. That is a bug in the table (tests walk it); the panic unwinds only the client's task and
    /// releases every lock on the way.
    pub fn shard_for(&mut self, key: &[u8]) -> &mut Shard {
        let i = match self.known {
            Some(k) if k.is(key) => {
                debug_assert_eq!(k.shard, self.ks.shard_of(key), "a remembered key moved");
                k.shard
            }
            _ => self.ks.shard_of(key),
        };
        self.shard(i)
    }

    /// The hash of `key` when it is the key the set was taken for ([`Keyspace::lock_key_until`]):
    /// its table's lookups can use it rather than hash the key again (`Table::*_hashed`).
    #[inline]
    pub fn known_hash(&self, key: &[u8]) -> Option<u64> {
        self.known.filter(|k| k.is(key)).map(|k| k.hash)
    }

    /// Shard `i`, which must be locked (see [`Locked::shard_for`]).
    pub fn shard(&mut self, i: usize) -> &mut Shard {
        let pos = if self.all {
            i
        } else {
            match self.guards.binary_search_by_key(&i, |(j, _)| *j) {
                Ok(p) => p,
                Err(_) => panic!("shard {i} accessed without its lock: key spec bug"),
            }
        };
        &mut self.guards[pos].1
    }

    /// True if shard `i` is locked.
    pub fn holds(&self, i: usize) -> bool {
        self.all || self.guards.binary_search_by_key(&i, |(j, _)| *j).is_ok()
    }

    /// Tries to add shard `i` without waiting (taking it out of ascending order is safe only because
    /// a `try_lock` never waits). Returns false if another thread holds it.
    pub fn try_add(&mut self, i: usize) -> bool {
        if self.holds(i) {
            return true;
        }
        let Some(g) = self.ks.shards[i].try_lock() else { return false };
        let pos = self.guards.binary_search_by_key(&i, |(j, _)| *j).unwrap_or_else(|p| p);
        self.guards.insert(pos, (i, g));
        // Every shard held (in index order): the same as a whole-keyspace lock.
        self.all = self.guards.len() == self.ks.shards.len();
        true
    }

    /// Adds shard `i`, waiting for it, when that keeps this set's locks in index order (every shard
    /// held is below `i`): the order every other locker follows, so the wait cannot close a cycle.
    /// False (nothing taken) when a higher shard is held: the caller must not wait.
    pub fn add_in_order(&mut self, i: usize) -> bool {
        if self.holds(i) {
            return true;
        }
        if self.guards.last().is_some_and(|(j, _)| *j > i) {
            return false;
        }
        let g = self.ks.shards[i].lock();
        self.guards.push((i, g));
        self.all = self.guards.len() == self.ks.shards.len();
        true
    }

    /// Indices of the locked shards.
    pub fn shard_indices(&self) -> Vec<usize> {
        self.guards.iter().map(|(i, _)| *i).collect()
    }

    /// True when a held shard has keys whose blocked clients should be served
    /// ([`Shard::any_ready`]).
    pub fn any_ready(&self) -> bool {
        self.guards.iter().any(|(_, g)| g.any_ready())
    }

    /// Iterates over the locked shards.
    pub fn shards_mut(&mut self) -> impl Iterator<Item = &mut Shard> {
        self.guards.iter_mut().map(|(_, g)| &mut **g)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Value;

    fn e(v: &[u8]) -> Entry {
        Entry::new(Value::string(v))
    }

    #[test]
    fn lazy_and_active_expiry() {
        let mut t = Table::default();
        t.insert(b"a", e(b"1"), 100);
        t.insert(b"b", e(b"2"), 200);
        t.insert(b"c", e(b"3"), 0);
        assert!(t.lookup(b"a", 100).is_some(), "alive at its deadline");
        assert!(t.lookup(b"a", 101).is_none());
        assert_eq!(t.len(), 2);
        assert_eq!(t.active_expire(201, 10), 1);
        assert_eq!(t.len(), 1);
        assert_eq!(t.volatile_len(), 0);
        assert_eq!(t.expired, 2);
    }

    #[test]
    fn ttl_index_follows_overwrites() {
        let mut t = Table::default();
        t.insert(b"k", e(b"1"), 100);
        t.insert(b"k", e(b"2"), 0);
        assert_eq!(t.volatile_len(), 0);
        t.set_expire(b"k", 50);
        t.set_expire(b"k", 60);
        assert_eq!(t.volatile_len(), 1);
        assert_eq!(t.active_expire(55, 10), 0);
        assert_eq!(t.active_expire(61, 10), 1);
        assert!(t.is_empty());
    }

    /// Checks that the list of keys with a TTL and the entries' places in it agree.
    fn check_volatile(t: &Table) {
        let with_ttl = t.map.iter().filter(|(_, e)| e.has_ttl()).count();
        assert_eq!(t.volatile.len(), with_ttl);
        assert_eq!(t.deadlines.len(), with_ttl);
        for (v, &idx) in t.volatile.iter().enumerate() {
            let e = &t.map[idx as usize];
            assert_eq!(e.vpos(), Some(v));
            assert!(t.deadlines[v] != 0);
            // The bound the sweep and lookups trust.
            assert!(t.deadlines[v] >= t.next_at, "deadline {} under the bound {}", t.deadlines[v], t.next_at);
        }
    }

    /// Checks every key's value and deadline against `model` (key -> (value, deadline, 0: none)).
    fn check_model(t: &Table, model: &HashMap<Vec<u8>, (i64, u64)>, step: u32) {
        assert_eq!(t.len(), model.len(), "step {step}");
        for (k, &(v, at)) in model {
            let e = t.peek(k).unwrap_or_else(|| panic!("step {step}: {k:?} missing"));
            assert!(matches!(e.value, Value::Int(x) if x == v), "step {step}: value of {k:?}");
            assert_eq!(t.deadline(e), (at != 0).then_some(at), "step {step}: deadline of {k:?}");
            assert_eq!(e.has_ttl(), at != 0, "step {step}");
        }
    }

    /// The TTL list and its deadlines follow inserts, overwrites, TTL changes, removals (which
    /// move slots and places), renames, batch removals and lazy expiry; the sweep reclaims exactly
    /// the keys whose deadline passed, however it is cut into steps, and only keys present at a
    /// pass's start are ever skipped until next pass. Every key keeps its own value and deadline.
    #[test]
    fn ttl_list_follows_every_change_and_the_sweep_misses_nothing() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        let mut t = Table::default();
        let mut model: HashMap<Vec<u8>, (i64, u64)> = HashMap::new();
        for step in 0..20_000u32 {
            let key = |rng: &mut rand::rngs::StdRng| format!("k{}", rng.random_range(0..600)).into_bytes();
            let k = key(&mut rng);
            let at = if rng.random_bool(0.5) { 0 } else { rng.random_range(1..10_000u64) };
            let v = i64::from(step);
            match rng.random_range(0..12) {
                0..=3 => {
                    t.insert(&k, Entry::new(Value::Int(v)), at);
                    model.insert(k, (v, at));
                }
                4..=5 => {
                    if t.set_expire(&k, at) {
                        model.get_mut(&k).expect("in the model").1 = at;
                    }
                }
                6..=7 => {
                    let removed = t.remove_with_deadline(&k).map(|(e, at)| (e.has_ttl(), at));
                    let expected = model.remove(&k).map(|(_, at)| (false, at));
                    assert_eq!(removed, expected, "step {step}");
                }
                8 if step % 50 == 0 => {
                    let batch: Vec<Key> = model.keys().take(20).map(|k| Key::from_slice(k)).collect();
                    assert_eq!(t.remove_many(&batch), batch.len());
                    for b in &batch {
                        model.remove(&b[..]);
                    }
                }
                9 => {
                    // RENAME: the entry and its deadline move; the destination's are replaced.
                    let dst = key(&mut rng);
                    if let Some((e, at)) = t.remove_with_deadline(&k) {
                        t.insert(&dst, e, at);
                        let moved = model.remove(&k).expect("in the model");
                        model.insert(dst, moved);
                    }
                }
                10 => {
                    // A lazy lookup at a random time: an expired key goes, a live one reads its own.
                    let now = rng.random_range(1..10_000u64);
                    let found = t.lookup_with_deadline(&k, now).map(|(e, at)| (e.has_ttl(), at));
                    match model.get(&k).copied() {
                        Some((_, at)) if at != 0 && at < now => {
                            assert_eq!(found, None, "step {step}");
                            model.remove(&k);
                        }
                        Some((_, at)) => assert_eq!(found, Some((at != 0, (at != 0).then_some(at))), "step {step}"),
                        None => assert_eq!(found, None, "step {step}"),
                    }
                }
                _ => {
                    // A sweep in small steps at a random time: reclaims what is due, nothing else.
                    let now = rng.random_range(1..10_000u64);
                    // Steps of at most 3 reclaimed or 48 examined, until a full pass ended.
                    for _ in 0..10_000 {
                        t.active_expire(now, 3);
                        if t.sweep.is_none() {
                            break;
                        }
                    }
                    model.retain(|_, (_, at)| *at == 0 || *at >= now);
                    assert!(t.map.iter().all(|(_, e)| t.deadline(e).is_none_or(|at| at >= now)), "step {step}");
                }
            }
            check_volatile(&t);
            check_model(&t, &model, step);
        }
    }

    /// A key that gets a TTL and loses it: listed with its deadline, then unlisted, its entry
    /// saying so; changing a deadline keeps the key's place.
    #[test]
    fn setting_and_removing_a_ttl() {
        let mut t = Table::default();
        t.insert(b"k", e(b"v"), 0);
        assert_eq!((t.deadline_of(b"k"), t.volatile_len()), (None, 0));
        assert!(!t.peek(b"k").unwrap().has_ttl());
        assert!(t.set_expire(b"k", 500));
        assert!(t.peek(b"k").unwrap().has_ttl());
        assert_eq!((t.deadline_of(b"k"), t.volatile_len()), (Some(500), 1));
        assert!(t.set_expire(b"k", 400));
        assert_eq!((t.deadline_of(b"k"), t.volatile_len()), (Some(400), 1));
        // A lowered deadline lowers the sweep's bound: the cycle has work after 400.
        assert!(t.expiry_due(401));
        assert!(t.set_expire(b"k", 0));
        assert!(!t.peek(b"k").unwrap().has_ttl());
        assert_eq!((t.deadline_of(b"k"), t.volatile_len(), t.deadlines.len()), (None, 0, 0));
        assert!(!t.expiry_due(u64::MAX));
        assert!(!t.set_expire(b"absent", 10));
        check_volatile(&t);
    }

    /// Lookups skip reading deadlines while the table's earliest one has not come; a deadline
    /// set or lowered after a sweep raised that bound is still seen.
    #[test]
    fn lookups_trust_the_bound_only_while_it_holds() {
        let mut t = Table::default();
        t.insert(b"a", e(b"1"), 1000);
        t.insert(b"b", e(b"2"), 2000);
        assert_eq!(t.active_expire(10, 10), 0);
        assert_eq!(t.next_at, 1000, "a full pass raises the bound to the earliest deadline");
        assert!(t.lookup(b"a", 1000).is_some());
        t.set_expire(b"b", 500);
        t.insert(b"c", e(b"3"), 300);
        assert_eq!(t.next_at, 300);
        assert!(t.lookup(b"c", 301).is_none(), "a new key's deadline");
        assert!(t.lookup(b"b", 501).is_none(), "a lowered deadline");
        assert!(t.lookup(b"a", 501).is_some());
        assert!(t.is_stale(b"a", 1001));
        assert_eq!(t.expired, 2);
        check_volatile(&t);
    }

    /// Eviction's view of growth: a key given a TTL grows a full list of them (12 bytes a place
    /// when it doubles), a key without one does not, nor does one that has a place already.
    #[test]
    fn a_full_ttl_list_is_growth_for_a_key_with_a_deadline() {
        let mut t = Table::default();
        // 4 keys with a TTL fill the list's first allocation; their slots leave room.
        for i in 0..4u64 {
            t.insert(format!("v{i}").as_bytes(), e(b"v"), 100 + i);
        }
        t.insert(b"plain", e(b"v"), 0);
        assert_eq!((t.volatile.capacity(), t.deadlines.capacity()), (4, 4));
        assert!(t.map.free_slots() > 0 && !t.map.index_full());
        assert!(t.would_grow(b"new", true));
        assert!(!t.would_grow(b"new", false));
        assert!(t.would_grow(b"plain", true), "an existing key's first deadline");
        assert!(!t.would_grow(b"v0", true), "a key that has a place already");
        assert_eq!(t.growth_bytes(true) - t.growth_bytes(false), 4 * (4 + 8));
        t.insert(b"new", e(b"v"), 200);
        assert_eq!((t.volatile.capacity(), t.deadlines.capacity()), (8, 8));
        assert!(!t.would_grow(b"new2", true));
        assert_eq!(t.growth_bytes(true), t.growth_bytes(false));
    }

    /// Removing a key from the middle of the TTL list moves the last place into its hole: the
    /// moved key keeps its own deadline, and a key whose slot moved keeps its place.
    #[test]
    fn removing_a_key_with_a_ttl_from_the_middle() {
        let mut t = Table::default();
        for (i, k) in [b"a", b"b", b"c", b"d"].iter().enumerate() {
            t.insert(&k[..], e(b"v"), 100 * (i as u64 + 1));
        }
        t.insert(b"p", e(b"v"), 0);
        // `b` is at place 1 of the list; `d` (place 3) moves there.
        assert_eq!(t.peek(b"b").unwrap().vpos(), Some(1));
        let (gone, at) = t.remove_with_deadline(b"b").unwrap();
        assert_eq!((at, gone.has_ttl()), (200, false));
        assert_eq!(t.peek(b"d").unwrap().vpos(), Some(1));
        check_volatile(&t);
        for (k, at) in [(&b"a"[..], 100), (b"c", 300), (b"d", 400)] {
            assert_eq!(t.deadline_of(k), Some(at), "{k:?}");
        }
        // Slots are now a, p, c, d. Removing `a` (slot 0) moves the last slot (`d`, with a TTL)
        // into slot 0: the list follows the slot. Then `c` is the last slot: nothing moves.
        assert_eq!(t.remove(b"a").map(|e| e.has_ttl()), Some(false));
        assert_eq!(t.remove(b"c").map(|e| e.has_ttl()), Some(false));
        check_volatile(&t);
        assert_eq!((t.deadline_of(b"d"), t.deadline_of(b"p"), t.volatile_len()), (Some(400), None, 1));
        // The sweep still finds the survivor where the list says it is.
        assert_eq!(t.active_expire(401, 10), 1);
        assert_eq!((t.len(), t.volatile_len()), (1, 0));
    }

    /// An overwrite replaces the TTL with the new entry's: kept, changed, added or dropped.
    #[test]
    fn overwrites_set_the_new_deadline() {
        let mut t = Table::default();
        t.insert(b"x", e(b"1"), 100);
        t.insert(b"y", e(b"2"), 200);
        let old = t.insert(b"x", e(b"3"), 150).unwrap();
        assert!(!old.has_ttl(), "a replaced entry leaves its place behind");
        assert_eq!((t.deadline_of(b"x"), t.deadline_of(b"y")), (Some(150), Some(200)));
        t.insert(b"x", e(b"4"), 0);
        assert_eq!((t.deadline_of(b"x"), t.deadline_of(b"y"), t.volatile_len()), (None, Some(200), 1));
        t.insert(b"x", e(b"5"), 50);
        assert_eq!((t.deadline_of(b"x"), t.volatile_len()), (Some(50), 2));
        // An entry carried over from elsewhere brings no stale place with it.
        let (moved, _) = t.remove_with_deadline(b"y").unwrap();
        t.insert(b"z", moved, 0);
        assert_eq!((t.deadline_of(b"z"), t.volatile_len()), (None, 1));
        check_volatile(&t);
    }

    /// RENAME's pair: the deadline leaves with the entry and comes back with it under the new
    /// name, replacing what the destination had.
    #[test]
    fn rename_carries_the_deadline() {
        let mut t = Table::default();
        t.insert(b"src", e(b"1"), 700);
        t.insert(b"dst", e(b"2"), 300);
        t.insert(b"other", e(b"3"), 900);
        let (entry, at) = t.remove_with_deadline(b"src").unwrap();
        assert_eq!(at, 700);
        t.insert(b"dst", entry, at);
        assert_eq!(
            (t.deadline_of(b"src"), t.deadline_of(b"dst"), t.deadline_of(b"other")),
            (None, Some(700), Some(900))
        );
        assert_eq!(t.volatile_len(), 2);
        check_volatile(&t);
        // Expiry by the carried deadline, not the replaced one.
        assert!(t.lookup(b"dst", 301).is_some());
        assert!(t.lookup(b"dst", 701).is_none());
        assert_eq!(t.expired, 1);
    }

    /// Batch removals, taking data out and SWAPDB move deadlines with their keys.
    #[test]
    fn wholesale_moves_keep_deadlines() {
        let mut a = Table::default();
        let mut b = Table::default();
        for i in 0..50u64 {
            a.insert(format!("a{i}").as_bytes(), e(b"v"), if i % 3 == 0 { 0 } else { 1000 + i });
        }
        b.insert(b"b", e(b"v"), 5);
        let batch: Vec<Key> = (0..50).step_by(4).map(|i| Key::from_slice(format!("a{i}").as_bytes())).collect();
        a.remove_many(&batch);
        check_volatile(&a);
        let expect = |t: &Table| {
            for i in (0..50u64).filter(|i| i % 4 != 0) {
                let want = if i % 3 == 0 { None } else { Some(1000 + i) };
                assert_eq!(t.deadline_of(format!("a{i}").as_bytes()), want, "a{i}");
            }
        };
        expect(&a);
        Table::swap_data(&mut a, &mut b, 0);
        check_volatile(&a);
        check_volatile(&b);
        expect(&b);
        assert_eq!(a.deadline_of(b"b"), Some(5));
        let data = b.take_data(0);
        assert_eq!((b.len(), b.volatile_len()), (0, 0));
        b.put_back(data, 0);
        check_volatile(&b);
        expect(&b);
    }

    /// A key SCAN finds expired goes as any expiry does: propagated as DEL (Redis's "SCAN:
    /// Lazy-expire should not be wrapped in MULTI/EXEC" reads the DELs on the replication stream)
    /// and notified as expired.
    #[test]
    fn scan_reclaims_expired_keys_as_expiries() {
        let mut t = Table::default();
        t.log_mask.store(u32::MAX, Ordering::Relaxed);
        t.log_server_deletes(true);
        t.insert(b"a", e(b"1"), 5);
        t.insert(b"b", e(b"2"), 0);
        t.take_log();
        let mut seen = Vec::new();
        assert_eq!(t.scan(None, 10, 10, &mut |k, _| seen.push(k.to_vec())), 0);
        assert_eq!(seen, vec![b"b".to_vec()]);
        assert_eq!(t.take_server_deletes(), vec![Key::from_slice(b"a")]);
        assert!(t.take_log().iter().any(|(k, ev)| &k[..] == b"a" && *ev == KeyEvent::Expired { lock: false }));
        assert_eq!((t.expired, t.volatile_len()), (1, 0));
    }

    #[test]
    fn an_eviction_is_measured_before_its_key_is_logged() {
        let mut t = Table::default();
        t.log_mask.store(u32::MAX, Ordering::Relaxed);
        t.log_server_deletes(true);
        t.insert(b"k", e(b"v"), 0);
        t.take_log();
        assert_eq!(t.evict_measured(b"k", || 7), Some(7));
        assert!(t.is_empty());
        // The logs come after the measure: what the eviction of the key propagates.
        let log: Vec<KeyEvent> = t.take_log().into_iter().map(|(_, ev)| ev).collect();
        assert_eq!(log, vec![KeyEvent::Changed, KeyEvent::Evicted]);
        assert_eq!(t.take_server_deletes(), vec![Key::from_slice(b"k")]);
        assert_eq!(t.evict_measured(b"k", || unreachable!("not present")), None);
    }

    /// Redis's SCAN guarantee: every key present for the whole iteration is returned, while keys
    /// are deleted and added between calls.
    #[test]
    fn scan_never_misses_stable_keys() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for round in 0..20 {
            let mut t = Table::default();
            for i in 0..500 {
                t.insert(format!("k{i}").as_bytes(), e(b"v"), 0);
            }
            // keys 0..250 are stable, the rest churn
            let mut seen = std::collections::HashSet::new();
            let mut upper = None;
            let mut next_new = 1000;
            loop {
                let next = t.scan(upper, 1 + round, 0, &mut |k, _| {
                    seen.insert(k.to_vec());
                });
                for _ in 0..3 {
                    let victim = rng.random_range(250..500);
                    t.remove(format!("k{victim}").as_bytes());
                    t.insert(format!("k{next_new}").as_bytes(), e(b"v"), 0);
                    next_new += 1;
                }
                if next == 0 {
                    break;
                }
                upper = Some(next);
            }
            for i in 0..250 {
                assert!(seen.contains(format!("k{i}").as_bytes()), "round {round} missed k{i}");
            }
        }
    }

    #[test]
    fn locking_sorted_and_deduped() {
        let ks = Keyspace::new(16, 8);
        let mut l = ks.lock_keys([&b"a"[..], b"b", b"a", b"zzz"]);
        let s = l.shard_for(b"zzz");
        s.dbs[0].insert(b"zzz", e(b"1"), 0);
        drop(l);
        let mut all = ks.lock_all();
        assert!(all.shard_for(b"zzz").dbs[0].peek(b"zzz").is_some());
    }
}
