//! Sorted sets.
//!
//! A small sorted set (up to [`SMALL_MAX`] members and [`SMALL_BYTES`] bytes, the common case:
//! leaderboards, delay queues, rate windows of a few entries) is one packed block in (score,
//! member) order, as Redis keeps it in a listpack: a count byte, then each score (an integer as a
//! zigzag LEB128, any other double as its 8 bytes) and member (LEB128 length and bytes). Lookups
//! read it from the front, as Redis's `zzlFind` does.
//!
//! Past that, a [`ZSet`] keeps `member -> score` in a hash map and the `(score, member)` order in
//! a list of sorted blocks (each at most [`MAX_BLOCK`] long, never empty). Finding a position is a
//! binary search over the blocks' last elements then inside one block; a rank adds the lengths of
//! the blocks before it (a cheap sum over `len / 256` integers). Inserting or removing moves at
//! most one block's elements, so every operation stays fast at millions of members without a
//! pointer-heavy skiplist. The member table is an `IndexMap`, giving positional access for random
//! picks and scan cursors. A set that grows out of the packed form stays indexed.
//!
//! Either form keeps one bit of history for `OBJECT ENCODING`: whether Redis would have turned the
//! set into a skiplist ([`ZSet::converted`]), which it never undoes, whatever is removed later.

use super::packed::{self, Entries, Indexed, put_bytes, put_varint, read_bytes, read_varint, reblock};
use crate::primitives::{Hasher, SmallBytes};
use smallvec::SmallVec;
use std::cmp::Ordering;

/// Largest block; a block that grows past it is split in two.
const MAX_BLOCK: usize = 512;

/// Most members of the packed form: one below Redis's default `zset-max-listpack-entries` (128),
/// as the count byte keeps its top bit for the mark.
pub const SMALL_MAX: usize = 127;

/// Most bytes of the packed form: every change rewrites the block.
pub const SMALL_BYTES: usize = 4096;

/// One element of the order.
type Item = (f64, SmallBytes);

/// Redis's order: by score, then by member bytes. Scores are never NaN; -0 equals 0.
fn cmp_item(a: (f64, &[u8]), b: (f64, &[u8])) -> Ordering {
    a.0.partial_cmp(&b.0).unwrap_or(Ordering::Equal).then_with(|| a.1.cmp(b.1))
}

/// A sorted set: member -> score, ordered by (score, member). 16 bytes, so it sits in a
/// [`Value`](crate::value::Value) unboxed.
#[derive(Clone, Debug)]
pub struct ZSet(Repr);

/// The packed form is `[count][score][member]...`; the forms' bit is [`ZSet::converted`].
type Repr = packed::Forms<Big>;

impl Default for ZSet {
    fn default() -> Self {
        ZSet(Repr::Small(Box::default()))
    }
}

/// Largest magnitude stored as an integer: every integer up to it is an exact double.
const EXACT_INT: f64 = 9_007_199_254_740_992.0;

/// Appends a score: an integral one as `zigzag(i) << 1`, any other as `1` and its 8 bytes.
fn put_score(out: &mut Vec<u8>, s: f64) {
    if s.fract() == 0.0 && s.abs() <= EXACT_INT {
        let i = s as i64;
        put_varint(out, (((i << 1) ^ (i >> 63)) as u64) << 1);
    } else {
        out.push(1);
        out.extend_from_slice(&s.to_le_bytes());
    }
}

#[inline]
fn read_score(buf: &[u8], at: &mut usize) -> f64 {
    let x = read_varint(buf, at);
    if x == 1 {
        let s = f64::from_le_bytes(buf[*at..*at + 8].try_into().expect("8 bytes"));
        *at += 8;
        return s;
    }
    let z = x >> 1;
    ((z >> 1) as i64 ^ -((z & 1) as i64)) as f64
}

/// One packed element.
fn element(score: f64, member: &[u8]) -> SmallVec<[u8; 32]> {
    let mut v = Vec::with_capacity(10 + packed::bytes_size(member));
    put_score(&mut v, score);
    put_bytes(&mut v, member);
    SmallVec::from_vec(v)
}

