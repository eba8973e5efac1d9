//! Streams in Redis 7.0's layout (`t_stream.c`): entries packed into listpack nodes, each node keyed
//! by its master ID (the ID of the first entry it received) in an ordered map, as Redis keys them
//! in a radix tree.
//!
//! A node is a real Redis listpack: a master entry (`count`, `deleted`, the field names of the
//! node's first entry, a 0 terminator), then per entry `flags`, the ID as deltas from the master
//! ID (ms, seq), the field count and names unless the entry has the master's fields
//! (`SAMEFIELDS`), the values, and `lp-count` (the entry's element count, to walk backwards).
//! Deleted entries stay as tombstones (`DELETED` flag) until their whole node goes. So memory per
//! entry is Redis's, and RDB and DUMP write the nodes as they are.
//!
//! Consumer groups keep Redis's state: the last delivered ID, the logical read counter
//! (`entries_read`), the pending entries list (PEL) and the consumers with their own PELs.

use crate::primitives::SmallBytes;
use crate::types::listpack as lp;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// An entry's flag: deleted (a tombstone).
pub const FLAG_DELETED: i64 = 1;
/// An entry's flag: its fields are the master entry's.
pub const FLAG_SAMEFIELDS: i64 = 2;
/// The largest listpack Redis lets a node grow to.
const MAX_NODE_BYTES: usize = 1 << 30;
/// The room a new node is allocated with (`STREAM_LISTPACK_MAX_PRE_ALLOCATE`), or
/// `stream-node-max-bytes` if smaller.
const PREALLOC: usize = 4096;
/// `SCG_INVALID_ENTRIES_READ`.
pub const INVALID_ENTRIES_READ: i64 = -1;

/// A stream entry ID: milliseconds and sequence number.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId {
    /// Milliseconds part.
    pub ms: u64,
    /// Sequence part.
    pub seq: u64,
}

impl std::fmt::Display for StreamId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

impl StreamId {
    /// 0-0.
    pub const MIN: StreamId = StreamId { ms: 0, seq: 0 };
    /// The largest ID.
    pub const MAX: StreamId = StreamId { ms: u64::MAX, seq: u64::MAX };

    /// `ms-seq`.
    pub const fn new(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    /// True for 0-0.
    pub fn is_zero(self) -> bool {
        self == StreamId::MIN
    }

    /// The next ID (`streamIncrID`); None past the largest.
    pub fn incr(self) -> Option<StreamId> {
        if self.seq == u64::MAX {
            if self.ms == u64::MAX { None } else { Some(StreamId::new(self.ms + 1, 0)) }
        } else {
            Some(StreamId::new(self.ms, self.seq + 1))
        }
    }

    /// The previous ID (`streamDecrID`); None before 0-0.
    pub fn decr(self) -> Option<StreamId> {
        if self.seq == 0 {
            if self.ms == 0 { None } else { Some(StreamId::new(self.ms - 1, u64::MAX)) }
        } else {
            Some(StreamId::new(self.ms, self.seq - 1))
        }
    }

    /// The 128-bit big-endian form (radix tree keys, RDB).
    pub fn to_be(self) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&self.ms.to_be_bytes());
        b[8..].copy_from_slice(&self.seq.to_be_bytes());
        b
    }

    /// Reads the 128-bit big-endian form.
    pub fn from_be(b: &[u8]) -> Option<StreamId> {
        let b: &[u8; 16] = b.try_into().ok()?;
        let ms = u64::from_be_bytes(b[..8].try_into().ok()?);
        let seq = u64::from_be_bytes(b[8..].try_into().ok()?);
        Some(StreamId::new(ms, seq))
    }

    /// The `ms-seq` text.
    pub fn text(self) -> bytes::Bytes {
        let (mut a, mut b) = (itoa::Buffer::new(), itoa::Buffer::new());
        let (ms, seq) = (a.format(self.ms).as_bytes(), b.format(self.seq).as_bytes());
        let mut t = Vec::with_capacity(ms.len() + 1 + seq.len());
        t.extend_from_slice(ms);
        t.push(b'-');
        t.extend_from_slice(seq);
        bytes::Bytes::from(t)
    }

    /// Parses a client's ID (`streamGenericParseIDOrReply`): `-` and `+` (unless `strict`), `ms`
    /// (the sequence is `missing_seq`), `ms-seq`, and with `allow_auto_seq` `ms-*` (then the
    /// second value is false: no sequence was given).
    pub fn parse(b: &[u8], missing_seq: u64, strict: bool, allow_auto_seq: bool) -> Option<(StreamId, bool)> {
        if b.len() > 127 {
            return None;
        }
        // Redis copies the argument into a C string: it ends at a NUL byte.
        let b = b.split(|&c| c == 0).next().unwrap_or(b);
        if b == b"-" || b == b"+" {
            if strict {
                return None;
            }
            return Some((if b == b"-" { StreamId::MIN } else { StreamId::MAX }, true));
        }
        let (ms_part, seq_part) = match b.iter().position(|&c| c == b'-') {
            Some(i) => (&b[..i], Some(&b[i + 1..])),
            None => (b, None),
        };
        let ms = string2ull(ms_part)?;
        match seq_part {
            Some(s) if allow_auto_seq && s == b"*" => Some((StreamId::new(ms, 0), false)),
            Some(s) => Some((StreamId::new(ms, string2ull(s)?), true)),
            None => Some((StreamId::new(ms, missing_seq), true)),
        }
    }
}

/// Redis's `string2ull`: a canonical non-negative integer, or what C's `strtoull` accepts in full
/// (leading spaces, a sign, leading zeros; a `-` wraps around).
fn string2ull(s: &[u8]) -> Option<u64> {
    if let Some(v) = crate::args::parse_i64_strict(s) {
        return u64::try_from(v).ok();
    }
    let mut i = 0;
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r') {
        i += 1;
    }
    let mut neg = false;
    if i < s.len() && (s[i] == b'+' || s[i] == b'-') {
        neg = s[i] == b'-';
        i += 1;
    }
    let digits = &s[i..];
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: u64 = 0;
    for d in digits {
        v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    Some(if neg { v.wrapping_neg() } else { v })
}

