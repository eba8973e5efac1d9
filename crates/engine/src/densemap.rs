//! The keyspace's map: keys and their values in one dense array of slots, found through a compact
//! hash index of 16-bit positions (24-bit ones past 2^16 keys, 32-bit ones past 2^24).
//!
//! What a table needs from its map, and what this one gives:
//! * **Positions.** Every slot has a position in `0..len`; removal is `swap_remove` (the last slot
//!   moves into the hole), so positions only ever move down and new slots are appended: a cursor
//!   walking positions from high to low visits every key that stays present (Redis's `SCAN`
//!   guarantee), and a random position is a random key (`RANDOMKEY`, eviction samples).
//! * **Small slots.** A slot is the key and the value, nothing else: no stored hash (a key's hash is
//!   computed again when the index grows; keys are short). The index holds the narrowest positions
//!   that reach every slot in a Swiss table (`hashbrown::HashTable<u16>`): 3 bytes per bucket with
//!   its control byte, where an `IndexMap` spends 8 on the stored hash and 9 per bucket. A table
//!   that reaches 2^16 keys (2 million keys over 32 shards) rebuilds its index once with 3-byte
//!   positions, 4 bytes a bucket; one that reaches 2^24 (16.7 million in one database of one
//!   shard), once more with 4-byte positions. Each rebuild keeps the bucket count.
//! * **No big copies.** Slots live in chunks of [`CHUNK`] (the first one grows as a `Vec` does, up
//!   to that size): a growing table allocates one chunk at a time instead of copying every slot into
//!   an array twice as large, so memory follows the number of keys (at most one partly filled chunk
//!   per table) and no insert pays for moving millions of slots.
//!
//! Lookups compare the key of the slot a candidate position points at; the index's control bytes
//! (7 bits of the hash) rule out nearly every other candidate before that.

use crate::primitives::{Hasher, Str};
use hashbrown::HashTable;
use std::hash::BuildHasher;

/// Slots per chunk (a power of two). A table's chunk (256 slots of 56 bytes: 14,336 bytes) is
/// jemalloc's largest small size class, served from slabs (two chunks in 7 pages, no waste). One
/// byte more and it is a large allocation, which jemalloc places at a random cache-line offset in
/// an extent one page longer (`cache_oblivious`): both partial pages are touched, so 1024-slot
/// chunks (56 KiB) cost 60 KiB resident, 4 bytes per key.
pub const CHUNK: usize = 256;

/// The largest size jemalloc serves from slabs with 4 KiB pages (its largest small size class):
/// a table's chunk stays within it (asserted where the table's slot size is known).
pub const SMALL_CLASS_MAX: usize = 14 * 1024;
const SHIFT: u32 = CHUNK.trailing_zeros();

/// Bytes the index spends per bucket: the position and hashbrown's control byte (below 2^16 keys).
pub const INDEX_BUCKET_BYTES: usize = std::mem::size_of::<u16>() + 1;

/// Positions below this fit the short index.
const SHORT_LIMIT: usize = 1 << 16;

/// Positions below this fit the narrow index.
const NARROW_LIMIT: usize = 1 << 24;

/// A position the index stores: 2 bytes, 3 (no alignment, so a bucket is 3 bytes) or 4.
trait Pos: Copy {
    fn new(pos: usize) -> Self;
    fn get(self) -> usize;
}

impl Pos for u16 {
    #[inline]
    fn new(pos: usize) -> Self {
        debug_assert!(pos < SHORT_LIMIT);
        pos as u16
    }
    #[inline]
    fn get(self) -> usize {
        self as usize
    }
}

/// A 24-bit position, little-endian.
#[derive(Clone, Copy)]
struct Narrow([u8; 3]);

impl Pos for Narrow {
    #[inline]
    fn new(pos: usize) -> Self {
        debug_assert!(pos < NARROW_LIMIT);
        let b = (pos as u32).to_le_bytes();
        Narrow([b[0], b[1], b[2]])
    }
    #[inline]
    fn get(self) -> usize {
        u32::from_le_bytes([self.0[0], self.0[1], self.0[2], 0]) as usize
    }
}

