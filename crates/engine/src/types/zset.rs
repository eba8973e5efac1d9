//! Sorted sets.

use crate::value::{Hasher, SmallBytes};

/// A sorted set: member -> score, ordered by (score, member).
#[derive(Clone, Debug, Default)]
pub struct ZSet {
    scores: std::collections::HashMap<SmallBytes, f64, Hasher>,
}

impl ZSet {
    /// Number of members.
    pub fn len(&self) -> usize {
        self.scores.len()
    }
    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.scores.is_empty()
    }
    /// Approximate heap bytes.
    pub fn heap_size(&self) -> usize {
        self.scores.capacity() * 48
    }
}