/// A pending entry: delivered to a consumer, not yet acknowledged (`streamNACK`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Nack {
    /// Unix ms of the last delivery.
    pub delivery_time: i64,
    /// Deliveries so far.
    pub delivery_count: u64,
    /// The consumer it was last delivered to.
    pub consumer: SmallBytes,
}

/// A consumer of a group.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Consumer {
    /// Unix ms of its last activity.
    pub seen_time: i64,
    /// The IDs pending for it (their [`Nack`]s are in the group's PEL).
    pub pel: BTreeSet<StreamId>,
}

/// A consumer group (`streamCG`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    /// The last ID delivered.
    pub last_id: StreamId,
    /// The logical read counter, or [`INVALID_ENTRIES_READ`].
    pub entries_read: i64,
    /// Pending entries of every consumer.
    pub pel: BTreeMap<StreamId, Nack>,
    /// Consumers by name.
    pub consumers: BTreeMap<SmallBytes, Consumer>,
}

impl Group {
    /// A group that delivered up to `last_id`.
    pub fn new(last_id: StreamId, entries_read: i64) -> Group {
        Group { last_id, entries_read, pel: BTreeMap::new(), consumers: BTreeMap::new() }
    }

    /// Removes `id` from the PEL and from its consumer's. True if it was pending.
    pub fn ack(&mut self, id: StreamId) -> bool {
        match self.pel.remove(&id) {
            Some(n) => {
                if let Some(c) = self.consumers.get_mut(&n.consumer) {
                    c.pel.remove(&id);
                }
                true
            }
            None => false,
        }
    }

    /// Gives pending `id` to `consumer` (which must exist), taking it from its previous owner.
    pub fn assign(&mut self, id: StreamId, consumer: &[u8]) {
        if let Some(n) = self.pel.get_mut(&id) {
            if n.consumer[..] != *consumer {
                if let Some(c) = self.consumers.get_mut(&n.consumer) {
                    c.pel.remove(&id);
                }
                n.consumer = SmallBytes::from_slice(consumer);
            }
            if let Some(c) = self.consumers.get_mut(consumer) {
                c.pel.insert(id);
            }
        }
    }

    /// Deletes a consumer with its pending entries; how many it had, or None if unknown.
    pub fn delete_consumer(&mut self, name: &[u8]) -> Option<usize> {
        let c = self.consumers.remove(name)?;
        for id in &c.pel {
            self.pel.remove(id);
        }
        Some(c.pel.len())
    }
}

/// An entry read out of a stream: its ID and its fields and values, alternating.
pub type StreamEntry = (StreamId, Vec<SmallBytes>);

/// How a new entry gets its ID.
#[derive(Clone, Copy, Debug)]
pub enum NewId {
    /// `*`: from the clock.
    Auto,
    /// `ms-seq` as given.
    Exact(StreamId),
    /// `ms-*`: the next sequence within `ms`.
    AutoSeq(u64),
}

/// Why an entry was not added.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddError {
    /// The ID is not above the stream's last one (Redis's `EDOM`).
    IdTooSmall,
    /// The fields and values are too large for a node (`ERANGE`).
    TooLarge,
}

/// A trimming strategy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrimTo {
    /// Keep at most this many entries.
    MaxLen(u64),
    /// Drop entries below this ID.
    MinId(StreamId),
}

/// A trim request (`streamAddTrimArgs`).
#[derive(Clone, Copy, Debug)]
pub struct Trim {
    /// What to keep.
    pub to: TrimTo,
    /// `~`: only whole nodes.
    pub approx: bool,
    /// The most entries to remove (0: no limit).
    pub limit: i64,
}

/// Node size limits (`stream-node-max-bytes`, `stream-node-max-entries`).
#[derive(Clone, Copy, Debug)]
pub struct NodeLimits {
    /// Bytes (0: no limit but Redis's 1 GiB).
    pub max_bytes: usize,
    /// Entries, live and deleted (0: no limit).
    pub max_entries: i64,
}

impl Default for NodeLimits {
    fn default() -> Self {
        NodeLimits { max_bytes: 4096, max_entries: 100 }
    }
}

/// One entry's position in its node.
#[derive(Clone, Copy, Debug)]
struct Raw {
    id: StreamId,
    flags: i64,
    flags_pos: usize,
    /// The first field (or value, with SAMEFIELDS).
    body: Option<usize>,
    fields: usize,
}

/// A node's master entry and entries, decoded once.
struct Node<'a> {
    lp: &'a [u8],
    master: StreamId,
    master_fields: Vec<usize>,
    /// The next entry's flags, for [`Node::next_entry`].
    cur: Option<usize>,
}