impl Pos for u32 {
    #[inline]
    fn new(pos: usize) -> Self {
        u32::try_from(pos).expect("a table holds fewer than 2^32 keys")
    }
    #[inline]
    fn get(self) -> usize {
        self as usize
    }
}

/// The hash index: positions of slots, filed under their keys' hashes.
#[derive(Clone)]
enum Index {
    Short(HashTable<u16>),
    Narrow(HashTable<Narrow>),
    Wide(HashTable<u32>),
}

/// Runs `$body` with `$t` bound to the index's table, whichever width it has (the body is
/// compiled once per width).
macro_rules! with_index {
    ($index:expr, $t:ident => $body:expr) => {
        match $index {
            Index::Short($t) => $body,
            Index::Narrow($t) => $body,
            Index::Wide($t) => $body,
        }
    };
}

/// A map from keys to values with dense positions (see the module documentation).
#[derive(Clone)]
pub struct DenseMap<V> {
    chunks: Vec<Vec<(Str, V)>>,
    len: usize,
    index: Index,
    /// Positions from this one on need the narrow index ([`SHORT_LIMIT`]; lower in tests).
    short_limit: usize,
    /// Positions from this one on need the wide index ([`NARROW_LIMIT`]; lower in tests).
    narrow_limit: usize,
    hasher: Hasher,
    /// Where the index's control bytes begin, for prefetching (see [`CtrlAddr`]).
    ctrl: CtrlAddr,
}

/// The address of the index's control bytes (hashbrown's `data_end`: buckets lie below it, bucket
/// `i` at `ctrl - (i + 1) * size`, control byte `i` at `ctrl + i`), learned from the bucket each
/// insertion fills; 0 before the first. hashbrown has no API for it, and only prefetches use it:
/// an address that is stale (a clone's, whose copy starts at 0) or wrong (another hashbrown
/// layout; `the_index_address_follows_hashbrowns_layout` checks this one) costs a useless
/// prefetch, never a wrong answer, as nothing reads through it.
#[derive(Default)]
struct CtrlAddr(usize);

impl Clone for CtrlAddr {
    fn clone(&self) -> Self {
        CtrlAddr(0)
    }
}

/// Asks the CPU to start loading the cache line holding `addr`. A hint only: nothing is read
/// through the address, and any address is allowed.
#[inline(always)]
#[allow(unsafe_code)]
fn prefetch(addr: usize) {
    // SAFETY: `_mm_prefetch` is unsafe only as a `#[target_feature(enable = "sse")]` function, and
    // SSE is part of x86_64's baseline, so the instruction exists. PREFETCHT0 moves data between
    // memory and cache only: it writes nothing, its result is invisible to the program, and it
    // never faults, whatever the address (Intel SDM vol. 2B, PREFETCHh), so no address can make
    // it misbehave.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(addr as *const i8)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = addr;
}

/// The hasher of every keyspace map, and of the keyspace's choice of shard: one instance for the
/// process, randomly seeded once (as Redis seeds its dict hash once), so that a key hashed to find
/// its shard need not be hashed again to be found in the shard's table.
pub fn keyspace_hasher() -> Hasher {
    static SHARED: std::sync::OnceLock<Hasher> = std::sync::OnceLock::new();
    SHARED.get_or_init(Hasher::default).clone()
}

impl<V> Default for DenseMap<V> {
    fn default() -> Self {
        DenseMap {
            chunks: Vec::new(),
            len: 0,
            index: Index::Short(HashTable::new()),
            short_limit: SHORT_LIMIT,
            narrow_limit: NARROW_LIMIT,
            hasher: keyspace_hasher(),
            ctrl: CtrlAddr::default(),
        }
    }
}

#[inline]
fn at(pos: usize) -> (usize, usize) {
    (pos >> SHIFT, pos & (CHUNK - 1))
}

/// The address of the control bytes of the index holding `bucket` at `index` (see [`CtrlAddr`]).
#[inline]
fn ctrl_of<P>(bucket: &P, index: usize) -> usize {
    bucket as *const P as usize + (index + 1) * std::mem::size_of::<P>()
}

/// The size of a bucket of `t`.
#[inline]
fn bucket_size<P>(_: &HashTable<P>) -> usize {
    std::mem::size_of::<P>()
}

