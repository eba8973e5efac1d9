//! Data structures behind the aggregate value types, and per-key access metadata.

pub mod access;
pub mod hash;
pub mod hll;
pub mod listpack;
pub mod packed;
pub mod set;
pub mod stream;
pub mod zset;

use crate::value::Entry;
pub use crate::value::LFU_INIT_VAL;

/// What an access to a key updates, by `maxmemory-policy` (Redis keeps one or the other in an
/// object's `lru` field): the access time, or under an LFU policy the frequency counter as well.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// LRU: the access time.
    Lru,
    /// LFU: the counter, decayed then incremented logarithmically (`lfu-log-factor`,
    /// `lfu-decay-time` minutes per point), and the access time the decay counts from.
    Lfu {
        /// `lfu-log-factor`.
        log_factor: u32,
        /// `lfu-decay-time`.
        decay_minutes: u32,
    },
}

impl Access {
    /// Records an access at `now_ms` (Redis's `updateLFU` / LRU clock refresh).
    pub fn touch(self, e: &mut Entry, now_ms: u64) {
        let now_s = (now_ms / 1000) as u32;
        if let Access::Lfu { log_factor, decay_minutes } = self {
            e.set_lfu(lfu_log_incr(lfu_decayed(e, now_s, decay_minutes), log_factor));
        }
        e.set_atime(now_s);
    }
}

/// The LFU counter once the minutes since the last access have decayed it (Redis's
/// `LFUDecrAndReturn`): one point per `decay_minutes`, none when it is 0.
pub fn lfu_decayed(e: &Entry, now_s: u32, decay_minutes: u32) -> u8 {
    if decay_minutes == 0 {
        return e.lfu();
    }
    let periods = e.idle_s(now_s) / 60 / decay_minutes;
    e.lfu().saturating_sub(periods.min(255) as u8)
}

/// Redis's `LFULogIncr`: +1 with probability 1 / ((counter - LFU_INIT_VAL) * log_factor + 1).
fn lfu_log_incr(counter: u8, log_factor: u32) -> u8 {
    if counter == 255 {
        return 255;
    }
    let base = counter.saturating_sub(LFU_INIT_VAL) as f64;
    let p = 1.0 / (base * log_factor as f64 + 1.0);
    if rand::random::<f64>() < p { counter + 1 } else { counter }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Value;

    #[test]
    fn lfu_counts_up_logarithmically_and_decays_per_idle_period() {
        let lfu = Access::Lfu { log_factor: 10, decay_minutes: 1 };
        let mut e = Entry::new(Value::Int(1));
        for _ in 0..1000 {
            lfu.touch(&mut e, 5_000);
        }
        // Redis's table for lfu-log-factor 10: 1K hits reach ~18 (random: a wide margin).
        assert!((10..=30).contains(&e.lfu()), "{}", e.lfu());
        let c = e.lfu();
        // Three idle minutes with lfu-decay-time 1: three points.
        assert_eq!(lfu_decayed(&e, 5 + 180, 1), c - 3);
        assert_eq!(lfu_decayed(&e, 5 + 180, 2), c - 1);
        assert_eq!(lfu_decayed(&e, 5 + 180, 0), c);
        // LRU touches the clock only.
        Access::Lru.touch(&mut e, 900_000);
        assert_eq!((e.atime(), e.lfu()), (900, c));
        // A factor of 0 increments on every hit.
        let mut f = Entry::new(Value::Int(1));
        for _ in 0..10 {
            Access::Lfu { log_factor: 0, decay_minutes: 1 }.touch(&mut f, 0);
        }
        assert_eq!(f.lfu(), LFU_INIT_VAL + 10);
    }
}
