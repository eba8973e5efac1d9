//! A hash value: field -> value, in insertion order, with access by position (HRANDFIELD,
//! HSCAN's cursor).
//!
//! Small hashes, the common case (objects of a few fields), are packed into one exact-size heap
//! block, as Redis keeps them in a listpack: a count byte, then each field and each value as a
//! LEB128 length and its bytes. No index, no stored hashes, no spare buckets, no per-field
//! allocation; a lookup reads the block from the front. A hash that grows past [`SMALL_MAX`]
//! fields or [`SMALL_BYTES`] bytes becomes an `IndexMap` and stays one (Redis does not convert
//! back either). Both forms remove by moving the last pair into the hole, so positions behave the
//! same whichever form a hash is in. What `OBJECT ENCODING` reports is not decided by the form but
//! by one bit either form keeps (see `Value::encoding`): whether Redis would have turned the hash
//! into a hash table ([`HashValue::converted`]), set by the writes that convert in Redis under the
//! limits in effect then, and never undone, whatever is removed later.

use super::packed::{self, Entries, Indexed, bytes_size, put_bytes, read_bytes, reblock};
use crate::primitives::{Hasher, SmallBytes};
use indexmap::IndexMap;

/// Most fields kept in the packed form. A search reads at most this many fields, about what one
/// probe of an index costs in cache misses.
pub const SMALL_MAX: usize = 32;

/// Most bytes of a packed hash: every change rewrites the block, so it stays a few cache lines.
pub const SMALL_BYTES: usize = 4096;

/// A hash value (see the module documentation). 16 bytes, so it sits in a [`Value`] unboxed.
///
/// [`Value`]: crate::value::Value
#[derive(Clone, Debug)]
pub struct HashValue(Repr);

/// The packed form is `[count][len f][f][len v][v]...`; the forms' bit is [`HashValue::converted`].
type Repr = packed::Forms<IndexMap<SmallBytes, SmallBytes, Hasher>>;

impl Default for HashValue {
    fn default() -> Self {
        HashValue(Repr::Small(Box::default()))
    }
}

/// A field and its value, as a packed block holds them.
fn pair<'a>(b: &'a [u8], at: &mut usize) -> (&'a [u8], &'a [u8]) {
    (read_bytes(b, at), read_bytes(b, at))
}

/// The pair holding `field`: its position, value and byte range.
fn find<'a>(b: &'a [u8], field: &[u8]) -> Option<(usize, &'a [u8], std::ops::Range<usize>)> {
    Entries::new(b, pair).find_ranged(|&(f, _)| f == field).map(|(i, (_, v), r)| (i, v, r))
}

/// Sets `field` in a packed block: Some(true) if it is new, Some(false) if it was replaced, None
/// (nothing changed) when the result would not fit the packed form.
fn small_set(b: &mut Box<[u8]>, field: &[u8], value: &[u8]) -> Option<bool> {
    let n = packed::count(b);
    if let Some((_, old, r)) = find(b, field) {
        let (old_len, vstart) = (old.len(), r.end - old.len());
        if old_len == value.len() {
            b[vstart..r.end].copy_from_slice(value);
            return Some(false);
        }
        if b.len() - bytes_size(old) + bytes_size(value) > SMALL_BYTES {
            return None;
        }
        let mut v = Vec::with_capacity(bytes_size(value));
        put_bytes(&mut v, value);
        let vlen_at = vstart - packed::varint_size(old_len as u64);
        *b = reblock(b, n, &[&b[1..vlen_at], &v, &b[r.end..]]);
        return Some(false);
    }
    if n >= SMALL_MAX || b.len().max(1) + bytes_size(field) + bytes_size(value) > SMALL_BYTES {
        return None;
    }
    let mut v = Vec::with_capacity(bytes_size(field) + bytes_size(value));
    put_bytes(&mut v, field);
    put_bytes(&mut v, value);
    packed::append(b, &v);
    Some(true)
}

impl HashValue {
    /// An empty hash.
    pub fn new() -> Self {
        HashValue::default()
    }