impl<'a> Node<'a> {
    /// The node's master entry; its entries come from [`Node::next_entry`] (or [`Node::read`]).
    fn open(master: StreamId, lp: &'a [u8]) -> Node<'a> {
        let mut n = Node { lp, master, master_fields: Vec::new(), cur: None };
        let Some(p) = lp::first(lp) else { return n };
        let Some(p) = lp::next(lp, p) else { return n };
        let Some(p) = lp::next(lp, p) else { return n };
        let mfc = lp::get_int(lp, p).max(0) as usize;
        let mut cur = lp::next(lp, p);
        for _ in 0..mfc {
            let Some(q) = cur else { return n };
            n.master_fields.push(q);
            cur = lp::next(lp, q);
        }
        // Past the master entry's 0 terminator.
        n.cur = cur.and_then(|q| lp::next(lp, q));
        n
    }

    /// The next entry in order (tombstones included).
    fn next_entry(&mut self) -> Option<Raw> {
        let lp = self.lp;
        let fp = self.cur?;
        self.cur = None;
        let flags = lp::get_int(lp, fp);
        let mp = lp::next(lp, fp)?;
        let sp = lp::next(lp, mp)?;
        let id = StreamId::new(
            self.master.ms.wrapping_add(lp::get_int(lp, mp) as u64),
            self.master.seq.wrapping_add(lp::get_int(lp, sp) as u64),
        );
        let mut p = lp::next(lp, sp);
        let mfc = self.master_fields.len();
        let (fields, skip) = if flags & FLAG_SAMEFIELDS != 0 {
            (mfc, mfc)
        } else {
            let q = p?;
            let nf = lp::get_int(lp, q).max(0) as usize;
            p = lp::next(lp, q);
            (nf, nf * 2)
        };
        let body = p;
        for _ in 0..skip {
            p = p.and_then(|q| lp::next(lp, q));
        }
        // Past lp-count.
        self.cur = p.and_then(|q| lp::next(lp, q));
        Some(Raw { id, flags, flags_pos: fp, body, fields })
    }

    /// Every entry, in order.
    fn read(master: StreamId, lp: &'a [u8]) -> (Node<'a>, Vec<Raw>) {
        let mut n = Node::open(master, lp);
        let mut entries = Vec::new();
        while let Some(e) = n.next_entry() {
            entries.push(e);
        }
        (n, entries)
    }

    fn fields(&self, e: &Raw) -> Vec<SmallBytes> {
        let mut out = Vec::with_capacity(e.fields * 2);
        let same = e.flags & FLAG_SAMEFIELDS != 0;
        let mut p = e.body;
        for i in 0..e.fields {
            if same {
                match self.master_fields.get(i) {
                    Some(&f) => out.push(lp::get(self.lp, f).to_bytes()),
                    None => break,
                }
            } else {
                let Some(q) = p else { break };
                out.push(lp::get(self.lp, q).to_bytes());
                p = lp::next(self.lp, q);
            }
            let Some(q) = p else { break };
            out.push(lp::get(self.lp, q).to_bytes());
            p = lp::next(self.lp, q);
        }
        out
    }
}

/// The nodes in master-ID order: a deque rather than a tree, as nodes are added at the end and
/// trimmed from the front, and a lookup is a binary search; 40 bytes a node where Redis's radix
/// tree spends about two of its nodes per key.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Nodes(VecDeque<(StreamId, Vec<u8>)>);

impl Nodes {
    fn len(&self) -> usize {
        self.0.len()
    }
    fn iter(&self) -> impl DoubleEndedIterator<Item = (&StreamId, &Vec<u8>)> + ExactSizeIterator {
        self.0.iter().map(|(k, v)| (k, v))
    }
    /// Position of the last node whose master ID is at most `id`.
    fn index_le(&self, id: StreamId) -> Option<usize> {
        self.0.partition_point(|(k, _)| *k <= id).checked_sub(1)
    }
    fn position(&self, k: StreamId) -> Option<usize> {
        self.0.binary_search_by(|(x, _)| x.cmp(&k)).ok()
    }
    fn remove(&mut self, k: StreamId) {
        if let Some(i) = self.position(k) {
            self.0.remove(i);
        }
    }
    /// Inserts in order; false if the master ID is taken.
    fn insert(&mut self, k: StreamId, v: Vec<u8>) -> bool {
        match self.0.binary_search_by(|(x, _)| x.cmp(&k)) {
            Ok(_) => false,
            Err(i) => {
                self.0.insert(i, (k, v));
                true
            }
        }
    }
}

/// A stream.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stream {
    nodes: Nodes,
    /// Live entries.
    pub length: u64,
    /// The last ID generated (or set by XSETID).
    pub last_id: StreamId,
    /// The first live entry's ID (0-0 when empty).
    pub first_id: StreamId,
    /// The largest ID deleted.
    pub max_deleted: StreamId,
    /// Entries ever added.
    pub entries_added: u64,
    /// Consumer groups by name.
    pub groups: BTreeMap<SmallBytes, Group>,
}

impl Stream {
    /// An empty stream.
    pub fn new() -> Stream {
        Stream::default()
    }

    /// The nodes: master ID and listpack, in order.
    pub fn nodes(&self) -> impl DoubleEndedIterator<Item = (&StreamId, &Vec<u8>)> {
        self.nodes.iter()
    }

    /// Number of nodes (Redis's radix tree keys).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Bytes held by the nodes.
    pub fn node_bytes(&self) -> usize {
        self.nodes.iter().map(|(_, n)| n.capacity()).sum()
    }

    /// Approximate heap bytes (for memory accounting).
    pub fn heap_size(&self) -> usize {
        let groups: usize = self
            .groups
            .iter()
            .map(|(n, g)| {
                n.len()
                    + 64
                    + g.pel.len() * 72
                    + g.consumers.iter().map(|(c, cons)| c.len() + 48 + cons.pel.len() * 24).sum::<usize>()
            })
            .sum();
        self.node_bytes() + self.nodes.0.capacity() * std::mem::size_of::<(StreamId, Vec<u8>)>() + groups
    }

