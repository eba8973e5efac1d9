//! Values stored in the keyspace.
//!
//! Memory matters: a key is a [`Key`] (a [`Str`]: bytes inline up to 22, on the heap beyond), and an [`Entry`]
//! is 32 bytes: the [`Value`] (24), the access clock and LFU counter packed in 4 (as Redis's `lru`
//! field), and the table's bookkeeping in 4 (the key's place in its table's list of keys with a TTL,
//! or none, the `raw` flag, the snapshot epoch). A TTL deadline is not in the entry: the table keeps
//! it beside the key's place in that list (`keyspace::Table::deadline`), so keys without a TTL do
//! not pay for it. Integers and strings of up to 22 bytes live inline in the value (a [`Str`]);
//! aggregates are boxed so the common string case stays small.

use std::collections::VecDeque;

pub use crate::primitives::{Hasher, SmallBytes, Str};

/// A key. Binary-safe; up to 22 bytes inline (no allocation), as a string value's bytes.
pub type Key = Str;

pub use crate::types::hash::HashValue;
/// A set value with O(1) random access (SRANDMEMBER, SPOP, SSCAN).
pub use crate::types::set::SetValue;
/// A list value.
pub type ListValue = VecDeque<SmallBytes>;

/// A value. Strings that look like integers are kept as [`Value::Int`] (Redis's "int" encoding), so
/// counters never parse text.
#[derive(Clone, Debug)]
pub enum Value {
    /// A string holding the canonical decimal form of an i64.
    Int(i64),
    /// Any other string.
    Str(Str),
    /// A list.
    List(Box<ListValue>),
    /// A hash.
    Hash(HashValue),
    /// A set.
    Set(SetValue),
    /// A sorted set.
    ZSet(crate::types::zset::ZSet),
    /// A native lock (LOCK/UNLOCK): its holder and fencing token; its TTL is the key's TTL.
    Lock(Box<LockValue>),
    /// A stream.
    Stream(Box<crate::types::stream::Stream>),
    /// A value restored or loaded without deep sanitization (`sanitize-dump-payload no`) that
    /// failed Latch's integrity checks: kept, as Redis keeps it, but never read (see [`Damaged`]).
    Damaged(Box<Damaged>),
}

/// A value whose RDB encoding passed the checks Redis makes without deep sanitization but not
/// the rest. Redis keeps such a value and fails an assertion (and exits) when a command walks it;
/// Latch keeps its encoding as it came, unread: it has a type (TYPE, SCAN TYPE, WRONGTYPE for other
/// families), moves as any value does (DEL, RENAME, EXPIRE, DUMP, RDB files carry its bytes), and
/// the commands of its type answer an error instead of reading it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Damaged {
    /// The RDB type byte (`RDB_TYPE_*`).
    pub rdb_type: u8,
    /// The value's RDB encoding after the type byte, as it came.
    pub body: Vec<u8>,
    /// The check it failed (Redis's message for it).
    pub what: String,
    /// Redis would panic (`serverPanic`) on it rather than fail an assertion.
    pub panic: bool,
}

impl Damaged {
    /// The type name TYPE reports.
    pub fn type_name(&self) -> &'static str {
        match self.rdb_type {
            0 => "string",
            1 | 10 | 14 | 18 => "list",
            2 | 11 => "set",
            3 | 5 | 12 | 17 => "zset",
            4 | 9 | 13 | 16 => "hash",
            15 | 19 => "stream",
            _ => "none",
        }
    }

    /// The encoding Redis keeps such a value in (OBJECT ENCODING).
    pub fn encoding(&self) -> &'static str {
        match self.rdb_type {
            11 => "intset",
            16 | 17 => "listpack",
            1 | 10 | 14 | 18 => "quicklist",
            15 | 19 => "stream",
            _ => "unknown",
        }
    }

    /// The error a command of its type answers: the value cannot be read.
    pub fn refusal(&self) -> resp::Frame {
        resp::Frame::error(format!(
            "ERR Corrupt {} value, kept unread since RESTORE or load with sanitize-dump-payload no: {}",
            self.type_name(),
            self.what
        ))
    }
}