/// The hash of the key in the slot at `pos` (the index stores no hashes: it rehashes keys to grow).
#[inline]
fn slot_hash<V>(chunks: &[Vec<(Str, V)>], hasher: &Hasher, pos: usize) -> u64 {
    let (c, i) = at(pos);
    hasher.hash_one(&chunks[c][i].0[..])
}

impl<V> DenseMap<V> {
    /// Number of keys.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the map holds no key.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// How many keys the index holds before it grows.
    pub fn capacity(&self) -> usize {
        with_index!(&self.index, t => t.capacity())
    }

    /// Bytes the index spends per bucket, as wide as it is now.
    pub fn index_bucket_bytes(&self) -> usize {
        match self.index {
            Index::Short(_) => INDEX_BUCKET_BYTES,
            Index::Narrow(_) => std::mem::size_of::<Narrow>() + 1,
            Index::Wide(_) => std::mem::size_of::<u32>() + 1,
        }
    }

    /// True if the next new key makes the index grow (it reallocates, doubling).
    pub fn index_full(&self) -> bool {
        with_index!(&self.index, t => t.len() == t.capacity())
    }

    /// True if the next new key's position needs wider positions than the index holds (it is
    /// rebuilt, keeping its buckets).
    pub fn index_widens(&self) -> bool {
        match self.index {
            Index::Short(_) => self.len == self.short_limit,
            Index::Narrow(_) => self.len == self.narrow_limit,
            Index::Wide(_) => false,
        }
    }

    /// Bytes the index allocates for the next new key: 0, or its new buckets (twice as many when
    /// it is full, wider ones when it widens; the old ones are freed after the move).
    pub fn index_growth_bytes(&self) -> usize {
        let (full, widens) = (self.index_full(), self.index_widens());
        if !full && !widens {
            return 0;
        }
        // Buckets are a power of two above capacity * 8 / 7.
        let buckets = (self.capacity().max(3) * 8 / 7 + 1).next_power_of_two();
        let bucket_bytes = match (&self.index, widens) {
            (Index::Short(_), true) => std::mem::size_of::<Narrow>() + 1,
            (Index::Narrow(_), true) => std::mem::size_of::<u32>() + 1,
            _ => self.index_bucket_bytes(),
        };
        (if full { 2 * buckets } else { buckets }) * bucket_bytes
    }

    /// Slots allocated and not in use (the tails of the last chunks).
    pub fn free_slots(&self) -> usize {
        self.chunks.iter().map(Vec::capacity).sum::<usize>() - self.len
    }

    /// The hash of `key` (what the index files it under).
    #[inline]
    pub fn hash(&self, key: &[u8]) -> u64 {
        self.hasher.hash_one(key)
    }

    #[inline]
    fn slot(&self, pos: usize) -> &(Str, V) {
        let (c, i) = at(pos);
        &self.chunks[c][i]
    }

    #[inline]
    fn slot_mut(&mut self, pos: usize) -> &mut (Str, V) {
        let (c, i) = at(pos);
        &mut self.chunks[c][i]
    }

    /// Position of `key` given its hash.
    #[inline]
    pub fn find_hashed(&self, hash: u64, key: &[u8]) -> Option<usize> {
        let chunks = &self.chunks;
        with_index!(&self.index, t => t
            .find(hash, |&p| {
                let (c, i) = at(p.get());
                chunks[c][i].0[..] == *key
            })
            .map(|&p| p.get()))
    }

    /// Position of `key`.
    #[inline]
    pub fn get_index_of(&self, key: &[u8]) -> Option<usize> {
        self.get_index_of_hashed(key, None)
    }

    /// Position of `key`, whose hash the caller may know already ([`DenseMap::hash`]). An empty
    /// map answers without hashing the key or probing, as Redis's dictFind does.
    #[inline]
    pub fn get_index_of_hashed(&self, key: &[u8], hash: Option<u64>) -> Option<usize> {
        if self.is_empty() {
            return None;
        }
        debug_assert!(hash.is_none_or(|h| h == self.hash(key)), "a hash this map would not give");
        self.find_hashed(hash.unwrap_or_else(|| self.hash(key)), key)
    }