    /// What Redis's `MEMORY USAGE` counts for a stream value (`objectComputeSize`): the object and
    /// stream headers, the radix tree's estimate, the nodes' allocations (the first `samples`
    /// averaged over all but the last, which counts as it is; 0: all), and per group its header,
    /// PEL tree and NACKs and per consumer its header, name and PEL tree. The nodes are Redis's
    /// listpacks, in allocations that grow and shrink as Redis's do, so for the same entries added
    /// the same way this is Redis's figure; the radix tree is Redis's fixed estimate per node, which
    /// Latch's node index (one `(StreamId, Vec)` per node) stays under.
    pub fn redis_usage(&self, samples: usize) -> usize {
        // sizeof(robj) + sizeof(stream), sizeof(streamCG), sizeof(streamNACK), sizeof(streamConsumer).
        const HEADERS: usize = 16 + 80;
        const GROUP: usize = 40;
        const NACK: usize = 24;
        const CONSUMER: usize = 24;
        let n = self.nodes.len();
        let mut size = HEADERS + radix_usage(n, self.radix_nodes());
        let samples = if samples == 0 { n } else { samples.min(n) };
        let sampled: usize = self.nodes.iter().take(samples).map(|(_, lp)| lp::alloc_class(lp.capacity())).sum();
        size += match self.nodes.0.back() {
            Some((_, last)) if n > samples => sampled / samples * (n - 1) + lp::alloc_class(last.capacity()),
            _ => sampled,
        };
        for g in self.groups.values() {
            let pel = radix_node_count(g.pel.keys().map(|id| id.to_be()));
            size += GROUP + radix_usage(g.pel.len(), pel) + NACK * g.pel.len();
            for (name, c) in &g.consumers {
                let pel = radix_node_count(c.pel.iter().map(|id| id.to_be()));
                size += CONSUMER + name.len() + radix_usage(c.pel.len(), pel);
            }
        }
        size
    }

    /// Number of nodes Redis's radix tree would have for these node keys (`rax->numnodes`): the
    /// root, every key, every branching point and each branch's first node.
    pub fn radix_nodes(&self) -> usize {
        radix_node_count(self.nodes.iter().map(|(k, _)| k.to_be()))
    }

