//! A set value: members in insertion order, with access by position (SPOP, SRANDMEMBER, SSCAN's
//! cursor).
//!
//! A small set (up to [`SMALL_MAX`] members and [`SMALL_BYTES`] bytes) is one packed block, as
//! Redis keeps a set of integers in an intset: a count byte, then each member as a LEB128 length
//! and its bytes; a lookup reads it from the front. Past that it is an `IndexSet` and stays one.
//! Both forms remove by moving the last member into the hole, so positions behave the same
//! whichever form a set is in. What `OBJECT ENCODING` reports is not decided by the form but by
//! one bit either form keeps (see `Value::encoding`): whether Redis would have turned the set into
//! a hash table ([`SetValue::converted`]), set by the writes that convert in Redis under the limits
//! in effect then, and never undone, whatever is removed later.

use super::packed::{self, Entries, Indexed, bytes_size, put_bytes, read_bytes, reblock};
use crate::args::parse_i64_strict as canonical_i64;
use crate::primitives::{Hasher, SmallBytes};
use indexmap::IndexSet;

/// Most members of the packed form (its count byte keeps its top bit for the mark).
pub const SMALL_MAX: usize = 127;

/// Most bytes of the packed form: every change rewrites the block.
pub const SMALL_BYTES: usize = 4096;

/// A set value (see the module documentation). 16 bytes, so it sits in a
/// [`Value`](crate::value::Value) unboxed.
#[derive(Clone, Debug)]
pub struct SetValue(Repr);

/// The packed form is `[count][len][member]...`; the forms' bit is [`SetValue::converted`].
type Repr = packed::Forms<IndexSet<SmallBytes, Hasher>>;

impl Default for SetValue {
    fn default() -> Self {
        SetValue(Repr::Small(Box::default()))
    }
}

/// Removes the member at byte range `r` of block `b` by moving the last member into its place.
fn small_swap_remove(b: &mut Box<[u8]>, r: std::ops::Range<usize>) {
    let last = Entries::new(b, read_bytes).range_of(packed::count(b) - 1).expect("the last member").start;
    packed::swap_out(b, r, last);
}

impl SetValue {
    /// An empty set.
    pub fn new() -> Self {
        SetValue::default()
    }