/// A member and its score, as a packed block holds them (the score first).
fn entry<'a>(b: &'a [u8], at: &mut usize) -> (&'a [u8], f64) {
    let s = read_score(b, at);
    (read_bytes(b, at), s)
}

/// The position, score and byte range of `member` in a packed block.
fn find(b: &[u8], member: &[u8]) -> Option<(usize, f64, std::ops::Range<usize>)> {
    Entries::new(b, entry).find_ranged(|&(m, _)| m == member).map(|(i, (_, s), r)| (i, s, r))
}

/// The element at byte offset `at` of a packed block.
fn element_at(b: &[u8], at: u16) -> (&[u8], f64) {
    entry(b, &mut (at as usize))
}

/// The elements of ranks `start..end` of a sorted set, either way (see [`ZSet::range_iter`]).
#[derive(Clone)]
pub struct RangeIter<'a>(RangeRepr<'a>);

#[derive(Clone)]
enum RangeRepr<'a> {
    /// The block and the offsets of the elements in range.
    Small(&'a [u8], smallvec::IntoIter<[u16; 16]>),
    Large(BigRange<'a>),
}

impl<'a> Iterator for RangeIter<'a> {
    type Item = (&'a [u8], f64);

    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.0 {
            RangeRepr::Small(b, it) => it.next().map(|at| element_at(b, at)),
            RangeRepr::Large(it) => it.next(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.0 {
            RangeRepr::Small(_, it) => it.size_hint(),
            RangeRepr::Large(it) => (it.left, Some(it.left)),
        }
    }
}

impl DoubleEndedIterator for RangeIter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        match &mut self.0 {
            RangeRepr::Small(b, it) => it.next_back().map(|at| element_at(b, at)),
            RangeRepr::Large(it) => it.next_back(),
        }
    }
}

/// Ranks of the indexed form: the next position from the front, the position past the last from
/// the back, and how many are left between them.
#[derive(Clone)]
struct BigRange<'a> {
    blocks: &'a [Vec<Item>],
    front: (usize, usize),
    back: (usize, usize),
    left: usize,
}

impl<'a> Iterator for BigRange<'a> {
    type Item = (&'a [u8], f64);

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let (b, i) = self.front;
        let it = &self.blocks[b][i];
        self.front = if i + 1 == self.blocks[b].len() { (b + 1, 0) } else { (b, i + 1) };
        Some((&it.1[..], it.0))
    }
}

impl DoubleEndedIterator for BigRange<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let (mut b, mut i) = self.back;
        if i == 0 {
            b -= 1;
            i = self.blocks[b].len();
        }
        i -= 1;
        self.back = (b, i);
        let it = &self.blocks[b][i];
        Some((&it.1[..], it.0))
    }
}

impl ZSet {
    /// An empty sorted set.
    pub fn new() -> ZSet {
        ZSet::default()
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Small(b) => packed::count(b),
            Repr::Large(z) => z.len(),
        }
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True once the set is in its indexed form.
    pub fn is_indexed(&self) -> bool {
        matches!(self.0, Repr::Large(_))
    }

    /// How many members the member index holds before it grows (the packed form reallocates on
    /// each change).
    pub fn capacity(&self) -> usize {
        match &self.0 {
            Repr::Small(b) => packed::count(b),
            Repr::Large(z) => z.capacity(),
        }
    }

    /// Heap bytes (the indexed form's approximately).
    pub fn heap_size(&self) -> usize {
        match &self.0 {
            Repr::Small(b) => b.len(),
            Repr::Large(z) => std::mem::size_of::<Indexed<Big>>() + z.heap_size(),
        }
    }

    /// The score of `member`.
    pub fn score(&self, member: &[u8]) -> Option<f64> {
        match &self.0 {
            Repr::Small(b) => find(b, member).map(|(_, s, _)| s),
            Repr::Large(z) => z.score(member),
        }
    }

    /// True once Redis would hold the set as a skiplist rather than a listpack: a member longer
    /// than `zset-max-listpack-value` was added, or more members than `zset-max-listpack-entries`
    /// were there at once. Redis never turns a skiplist back, whatever is removed later, and
    /// neither does this bit (a set read from an RDB file or a DUMP payload, or a store command's
    /// result, starts from what it holds: [`ZSet::settle`]).
    pub fn converted(&self) -> bool {
        self.0.converted()
    }

