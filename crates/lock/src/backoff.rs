//! Jittered exponential backoff between acquisition attempts.

use std::time::Duration;

/// Retry pacing: attempt `n` sleeps a uniformly random time in `[0, min(max, base * 2^n)]`
/// ("full jitter"), so contending clients spread out instead of retrying in lockstep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    /// The cap of the first retry's sleep.
    pub base: Duration,
    /// The largest cap.
    pub max: Duration,
}

impl Default for Backoff {
    fn default() -> Backoff {
        Backoff { base: Duration::from_millis(2), max: Duration::from_millis(100) }
    }
}

impl Backoff {
    /// The upper bound of the sleep before retry number `attempt` (0-based).
    pub fn cap(&self, attempt: u32) -> Duration {
        let factor = 1u32.checked_shl(attempt.min(20)).unwrap_or(u32::MAX);
        self.base.checked_mul(factor).map_or(self.max, |d| d.min(self.max))
    }

    /// A random sleep before retry number `attempt`.
    pub fn delay(&self, attempt: u32) -> Duration {
        let cap = self.cap(attempt).as_micros() as u64;
        Duration::from_micros(rand::random_range(0..=cap))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_double_then_saturate() {
        let b = Backoff { base: Duration::from_millis(2), max: Duration::from_millis(50) };
        assert_eq!(b.cap(0), Duration::from_millis(2));
        assert_eq!(b.cap(1), Duration::from_millis(4));
        assert_eq!(b.cap(4), Duration::from_millis(32));
        assert_eq!(b.cap(5), Duration::from_millis(50));
        assert_eq!(b.cap(1000), Duration::from_millis(50));
        for a in 0..40 {
            assert!(b.delay(a) <= b.cap(a));
        }
    }

    #[test]
    fn drift_follows_the_spec() {
        assert_eq!(crate::drift(Duration::from_secs(10)), Duration::from_millis(102));
        assert_eq!(crate::drift(Duration::from_millis(300)), Duration::from_millis(5));
        assert_eq!(crate::new_token().len(), 32);
        assert_ne!(crate::new_token(), crate::new_token());
    }
}