    /// An empty set about to receive `n` members: indexed from the start when `n` is past
    /// [`SMALL_MAX`].
    pub fn with_capacity(n: usize) -> Self {
        if n <= SMALL_MAX {
            SetValue::new()
        } else {
            SetValue(Repr::Large(Box::new(Indexed {
                inner: IndexSet::with_capacity_and_hasher(n, Hasher::default()),
                converted: false,
            })))
        }
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Small(b) => packed::count(b),
            Repr::Large(s) => s.len(),
        }
    }

    /// True when the set has no member.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Members the set holds before it allocates again (the packed form reallocates on each change).
    pub fn capacity(&self) -> usize {
        match &self.0 {
            Repr::Small(b) => packed::count(b),
            Repr::Large(s) => s.capacity(),
        }
    }

    /// True once the set is in its indexed form.
    pub fn is_indexed(&self) -> bool {
        matches!(self.0, Repr::Large(_))
    }

    /// True once Redis would hold the set as a hash table rather than an intset: a member that is
    /// not an integer was added, or more members than `set-max-intset-entries` were there at once.
    /// Redis never turns a hash table back, whatever is removed later, and neither does this bit
    /// (a set read from an RDB file or a DUMP payload starts from its members: [`SetValue::settle`]).
    pub fn converted(&self) -> bool {
        self.0.converted()
    }

    /// Adds `member` as Redis's `setTypeAdd` does under `set-max-intset-entries` = `intset_max`:
    /// true if it is new, and the set is [`SetValue::converted`] from now on when the member is
    /// not an integer or the set is past `intset_max` members.
    pub fn add_under(&mut self, member: &[u8], intset_max: usize) -> bool {
        let new = self.insert(member);
        if new && !self.converted() && (self.len() > intset_max || canonical_i64(member).is_none()) {
            self.0.set_converted(true);
        }
        new
    }

    /// For a set made whole (read from an RDB file or a DUMP payload, or the result a store
    /// command writes, though it began as a copy of a converted set): [`SetValue::converted`]
    /// exactly when its members are past what an intset holds, as Redis converts while it loads or
    /// builds one from an empty intset.
    pub fn settle(&mut self, intset_max: usize) {
        let past = self.len() > intset_max || self.iter().any(|m| canonical_i64(m).is_none());
        self.0.set_converted(past);
    }

    /// True if `member` is in the set.
    pub fn contains(&self, member: &[u8]) -> bool {
        match &self.0 {
            Repr::Small(b) => Entries::new(b, read_bytes).any(|m| m == member),
            Repr::Large(s) => s.contains(member),
        }
    }

    /// Adds `member`; true if it is new.
    pub fn insert(&mut self, member: &[u8]) -> bool {
        if let Repr::Small(b) = &mut self.0 {
            if Entries::new(b, read_bytes).any(|m| m == member) {
                return false;
            }
            if packed::count(b) < SMALL_MAX && b.len().max(1) + bytes_size(member) <= SMALL_BYTES {
                let mut e = Vec::with_capacity(bytes_size(member));
                put_bytes(&mut e, member);
                packed::append(b, &e);
                return true;
            }
            let mut s = IndexSet::with_capacity_and_hasher((packed::count(b) + 1) * 2, Hasher::default());
            s.extend(Entries::new(b, read_bytes).map(SmallBytes::from_slice));
            self.0 = Repr::Large(Box::new(Indexed { inner: s, converted: packed::marked(b) }));
        }
        let Repr::Large(s) = &mut self.0 else { unreachable!("a packed set was just indexed") };
        s.insert(SmallBytes::from_slice(member))
    }

    /// Removes `member`, moving the last member into its position; true if it was there.
    pub fn swap_remove(&mut self, member: &[u8]) -> bool {
        match &mut self.0 {
            Repr::Small(b) => match Entries::new(b, read_bytes).find_ranged(|m| *m == member) {
                Some((_, _, r)) => {
                    small_swap_remove(b, r);
                    true
                }
                None => false,
            },
            Repr::Large(s) => s.swap_remove(member),
        }
    }

    /// Removes the member at position `i`, moving the last member into its place.
    pub fn swap_remove_index(&mut self, i: usize) -> Option<SmallBytes> {
        match &mut self.0 {
            Repr::Small(b) => {
                let r = Entries::new(b, read_bytes).range_of(i)?;
                let mut at = r.start;
                let m = SmallBytes::from_slice(read_bytes(b, &mut at));
                small_swap_remove(b, r);
                Some(m)
            }
            Repr::Large(s) => s.swap_remove_index(i),
        }
    }

    /// The member at a position.
    pub fn get_index(&self, i: usize) -> Option<&[u8]> {
        match &self.0 {
            Repr::Small(b) => Entries::new(b, read_bytes).nth(i),
            Repr::Large(s) => s.get_index(i).map(|m| &m[..]),
        }
    }

    /// Every member, in position order.
    pub fn iter(&self) -> impl Iterator<Item = &[u8]> {
        let (small, large) = match &self.0 {
            Repr::Small(b) => (Some(Entries::new(b, read_bytes)), None),
            Repr::Large(s) => (None, Some(s.iter().map(|m| &m[..]))),
        };
        small.into_iter().flatten().chain(large.into_iter().flatten())
    }

    /// Keeps the members for which `keep` holds, in their order.
    pub fn retain(&mut self, mut keep: impl FnMut(&[u8]) -> bool) {
        match &mut self.0 {
            Repr::Small(b) => {
                let kept: Vec<&[u8]> = Entries::new(b, read_bytes).filter(|m| keep(m)).collect();
                if kept.len() < packed::count(b) {
                    let mut body = Vec::with_capacity(b.len());
                    for m in &kept {
                        put_bytes(&mut body, m);
                    }
                    *b = reblock(b, kept.len(), &[&body]);
                }
            }
            Repr::Large(s) => s.retain(|m| keep(m)),
        }
    }

    /// Keeps the first `n` members.
    pub fn truncate(&mut self, n: usize) {
        match &mut self.0 {
            Repr::Small(b) => {
                if let Some(r) = Entries::new(b, read_bytes).range_of(n) {
                    *b = reblock(b, n, &[&b[1..r.start]]);
                }
            }
            Repr::Large(s) => s.truncate(n),
        }
    }

    /// Heap bytes: the packed block, or the index, its entries and the members' own allocations.
    pub fn heap_bytes(&self) -> usize {
        match &self.0 {
            Repr::Small(b) => b.len(),
            Repr::Large(s) => {
                let spilled = |m: &SmallBytes| if m.spilled() { m.capacity() } else { 0 };
                // Entries (member and stored hash) and index (position and control byte).
                std::mem::size_of::<Indexed<IndexSet<SmallBytes, Hasher>>>()
                    + s.capacity() * (std::mem::size_of::<SmallBytes>() + 8 + 9)
                    + s.iter().map(spilled).sum::<usize>()
            }
        }
    }
}

impl<M: AsRef<[u8]>> FromIterator<M> for SetValue {
    fn from_iter<I: IntoIterator<Item = M>>(iter: I) -> Self {
        let mut s = SetValue::new();
        s.extend(iter);
        s
    }
}

impl<M: AsRef<[u8]>> Extend<M> for SetValue {
    fn extend<I: IntoIterator<Item = M>>(&mut self, iter: I) {
        for m in iter {
            self.insert(m.as_ref());
        }
    }
}