    /// Adds `member`, new to the set, as Redis's `zsetAdd` does under `zset-max-listpack-entries` =
    /// `entries` and `zset-max-listpack-value` = `value_max`: the set is [`ZSet::converted`] from
    /// now on when the member is longer than `value_max` or the set is past `entries` members. (A
    /// new score for a member already there is [`ZSet::insert`]: it converts nothing.)
    pub fn add_under(&mut self, member: &[u8], score: f64, entries: usize, value_max: usize) {
        let old = self.insert(member, score);
        if old.is_none() && !self.converted() && (self.len() > entries || member.len() > value_max) {
            self.0.set_converted(true);
        }
    }

    /// For a set made whole (read from an RDB file or a DUMP payload, or the result a store
    /// command writes): [`ZSet::converted`] exactly when what it holds is past a listpack's
    /// limits, as Redis's `zsetConvertToListpackIfNeeded` decides.
    pub fn settle(&mut self, entries: usize, value_max: usize) {
        let past = self.len() > entries || self.iter().any(|(m, _)| m.len() > value_max);
        self.0.set_converted(past);
    }

    /// Sets the score of `member`, adding it if needed. Returns the previous score.
    pub fn insert(&mut self, member: &[u8], score: f64) -> Option<f64> {
        // -0 is stored as 0, as Redis replies with "0".
        let score = score + 0.0;
        if let Repr::Small(b) = &mut self.0 {
            match small_insert(b, member, score) {
                Ok(old) => return old,
                Err(()) => {
                    let converted = packed::marked(b);
                    let mut z = Big::default();
                    for (m, s) in Entries::new(b, entry) {
                        z.insert(m, s);
                    }
                    self.0 = Repr::Large(Box::new(Indexed { inner: z, converted }));
                }
            }
        }
        let Repr::Large(z) = &mut self.0 else { unreachable!("a packed set was just indexed") };
        z.insert(member, score)
    }

    /// Removes `member`; returns its score.
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        match &mut self.0 {
            Repr::Small(b) => {
                let (_, s, r) = find(b, member)?;
                *b = reblock(b, packed::count(b) - 1, &[&b[1..r.start], &b[r.end..]]);
                Some(s)
            }
            Repr::Large(z) => z.remove(member),
        }
    }

    /// 0-based rank of `member` in ascending order.
    pub fn rank(&self, member: &[u8]) -> Option<usize> {
        match &self.0 {
            Repr::Small(b) => find(b, member).map(|(i, _, _)| i),
            Repr::Large(z) => z.rank(member),
        }
    }

    /// Number of elements for which `before` holds; `before` must be true on a prefix of the order
    /// (e.g. "score < min").
    pub fn count_before(&self, before: impl Fn(f64, &[u8]) -> bool) -> usize {
        match &self.0 {
            Repr::Small(b) => Entries::new(b, entry).take_while(|&(m, s)| before(s, m)).count(),
            Repr::Large(z) => z.count_before(before),
        }
    }

    /// Elements with ranks in `start..end` (ascending), as (member, score).
    pub fn range(&self, start: usize, end: usize) -> Vec<(SmallBytes, f64)> {
        self.range_iter(start, end).map(|(m, s)| (SmallBytes::from_slice(m), s)).collect()
    }

    /// The elements of ranks `start..end` (clamped), ascending; `.rev()` walks them descending.
    /// Borrowing, unlike [`ZSet::range`]: large ZRANGE replies are written from it directly.
    pub fn range_iter(&self, start: usize, end: usize) -> RangeIter<'_> {
        match &self.0 {
            Repr::Small(b) => {
                let end = end.min(packed::count(b));
                let mut it = Entries::new(b, entry);
                let offsets: SmallVec<[u16; 16]> = std::iter::from_fn(|| it.next_ranged().map(|(_, r)| r.start as u16))
                    .skip(start)
                    .take(end.saturating_sub(start))
                    .collect();
                RangeIter(RangeRepr::Small(b, offsets.into_iter()))
            }
            Repr::Large(z) => RangeIter(RangeRepr::Large(z.range_iter(start, end))),
        }
    }

    /// Every element in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], f64)> {
        let (small, large) = match &self.0 {
            Repr::Small(b) => (Some(Entries::new(b, entry)), None),
            Repr::Large(z) => (None, Some(z.iter())),
        };
        small.into_iter().flatten().chain(large.into_iter().flatten())
    }

    /// The member at a position of the member table (O(1) random access for ZRANDMEMBER and
    /// ZSCAN cursors in the indexed form, where removal swaps the last member into the hole like
    /// the keyspace tables; the packed form's positions are its ranks).
    pub fn by_index(&self, i: usize) -> Option<(&[u8], f64)> {
        match &self.0 {
            Repr::Small(b) => Entries::new(b, entry).nth(i),
            Repr::Large(z) => z.by_index(i),
        }
    }
}