/// The `*-max-*` limits under which Redis keeps an aggregate in its compact encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EncodingLimits {
    /// `hash-max-listpack-entries`.
    pub hash_entries: usize,
    /// `hash-max-listpack-value`.
    pub hash_value: usize,
    /// `set-max-intset-entries`.
    pub set_intset: usize,
    /// `zset-max-listpack-entries`.
    pub zset_entries: usize,
    /// `zset-max-listpack-value`.
    pub zset_value: usize,
}

/// Redis 7.0's defaults (`config.c`), which the configuration's rows also start from.
impl Default for EncodingLimits {
    fn default() -> Self {
        EncodingLimits { hash_entries: 512, hash_value: 64, set_intset: 512, zset_entries: 128, zset_value: 64 }
    }
}

/// A held native lock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockValue {
    /// The owner token the holder gave.
    pub owner: SmallBytes,
    /// The fencing token of this grant.
    pub token: u64,
}

impl Value {
    /// Builds a string value, choosing the integer form when `b` is the canonical text of an i64.
    pub fn string(b: &[u8]) -> Value {
        match canonical_i64(b) {
            Some(i) => Value::Int(i),
            None => Value::Str(Str::from_slice(b)),
        }
    }

    /// The type name reported by `TYPE`.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Int(_) | Value::Str(_) => "string",
            Value::List(_) => "list",
            Value::Hash(_) => "hash",
            Value::Set(_) => "set",
            Value::ZSet(_) => "zset",
            Value::Lock(_) => "lock",
            Value::Stream(_) => "stream",
            Value::Damaged(d) => d.type_name(),
        }
    }

    /// True for both string representations.
    pub fn is_string(&self) -> bool {
        matches!(self, Value::Int(_) | Value::Str(_))
    }

    /// The string's bytes (formatting an integer), or None when the value is not a string.
    pub fn as_bytes(&self) -> Option<std::borrow::Cow<'_, [u8]>> {
        match self {
            Value::Int(i) => Some(std::borrow::Cow::Owned(itoa::Buffer::new().format(*i).as_bytes().to_vec())),
            Value::Str(s) => Some(std::borrow::Cow::Borrowed(&s[..])),
            _ => None,
        }
    }

    /// Length in bytes of a string value (0 for other types).
    pub fn str_len(&self) -> usize {
        match self {
            Value::Int(i) => itoa::Buffer::new().format(*i).len(),
            Value::Str(s) => s.len(),
            _ => 0,
        }
    }

    /// Turns an integer-encoded string into its raw form so it can be edited in place.
    pub fn make_raw(&mut self) -> Option<&mut Str> {
        if let Value::Int(i) = *self {
            *self = Value::Str(Str::from_slice(itoa::Buffer::new().format(i).as_bytes()));
        }
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The work freeing this value takes (Redis's `lazyfreeGetFreeEffort`): its elements, each an
    /// allocation of its own in Latch's aggregates; a stream's nodes and its groups' entries.
    pub fn free_effort(&self) -> usize {
        match self {
            Value::List(l) => l.len(),
            Value::Hash(h) => h.len(),
            Value::Set(s) => s.len(),
            Value::ZSet(z) => z.len(),
            Value::Stream(s) => {
                s.node_count()
                    + s.groups
                        .values()
                        .map(|g| 1 + g.pel.len() + g.consumers.values().map(|c| 1 + c.pel.len()).sum::<usize>())
                        .sum::<usize>()
            }
            Value::Int(_) | Value::Str(_) | Value::Lock(_) | Value::Damaged(_) => 1,
        }
    }

    /// For a value made whole (read from an RDB file or a DUMP payload): the encoding Redis would
    /// give it loading it under `limits`, which later removals do not undo.
    pub fn settle(&mut self, limits: &EncodingLimits) {
        match self {
            Value::Set(s) => s.settle(limits.set_intset),
            Value::Hash(h) => h.settle(limits.hash_entries, limits.hash_value),
            Value::ZSet(z) => z.settle(limits.zset_entries, limits.zset_value),
            _ => {}
        }
    }

    /// Redis's `OBJECT ENCODING` name: the encoding Redis holds such a value in (Latch's layout is
    /// its own; the name is what clients and tests compare). A set, hash or sorted set is in its
    /// large encoding once a write converted it ([`SetValue::converted`], [`HashValue::converted`],
    /// [`ZSet::converted`]): the writes decide it under the limits in effect then, as Redis's do,
    /// so a limit lowered by CONFIG SET changes nothing until the next write, and nothing removed
    /// later turns a value back.
    pub fn encoding(&self) -> &'static str {
        match self {
            Value::Int(_) => "int",
            Value::Str(s) if s.len() <= 44 => "embstr",
            Value::Str(_) => "raw",
            Value::List(_) => "quicklist",
            Value::Hash(h) if !h.converted() => "listpack",
            Value::Hash(_) => "hashtable",
            Value::Set(s) if !s.converted() => "intset",
            Value::Set(_) => "hashtable",
            Value::ZSet(z) if !z.converted() => "listpack",
            Value::ZSet(_) => "skiplist",
            Value::Lock(_) => "lock",
            Value::Stream(_) => "stream",
            Value::Damaged(d) => d.encoding(),
        }
    }

    /// Approximate heap bytes owned by the value (for `MEMORY USAGE`-style accounting).
    pub fn heap_size(&self) -> usize {
        fn sb(b: &SmallBytes) -> usize {
            if b.spilled() { b.capacity() } else { 0 }
        }
        match self {
            Value::Int(_) => 0,
            Value::Str(s) => s.heap_bytes(),
            Value::List(l) => l.capacity() * std::mem::size_of::<SmallBytes>() + l.iter().map(sb).sum::<usize>(),
            Value::Hash(h) => h.heap_bytes(),
            Value::Set(s) => s.heap_bytes(),
            Value::ZSet(z) => z.heap_size(),
            Value::Lock(l) => std::mem::size_of::<LockValue>() + sb(&l.owner),
            Value::Stream(s) => std::mem::size_of::<crate::types::stream::Stream>() + s.heap_size(),
            Value::Damaged(d) => std::mem::size_of::<Damaged>() + d.body.capacity() + d.what.capacity(),
        }
    }
}