    /// Walks the entries from `start` to `end` (both inclusive) in order, or backwards with
    /// `rev`, tombstones included with `tombstones`; `f` returns false to stop.
    fn walk(
        &self,
        start: StreamId,
        end: StreamId,
        rev: bool,
        tombstones: bool,
        mut f: impl FnMut(&Node<'_>, &Raw) -> bool,
    ) {
        if !rev {
            let from = if start.is_zero() { 0 } else { self.nodes.index_le(start).unwrap_or(0) };
            let iter = self.nodes.iter().skip(from);
            for (master, data) in iter {
                // Entries are decoded one at a time: a short range reads only what it needs.
                let mut node = Node::open(*master, data);
                while let Some(e) = node.next_entry() {
                    if e.id >= start && (tombstones || e.flags & FLAG_DELETED == 0) && (e.id > end || !f(&node, &e)) {
                        return;
                    }
                }
            }
        } else {
            let n = self.nodes.len();
            let upto = if end.is_zero() { n } else { self.nodes.index_le(end).map_or(n, |i| i + 1) };
            let iter = self.nodes.0.range(..upto).rev().map(|(k, v)| (k, v));
            for (master, data) in iter {
                let (node, entries) = Node::read(*master, data);
                for e in entries.iter().rev() {
                    if e.id <= end && (tombstones || e.flags & FLAG_DELETED == 0) && (e.id < start || !f(&node, e)) {
                        return;
                    }
                }
            }
        }
    }

    /// Entries from `start` to `end` inclusive (backwards with `rev`), at most `count` (0: all).
    pub fn range(&self, start: StreamId, end: StreamId, rev: bool, count: usize) -> Vec<StreamEntry> {
        let mut out = Vec::new();
        self.walk(start, end, rev, false, |node, e| {
            out.push((e.id, node.fields(e)));
            count == 0 || out.len() < count
        });
        out
    }

    /// The entry `id`, if it is live.
    pub fn get(&self, id: StreamId) -> Option<Vec<SmallBytes>> {
        self.range(id, id, false, 1).pop().map(|(_, f)| f)
    }

    /// True if `id` is a live entry (`streamEntryExists`).
    pub fn contains(&self, id: StreamId) -> bool {
        let mut found = false;
        self.walk(id, id, false, false, |_, _| {
            found = true;
            false
        });
        found
    }

    /// The first (or last) entry's ID, tombstones included with `tombstones` (`streamGetEdgeID`).
    pub fn edge_id(&self, first: bool, tombstones: bool) -> Option<StreamId> {
        let mut out = None;
        self.walk(StreamId::MIN, StreamId::MAX, !first, tombstones, |_, e| {
            out = Some(e.id);
            false
        });
        out
    }

    /// The last live entry's ID (`streamLastValidID`).
    pub fn last_valid_id(&self) -> Option<StreamId> {
        self.edge_id(false, false)
    }

    /// Adds an entry (`streamAppendItem`); `fields` alternate names and values. `now_ms` is the
    /// clock for automatic IDs.
    pub fn append(
        &mut self,
        fields: &[&[u8]],
        id: NewId,
        now_ms: u64,
        limits: NodeLimits,
    ) -> Result<StreamId, AddError> {
        let id = match id {
            NewId::Exact(id) => id,
            NewId::AutoSeq(ms) => {
                if self.last_id.ms == ms {
                    if self.last_id.seq == u64::MAX {
                        return Err(AddError::IdTooSmall);
                    }
                    StreamId::new(ms, self.last_id.seq + 1)
                } else {
                    StreamId::new(ms, 0)
                }
            }
            NewId::Auto => {
                if now_ms > self.last_id.ms {
                    StreamId::new(now_ms, 0)
                } else {
                    self.last_id.incr().unwrap_or(StreamId::MIN)
                }
            }
        };
        if id <= self.last_id {
            return Err(AddError::IdTooSmall);
        }
        let total: usize = fields.iter().map(|f| f.len()).sum();
        if total > MAX_NODE_BYTES {
            return Err(AddError::TooLarge);
        }
        let numfields = fields.len() / 2;
        let max_bytes =
            if limits.max_bytes == 0 || limits.max_bytes > MAX_NODE_BYTES { MAX_NODE_BYTES } else { limits.max_bytes };
        let mut tail = self.nodes.0.back().map(|(k, _)| *k);
        if tail.is_some() {
            let node = &mut self.nodes.0.back_mut().expect("tail node").1;
            let mut full = node.len() + total >= max_bytes;
            if !full && limits.max_entries != 0 {
                let p = lp::first(node).expect("node has a master entry");
                let n = lp::get_int(node, p) + lp::next(node, p).map_or(0, |q| lp::get_int(node, q));
                full = n >= limits.max_entries;
            }
            if full {
                lp::shrink_to_fit(node);
                tail = None;
            }
        }
        let mut flags = 0;
        let (master, node) = match tail {
            None => {
                // Room for a node's worth of entries from the start, as Redis allocates it, so
                // appends do not reallocate; given back when the node is full.
                let prealloc = match limits.max_bytes {
                    1..PREALLOC => limits.max_bytes,
                    _ => PREALLOC,
                };
                let mut node = lp::new(prealloc);
                lp::append_int(&mut node, 1);
                lp::append_int(&mut node, 0);
                lp::append_int(&mut node, numfields as i64);
                for i in 0..numfields {
                    lp::append(&mut node, fields[i * 2]);
                }
                lp::append_int(&mut node, 0);
                flags |= FLAG_SAMEFIELDS;
                self.nodes.0.push_back((id, node));
                (id, &mut self.nodes.0.back_mut().expect("just pushed").1)
            }
            Some(k) => {
                // The tail node: the last one, no search.
                let node = &mut self.nodes.0.back_mut().expect("tail node").1;
                let p = lp::first(node).expect("node has a master entry");
                let count = lp::get_int(node, p);
                lp::replace_int(node, p, count + 1);
                let p = lp::next(node, p).and_then(|q| lp::next(node, q)).expect("master entry");
                let mfc = lp::get_int(node, p);
                if mfc == numfields as i64 {
                    let mut q = lp::next(node, p);
                    let mut same = true;
                    for i in 0..numfields {
                        match q {
                            Some(pos) if lp::get(node, pos).eq_bytes(fields[i * 2]) => q = lp::next(node, pos),
                            _ => {
                                same = false;
                                break;
                            }
                        }
                    }
                    if same {
                        flags |= FLAG_SAMEFIELDS;
                    }
                }
                (k, node)
            }
        };
        lp::append_int(node, flags);
        lp::append_int(node, id.ms.wrapping_sub(master.ms) as i64);
        lp::append_int(node, id.seq.wrapping_sub(master.seq) as i64);
        let same = flags & FLAG_SAMEFIELDS != 0;
        if !same {
            lp::append_int(node, numfields as i64);
        }
        for i in 0..numfields {
            if !same {
                lp::append(node, fields[i * 2]);
            }
            lp::append(node, fields[i * 2 + 1]);
        }
        let lp_count = numfields as i64 + 3 + if same { 0 } else { numfields as i64 + 1 };
        lp::append_int(node, lp_count);
        self.length += 1;
        self.entries_added += 1;
        self.last_id = id;
        if self.length == 1 {
            self.first_id = id;
        }
        Ok(id)
    }

    /// Trims (`streamTrim`); returns how many entries went.
    pub fn trim(&mut self, t: &Trim) -> u64 {
        let mut deleted: u64 = 0;
        while let Some(&(master, _)) = self.nodes.0.front() {
            if let TrimTo::MaxLen(n) = t.to
                && self.length <= n
            {
                break;
            }
            let node = &self.nodes.0.front().expect("first key").1;
            let entries = lp::first(node).map_or(0, |p| lp::get_int(node, p)).max(0) as u64;
            if t.limit != 0 && deleted + entries > t.limit as u64 {
                break;
            }
            let (_, decoded) = Node::read(master, node);
            let remove = match t.to {
                TrimTo::MaxLen(n) => self.length.saturating_sub(entries) >= n,
                TrimTo::MinId(min) => decoded.last().is_none_or(|e| e.id < min),
            };
            if remove {
                self.nodes.0.pop_front();
                self.length = self.length.saturating_sub(entries);
                deleted += entries;
                continue;
            }
            if t.approx {
                break;
            }
            let marks: Vec<(usize, i64)> = {
                let mut marks = Vec::new();
                let mut len = self.length;
                for e in &decoded {
                    let stop = match t.to {
                        TrimTo::MaxLen(n) => len <= n,
                        TrimTo::MinId(min) => e.id >= min,
                    };
                    if stop {
                        break;
                    }
                    if e.flags & FLAG_DELETED == 0 {
                        marks.push((e.flags_pos, e.flags | FLAG_DELETED));
                        len -= 1;
                    }
                }
                marks
            };
            let node = &mut self.nodes.0.front_mut().expect("first key").1;
            let mut shift: isize = 0;
            for (pos, flags) in &marks {
                shift += lp::replace_int(node, (*pos as isize + shift) as usize, *flags);
            }
            let n = marks.len() as u64;
            let p = lp::first(node).expect("master entry");
            lp::replace_int(node, p, entries as i64 - n as i64);
            let p = lp::next(node, p).expect("master entry");
            let was = lp::get_int(node, p);
            lp::replace_int(node, p, was + n as i64);
            self.length -= n;
            deleted += n;
            break;
        }
        if self.length == 0 {
            self.first_id = StreamId::MIN;
        } else if deleted > 0 {
            self.first_id = self.edge_id(true, false).unwrap_or(StreamId::MAX);
        }
        deleted
    }

    /// Deletes live entry `id` (`streamDeleteItem`); true if it was there. The caller updates
    /// `first_id` and `max_deleted` ([`Stream::delete_ids`] does).
    fn delete_one(&mut self, id: StreamId) -> bool {
        let Some(i) = self.nodes.index_le(id) else { return false };
        let (master, node) = (self.nodes.0[i].0, &self.nodes.0[i].1);
        let Some(e) = Node::read(master, node).1.into_iter().find(|e| e.id == id && e.flags & FLAG_DELETED == 0) else {
            return false;
        };
        let node = &mut self.nodes.0[i].1;
        lp::replace_int(node, e.flags_pos, e.flags | FLAG_DELETED);
        let p = lp::first(node).expect("master entry");
        let count = lp::get_int(node, p);
        if count <= 1 {
            self.nodes.remove(master);
        } else {
            lp::replace_int(node, p, count - 1);
            let p = lp::next(node, p).expect("master entry");
            let d = lp::get_int(node, p);
            lp::replace_int(node, p, d + 1);
        }
        self.length -= 1;
        true
    }

    /// XDEL: deletes the live entries among `ids`, keeping `first_id` and `max_deleted`; how many.
    pub fn delete_ids(&mut self, ids: &[StreamId]) -> u64 {
        let mut deleted = 0;
        let mut first_gone = false;
        for &id in ids {
            if self.delete_one(id) {
                if id == self.first_id {
                    first_gone = true;
                }
                if id > self.max_deleted {
                    self.max_deleted = id;
                }
                deleted += 1;
            }
        }
        if deleted > 0 {
            if self.length == 0 {
                self.first_id = StreamId::MIN;
            } else if first_gone {
                self.first_id = self.edge_id(true, false).unwrap_or(StreamId::MAX);
            }
        }
        deleted
    }

    /// True if a tombstone may lie between `start` and `end` (`streamRangeHasTombstones`).
    pub fn range_has_tombstones(&self, start: StreamId, end: StreamId) -> bool {
        if self.length == 0 || self.max_deleted.is_zero() {
            return false;
        }
        if self.first_id > self.max_deleted {
            return false;
        }
        start <= self.max_deleted && self.max_deleted <= end
    }

    /// The logical read counter of `id` (`streamEstimateDistanceFromFirstEverEntry`), or
    /// [`INVALID_ENTRIES_READ`] when it cannot be known.
    pub fn estimate_distance(&self, id: StreamId) -> i64 {
        if self.entries_added == 0 {
            return 0;
        }
        if self.length == 0 && id <= self.last_id {
            return self.entries_added as i64;
        }
        if id == self.last_id {
            return self.entries_added as i64;
        } else if id > self.last_id {
            return INVALID_ENTRIES_READ;
        }
        if self.max_deleted.is_zero() || self.max_deleted < self.first_id {
            if id < self.first_id {
                return (self.entries_added - self.length) as i64;
            } else if id == self.first_id {
                return (self.entries_added - self.length + 1) as i64;
            }
        }
        INVALID_ENTRIES_READ
    }

    /// A group's lag (`streamReplyWithCGLag`): None when it cannot be known.
    pub fn lag(&self, g: &Group) -> Option<i64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        if g.entries_read != INVALID_ENTRIES_READ && !self.range_has_tombstones(g.last_id, StreamId::MAX) {
            return Some(self.entries_added as i64 - g.entries_read);
        }
        let read = self.estimate_distance(g.last_id);
        (read != INVALID_ENTRIES_READ).then(|| self.entries_added as i64 - read)
    }