/// Sets `member`'s score in a packed block: Ok(previous score), or Err (nothing changed) when the
/// result would not fit the packed form.
fn small_insert(b: &mut Box<[u8]>, member: &[u8], score: f64) -> Result<Option<f64>, ()> {
    let n = packed::count(b);
    let found = find(b, member);
    if let Some((_, old, _)) = found
        && old == score
    {
        return Ok(Some(old));
    }
    let e = element(score, member);
    let old_size = found.as_ref().map_or(0, |(_, _, r)| r.len());
    let count = if found.is_some() { n } else { n + 1 };
    if count > SMALL_MAX || b.len().max(1) - old_size + e.len() > SMALL_BYTES {
        return Err(());
    }
    // Where the element goes: before the first element ordered after it (the old one skipped).
    let at = Entries::new(b, entry)
        .find_ranged(|&(m, s)| m != member && cmp_item((s, m), (score, member)) == Ordering::Greater)
        .map_or(b.len().max(1), |(_, _, r)| r.start);
    let previous = found.as_ref().map(|(_, s, _)| *s);
    let body: &[u8] = if b.is_empty() { &[] } else { &b[1..] };
    let at = at - 1;
    *b = match found {
        None => reblock(b, count, &[&body[..at], &e, &body[at..]]),
        Some((_, _, r)) => {
            let r = r.start - 1..r.end - 1;
            if at <= r.start {
                reblock(b, count, &[&body[..at], &e, &body[at..r.start], &body[r.end..]])
            } else {
                reblock(b, count, &[&body[..r.start], &body[r.end..at], &e, &body[at..]])
            }
        }
    };
    Ok(previous)
}

/// The indexed form: member -> score in a map, (score, member) in sorted blocks.
#[derive(Clone, Debug, Default)]
struct Big {
    scores: indexmap::IndexMap<SmallBytes, f64, Hasher>,
    blocks: Vec<Vec<Item>>,
}

impl Big {
    /// Number of members.
    fn len(&self) -> usize {
        self.scores.len()
    }
    /// How many members the member index holds before it grows.
    fn capacity(&self) -> usize {
        self.scores.capacity()
    }
    /// Approximate heap bytes.
    fn heap_size(&self) -> usize {
        let spilled = |b: &SmallBytes| if b.spilled() { b.capacity() } else { 0 };
        self.scores.capacity() * (std::mem::size_of::<SmallBytes>() + 8 + 1)
            + self.blocks.iter().map(|b| b.capacity() * std::mem::size_of::<Item>()).sum::<usize>()
            + self.scores.keys().map(|k| 2 * spilled(k)).sum::<usize>()
    }

    /// The score of `member`.
    fn score(&self, member: &[u8]) -> Option<f64> {
        self.scores.get(member).copied()
    }

    /// (block, offset) of an element present in the order.
    fn locate(&self, score: f64, member: &[u8]) -> Option<(usize, usize)> {
        let key = (score, member);
        let b = self.blocks.partition_point(|blk| {
            let last = blk.last().expect("blocks are never empty");
            cmp_item((last.0, &last.1), key) == Ordering::Less
        });
        let blk = self.blocks.get(b)?;
        let i = blk.binary_search_by(|it| cmp_item((it.0, &it.1), key)).ok()?;
        Some((b, i))
    }