/// Parses `b` as an i64 only if it is the canonical decimal form (what Redis's string2ll accepts:
/// optional '-', no '+', no leading zeros, no spaces, at most 20 chars). Such strings can be stored
/// as integers and formatted back byte-identically.
pub fn canonical_i64(b: &[u8]) -> Option<i64> {
    crate::args::parse_i64_strict(b)
}

/// A key's slot in the keyspace.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The value.
    pub value: Value,
    /// The access clock, packed as Redis packs its `lru` field: the last access in seconds on the
    /// monotonic clock mod 2^24 (Redis's 24-bit LRU clock: `OBJECT IDLETIME` wraps after 194 days,
    /// as Redis's does) in the low 24 bits, the LFU counter (`OBJECT FREQ`) in the high 8.
    meta: u32,
    /// The table's bookkeeping, packed: the position of the key in its table's list of keys with
    /// a TTL, where the table keeps its deadline (low 30 bits; all of them set: no TTL), whether
    /// the string was edited in place (bit 30), and the snapshot epoch (bit 31).
    bits: u32,
}

// A regression in the layout costs every key 8 bytes: fail the build, not a benchmark.
const _: () = assert!(std::mem::size_of::<Entry>() == 32);

/// Initial LFU counter of a new key (Redis's LFU_INIT_VAL).
pub const LFU_INIT_VAL: u8 = 5;