    /// Moves a group past `id`, delivered now (the read counter as `streamReplyWithRange` keeps
    /// it). True if the group's last ID moved.
    pub fn advance_group(&mut self, group: &[u8], id: StreamId) -> bool {
        let has_tomb = self.range_has_tombstones(id, StreamId::MAX);
        let estimate = self.estimate_distance(id);
        let added = self.entries_added;
        let Some(g) = self.groups.get_mut(group) else { return false };
        if id <= g.last_id {
            return false;
        }
        if g.entries_read != INVALID_ENTRIES_READ && !has_tomb {
            g.entries_read += 1;
        } else if added != 0 {
            g.entries_read = estimate;
        }
        g.last_id = id;
        true
    }

    /// Inserts a node as read from a file, checked first ([`validate_node`]).
    pub fn insert_node(&mut self, master: StreamId, node: Vec<u8>) -> bool {
        self.nodes.insert(master, node)
    }

    /// Live entries counted in the nodes' master entries, and whether the entries' IDs ascend
    /// across the whole stream (what a loaded stream must satisfy).
    pub fn check_nodes(&self) -> Option<u64> {
        let mut live = 0u64;
        let mut prev: Option<StreamId> = None;
        for (master, data) in self.nodes.iter() {
            let (_, entries) = Node::read(*master, data);
            let p = lp::first(data)?;
            let count = lp::get_int(data, p);
            let dels = lp::get_int(data, lp::next(data, p)?);
            if count < 0 || dels < 0 || (count + dels) as usize != entries.len() {
                return None;
            }
            if entries.iter().filter(|e| e.flags & FLAG_DELETED == 0).count() as i64 != count {
                return None;
            }
            for e in &entries {
                if prev.is_some_and(|p| e.id <= p) {
                    return None;
                }
                prev = Some(e.id);
            }
            live += count as u64;
        }
        Some(live)
    }
}

/// Checks a stream node read from a file (`streamValidateListpackIntegrity`, deep): a valid
/// listpack, a master entry, and entries whose parts and `lp-count` agree.
pub fn validate_node(b: &[u8]) -> bool {
    let Some(offs) = lp::offsets(b) else { return false };
    let int = |i: &mut usize| -> Option<i64> {
        let p = *offs.get(*i)?;
        *i += 1;
        lp::get(b, p).as_int()
    };
    let check = || -> Option<()> {
        let mut i = 0usize;
        let count = int(&mut i)?;
        let deleted = int(&mut i)?;
        let mfc = int(&mut i)?;
        if count < 0 || deleted < 0 || mfc < 0 {
            return None;
        }
        i = i.checked_add(mfc as usize)?;
        if i >= offs.len() {
            return None;
        }
        if int(&mut i)? != 0 {
            return None;
        }
        let mut left = count.checked_add(deleted)?;
        while left > 0 {
            left -= 1;
            let flags = int(&mut i)?;
            int(&mut i)?;
            int(&mut i)?;
            let mut fields = mfc;
            let mut extra = 3;
            if flags & FLAG_SAMEFIELDS == 0 {
                fields = int(&mut i)?;
                if fields < 0 {
                    return None;
                }
                i = i.checked_add(fields as usize)?;
                extra += fields + 1;
            }
            i = i.checked_add(fields as usize)?;
            if i >= offs.len() {
                return None;
            }
            if int(&mut i)? != fields + extra {
                return None;
            }
        }
        (i == offs.len()).then_some(())
    };
    check().is_some() && lp::first(b).is_some()
}