    /// Sets the score of `member`, adding it if needed. Returns the previous score.
    fn insert(&mut self, member: &[u8], score: f64) -> Option<f64> {
        // -0 is stored as 0, as Redis replies with "0".
        let score = score + 0.0;
        let old = self.scores.get(member).copied();
        if let Some(o) = old {
            if o == score {
                return old;
            }
            self.remove_order(o, member);
        }
        self.scores.insert(SmallBytes::from_slice(member), score);
        self.insert_order(score, member);
        old
    }

    fn insert_order(&mut self, score: f64, member: &[u8]) {
        let key = (score, member);
        if self.blocks.is_empty() {
            self.blocks.push(vec![(score, SmallBytes::from_slice(member))]);
            return;
        }
        let mut b = self.blocks.partition_point(|blk| {
            let last = blk.last().expect("blocks are never empty");
            cmp_item((last.0, &last.1), key) == Ordering::Less
        });
        if b == self.blocks.len() {
            b -= 1;
        }
        let blk = &mut self.blocks[b];
        let i = blk.partition_point(|it| cmp_item((it.0, &it.1), key) == Ordering::Less);
        blk.insert(i, (score, SmallBytes::from_slice(member)));
        if blk.len() > MAX_BLOCK {
            let tail = blk.split_off(blk.len() / 2);
            self.blocks.insert(b + 1, tail);
        }
    }

    fn remove_order(&mut self, score: f64, member: &[u8]) {
        if let Some((b, i)) = self.locate(score, member) {
            self.blocks[b].remove(i);
            if self.blocks[b].is_empty() {
                self.blocks.remove(b);
            }
        }
    }

    /// Removes `member`; returns its score.
    fn remove(&mut self, member: &[u8]) -> Option<f64> {
        let s = self.scores.swap_remove(member)?;
        self.remove_order(s, member);
        Some(s)
    }

    /// 0-based rank of `member` in ascending order.
    fn rank(&self, member: &[u8]) -> Option<usize> {
        let s = self.score(member)?;
        let (b, i) = self.locate(s, member)?;
        Some(self.blocks[..b].iter().map(Vec::len).sum::<usize>() + i)
    }

    /// Number of elements for which `before` holds; `before` must be true on a prefix of the order
    /// (e.g. "score < min").
    fn count_before(&self, before: impl Fn(f64, &[u8]) -> bool) -> usize {
        let b = self.blocks.partition_point(|blk| {
            let last = blk.last().expect("blocks are never empty");
            before(last.0, &last.1)
        });
        let prefix: usize = self.blocks[..b].iter().map(Vec::len).sum();
        match self.blocks.get(b) {
            Some(blk) => prefix + blk.partition_point(|it| before(it.0, &it.1)),
            None => prefix,
        }
    }