/// The access clock's range: seconds mod 2^24.
pub const ATIME_MASK: u32 = (1 << 24) - 1;
const VPOS_MASK: u32 = (1 << 30) - 1;
/// The place field of an entry without TTL.
const NO_TTL: u32 = VPOS_MASK;
const RAW_BIT: u32 = 1 << 30;
const EPOCH_BIT: u32 = 1 << 31;

impl Entry {
    /// A fresh entry without TTL.
    pub fn new(value: Value) -> Entry {
        Entry { value, meta: u32::from(LFU_INIT_VAL) << 24, bits: NO_TTL }
    }

    /// Last access, in seconds on the monotonic clock mod 2^24.
    #[inline]
    pub fn atime(&self) -> u32 {
        self.meta & ATIME_MASK
    }
    /// Records the last access (`now_s`: seconds on the monotonic clock; kept mod 2^24).
    #[inline]
    pub fn set_atime(&mut self, now_s: u32) {
        self.meta = (self.meta & !ATIME_MASK) | (now_s & ATIME_MASK);
    }
    /// Seconds since the last access, at `now_s` (mod 2^24, as Redis's `estimateObjectIdleTime`).
    #[inline]
    pub fn idle_s(&self, now_s: u32) -> u32 {
        now_s.wrapping_sub(self.meta) & ATIME_MASK
    }
    /// The LFU counter.
    #[inline]
    pub fn lfu(&self) -> u8 {
        (self.meta >> 24) as u8
    }
    /// Sets the LFU counter.
    #[inline]
    pub fn set_lfu(&mut self, lfu: u8) {
        self.meta = (self.meta & ATIME_MASK) | (u32::from(lfu) << 24);
    }
    /// A string edited in place (APPEND, SETRANGE, SETBIT...): Redis's `raw` encoding, which it
    /// keeps until the key gets a new value.
    #[inline]
    pub fn raw(&self) -> bool {
        self.bits & RAW_BIT != 0
    }
    #[inline]
    fn set_raw(&mut self, raw: bool) {
        self.bits = if raw { self.bits | RAW_BIT } else { self.bits & !RAW_BIT };
    }
    /// The snapshot epoch (0 or 1) this entry was last written in, or created in (see
    /// `keyspace::Table::begin_snapshot`): a running snapshot writes an entry whose epoch is not
    /// its own before the entry changes.
    #[inline]
    pub(crate) fn epoch(&self) -> u8 {
        (self.bits >> 31) as u8
    }
    #[inline]
    pub(crate) fn set_epoch(&mut self, epoch: u8) {
        debug_assert!(epoch < 2);
        self.bits = (self.bits & !EPOCH_BIT) | (u32::from(epoch) << 31);
    }
    /// True when the key has a TTL (its table keeps the deadline). One bit test on the entry: a
    /// key without TTL costs no other memory access.
    #[inline]
    pub fn has_ttl(&self) -> bool {
        self.bits & VPOS_MASK != NO_TTL
    }
    /// The key's position in its table's list of keys with a TTL, if it has one.
    #[inline]
    pub(crate) fn vpos(&self) -> Option<usize> {
        let v = self.bits & VPOS_MASK;
        (v != NO_TTL).then_some(v as usize)
    }
    /// Records the key's position in its table's list of keys with a TTL.
    #[inline]
    pub(crate) fn set_vpos(&mut self, pos: usize) {
        let pos =
            u32::try_from(pos).ok().filter(|p| *p < NO_TTL).expect("fewer than 2^30 - 1 keys with a TTL per table");
        self.bits = (self.bits & !VPOS_MASK) | pos;
    }
    /// Marks the key as having no TTL (it left its table's list, or the entry left its table).
    #[inline]
    pub(crate) fn clear_vpos(&mut self) {
        self.bits |= NO_TTL;
    }
    /// The string's bytes, to edit in place (Redis's `dbUnshareStringValue`): from now on the
    /// value is a `raw` string. None when the value is not a string.
    pub fn edit_string(&mut self) -> Option<&mut Str> {
        if !self.value.is_string() {
            return None;
        }
        self.set_raw(true);
        self.value.make_raw()
    }

