//! Data structures behind the aggregate value types, and per-key access metadata.

pub mod access;
pub mod zset;

use crate::value::Entry;
use std::sync::atomic::{AtomicBool, Ordering};

/// Initial LFU counter of a new key (Redis's LFU_INIT_VAL).
pub const LFU_INIT_VAL: u8 = 5;

/// Set while `maxmemory-policy` is an LFU policy; only then is the LFU counter maintained (as Redis).
pub static LFU_ENABLED: AtomicBool = AtomicBool::new(false);

/// Logarithmic LFU increment (Redis's LFULogIncr with lfu-log-factor 10).
pub fn lfu_incr(e: &mut Entry) {
    if !LFU_ENABLED.load(Ordering::Relaxed) || e.lfu == 255 {
        return;
    }
    let base = e.lfu.saturating_sub(LFU_INIT_VAL) as f64;
    let p = 1.0 / (base * 10.0 + 1.0);
    if rand::random::<f64>() < p {
        e.lfu += 1;
    }
}