    /// An empty hash about to receive `n` fields: indexed from the start when `n` is past
    /// [`SMALL_MAX`].
    pub fn with_capacity(n: usize) -> Self {
        if n <= SMALL_MAX {
            HashValue::new()
        } else {
            HashValue(Repr::Large(Box::new(Indexed {
                inner: IndexMap::with_capacity_and_hasher(n, Hasher::default()),
                converted: false,
            })))
        }
    }

    /// Number of fields.
    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Small(b) => packed::count(b),
            Repr::Large(m) => m.len(),
        }
    }

    /// True when the hash has no field.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Fields the hash holds before it allocates again (a packed hash reallocates on each change).
    pub fn capacity(&self) -> usize {
        match &self.0 {
            Repr::Small(_) => self.len(),
            Repr::Large(m) => m.capacity(),
        }
    }

    /// True once the hash is in its indexed form.
    pub fn is_indexed(&self) -> bool {
        matches!(self.0, Repr::Large(_))
    }

    /// The value of `field`.
    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        match &self.0 {
            Repr::Small(b) => find(b, field).map(|(_, v, _)| v),
            Repr::Large(m) => m.get(field).map(|v| &v[..]),
        }
    }

    /// True if `field` is present.
    pub fn contains_key(&self, field: &[u8]) -> bool {
        self.get(field).is_some()
    }

    /// True once Redis would hold the hash as a hash table rather than a listpack: a field or a
    /// value longer than `hash-max-listpack-value` was set, or more fields than
    /// `hash-max-listpack-entries` were there at once. Redis never turns a hash table back,
    /// whatever is removed later, and neither does this bit (a hash read from an RDB file or a
    /// DUMP payload starts from what it holds: [`HashValue::settle`]).
    pub fn converted(&self) -> bool {
        self.0.converted()
    }

    /// Sets `field` as Redis's `hashTypeSet` does under `hash-max-listpack-entries` = `entries`
    /// and `hash-max-listpack-value` = `value_max`: true if the field is new, and the hash is
    /// [`HashValue::converted`] from now on when the field or the value is longer than
    /// `value_max` or the hash is past `entries` fields.
    pub fn set_under(&mut self, field: &[u8], value: &[u8], entries: usize, value_max: usize) -> bool {
        let new = self.insert(field, value);
        if !self.converted() && (field.len() > value_max || value.len() > value_max || self.len() > entries) {
            self.0.set_converted(true);
        }
        new
    }

    /// For a hash made whole (read from an RDB file or a DUMP payload): [`HashValue::converted`]
    /// exactly when what it holds is past a listpack's limits, as Redis converts while it loads one.
    pub fn settle(&mut self, entries: usize, value_max: usize) {
        let past = self.len() > entries || self.iter().any(|(f, v)| f.len() > value_max || v.len() > value_max);
        self.0.set_converted(past);
    }

    /// Sets `field` (in place if present, else appended); true if the field is new.
    pub fn insert(&mut self, field: &[u8], value: &[u8]) -> bool {
        if let Repr::Small(b) = &mut self.0 {
            match small_set(b, field, value) {
                Some(added) => return added,
                None => {
                    let converted = packed::marked(b);
                    let mut m = IndexMap::with_capacity_and_hasher((self.len() + 1) * 2, Hasher::default());
                    m.extend(self.iter().map(|(f, v)| (SmallBytes::from_slice(f), SmallBytes::from_slice(v))));
                    self.0 = Repr::Large(Box::new(Indexed { inner: m, converted }));
                }
            }
        }
        let Repr::Large(m) = &mut self.0 else { unreachable!("a packed hash was just indexed") };
        m.insert(SmallBytes::from_slice(field), SmallBytes::from_slice(value)).is_none()
    }

    /// Removes `field`, moving the last field into its position; true if it was there.
    pub fn swap_remove(&mut self, field: &[u8]) -> bool {
        let b = match &mut self.0 {
            Repr::Large(m) => return m.swap_remove(field).is_some(),
            Repr::Small(b) => b,
        };
        let Some((_, _, r)) = find(b, field) else { return false };
        let last = Entries::new(b, pair).range_of(packed::count(b) - 1).expect("the last pair").start;
        packed::swap_out(b, r, last);
        true
    }

    /// The field and value at a position.
    pub fn get_index(&self, i: usize) -> Option<(&[u8], &[u8])> {
        match &self.0 {
            Repr::Small(b) => Entries::new(b, pair).nth(i),
            Repr::Large(m) => m.get_index(i).map(|(f, v)| (&f[..], &v[..])),
        }
    }

    /// Every field and value, in position order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        let (small, large) = match &self.0 {
            Repr::Small(b) => (Some(Entries::new(b, pair)), None),
            Repr::Large(m) => (None, Some(m.iter().map(|(f, v)| (&f[..], &v[..])))),
        };
        small.into_iter().flatten().chain(large.into_iter().flatten())
    }

    /// Every field, in position order.
    pub fn keys(&self) -> impl Iterator<Item = &[u8]> {
        self.iter().map(|(f, _)| f)
    }

    /// Every value, in position order.
    pub fn values(&self) -> impl Iterator<Item = &[u8]> {
        self.iter().map(|(_, v)| v)
    }

    /// Bytes the hash holds on the heap: the packed block, or the index, its entries and the
    /// fields' and values' own allocations.
    pub fn heap_bytes(&self) -> usize {
        match &self.0 {
            Repr::Small(b) => b.len(),
            Repr::Large(m) => {
                let pair = std::mem::size_of::<(SmallBytes, SmallBytes)>();
                let spilled = |b: &SmallBytes| if b.spilled() { b.capacity() } else { 0 };
                // Entries (pair and stored hash) and index (position and control byte).
                std::mem::size_of::<Indexed<IndexMap<SmallBytes, SmallBytes, Hasher>>>()
                    + m.capacity() * (pair + 8 + 9)
                    + m.iter().map(|(f, v)| spilled(f) + spilled(v)).sum::<usize>()
            }
        }
    }
}

