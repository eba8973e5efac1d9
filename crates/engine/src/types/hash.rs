//! A hash value: field -> value, in insertion order, with O(1) access by position (HRANDFIELD,
//! HSCAN's cursor).
//!
//! Small hashes, the common case (objects of a few fields), are a plain vector of pairs searched
//! from the front, as Redis keeps them in a listpack: no index, no stored hashes, no spare buckets.
//! A hash that grows past [`SMALL_MAX`] fields becomes an `IndexMap` and stays one (Redis does not
//! convert back either). Both forms remove by moving the last pair into the hole, so positions
//! behave the same whichever form a hash is in. What `OBJECT ENCODING` reports is decided by the
//! configured limits, not by the form (see `Value::encoding_under`).

use crate::primitives::{Hasher, SmallBytes};
use indexmap::IndexMap;

/// Most fields kept in the small form. A search reads at most this many inline fields, about
/// what one probe of an index costs in cache misses.
pub const SMALL_MAX: usize = 32;

/// A hash value (see the module documentation).
#[derive(Clone, Debug)]
pub struct HashValue(Repr);

#[derive(Clone, Debug)]
enum Repr {
    Small(Vec<(SmallBytes, SmallBytes)>),
    Large(Box<IndexMap<SmallBytes, SmallBytes, Hasher>>),
}

impl Default for HashValue {
    fn default() -> Self {
        HashValue(Repr::Small(Vec::new()))
    }
}

impl HashValue {
    /// An empty hash.
    pub fn new() -> Self {
        HashValue::default()
    }

    /// An empty hash with room for `n` fields.
    pub fn with_capacity(n: usize) -> Self {
        if n <= SMALL_MAX {
            HashValue(Repr::Small(Vec::with_capacity(n)))
        } else {
            HashValue(Repr::Large(Box::new(IndexMap::with_capacity_and_hasher(n, Hasher::default()))))
        }
    }

    /// Number of fields.
    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Small(v) => v.len(),
            Repr::Large(m) => m.len(),
        }
    }

    /// True when the hash has no field.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Fields the hash holds before it allocates again.
    pub fn capacity(&self) -> usize {
        match &self.0 {
            Repr::Small(v) => v.capacity(),
            Repr::Large(m) => m.capacity(),
        }
    }

    /// True once the hash is in its indexed form.
    pub fn is_indexed(&self) -> bool {
        matches!(self.0, Repr::Large(_))
    }

    fn position(v: &[(SmallBytes, SmallBytes)], field: &[u8]) -> Option<usize> {
        v.iter().position(|(f, _)| f[..] == *field)
    }

    /// The value of `field`.
    pub fn get(&self, field: &[u8]) -> Option<&SmallBytes> {
        match &self.0 {
            Repr::Small(v) => Self::position(v, field).map(|i| &v[i].1),
            Repr::Large(m) => m.get(field),
        }
    }

    /// True if `field` is present.
    pub fn contains_key(&self, field: &[u8]) -> bool {
        self.get(field).is_some()
    }

    /// Sets `field` (in place if present, else appended); returns the previous value.
    pub fn insert(&mut self, field: SmallBytes, value: SmallBytes) -> Option<SmallBytes> {
        match &mut self.0 {
            Repr::Small(v) => {
                if let Some(i) = Self::position(v, &field) {
                    return Some(std::mem::replace(&mut v[i].1, value));
                }
                if v.len() < SMALL_MAX {
                    // Exactly as many pairs as fields: a small hash grows by one (a copy of at
                    // most SMALL_MAX pairs), as a listpack does.
                    v.reserve_exact(1);
                    v.push((field, value));
                    return None;
                }
                let mut m = IndexMap::with_capacity_and_hasher(v.len() * 2, Hasher::default());
                m.extend(std::mem::take(v));
                m.insert(field, value);
                self.0 = Repr::Large(Box::new(m));
                None
            }
            Repr::Large(m) => m.insert(field, value),
        }
    }

    /// Removes `field`, moving the last field into its position; returns its value.
    pub fn swap_remove(&mut self, field: &[u8]) -> Option<SmallBytes> {
        match &mut self.0 {
            Repr::Small(v) => {
                let i = Self::position(v, field)?;
                let (_, value) = v.swap_remove(i);
                if v.is_empty() {
                    *v = Vec::new();
                }
                Some(value)
            }
            Repr::Large(m) => m.swap_remove(field),
        }
    }

    /// The field and value at a position.
    pub fn get_index(&self, i: usize) -> Option<(&SmallBytes, &SmallBytes)> {
        match &self.0 {
            Repr::Small(v) => v.get(i).map(|(f, x)| (f, x)),
            Repr::Large(m) => m.get_index(i),
        }
    }

    /// Every field and value, in position order.
    pub fn iter(&self) -> impl Iterator<Item = (&SmallBytes, &SmallBytes)> {
        let (small, large) = match &self.0 {
            Repr::Small(v) => (Some(v.iter().map(|(f, x)| (f, x))), None),
            Repr::Large(m) => (None, Some(m.iter())),
        };
        small.into_iter().flatten().chain(large.into_iter().flatten())
    }

    /// Every field, in position order.
    pub fn keys(&self) -> impl Iterator<Item = &SmallBytes> {
        self.iter().map(|(f, _)| f)
    }

    /// Every value, in position order.
    pub fn values(&self) -> impl Iterator<Item = &SmallBytes> {
        self.iter().map(|(_, v)| v)
    }

    /// Bytes of the hash's own structures (not counting the fields' and values' heap).
    pub fn table_bytes(&self) -> usize {
        let pair = std::mem::size_of::<(SmallBytes, SmallBytes)>();
        match &self.0 {
            Repr::Small(v) => v.capacity() * pair,
            // Entries (pair and stored hash) and index (position and control byte).
            Repr::Large(m) => {
                std::mem::size_of::<IndexMap<SmallBytes, SmallBytes, Hasher>>() + m.capacity() * (pair + 8 + 9)
            }
        }
    }
}