    /// True if `key` is present.
    pub fn contains_key(&self, key: &[u8]) -> bool {
        self.get_index_of(key).is_some()
    }

    /// The value of `key`.
    pub fn get(&self, key: &[u8]) -> Option<&V> {
        self.get_index_of(key).map(|p| &self.slot(p).1)
    }

    /// The key and value at a position.
    #[inline]
    pub fn get_index(&self, pos: usize) -> Option<(&Str, &V)> {
        (pos < self.len).then(|| {
            let (k, v) = self.slot(pos);
            (k, v)
        })
    }

    /// The key and value at a position, the value to change.
    #[inline]
    pub fn get_index_mut(&mut self, pos: usize) -> Option<(&Str, &mut V)> {
        if pos >= self.len {
            return None;
        }
        let (k, v) = self.slot_mut(pos);
        Some((&*k, v))
    }

    /// Appends a key that is not present, whose hash is `hash`. Returns its position.
    pub fn push_hashed(&mut self, hash: u64, key: Str, value: V) -> usize {
        debug_assert!(self.find_hashed(hash, &key).is_none(), "push_hashed of a present key");
        let pos = self.len;
        if self.index_widens() {
            self.widen();
        }
        let (c, _) = at(pos);
        if c == self.chunks.len() {
            // The first chunk grows as a Vec does (small tables stay small); later ones are
            // allocated whole.
            self.chunks.push(if c == 0 { Vec::new() } else { Vec::with_capacity(CHUNK) });
        }
        self.chunks[c].push((key, value));
        self.len += 1;
        let (chunks, hasher) = (&self.chunks, &self.hasher);
        self.ctrl.0 = with_index!(&mut self.index, t => {
            let e = t.insert_unique(hash, Pos::new(pos), |&p| slot_hash(chunks, hasher, p.get()));
            ctrl_of(e.get(), e.bucket_index())
        });
        pos
    }

    /// Starts loading the index's lines that a lookup of `hash` reads first: the control group
    /// and the buckets where its probe starts. The first step of a batch's prefetch; a lookup
    /// right after it would wait for the same loads.
    #[inline]
    pub fn prefetch_index(&self, hash: u64) {
        if self.ctrl.0 == 0 || self.len == 0 {
            return;
        }
        let (mask, size) = with_index!(&self.index, t => (t.num_buckets() - 1, bucket_size(t)));
        let start = hash as usize & mask;
        prefetch(self.ctrl.0 + start);
        prefetch(self.ctrl.0.wrapping_sub((start + 1) * size));
    }

    /// Starts loading the slots that a lookup of `hash` will compare its key with (the positions
    /// whose control byte matches). Reads the index, so it should come a while after
    /// [`DenseMap::prefetch_index`] of the same hash.
    #[inline]
    pub fn prefetch_slots(&self, hash: u64) {
        let chunks = &self.chunks;
        with_index!(&self.index, t => for p in t.iter_hash(hash) {
            let (c, i) = at(p.get());
            if let Some(slot) = chunks.get(c).and_then(|chunk| chunk.get(i)) {
                let addr = slot as *const (Str, V) as usize;
                prefetch(addr);
                prefetch(addr + std::mem::size_of::<(Str, V)>() - 1);
            }
        });
    }

    /// Rebuilds the index with the next wider positions (the table reached its index's limit),
    /// keeping its buckets. Once per width and table, as costly as one doubling of the index.
    #[cold]
    fn widen(&mut self) {
        let cap = self.capacity().max(self.len + 1);
        self.index = match self.index {
            Index::Short(_) => Index::Narrow(self.rebuilt(cap)),
            Index::Narrow(_) => Index::Wide(self.rebuilt(cap)),
            Index::Wide(_) => unreachable!("the wide index reaches every position"),
        };
    }

    /// An index of every slot with positions of type `P`, for `cap` keys.
    fn rebuilt<P: Pos>(&self, cap: usize) -> HashTable<P> {
        let mut t = HashTable::with_capacity(cap);
        let (chunks, hasher) = (&self.chunks, &self.hasher);
        for pos in 0..self.len {
            t.insert_unique(slot_hash(chunks, hasher, pos), P::new(pos), |&p| slot_hash(chunks, hasher, p.get()));
        }
        t
    }

