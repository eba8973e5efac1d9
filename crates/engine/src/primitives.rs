//! The primitive types that values and the data structures behind them are built from. It sits
//! below both `value.rs` and `types/` (a sorted set is made of these, and a value holds a sorted
//! set), so that imports between them point one way; `value` re-exports them.

use smallvec::SmallVec;

/// Bytes stored inline when they fit in 16 bytes (typical keys such as `lock:order:12345`).
pub type SmallBytes = SmallVec<[u8; 16]>;

/// The hasher used by every hash table in the engine: fast, and randomly seeded per process so that
/// clients cannot craft colliding keys.
pub type Hasher = foldhash::fast::RandomState;