    /// Marks a string made for in-place editing (SETRANGE, SETBIT on a new key): `raw`, as Redis
    /// creates them.
    pub fn mark_raw(&mut self) {
        self.set_raw(self.value.is_string());
    }

    /// `OBJECT ENCODING` for this entry.
    pub fn encoding(&self) -> &'static str {
        match self.value {
            Value::Str(_) if self.raw() => "raw",
            _ => self.value.encoding(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_is_small() {
        let (value, entry) = (std::mem::size_of::<Value>(), std::mem::size_of::<Entry>());
        println!("size_of::<Str>() = {}", std::mem::size_of::<Str>());
        println!("size_of::<Value>() = {value}, size_of::<Entry>() = {entry}");
        assert_eq!(std::mem::size_of::<Str>(), 24);
        assert_eq!(value, 24);
        assert_eq!(entry, 32);
    }

    /// The place field shares its word with the `raw` flag and the epoch bit: setting or
    /// clearing one leaves the others as they were.
    #[test]
    fn ttl_place_raw_and_epoch_are_independent() {
        let mut e = Entry::new(Value::string(b"abc"));
        assert!(!e.has_ttl());
        assert_eq!(e.vpos(), None);
        e.mark_raw();
        e.set_epoch(1);
        e.set_vpos(0);
        assert!(e.has_ttl());
        assert_eq!((e.vpos(), e.raw(), e.epoch()), (Some(0), true, 1));
        e.set_vpos(NO_TTL as usize - 1);
        assert_eq!(e.vpos(), Some(NO_TTL as usize - 1));
        e.clear_vpos();
        assert!(!e.has_ttl());
        assert_eq!((e.vpos(), e.raw(), e.epoch()), (None, true, 1));
        e.set_epoch(0);
        e.set_vpos(7);
        assert_eq!((e.vpos(), e.raw(), e.epoch()), (Some(7), true, 0));
    }

    #[test]
    #[should_panic(expected = "keys with a TTL per table")]
    fn the_no_ttl_mark_is_not_a_place() {
        Entry::new(Value::Int(1)).set_vpos(NO_TTL as usize);
    }

    /// `n` bytes counting up from 0 (wrapping).
    fn counting(n: usize) -> Vec<u8> {
        (0..n).map(|i| i as u8).collect()
    }

    #[test]
    fn str_is_inline_up_to_22_bytes() {
        for n in [0, 1, 21, 22] {
            let s = Str::from_slice(&counting(n));
            assert!(s.is_inline(), "{n}");
            assert_eq!((s.len(), s.heap_bytes(), &s[..]), (n, 0, &counting(n)[..]));
            assert_eq!(s.is_empty(), n == 0);
        }
        for n in [23, 100, 5000] {
            let s = Str::from_slice(&counting(n));
            assert!(!s.is_inline(), "{n}");
            assert_eq!((s.len(), s.heap_bytes(), &s[..]), (n, n, &counting(n)[..]));
        }
        assert!(Str::from_elem(7, 22).is_inline());
        assert_eq!(Str::from_elem(7, 23).as_slice(), &[7; 23]);
        assert!(Str::from_vec(counting(22)).is_inline());
        assert_eq!(Str::from(&b"abc"[..]), Str::from_slice(b"abc"));
        assert_eq!(Str::default(), Str::new());
        assert_eq!(format!("{:?}", Str::from_slice(b"ab")), "[97, 98]");
    }

    #[test]
    fn str_edits_cross_the_inline_boundary() {
        // Appending one byte at a time: inline up to 22, on the heap from 23, with doubling growth.
        let mut s = Str::new();
        let mut grew = 0;
        for i in 0..1000 {
            let cap = s.capacity();
            s.extend_from_slice(&[i as u8]);
            grew += usize::from(s.capacity() != cap);
            assert_eq!(s.is_inline(), s.len() <= 22, "{}", s.len());
        }
        assert_eq!(&s[..], &counting(1000)[..]);
        assert!(grew <= 8, "{grew} reallocations for 1000 appends");
        assert_eq!(s.heap_bytes(), s.capacity());

        // resize across the boundary both ways; the heap block stays after shrinking.
        let mut s = Str::from_slice(b"0123456789");
        s.resize(30, b'x');
        assert_eq!(&s[..], b"0123456789xxxxxxxxxxxxxxxxxxxx");
        assert!(!s.is_inline());
        s.resize(5, 0);
        assert_eq!(&s[..], b"01234");
        assert!(!s.is_inline() && s.heap_bytes() >= 30);
        s.resize(8, b'-');
        assert_eq!(&s[..], b"01234---");
        s.truncate(2);
        s.truncate(9);
        assert_eq!(&s[..], b"01");

        // An inline string that is cut and regrown shows the new bytes, not the old ones.
        let mut s = Str::from_slice(b"abcdef");
        s.truncate(1);
        s.resize(4, 0);
        assert_eq!(&s[..], b"a\0\0\0");

        // In-place edits through DerefMut, then an append that spills.
        let mut s = Str::from_elem(0, 22);
        s[21] = 1;
        s.as_mut_slice()[0] = 2;
        s.extend_from_slice(b"!");
        assert_eq!((s[0], s[21], s[22], s.len()), (2, 1, b'!', 23));

        // Vec round trips keep the heap block.
        let v = Str::from_slice(&counting(40)).into_vec();
        assert_eq!(v, counting(40));
        let mut big = Vec::with_capacity(64);
        big.extend_from_slice(&counting(40));
        let s = Str::from_vec(big);
        assert_eq!((s.len(), s.capacity(), s.heap_bytes()), (40, 64, 64));
        assert_eq!(Str::from_slice(b"short").into_vec(), b"short");
    }

    #[test]
    fn str_equality_ignores_representation() {
        let inline = Str::from_slice(b"hello");
        let mut heap = Str::from_slice(&[b'h'; 40]);
        heap.truncate(0);
        heap.extend_from_slice(b"hello");
        assert!(!heap.is_inline() && inline.is_inline());
        assert_eq!(heap, inline);
        assert_ne!(heap, Str::from_slice(b"hellO"));
        // A copy holds the bytes only: inline again when they fit.
        assert!(heap.clone().is_inline());
        assert_eq!(heap.clone(), heap);
        let long = Str::from_slice(&counting(300));
        assert_eq!((long.clone(), long.clone().heap_bytes()), (long, 300));
    }

    #[test]
    fn string_heap_size_counts_the_str_block() {
        assert_eq!(Value::string(b"short string").heap_size(), 0);
        assert_eq!(Value::string(&[b'a'; 22]).heap_size(), 0);
        assert_eq!(Value::string(&[b'a'; 23]).heap_size(), 23);
        let mut v = Value::Int(12345);
        v.make_raw().unwrap().extend_from_slice(&[b'0'; 30]);
        assert_eq!(v.as_bytes().unwrap().len(), 35);
        assert!(v.heap_size() >= 35);
    }

    #[test]
    fn int_encoding_only_for_canonical_text() {
        assert!(matches!(Value::string(b"123"), Value::Int(123)));
        assert!(matches!(Value::string(b"-9223372036854775808"), Value::Int(i64::MIN)));
        for s in [&b"0123"[..], b"+1", b" 1", b"1 ", b"", b"-0", b"9223372036854775808"] {
            assert!(matches!(Value::string(s), Value::Str(_)), "{:?}", s);
        }
        assert_eq!(&*Value::string(b"-17").as_bytes().unwrap(), b"-17");
    }
}
