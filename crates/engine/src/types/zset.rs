//! Sorted sets.
//!
//! A [`ZSet`] keeps `member -> score` in a hash map and the `(score, member)` order in a list of
//! sorted blocks (each at most [`MAX_BLOCK`] long, never empty). Finding a position is a binary
//! search over the blocks' last elements then inside one block; a rank adds the lengths of the
//! blocks before it (a cheap sum over `len / 256` integers). Inserting or removing moves at most one
//! block's elements, so every operation stays fast at millions of members without a pointer-heavy
//! skiplist. The member table is an `IndexMap`, giving positional access for random picks and
//! scan cursors.

use crate::primitives::{Hasher, SmallBytes};
use std::cmp::Ordering;

/// Largest block; a block that grows past it is split in two.
const MAX_BLOCK: usize = 512;

/// One element of the order.
type Item = (f64, SmallBytes);

/// Redis's order: by score, then by member bytes. Scores are never NaN; -0 equals 0.
fn cmp_item(a: (f64, &[u8]), b: (f64, &[u8])) -> Ordering {
    a.0.partial_cmp(&b.0).unwrap_or(Ordering::Equal).then_with(|| a.1.cmp(b.1))
}

/// A sorted set: member -> score, ordered by (score, member).
#[derive(Clone, Debug, Default)]
pub struct ZSet {
    scores: indexmap::IndexMap<SmallBytes, f64, Hasher>,
    blocks: Vec<Vec<Item>>,
}

impl ZSet {
    /// An empty sorted set.
    pub fn new() -> ZSet {
        ZSet::default()
    }
    /// Number of members.
    pub fn len(&self) -> usize {
        self.scores.len()
    }
    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.scores.is_empty()
    }
    /// How many members the member index holds before it grows.
    pub fn capacity(&self) -> usize {
        self.scores.capacity()
    }
    /// Approximate heap bytes.
    pub fn heap_size(&self) -> usize {
        let spilled = |b: &SmallBytes| if b.spilled() { b.capacity() } else { 0 };
        self.scores.capacity() * (std::mem::size_of::<SmallBytes>() + 8 + 1)
            + self.blocks.iter().map(|b| b.capacity() * std::mem::size_of::<Item>()).sum::<usize>()
            + self.scores.keys().map(|k| 2 * spilled(k)).sum::<usize>()
    }

    /// The score of `member`.
    pub fn score(&self, member: &[u8]) -> Option<f64> {
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
    pub fn insert(&mut self, member: &[u8], score: f64) -> Option<f64> {
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
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        let s = self.scores.swap_remove(member)?;
        self.remove_order(s, member);
        Some(s)
    }

    /// 0-based rank of `member` in ascending order.
    pub fn rank(&self, member: &[u8]) -> Option<usize> {
        let s = self.score(member)?;
        let (b, i) = self.locate(s, member)?;
        Some(self.blocks[..b].iter().map(Vec::len).sum::<usize>() + i)
    }

    /// Number of elements for which `before` holds; `before` must be true on a prefix of the order
    /// (e.g. "score < min").
    pub fn count_before(&self, before: impl Fn(f64, &[u8]) -> bool) -> usize {
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

    /// Elements with ranks in `start..end` (ascending), as (member, score).
    pub fn range(&self, start: usize, end: usize) -> Vec<(SmallBytes, f64)> {
        let end = end.min(self.len());
        if start >= end {
            return Vec::new();
        }
        let mut out = Vec::with_capacity(end - start);
        let mut skip = start;
        let mut want = end - start;
        for blk in &self.blocks {
            if skip >= blk.len() {
                skip -= blk.len();
                continue;
            }
            for it in &blk[skip..] {
                if want == 0 {
                    break;
                }
                out.push((it.1.clone(), it.0));
                want -= 1;
            }
            skip = 0;
            if want == 0 {
                break;
            }
        }
        out
    }

    /// The elements of ranks `start..end` (clamped), ascending; `.rev()` walks them descending.
    /// Borrowing, unlike [`ZSet::range`]: large ZRANGE replies are written from it directly.
    pub fn range_iter(&self, start: usize, end: usize) -> impl DoubleEndedIterator<Item = (&SmallBytes, f64)> + Clone {
        let end = end.min(self.len());
        let start = start.min(end);
        // (block, offset) of a rank; `end` as the exclusive bound inside the block before it.
        let locate = |mut rank: usize| {
            let mut b = 0;
            while b < self.blocks.len() && rank >= self.blocks[b].len() {
                rank -= self.blocks[b].len();
                b += 1;
            }
            (b, rank)
        };
        let (b0, off0) = locate(start);
        let (b1, off1) = if end > start { locate(end - 1) } else { (b0, off0) };
        let blocks = if end > start { b0..b1 + 1 } else { b0..b0 };
        blocks.flat_map(move |b| {
            let blk = &self.blocks[b];
            let lo = if b == b0 { off0 } else { 0 };
            let hi = if b == b1 { off1 + 1 } else { blk.len() };
            blk[lo..hi].iter().map(|it| (&it.1, it.0))
        })
    }

    /// Every element in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = (&SmallBytes, f64)> {
        self.blocks.iter().flatten().map(|it| (&it.1, it.0))
    }

    /// The member at a position of the member table (O(1) random access for ZRANDMEMBER and
    /// ZSCAN cursors; removal swaps the last member into the hole, like the keyspace tables).
    pub fn by_index(&self, i: usize) -> Option<(&SmallBytes, f64)> {
        self.scores.get_index(i).map(|(m, s)| (m, *s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

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
            let got: Vec<(SmallBytes, f64)> = z.range_iter(s, e).map(|(m, sc)| (m.clone(), sc)).collect();
            assert_eq!(got, want, "{s}..{e}");
            let mut back: Vec<(SmallBytes, f64)> = z.range_iter(s, e).rev().map(|(m, sc)| (m.clone(), sc)).collect();
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
}