/// Nodes of Redis's radix tree holding these keys, given in order (all of the same length, none
/// a prefix of another), as `rax` compresses it: the root, each key, each branching point, and
/// the first node below each branch. One pass per key byte over the keys' common prefixes.
pub fn radix_node_count(keys: impl Iterator<Item = [u8; 16]>) -> usize {
    let keys: Vec<[u8; 16]> = keys.collect();
    if keys.is_empty() {
        return 1;
    }
    // common[i]: the bytes key i shares with key i-1.
    let common: Vec<usize> = std::iter::once(0)
        .chain(keys.windows(2).map(|w| w[0].iter().zip(&w[1]).take_while(|(a, b)| a == b).count()))
        .collect();
    // A run at depth d (keys sharing their first d bytes) is one position of the trie; it is a
    // node if it is the root or a key, if it branches, or if the run above it branches.
    let mut nodes = 0;
    let mut above_branches = vec![false; keys.len()];
    let mut branches = vec![false; keys.len()];
    for d in 0..=16 {
        let mut start = 0;
        while start < keys.len() {
            let end = (start + 1..keys.len()).find(|&j| common[j] < d).unwrap_or(keys.len());
            let children = 1 + (start + 1..end).filter(|&j| common[j] == d).count();
            if d == 0 || d == 16 || children > 1 || above_branches[start] {
                nodes += 1;
            }
            branches[start..end].fill(children > 1);
            start = end;
        }
        std::mem::swap(&mut above_branches, &mut branches);
    }
    nodes
}