/// Equal when they hold the same members, whatever their order or form.
impl PartialEq for SetValue {
    fn eq(&self, other: &SetValue) -> bool {
        self.len() == other.len() && self.iter().all(|m| other.contains(m))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// Random edits (adds, removals by member and by position, retains, truncations) with
    /// members of every length class match a vector model with swap-removal, in both forms and
    /// across the switch.
    #[test]
    fn random_edits_match_a_model() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(30);
        let mut switched = 0;
        for round in 0..120 {
            let (members, steps) = if round % 3 == 0 { (400, 300) } else { (20, 100) };
            let mut s = SetValue::new();
            let mut model: Vec<Vec<u8>> = Vec::new();
            for step in 0..steps {
                let mut m = rng.random_range(0..members).to_string().into_bytes();
                if round % 5 == 0 {
                    m.resize(m.len() + [0, 127, 300][rng.random_range(0..3)], b'x');
                }
                match rng.random_range(0..20) {
                    0..=10 => {
                        let new = !model.contains(&m);
                        assert_eq!(s.insert(&m), new);
                        if new {
                            model.push(m);
                        }
                    }
                    11..=15 => {
                        let at = model.iter().position(|x| *x == m);
                        assert_eq!(s.swap_remove(&m), at.is_some());
                        if let Some(at) = at {
                            model.swap_remove(at);
                        }
                    }
                    16..=17 if !model.is_empty() => {
                        let i = rng.random_range(0..model.len());
                        assert_eq!(s.swap_remove_index(i).as_deref(), Some(&model.swap_remove(i)[..]));
                    }
                    18 => {
                        let odd = |m: &[u8]| m.last().is_some_and(|c| c % 2 == 1);
                        s.retain(|m| !odd(m));
                        model.retain(|m| !odd(m));
                    }
                    _ => {
                        let n = model.len() * 3 / 4;
                        s.truncate(n);
                        model.truncate(n);
                    }
                }
                let at = format!("round {round} step {step}");
                assert_eq!(s.len(), model.len(), "{at}");
                assert!(s.iter().eq(model.iter().map(|m| &m[..])), "{at}");
                for (i, m) in model.iter().enumerate() {
                    assert_eq!(s.get_index(i), Some(&m[..]), "{at}");
                    assert!(s.contains(m));
                }
                assert_eq!(s.get_index(model.len()), None);
                if s.is_indexed() {
                    switched += 1;
                } else {
                    assert!(s.len() <= SMALL_MAX && s.heap_bytes() <= SMALL_BYTES, "{at}");
                }
            }
        }
        assert!(switched > 1000, "{switched}");
    }

    /// `add` converts as Redis's `setTypeAdd` does (a member that is not a canonical integer, or
    /// one past the limit), every edit and both forms keep the bit, and `settle` recomputes it.
    #[test]
    fn a_conversion_is_kept_until_the_set_is_made_again() {
        let mut s = SetValue::new();
        assert!(s.add_under(b"1", 512) && !s.converted());
        assert!(!s.add_under(b"1", 0) && !s.converted(), "a member already there changes nothing");
        assert!(s.add_under(b"01", 512) && s.converted(), "01 is not an integer as Redis reads one");
        assert!(s.swap_remove(b"01") && s.converted());
        for i in 2..60 {
            s.add_under(i.to_string().as_bytes(), 512);
        }
        s.swap_remove_index(3);
        s.retain(|m| m != b"7");
        s.truncate(40);
        assert!(!s.is_indexed() && s.converted() && s.clone().converted());
        for i in 100..300 {
            s.add_under(i.to_string().as_bytes(), 512);
        }
        assert!(s.is_indexed() && s.converted(), "the indexed form takes the bit over");
        s.settle(512);
        assert!(!s.converted(), "ints within the limit: an intset again");
        s.settle(100);
        assert!(s.converted());
        s.swap_remove(b"100");
        s.truncate(10);
        assert!(s.converted());

        let mut t = SetValue::new();
        for (i, converted) in [(1, false), (2, false), (3, false), (4, true), (5, true)] {
            t.add_under(i.to_string().as_bytes(), 3);
            assert_eq!(t.converted(), converted, "{i}");
        }
        t.swap_remove(b"5");
        t.swap_remove(b"4");
        assert!(t.converted(), "back within the limit, still converted");
        t.settle(3);
        assert!(!t.converted());
        t.add_under(b"w", 512);
        t.settle(512);
        assert!(t.converted());
    }

    #[test]
    fn a_small_set_costs_its_bytes() {
        assert_eq!(std::mem::size_of::<SetValue>(), 16);
        let mut s: SetValue = (1000..1005).map(|i| i.to_string()).collect();
        assert!(!s.is_indexed());
        assert_eq!(s.heap_bytes(), 1 + 5 * (1 + 4));
        assert_eq!(s.swap_remove_index(0).as_deref(), Some(&b"1000"[..]));
        assert_eq!(s.get_index(0), Some(&b"1004"[..]));
        s.truncate(0);
        assert_eq!((s.len(), s.heap_bytes()), (0, 0));
    }
}
