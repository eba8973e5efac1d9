//! The versions Latch answers with: the Redis version it implements (clients enable features by
//! it, RDB files record it) and its own.

/// The Redis version Latch answers as (clients enable features by it).
pub const REDIS_VERSION: &str = "7.0.15";
/// Latch's own version.
pub const LATCH_VERSION: &str = env!("CARGO_PKG_VERSION");