    /// Points the index entry for the slot at `from` (whose key hashes to `hash`) at `to`.
    fn repoint(&mut self, hash: u64, from: usize, to: usize) {
        with_index!(&mut self.index, t => {
            let slot = t.find_mut(hash, |&p| p.get() == from).expect("every slot is indexed");
            *slot = Pos::new(to);
        });
    }

    /// Removes the slot at `pos`, moving the last slot into its place. None if `pos` is out of
    /// range.
    pub fn swap_remove_index(&mut self, pos: usize) -> Option<(Str, V)> {
        if pos >= self.len {
            return None;
        }
        let hash = self.hash(&self.slot(pos).0);
        with_index!(&mut self.index, t => match t.find_entry(hash, |&p| p.get() == pos) {
            Ok(e) => drop(e.remove()),
            Err(_) => unreachable!("every slot is indexed"),
        });
        let last = self.len - 1;
        if pos != last {
            let last_hash = self.hash(&self.slot(last).0);
            self.repoint(last_hash, last, pos);
        }
        let (lc, _) = at(last);
        let moved = self.chunks[lc].pop().expect("the last chunk holds the last slot");
        self.len -= 1;
        let removed = if pos == last { moved } else { std::mem::replace(self.slot_mut(pos), moved) };
        self.trim_chunks();
        Some(removed)
    }

    /// Frees trailing chunks that are empty, keeping one spare (a table that shrinks and grows
    /// across a chunk boundary does not allocate each time).
    fn trim_chunks(&mut self) {
        let needed = self.len.div_ceil(CHUNK);
        while self.chunks.len() > needed + 1 {
            self.chunks.pop();
        }
        if self.len == 0 {
            self.chunks = Vec::new();
        }
    }

    /// Keeps the slots for which `keep` says so, in their order (positions only move down), and
    /// rebuilds the index, which leaves no deleted markers (tombstones) in it.
    pub fn retain(&mut self, mut keep: impl FnMut(&Str, &mut V) -> bool) {
        let old = std::mem::take(&mut self.chunks);
        self.len = 0;
        with_index!(&mut self.index, t => t.clear());
        for chunk in old {
            for (k, mut v) in chunk {
                if keep(&k, &mut v) {
                    let hash = self.hash(&k);
                    self.push_hashed(hash, k, v);
                }
            }
        }
    }

    /// Every key and value, in position order.
    pub fn iter(&self) -> impl Iterator<Item = (&Str, &V)> {
        self.chunks.iter().flatten().map(|(k, v)| (k, v))
    }
}

impl<V> std::ops::Index<usize> for DenseMap<V> {
    type Output = V;
    #[inline]
    fn index(&self, pos: usize) -> &V {
        assert!(pos < self.len, "position {pos} out of {}", self.len);
        &self.slot(pos).1
    }
}