    /// The elements of ranks `start..end` (clamped), ascending; `.rev()` walks them descending.
    fn range_iter(&self, start: usize, end: usize) -> BigRange<'_> {
        let end = end.min(self.len());
        let start = start.min(end);
        // (block, offset) of a rank: the block past the last for `len`.
        let locate = |mut rank: usize| {
            let mut b = 0;
            while b < self.blocks.len() && rank >= self.blocks[b].len() {
                rank -= self.blocks[b].len();
                b += 1;
            }
            (b, rank)
        };
        BigRange { blocks: &self.blocks, front: locate(start), back: locate(end), left: end - start }
    }

    /// Every element in ascending order.
    fn iter(&self) -> impl Iterator<Item = (&[u8], f64)> {
        self.blocks.iter().flatten().map(|it| (&it.1[..], it.0))
    }

    /// The member at a position of the member table (O(1) random access for ZRANDMEMBER and
    /// ZSCAN cursors; removal swaps the last member into the hole, like the keyspace tables).
    fn by_index(&self, i: usize) -> Option<(&[u8], f64)> {
        self.scores.get_index(i).map(|(m, s)| (&m[..], *s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// `add_under` converts as Redis's `zsetAdd` does (a long new member, or one past the limit;
    /// a new score converts nothing), every edit and both forms keep the bit, `settle` recomputes it.
    #[test]
    fn a_conversion_is_kept_until_the_set_is_made_again() {
        let long = [b'x'; 65];
        let mut z = ZSet::new();
        z.add_under(b"a", 1.0, 128, 64);
        assert!(!z.converted());
        z.add_under(&long, 2.0, 128, 64);
        assert!(z.converted(), "a long member");
        z.remove(&long);
        assert!(z.converted());
        for i in 0..40 {
            z.insert(format!("m{i}").as_bytes(), f64::from(i));
            z.remove(format!("m{}", i / 2).as_bytes());
        }
        assert!(!z.is_indexed() && z.converted(), "edits of the packed form keep it");
        for i in 0..200 {
            z.insert(format!("n{i}").as_bytes(), f64::from(i) / 3.0);
        }
        assert!(z.is_indexed() && z.converted(), "the indexed form takes the bit over");
        z.settle(1000, 64);
        assert!(!z.converted());
        z.settle(10, 64);
        assert!(z.converted());

        let mut y = ZSet::new();
        for (i, converted) in [(1, false), (2, false), (3, true)] {
            y.add_under(format!("m{i}").as_bytes(), 0.0, 2, 64);
            assert_eq!(y.converted(), converted, "{i}");
        }
        y.remove(b"m3");
        assert!(y.converted(), "back within the limit, still converted");
        y.settle(2, 64);
        assert!(!y.converted());
        y.insert(&long, 5.0);
        assert!(!y.converted(), "insert alone is a new score's path: it converts nothing");
    }

    #[test]
    fn range_iter_is_range_borrowed_both_ways() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let mut z = ZSet::new();
        for i in 0..3000 {
            z.insert(format!("m{i}").as_bytes(), rng.random_range(0..500) as f64);
        }
        for _ in 0..300 {
            let s = rng.random_range(0..3100);
            let e = rng.random_range(0..3100);
            let want = z.range(s, e);
            let got: Vec<(SmallBytes, f64)> =
                z.range_iter(s, e).map(|(m, sc)| (SmallBytes::from_slice(m), sc)).collect();
            assert_eq!(got, want, "{s}..{e}");
            let mut back: Vec<(SmallBytes, f64)> =
                z.range_iter(s, e).rev().map(|(m, sc)| (SmallBytes::from_slice(m), sc)).collect();
            back.reverse();
            assert_eq!(back, want, "rev {s}..{e}");
        }
        assert_eq!(ZSet::new().range_iter(0, 10).count(), 0);
    }

    #[test]
    fn matches_a_sorted_model() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let mut z = ZSet::new();
        let mut model: std::collections::BTreeMap<Vec<u8>, f64> = Default::default();
        for step in 0..20000 {
            let m = format!("m{}", rng.random_range(0..3000)).into_bytes();
            if rng.random_bool(0.3) {
                assert_eq!(z.remove(&m), model.remove(&m));
            } else {
                let s = rng.random_range(0..200) as f64;
                assert_eq!(z.insert(&m, s), model.insert(m.clone(), s));
            }
            if step % 2000 == 0 || step == 19999 {
                let mut sorted: Vec<(f64, Vec<u8>)> = model.iter().map(|(k, v)| (*v, k.clone())).collect();
                sorted.sort_by(|a, b| cmp_item((a.0, &a.1), (b.0, &b.1)));
                let got: Vec<(f64, Vec<u8>)> = z.iter().map(|(m, s)| (s, m.to_vec())).collect();
                assert_eq!(got, sorted);
                for (i, (_, m)) in sorted.iter().enumerate().step_by(97) {
                    assert_eq!(z.rank(m), Some(i));
                }
                let below = sorted.iter().filter(|(s, _)| *s < 100.0).count();
                assert_eq!(z.count_before(|s, _| s < 100.0), below);
                let r = z.range(10, 20);
                assert_eq!(r.len(), 10.min(sorted.len().saturating_sub(10)));
            }
        }
        assert_eq!(z.len(), model.len());
    }

    /// Random edits of small sets (scores integral, negative, fractional, infinite, timestamps;
    /// members of every length class) match a sorted model through every accessor, in both forms
    /// and across the switch.
    #[test]
    fn the_packed_form_matches_a_sorted_model() {
        let scores =
            [0.0, -0.0, 1.0, -1.0, 63.0, 64.0, -65.5, 0.25, 1.7e12, -9.007e15, 1e300, f64::INFINITY, f64::NEG_INFINITY];
        let mut rng = rand::rngs::StdRng::seed_from_u64(30);
        let mut switched = 0;
        for round in 0..90 {
            let (members, steps) = if round % 3 == 0 { (400, 300) } else { (20, 150) };
            let mut z = ZSet::new();
            let mut model: std::collections::BTreeMap<Vec<u8>, f64> = Default::default();
            for step in 0..steps {
                let m = format!("m{}", rng.random_range(0..members))
                    .repeat(1 + rng.random_range(0..3) * (round % 7 == 0) as usize * 40);
                let m = m.into_bytes();
                if rng.random_bool(0.25) {
                    assert_eq!(z.remove(&m), model.remove(&m));
                } else {
                    let s = scores[rng.random_range(0..scores.len())];
                    assert_eq!(z.insert(&m, s), model.insert(m.clone(), s + 0.0));
                }
                if !z.is_indexed() {
                    assert!(z.len() <= SMALL_MAX && z.heap_size() <= SMALL_BYTES);
                }
                let mut sorted: Vec<(f64, Vec<u8>)> = model.iter().map(|(k, v)| (*v, k.clone())).collect();
                sorted.sort_by(|a, b| cmp_item((a.0, &a.1), (b.0, &b.1)));
                let at = format!("round {round} step {step}");
                let got: Vec<(f64, Vec<u8>)> = z.iter().map(|(m, s)| (s, m.to_vec())).collect();
                assert_eq!(got, sorted, "{at}");
                assert_eq!(z.len(), sorted.len());
                for (i, (s, m)) in sorted.iter().enumerate() {
                    assert_eq!(z.rank(m), Some(i), "{at}");
                    assert_eq!(z.score(m).map(f64::to_bits), Some(s.to_bits()), "{at}");
                }
                let below = sorted.iter().filter(|(s, _)| *s < 1.0).count();
                assert_eq!(z.count_before(|s, _| s < 1.0), below, "{at}");
                let (a, b): (usize, usize) = (rng.random_range(0..25), rng.random_range(0..25));
                let want: Vec<(f64, Vec<u8>)> = sorted.iter().skip(a).take(b.saturating_sub(a)).cloned().collect();
                let fwd: Vec<(f64, Vec<u8>)> = z.range_iter(a, b).map(|(m, s)| (s, m.to_vec())).collect();
                let mut back: Vec<(f64, Vec<u8>)> = z.range_iter(a, b).rev().map(|(m, s)| (s, m.to_vec())).collect();
                back.reverse();
                assert_eq!((&fwd, &back), (&want, &want), "{at} {a}..{b}");
                switched += usize::from(z.is_indexed());
                if !z.is_indexed() {
                    for (i, (_, m)) in sorted.iter().enumerate() {
                        assert_eq!(z.by_index(i).map(|(m, _)| m.to_vec()).as_ref(), Some(m));
                    }
                }
            }
        }
        // Both ways out of the packed form (count and bytes) were taken many times.
        assert!(switched > 1000, "{switched}");
    }

    #[test]
    fn a_small_set_costs_its_bytes() {
        assert_eq!(std::mem::size_of::<ZSet>(), 16);
        let mut z = ZSet::new();
        assert_eq!(z.heap_size(), 0);
        for i in 0..5 {
            z.insert(format!("member:{i}").as_bytes(), i as f64);
        }
        assert!(!z.is_indexed());
        // The count byte, then per member a one-byte score, a one-byte length and 8 bytes.
        assert_eq!(z.heap_size(), 1 + 5 * (1 + 1 + 8));
        z.insert(b"member:0", 0.5);
        assert_eq!(z.heap_size(), 1 + 4 * 10 + (9 + 1 + 8));
        for i in 0..5 {
            assert!(z.remove(format!("member:{i}").as_bytes()).is_some());
        }
        assert_eq!((z.len(), z.heap_size()), (0, 0));
        for i in 0..=SMALL_MAX {
            z.insert(format!("m{i}").as_bytes(), 1.0);
            assert_eq!(z.is_indexed(), i == SMALL_MAX, "{i}");
        }
    }
}