impl<F: AsRef<[u8]>, V: AsRef<[u8]>> FromIterator<(F, V)> for HashValue {
    fn from_iter<I: IntoIterator<Item = (F, V)>>(iter: I) -> Self {
        let mut h = HashValue::new();
        h.extend(iter);
        h
    }
}

impl<F: AsRef<[u8]>, V: AsRef<[u8]>> Extend<(F, V)> for HashValue {
    fn extend<I: IntoIterator<Item = (F, V)>>(&mut self, iter: I) {
        for (f, v) in iter {
            self.insert(f.as_ref(), v.as_ref());
        }
    }
}

/// Equal when they hold the same fields with the same values, whatever their order or form.
impl PartialEq for HashValue {
    fn eq(&self, other: &HashValue) -> bool {
        self.len() == other.len() && self.iter().all(|(f, v)| other.get(f) == Some(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks `h` against `model` through every accessor.
    fn same(h: &HashValue, model: &[(Vec<u8>, Vec<u8>)], at: &str) {
        assert_eq!(h.len(), model.len(), "{at}");
        assert_eq!(h.iter().count(), model.len(), "{at}");
        for (p, (f, v)) in model.iter().enumerate() {
            assert_eq!(h.get_index(p), Some((&f[..], &v[..])), "position {p} {at}");
            assert_eq!(h.get(f), Some(&v[..]), "{at}");
        }
        assert_eq!(h.get_index(model.len()), None);
    }

    /// `set_under` converts as Redis's `hashTypeSet` does (a long field or value, new or replacing,
    /// or a field past the limit), every edit and both forms keep the bit, `settle` recomputes it.
    #[test]
    fn a_conversion_is_kept_until_the_hash_is_made_again() {
        let long = [b'x'; 65];
        let mut h = HashValue::new();
        assert!(h.set_under(b"f", b"v", 128, 64) && !h.converted());
        assert!(!h.set_under(b"f", &long, 128, 64) && h.converted(), "a long value replacing a short one");
        assert!(!h.set_under(b"f", b"v", 128, 64) && h.converted());
        for i in 0..40 {
            h.set_under(format!("f{i}").as_bytes(), b"v", 128, 64);
            h.swap_remove(format!("f{}", i / 2).as_bytes());
        }
        assert!(h.converted());
        for i in 0..100 {
            h.set_under(format!("g{i}").as_bytes(), b"v", 128, 64);
        }
        assert!(h.is_indexed() && h.converted(), "the indexed form takes the bit over");
        h.settle(128, 64);
        assert!(!h.converted());
        h.settle(10, 64);
        assert!(h.converted());

        let mut g = HashValue::new();
        g.set_under(&long, b"1", 128, 64);
        assert!(g.converted(), "a long field");
        g.swap_remove(&long);
        g.set_under(b"a", b"1", 2, 64);
        g.set_under(b"b", b"1", 2, 64);
        g.settle(2, 64);
        assert!(!g.converted());
        g.set_under(b"c", b"1", 2, 64);
        assert!(g.converted(), "past the entries");
        g.swap_remove(b"c");
        assert!(g.converted());
    }

    /// Both forms keep insertion order, replace in place, and remove by moving the last pair
    /// into the hole; crossing SMALL_MAX keeps every field and its position.
    #[test]
    fn both_forms_behave_alike_and_the_switch_keeps_positions() {
        let mut h = HashValue::new();
        let mut model: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        for i in 0..SMALL_MAX + 20 {
            let (f, v) = (format!("f{i}").into_bytes(), format!("v{i}").into_bytes());
            assert!(h.insert(&f, &v));
            model.push((f, v));
            if i == 3 {
                assert!(!h.insert(b"f1", b"x"));
                model[1].1 = b"x".to_vec();
                assert!(h.swap_remove(b"f0"));
                model.swap_remove(0);
            }
            assert_eq!(h.is_indexed(), h.len() > SMALL_MAX, "at {i}");
            same(&h, &model, &format!("at {i}"));
        }
        assert!(h.get(b"nope").is_none() && !h.contains_key(b"f0"));
        let mut pairs: Vec<_> = h.iter().map(|(f, v)| (f.to_vec(), v.to_vec())).collect();
        pairs.reverse();
        let copy: HashValue = pairs.into_iter().collect();
        assert_eq!(copy, h);
    }

    /// Random edits of a packed hash, with fields and values of every length class (empty, one
    /// byte, across the one-byte LEB128 boundary, large enough to force the indexed form), match
    /// a vector model step by step.
    #[test]
    fn random_edits_match_a_model() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(30);
        let lens = [0usize, 1, 5, 127, 128, 300, 2000];
        for round in 0..200 {
            let mut h = HashValue::new();
            let mut model: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
            for step in 0..60 {
                let f = format!("f{}", rng.random_range(0..12)).into_bytes();
                match rng.random_range(0..3) {
                    0 => {
                        let removed = h.swap_remove(&f);
                        let at = model.iter().position(|(k, _)| *k == f);
                        assert_eq!(removed, at.is_some());
                        if let Some(at) = at {
                            model.swap_remove(at);
                        }
                    }
                    _ => {
                        let len = lens[rng.random_range(0..lens.len() - (round % 2))];
                        let v: Vec<u8> = (0..len).map(|i| (i + step) as u8).collect();
                        let added = h.insert(&f, &v);
                        match model.iter_mut().find(|(k, _)| *k == f) {
                            Some(slot) => {
                                assert!(!added);
                                slot.1 = v;
                            }
                            None => {
                                assert!(added);
                                model.push((f, v));
                            }
                        }
                    }
                }
                same(&h, &model, &format!("round {round} step {step}"));
            }
        }
    }

    #[test]
    fn a_small_hash_costs_its_bytes() {
        assert_eq!(std::mem::size_of::<HashValue>(), 16);
        assert_eq!(HashValue::new().heap_bytes(), 0);
        let h: HashValue = (0..5).map(|i| (format!("field{i}"), "value00001")).collect();
        assert!(!h.is_indexed());
        // The count byte, then per pair two one-byte lengths, 6 and 10 bytes.
        assert_eq!(h.heap_bytes(), 1 + 5 * (1 + 6 + 1 + 10));
        let mut h = h;
        for i in 0..5 {
            assert!(h.swap_remove(format!("field{i}").as_bytes()));
        }
        assert_eq!((h.len(), h.heap_bytes()), (0, 0));
    }
}