impl<V> std::ops::IndexMut<usize> for DenseMap<V> {
    #[inline]
    fn index_mut(&mut self, pos: usize) -> &mut V {
        assert!(pos < self.len, "position {pos} out of {}", self.len);
        &mut self.slot_mut(pos).1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// Inserts or replaces, as a table does; returns the previous value.
    fn insert(m: &mut DenseMap<usize>, key: &[u8], value: usize) -> Option<usize> {
        let hash = m.hash(key);
        match m.find_hashed(hash, key) {
            Some(p) => Some(std::mem::replace(&mut m[p], value)),
            None => {
                m.push_hashed(hash, Str::from_slice(key), value);
                None
            }
        }
    }

    fn key(i: usize) -> Vec<u8> {
        format!("key:{i}").into_bytes()
    }

    fn check(m: &DenseMap<usize>, model: &HashMap<Vec<u8>, usize>) {
        assert_eq!(m.len(), model.len());
        for (k, v) in model {
            let p = m.get_index_of(k).expect("present");
            let (pk, pv) = m.get_index(p).unwrap();
            assert_eq!((&pk[..], *pv), (&k[..], *v));
        }
        assert_eq!(m.iter().count(), model.len());
        assert!(m.get_index(m.len()).is_none());
    }

    #[test]
    fn inserts_removals_and_positions_across_chunks() {
        let mut m = DenseMap::default();
        let mut model = HashMap::new();
        let n = 3 * CHUNK + 17;
        for i in 0..n {
            assert_eq!(insert(&mut m, &key(i), i), None);
            model.insert(key(i), i);
        }
        check(&m, &model);
        assert_eq!(insert(&mut m, &key(5), 500), Some(5));
        model.insert(key(5), 500);
        // Remove from the middle, the front and the end: the last slot moves into the hole.
        for pick in [CHUNK + 3, 0, usize::MAX, 2 * CHUNK] {
            let pos = pick.min(m.len() - 1);
            let last_key = m.get_index(m.len() - 1).unwrap().0.to_vec();
            let (k, v) = m.swap_remove_index(pos).unwrap();
            assert_eq!(model.remove(&k[..]), Some(v));
            if pos < m.len() {
                assert_eq!(&m.get_index(pos).unwrap().0[..], &last_key[..]);
            }
        }
        check(&m, &model);
        assert!(m.swap_remove_index(m.len()).is_none());
    }

    #[test]
    fn shrinking_frees_chunks_but_one_spare() {
        let mut m = DenseMap::default();
        for i in 0..3 * CHUNK {
            insert(&mut m, &key(i), i);
        }
        while m.len() > CHUNK / 2 {
            m.swap_remove_index(m.len() - 1);
        }
        assert_eq!(m.chunks.len(), 2);
        while !m.is_empty() {
            m.swap_remove_index(0);
        }
        assert!(m.chunks.is_empty());
        assert_eq!(m.get_index_of(b"key:1"), None);
    }

    #[test]
    fn retain_keeps_order_and_rebuilds_the_index() {
        let mut m = DenseMap::default();
        let mut model = HashMap::new();
        for i in 0..2 * CHUNK + 5 {
            insert(&mut m, &key(i), i);
            if i % 3 != 0 {
                model.insert(key(i), i);
            }
        }
        m.retain(|_, v| *v % 3 != 0);
        check(&m, &model);
        let order: Vec<usize> = m.iter().map(|(_, v)| *v).collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]));
    }

    /// Chunks hold exactly CHUNK slots: the first grows to it and stops, later ones are
    /// allocated at that size, so a chunk of table slots is the size class it was sized for.
    #[test]
    fn chunks_are_exactly_chunk_slots() {
        let mut m = DenseMap::default();
        for i in 0..2 * CHUNK + 1 {
            insert(&mut m, &key(i), i);
        }
        let caps: Vec<usize> = m.chunks.iter().map(Vec::capacity).collect();
        assert_eq!(caps, [CHUNK, CHUNK, CHUNK]);
        assert_eq!(m.free_slots(), CHUNK - 1);
    }

    #[test]
    fn a_small_map_allocates_little() {
        let mut m = DenseMap::default();
        for i in 0..5 {
            insert(&mut m, &key(i), i);
        }
        assert!(m.free_slots() < 8);
    }

    /// The prefetch's address of the control bytes is where hashbrown keeps them: every full
    /// bucket lies at `ctrl - (i + 1) * size`, for each width, through growth, widening, removal
    /// and retain. With another layout this fails (and the prefetches would only be wasted).
    #[test]
    fn the_index_address_follows_hashbrowns_layout() {
        fn check<P: Pos>(t: &HashTable<P>, ctrl: usize) -> usize {
            let size = std::mem::size_of::<P>();
            let mut n = 0;
            for i in t.iter_buckets() {
                let b = t.get_bucket(i).expect("iter_buckets yields full buckets");
                assert_eq!(b as *const P as usize, ctrl - (i + 1) * size, "bucket {i}");
                n += 1;
            }
            n
        }
        let mut m = DenseMap { short_limit: 100, narrow_limit: 300, ..DenseMap::default() };
        assert_eq!(m.ctrl.0, 0);
        for i in 0..1000 {
            insert(&mut m, &key(i), i);
            if i % 37 == 0 || i == 99 || i == 100 || i == 299 || i == 300 {
                let n = with_index!(&m.index, t => check(t, m.ctrl.0));
                assert_eq!(n, m.len());
            }
        }
        for i in (0..1000).step_by(3) {
            m.swap_remove_index(m.get_index_of(&key(i)).unwrap());
        }
        m.retain(|_, v| *v % 2 == 0);
        insert(&mut m, &key(5000), 5000);
        assert_eq!(with_index!(&m.index, t => check(t, m.ctrl.0)), m.len());
        assert_eq!(m.clone().ctrl.0, 0, "a clone learns its own address");
        // The prefetches take any hash, present or not.
        for h in [0, 1, u64::MAX, m.hash(&key(2))] {
            m.prefetch_index(h);
            m.prefetch_slots(h);
        }
        DenseMap::<usize>::default().prefetch_index(7);
    }

    /// A bucket of the short index is 3 bytes, of the narrow one 4: the point of them.
    #[test]
    fn positions_are_two_or_three_bytes_and_round_trip() {
        assert_eq!((std::mem::size_of::<u16>(), std::mem::size_of::<Narrow>()), (2, 3));
        assert_eq!(INDEX_BUCKET_BYTES, 3);
        for pos in [0, 1, 255, 256, SHORT_LIMIT - 1] {
            assert_eq!(<u16 as Pos>::new(pos).get(), pos);
        }
        for pos in [0, 1, 255, 256, 65_535, 65_536, NARROW_LIMIT - 1] {
            assert_eq!(Narrow::new(pos).get(), pos);
        }
    }

    /// With the real limit: the 65,537th key moves the index to 3-byte positions, every key stays
    /// found.
    #[test]
    fn the_short_index_widens_at_two_to_the_sixteen() {
        let mut m = DenseMap::default();
        for i in 0..SHORT_LIMIT {
            insert(&mut m, &key(i), i);
        }
        assert_eq!(m.index_bucket_bytes(), 3);
        assert!(m.index_widens());
        insert(&mut m, &key(SHORT_LIMIT), SHORT_LIMIT);
        assert_eq!(m.index_bucket_bytes(), 4);
        for i in (0..=SHORT_LIMIT).step_by(97).chain([SHORT_LIMIT - 1, SHORT_LIMIT]) {
            assert_eq!(m.get(&key(i)), Some(&i));
        }
    }

    /// A table that reaches each width's limit rebuilds its index once, wider, with the same
    /// buckets, and goes on: every key is found, removals repoint moved slots, and retain
    /// rebuilds it. The eviction's forecast (`index_growth_bytes`) sees each rebuild coming.
    #[test]
    fn the_index_widens_at_each_limit() {
        let mut m = DenseMap { short_limit: 100, narrow_limit: 300, ..DenseMap::default() };
        let mut model = HashMap::new();
        let width = |m: &DenseMap<usize>| m.index_bucket_bytes();
        for i in 0..2 * CHUNK + 100 {
            if i == 100 || i == 300 {
                let (before, cap) = (width(&m), m.capacity());
                assert!(m.index_widens() && !m.index_full(), "at {i}");
                assert_eq!(m.index_growth_bytes(), (cap * 8 / 7 + 1).next_power_of_two() * (before + 1), "at {i}");
                insert(&mut m, &key(i), i);
                assert_eq!((width(&m), m.capacity()), (before + 1, cap), "at {i}");
            } else {
                assert!(!m.index_widens());
                assert_eq!(m.index_growth_bytes() > 0, m.index_full(), "at {i}");
                insert(&mut m, &key(i), i);
            }
            model.insert(key(i), i);
            let expect = if i < 100 {
                3
            } else if i < 300 {
                4
            } else {
                5
            };
            assert_eq!(width(&m), expect, "at {i}");
        }
        check(&m, &model);
        for pick in [0, 500, 299, 99, usize::MAX] {
            let (k, v) = m.swap_remove_index(pick.min(m.len() - 1)).unwrap();
            assert_eq!(model.remove(&k[..]), Some(v));
        }
        check(&m, &model);
        m.retain(|_, v| *v % 2 == 0);
        model.retain(|_, v| *v % 2 == 0);
        check(&m, &model);
        assert_eq!(width(&m), 5, "an index does not narrow again");
    }
}