/// Redis's estimate of a radix tree's memory (`streamRadixTreeMemoryUsage`): 16 bytes per key, and
/// per node its 4-byte header and a fixed 30 words for the children, the data pointer and the rest.
fn radix_usage(keys: usize, nodes: usize) -> usize {
    keys * 16 + nodes * (4 + 8 * 30)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add(s: &mut Stream, id: &str, fv: &[&str]) -> Result<StreamId, AddError> {
        let (id, _) = StreamId::parse(id.as_bytes(), 0, true, true).unwrap();
        let f: Vec<&[u8]> = fv.iter().map(|s| s.as_bytes()).collect();
        s.append(&f, NewId::Exact(id), 0, NodeLimits::default())
    }

    #[test]
    fn ids_parse_as_redis_does() {
        let p = |s: &str| StreamId::parse(s.as_bytes(), 0, false, false).map(|(i, _)| i.to_string());
        assert_eq!(p("5").as_deref(), Some("5-0"));
        assert_eq!(p("5-3").as_deref(), Some("5-3"));
        assert_eq!(p("-").as_deref(), Some("0-0"));
        assert_eq!(p("+").as_deref(), Some("18446744073709551615-18446744073709551615"));
        assert_eq!(p("+5").as_deref(), Some("5-0"));
        assert_eq!(p("007-1").as_deref(), Some("7-1"));
        assert_eq!(p("abc"), None);
        assert_eq!(p("1-2-3"), None);
        assert_eq!(p("18446744073709551616"), None);
        assert_eq!(StreamId::parse(b"-", 0, true, false), None);
        assert_eq!(StreamId::parse(b"5-*", 0, false, true), Some((StreamId::new(5, 0), false)));
        assert_eq!(StreamId::parse(b"5-*", 0, false, false), None);
        assert_eq!(StreamId::MAX.incr(), None);
        assert_eq!(StreamId::MIN.decr(), None);
        assert_eq!(StreamId::new(1, u64::MAX).incr(), Some(StreamId::new(2, 0)));
    }

    #[test]
    fn nodes_pack_entries_with_master_fields() {
        let mut s = Stream::new();
        add(&mut s, "1-1", &["a", "1", "b", "2"]).unwrap();
        add(&mut s, "1-2", &["a", "3", "b", "4"]).unwrap();
        add(&mut s, "2-0", &["c", "x"]).unwrap();
        assert_eq!(add(&mut s, "2-0", &["c", "x"]), Err(AddError::IdTooSmall));
        assert_eq!(s.node_count(), 1);
        let all = s.range(StreamId::MIN, StreamId::MAX, false, 0);
        let show: Vec<String> = all
            .iter()
            .map(|(id, f)| {
                format!(
                    "{id} {}",
                    f.iter().map(|x| String::from_utf8_lossy(x).into_owned()).collect::<Vec<_>>().join(",")
                )
            })
            .collect();
        assert_eq!(show, ["1-1 a,1,b,2", "1-2 a,3,b,4", "2-0 c,x"]);
        let rev = s.range(StreamId::MIN, StreamId::MAX, true, 2);
        assert_eq!(rev.iter().map(|e| e.0.to_string()).collect::<Vec<_>>(), ["2-0", "1-2"]);
        // The node is Redis's: master entry, SAMEFIELDS entries, a full entry.
        let (_, node) = s.nodes().next().unwrap();
        assert!(validate_node(node));
        assert_eq!(s.check_nodes(), Some(3));
    }

    #[test]
    fn nodes_split_at_the_entry_limit_and_trim() {
        let mut s = Stream::new();
        for i in 1..=250u64 {
            s.append(&[b"f", b"v"], NewId::Exact(StreamId::new(i, 0)), 0, NodeLimits::default()).unwrap();
        }
        assert_eq!(s.node_count(), 3);
        assert_eq!(s.length, 250);
        // Approximate trimming drops whole nodes only.
        let n = s.trim(&Trim { to: TrimTo::MaxLen(120), approx: true, limit: 10000 });
        assert_eq!(n, 100);
        assert_eq!(s.length, 150);
        // Exact trimming marks entries deleted inside the first node.
        let n = s.trim(&Trim { to: TrimTo::MaxLen(120), approx: false, limit: 0 });
        assert_eq!(n, 30);
        assert_eq!(s.first_id, StreamId::new(131, 0));
        assert_eq!(s.check_nodes(), Some(120));
        let n = s.trim(&Trim { to: TrimTo::MinId(StreamId::new(200, 0)), approx: false, limit: 0 });
        assert_eq!(n, 69);
        assert_eq!(s.range(StreamId::MIN, StreamId::MAX, false, 1)[0].0, StreamId::new(200, 0));
        // Deleting.
        assert_eq!(s.delete_ids(&[StreamId::new(200, 0), StreamId::new(200, 0), StreamId::new(9, 0)]), 1);
        assert_eq!(s.first_id, StreamId::new(201, 0));
        assert_eq!(s.max_deleted, StreamId::new(200, 0));
        assert!(!s.contains(StreamId::new(200, 0)));
        assert!(s.contains(StreamId::new(201, 0)));
        assert_eq!(s.last_valid_id(), Some(StreamId::new(250, 0)));
    }

    #[test]
    fn groups_track_pending_entries() {
        let mut g = Group::new(StreamId::MIN, 0);
        g.consumers.insert(SmallBytes::from_slice(b"alice"), Consumer::default());
        g.consumers.insert(SmallBytes::from_slice(b"bob"), Consumer::default());
        let id = StreamId::new(1, 0);
        g.pel.insert(id, Nack { delivery_time: 0, delivery_count: 1, consumer: SmallBytes::from_slice(b"alice") });
        g.consumers.get_mut(&b"alice"[..]).unwrap().pel.insert(id);
        g.assign(id, b"bob");
        assert!(g.consumers[&b"alice"[..]].pel.is_empty());
        assert!(g.consumers[&b"bob"[..]].pel.contains(&id));
        assert_eq!(g.delete_consumer(b"bob"), Some(1));
        assert!(g.pel.is_empty());
        assert!(!g.ack(id));
    }

    #[test]
    fn radix_nodes_as_rax_counts_them() {
        assert_eq!(radix_node_count(std::iter::empty()), 1);
        let k = |ms: u64, seq: u64| StreamId::new(ms, seq).to_be();
        assert_eq!(radix_node_count([k(1, 0)].into_iter()), 2);
        assert_eq!(radix_node_count([k(1, 0), k(1, 1)].into_iter()), 4);
        // Against the definition, position by position, on key sets with shared and branching
        // prefixes at every depth.
        fn by_definition(keys: &[[u8; 16]]) -> usize {
            use std::collections::HashSet;
            let mut nodes: HashSet<Vec<u8>> = keys.iter().map(|k| k.to_vec()).collect();
            nodes.insert(Vec::new());
            let branches: HashSet<Vec<u8>> = keys
                .windows(2)
                .map(|w| w[0][..w[0].iter().zip(&w[1]).take_while(|(a, b)| a == b).count()].to_vec())
                .collect();
            for k in keys {
                for b in &branches {
                    if k.starts_with(b) {
                        nodes.insert(k[..b.len() + 1].to_vec());
                    }
                }
            }
            nodes.extend(branches);
            nodes.len()
        }
        let mut rng = 0x9E37_79B9_7F4A_7C15u64;
        for round in 0..200 {
            let mut keys = std::collections::BTreeSet::new();
            for _ in 0..(round % 40 + 1) {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                // Few distinct values per part, so prefixes are shared and branch at many depths.
                keys.insert(k((rng % 5) << (rng % 48), (rng >> 8) % 7 * (1 << ((rng >> 16) % 60))));
            }
            let keys: Vec<[u8; 16]> = keys.into_iter().collect();
            assert_eq!(radix_node_count(keys.iter().copied()), by_definition(&keys), "{keys:?}");
        }
    }

    #[test]
    fn nodes_are_allocated_as_redis_allocates_them() {
        let mut s = Stream::new();
        let limits = NodeLimits { max_bytes: 4096, max_entries: 3 };
        for i in 1..=7u64 {
            s.append(&[b"f", b"v"], NewId::Exact(StreamId::new(i, 0)), 0, limits).unwrap();
        }
        // Full nodes were given back down to their length's class; the open one keeps its room.
        let caps: Vec<(usize, usize)> = s.nodes().map(|(_, n)| (n.len(), n.capacity())).collect();
        assert_eq!(caps.len(), 3);
        for &(len, cap) in &caps[..2] {
            assert_eq!(cap, lp::alloc_class(len));
        }
        assert_eq!(caps[2].1, 4096);
        // Under a byte limit below 4096, that limit is the first room.
        let mut s = Stream::new();
        s.append(&[b"f", b"v"], NewId::Exact(StreamId::new(1, 0)), 0, NodeLimits { max_bytes: 200, max_entries: 0 })
            .unwrap();
        assert_eq!(s.nodes().next().unwrap().1.capacity(), 224);
        // MEMORY USAGE: headers, one key and two radix nodes, the node's room; then the sample
        // average stands for all but the last node.
        assert_eq!(s.redis_usage(5), 96 + 16 + 2 * 244 + 224);
        let mut s = Stream::new();
        for i in 1..=301u64 {
            s.append(&[b"f", b"v"], NewId::Exact(StreamId::new(i, 0)), 0, NodeLimits::default()).unwrap();
        }
        let rooms: Vec<usize> = s.nodes().map(|(_, n)| lp::alloc_class(n.capacity())).collect();
        assert_eq!(rooms.len(), 4);
        let tree = 96 + radix_usage(4, s.radix_nodes());
        assert_eq!(s.redis_usage(0), tree + rooms.iter().sum::<usize>());
        assert_eq!(s.redis_usage(2), tree + (rooms[0] + rooms[1]) / 2 * 3 + rooms[3]);
    }
}