impl FromIterator<(SmallBytes, SmallBytes)> for HashValue {
    fn from_iter<I: IntoIterator<Item = (SmallBytes, SmallBytes)>>(iter: I) -> Self {
        let mut h = HashValue::new();
        h.extend(iter);
        h
    }
}

impl Extend<(SmallBytes, SmallBytes)> for HashValue {
    fn extend<I: IntoIterator<Item = (SmallBytes, SmallBytes)>>(&mut self, iter: I) {
        for (f, v) in iter {
            self.insert(f, v);
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

    fn sb(s: &str) -> SmallBytes {
        SmallBytes::from_slice(s.as_bytes())
    }

    /// Both forms keep insertion order, replace in place, and remove by moving the last pair
    /// into the hole; crossing SMALL_MAX keeps every field and its position.
    #[test]
    fn both_forms_behave_alike_and_the_switch_keeps_positions() {
        let mut h = HashValue::new();
        let mut model: Vec<(String, String)> = Vec::new();
        for i in 0..SMALL_MAX + 20 {
            let (f, v) = (format!("f{i}"), format!("v{i}"));
            assert_eq!(h.insert(sb(&f), sb(&v)), None);
            model.push((f, v));
            if i == 3 {
                assert_eq!(h.insert(sb("f1"), sb("x")).as_deref(), Some(&b"v1"[..]));
                model[1].1 = "x".into();
                assert_eq!(h.swap_remove(b"f0").as_deref(), Some(&b"v0"[..]));
                model.swap_remove(0);
            }
            assert_eq!(h.is_indexed(), h.len() > SMALL_MAX, "at {i}");
            for (p, (f, v)) in model.iter().enumerate() {
                let (hf, hv) = h.get_index(p).expect("position");
                assert_eq!((&hf[..], &hv[..]), (f.as_bytes(), v.as_bytes()), "position {p} at {i}");
                assert_eq!(h.get(f.as_bytes()).map(|x| &x[..]), Some(v.as_bytes()));
            }
            assert_eq!(h.len(), model.len());
            assert_eq!(h.iter().count(), model.len());
        }
        assert!(h.get(b"nope").is_none() && !h.contains_key(b"f0"));
        let mut pairs: Vec<_> = h.iter().map(|(f, v)| (f.clone(), v.clone())).collect();
        pairs.reverse();
        let copy: HashValue = pairs.into_iter().collect();
        assert_eq!(copy, h);
    }

    #[test]
    fn a_small_hash_costs_its_pairs() {
        assert_eq!(std::mem::size_of::<HashValue>(), 24);
        let h: HashValue = (0..5).map(|i| (sb(&format!("field{i}")), sb("value00001"))).collect();
        assert!(!h.is_indexed());
        assert_eq!(h.table_bytes(), 5 * std::mem::size_of::<(SmallBytes, SmallBytes)>());
    }
}
